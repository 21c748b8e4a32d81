"""A real multi-variant build in per-variant environments: two CPU variants of img2gray, each
compiled against its own torch (2.13 from a local CPU wheel where pip's find-links has one, else its
CUDA wheel; 2.14 from its CUDA wheel on PyPI), up to date on the second run, and tested under its own
torch through the `kernels` loader. It skips only where pybuild itself would refuse these variants.

The environments live in the user cache dir (as for users), so a warm CI machine makes them once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from pybuild.elf import dynamic_entries
from pybuild.envs import Refusal, host_facts, index_config, plan_env, uv_bin
from pybuild.errors import ToolchainError
from pybuild.variants import parse_variant_name
from tests.helpers.procs import pybuild

REPO = Path(__file__).resolve().parents[2]
VARIANTS = ["torch213-cxx11-cpu-x86_64-linux", "torch214-cxx11-cpu-x86_64-linux"]

pytestmark = pytest.mark.slow


def _refused() -> str | None:
    """Why pybuild itself would not build these variants here (the test skips only then)."""
    try:
        uv_bin()
    except ToolchainError as e:
        return str(e)
    config, host = index_config(), host_facts()
    for name in VARIANTS:  # the stable-ABI test builds with torch 2.14 and tests under 2.13 and 2.14 too
        plan = plan_env(parse_variant_name(name), config, host)
        if isinstance(plan, Refusal):
            return f"{plan.variant}: {plan.reason}"
    return None


if (_why := _refused()) is not None:
    pytest.skip(_why, allow_module_level=True)


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("farm")
    kernel = root / "img2gray"
    shutil.copytree(
        REPO / "kernels" / "img2gray",
        kernel,
        ignore=shutil.ignore_patterns("build", ".pybuild", "__pycache__", "compile_commands.json"),
    )
    variants = root / "variants.json"
    variants.write_text(
        json.dumps(
            {
                "torch": [{"version": "2.13", "cpu": True}, {"version": "2.14", "cpu": True}],
                "cxx-abi": ["cxx11"],
                "systems": ["x86_64-linux"],
            }
        )
    )
    return kernel, variants


@pytest.fixture(scope="module")
def built(farm: tuple[Path, Path]) -> tuple[Path, Path, str]:
    kernel, variants = farm
    proc = pybuild("build", str(kernel), "--all", "--variants", str(variants), timeout=1200)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return kernel, variants, proc.stderr + proc.stdout


def test_every_variant_built_against_its_own_torch(built: tuple[Path, Path, str]) -> None:
    kernel, _, output = built
    for name, torch in zip(VARIANTS, ("2.13", "2.14"), strict=True):
        meta = json.loads((kernel / "build" / name / "metadata.json").read_text())
        assert meta["backend"]["type"] == "cpu"
        assert meta["pybuild"]["torch"].startswith(f"{torch}."), meta["pybuild"]
        assert re.search(rf"img2gray\s+│\s+{name}\s+│\s+(built|up to date)", output), output


def test_cpu_variant_on_a_cuda_wheel_needs_no_cuda_library(built: tuple[Path, Path, str]) -> None:
    kernel, _, _ = built
    (so,) = (kernel / "build" / VARIANTS[1] / "img2gray").glob("*.so")
    needed = [value for tag, value in dynamic_entries(so) if tag == "NEEDED"]
    assert "libtorch_cpu.so" in needed
    assert not [lib for lib in needed if re.search(r"cuda|cudart", lib)], needed


def test_second_run_is_up_to_date_quickly(built: tuple[Path, Path, str]) -> None:
    kernel, variants, _ = built
    start = time.monotonic()
    proc = pybuild("build", str(kernel), "--all", "--variants", str(variants), timeout=1200)
    seconds = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    for name in VARIANTS:
        assert f"img2gray {name}: up to date" in proc.stderr
    assert "making its environment" not in proc.stderr  # the cached environments, nothing installed
    assert seconds < 2, f"{seconds:.1f} s"  # the acceptance: `up to date` for all in under 2 s


def test_each_variant_passes_the_kernel_tests_under_its_own_torch(built: tuple[Path, Path, str]) -> None:
    kernel, variants, _ = built
    for name, torch in zip(VARIANTS, ("2.13", "2.14"), strict=True):
        proc = pybuild(
            "test",
            str(kernel),
            "--variant",
            name,
            "--no-build",
            "--variants",
            str(variants),
            "--",
            "-q",
            "-k",
            "reference or rounding or empty",
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"under torch {torch}." in proc.stderr
        assert re.search(r"\d+ passed", proc.stdout), proc.stdout


UPSTREAM = Path(
    os.environ.get("PYBUILD_UPSTREAM_EXAMPLES")
    or REPO.parent / "shared" / "upstream-kernel-builder" / "examples" / "kernels"
)


@pytest.mark.skipif(
    not (UPSTREAM / "relu-torch-stable-abi").is_dir(),
    reason=f"upstream kernel-builder examples not found at {UPSTREAM} (set PYBUILD_UPSTREAM_EXAMPLES)",
)
def test_one_stable_abi_build_passes_its_tests_under_two_torch_releases(tmp_path: Path) -> None:
    """upstream's relu-torch-stable-abi, built once against torch 2.11's stable ABI in the environment of
    the matrix's newest torch (2.14, as Nix builds it), passes its own tests (get_kernel through
    LOCAL_KERNELS) under torch 2.13 and 2.14."""
    kernel = tmp_path / "relu-torch-stable-abi"
    shutil.copytree(UPSTREAM / "relu-torch-stable-abi", kernel)
    variants = tmp_path / "variants.json"
    variants.write_text(
        json.dumps(
            {
                "torch": [{"version": v, "cpu": True} for v in ("2.11", "2.13", "2.14")],
                "cxx-abi": ["cxx11"],
                "systems": ["x86_64-linux"],
            }
        )
    )
    name = "torch-stable-abi211-cpu-x86_64-linux"
    proc = pybuild("build", str(kernel), "--all", "--variants", str(variants), timeout=1200)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert re.search(rf"relu-torch-stable-abi {name}: built in [\d.]+ s under torch 2\.14\.", proc.stderr), proc.stderr
    assert sorted(p.name for p in (kernel / "build").iterdir()) == [name]
    proc = pybuild(
        "test",
        str(kernel),
        "--variant",
        name,
        "--torch",
        "2.13",
        "--torch",
        "2.14",
        "--no-build",
        "--variants",
        str(variants),
        "--",
        "-q",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "under torch 2.13." in proc.stderr and "under torch 2.14." in proc.stderr
    assert len(re.findall(r"3 passed", proc.stdout)) == 2, proc.stdout
