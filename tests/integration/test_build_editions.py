"""An edition-5 kernel of our own through the farm: built once against torch's stable ABI
(`torch-stable-abi211-cpu-<system>`), its CUDA section kept out of the CPU variant, its [torch] and
section flags applied, its data file shipped, and loaded by the real `kernels` with this (newer)
torch. The project's own counterpart of upstream's examples, run with or without them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pybuild.__main__ import main
from pybuild.host import host_system
from pybuild.manifest import load_manifest
from tests.helpers.loader import require_kernels_loader

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "edition5-stable-clamp"

torch = pytest.importorskip("torch")
require_kernels_loader()
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    kernel = tmp_path_factory.mktemp("editions") / "stable-clamp"
    shutil.copytree(FIXTURE, kernel)
    assert main(["build", str(kernel), "-q"]) == 0
    return kernel


def test_one_stable_abi_variant_with_the_data_file(built: Path) -> None:
    variants = sorted(p.name for p in (built / "build").iterdir())
    assert variants == [f"torch-stable-abi211-cpu-{host_system()}"]
    pkg = built / "build" / variants[0] / "stable_clamp"
    assert (pkg / "defaults.json").is_file()
    # the CUDA section (whose source refuses to compile outside a CUDA variant) stayed out
    commands = (built / "compile_commands.json").read_text()
    assert "clamp_cpu.cpp" in commands and "clamp_cuda.cu" not in commands
    assert "-DFROM_TORCH_CXX_FLAGS" in commands and "-DFROM_SECTION_CXX_FLAGS" in commands
    assert "TORCH_TARGET_VERSION=0x020b000000000000" in commands and "-DCPU_KERNEL" in commands


def test_loaded_by_kernels_with_this_newer_torch(built: Path, tmp_path: Path) -> None:
    probe = textwrap.dedent("""
        import kernels, torch
        k = kernels.get_kernel("farm-tests/stable-clamp", version=1)
        x = torch.randn(4097, generator=torch.Generator().manual_seed(0))
        assert torch.equal(k.clamp_min(x), x.clamp_min(0.0)), "wrong values"
        assert torch.equal(k.clamp_min(x, 0.25), x.clamp_min(0.25))
        assert k.DEFAULTS == {"floor": 0.0}
        print("ok", torch.__version__)
    """)
    env = {**os.environ, "LOCAL_KERNELS": f"farm-tests/stable-clamp={built}", "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("ok ")


def test_check_config_and_repo_id(built: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", str(built)]) == 0
    assert "ok (edition 5, torch" in capsys.readouterr().err
    assert load_manifest(built).repo_id == "farm-tests/stable-clamp"


def test_torch_noarch_builds_every_listed_backend(tmp_path: Path) -> None:
    kernel = tmp_path / "softcap"
    shutil.copytree(REPO / "tests" / "fixtures" / "noarch-softcap", kernel)
    (kernel / "build.toml").write_text(
        '[general]\nname = "softcap"\nversion = 1\nedition = 5\nlicense = "Apache-2.0"\n'
        'backends = ["cuda", "cpu", "neuron", "tpu", "cann"]\n\n[torch-noarch]\n'
    )
    assert main(["build", str(kernel), "-q"]) == 0
    assert sorted(p.name for p in (kernel / "build").iterdir()) == [
        "torch-cpu",
        "torch-cuda",
        "torch-neuron",
        "torch-npu",
        "torch-tpu",
    ]
