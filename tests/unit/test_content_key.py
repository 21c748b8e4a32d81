"""One content key per variant: the same inputs give the same key whichever command (and interpreter or
environment) builds, and a change that cannot alter a variant's files leaves its key alone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pybuild import backends
from pybuild.build import content_key
from pybuild.digest import source_hash
from pybuild.host import Toolchain, TorchInfo
from pybuild.manifest import load_manifest
from pybuild.variants import parse_variant_name

REPO = Path(__file__).resolve().parents[2]
CPU = parse_variant_name("torch213-cxx11-cpu-x86_64-linux")
CUDA = parse_variant_name("torch213-cxx11-cu130-x86_64-linux")


@pytest.fixture
def kernel(tmp_path: Path) -> Path:
    dest = tmp_path / "img2gray"
    shutil.copytree(REPO / "kernels" / "img2gray", dest, ignore=shutil.ignore_patterns("build", ".pybuild"))
    return dest


def fake_nvcc(folder: Path, release: str) -> Path:
    nvcc = folder / f"nvcc-{release}"
    nvcc.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {release}, V{release}.1'\n")
    nvcc.chmod(0o755)
    return nvcc


def toolchain(python: str, torch: str = "2.13.0+cpu", nvcc: Path | None = None, cuda: str | None = None) -> Toolchain:
    return Toolchain(
        python=python,
        torch=TorchInfo(torch, Path("/nowhere/torch"), (("cuda", cuda),) if cuda else ()),
        compilers=(("cuda", nvcc),) if nvcc else (),
    )


def key(kernel: Path, variant, tc: Toolchain, override: tuple[str, ...] | None = None) -> str:  # noqa: ANN001
    m = load_manifest(kernel)
    archs = backends.get(variant.backend).build_archs(m, variant, override)
    return content_key(m, variant, source_hash(m), archs, tc)


def test_the_interpreter_and_environment_paths_are_not_inputs(kernel: Path) -> None:
    """`build` with this Python and `test --variant` in the variant's environment: same torch, same key."""
    host = toolchain("/usr/bin/python3")
    env = Toolchain(
        python="/cache/envs/torch213-cxx11-cpu-x86_64-linux-0123456789/bin/python",
        torch=TorchInfo("2.13.0+cpu", Path("/cache/envs/x/lib/python3.11/site-packages/torch")),
        bin_dirs=(Path("/cache/envs/x/bin"),),
    )
    assert key(kernel, CPU, host) == key(kernel, CPU, env)
    assert key(kernel, CPU, host) != key(kernel, CPU, toolchain("/usr/bin/python3", torch="2.13.1+cpu"))


def test_cuda_archs_and_cuda_flags_touch_only_cuda_variants(
    kernel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cpu = toolchain("/usr/bin/python3")
    before = key(kernel, CPU, cpu)
    assert key(kernel, CPU, cpu, override=("9.0",)) == before  # `build --cuda-archs 9.0`
    monkeypatch.setenv("CUDAFLAGS", "-lineinfo")
    assert key(kernel, CPU, cpu) == before
    monkeypatch.setenv("CXXFLAGS", "-O1")
    assert key(kernel, CPU, cpu) != before  # the CPU compiles read it
    monkeypatch.delenv("CXXFLAGS")

    cuda = toolchain("/usr/bin/python3", "2.13.0+cu130", fake_nvcc(tmp_path, "13.0"), "13.0")
    flagged = key(kernel, CUDA, cuda)
    monkeypatch.delenv("CUDAFLAGS")
    plain = key(kernel, CUDA, cuda)
    assert flagged != plain
    assert key(kernel, CUDA, cuda, override=("9.0",)) != plain
    other_nvcc = toolchain("/usr/bin/python3", "2.13.0+cu130", fake_nvcc(tmp_path, "13.2"), "13.0")
    assert key(kernel, CUDA, other_nvcc) != plain  # another toolkit compiles other binaries


def test_a_commit_elsewhere_in_the_tree_is_not_an_input(kernel: Path) -> None:
    """The key holds the commit the kernel's sources come from: a commit of other files leaves it."""
    import subprocess

    def git(*argv: str) -> None:
        subprocess.run(
            ["git", "-C", str(kernel.parent), "-c", "user.name=t", "-c", "user.email=t@t", *argv], check=True
        )

    (kernel.parent / "README.md").write_text("farm\n")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "kernel")
    tc = toolchain("/usr/bin/python3")
    before = key(kernel, CPU, tc)
    (kernel.parent / "README.md").write_text("farm, edited\n")
    git("commit", "-qam", "docs")
    assert key(kernel, CPU, tc) == before
    cpu = kernel / "csrc" / "img2gray_cpu.cpp"
    cpu.write_text(cpu.read_text() + "// changed\n")
    dirty = key(kernel, CPU, tc)
    git("commit", "-qam", "kernel change")
    assert len({before, dirty, key(kernel, CPU, tc)}) == 3
