"""What plain `build` reaches beyond this Python's torch, and the one command it names when it builds nothing."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from pybuild import reach
from pybuild.envplan import HostFacts, IndexConfig
from pybuild.manifest import load_manifest
from pybuild.variants import load_matrix

REPO = Path(__file__).resolve().parents[2]
MATRIX = load_matrix(REPO / "variants.json").variants
HOST = HostFacts("x86_64-linux", "/usr/bin/python3", "cp311", "13.0", "/usr/local/cuda/bin/nvcc")
NO_NVCC = HostFacts("x86_64-linux", "/usr/bin/python3", "cp311", None, None)


@pytest.fixture
def guide(tmp_path: Path) -> Path:
    return Path(shutil.copytree(REPO / "tests" / "fixtures" / "guide-img2gray", tmp_path / "img2gray"))


@pytest.mark.parametrize(("host", "expected"), [(HOST, "cu130"), (NO_NVCC, "cu130")])
def test_a_cuda_only_kernel_reaches_the_cuda_variant_of_this_torch(guide: Path, host: HostFacts, expected: str) -> None:
    """One CUDA variant of torch 2.13 on this system: the one PyPI's torch wheel is built for (13.0),
    which is also the machine's nvcc where there is one."""
    found = reach.env_variants(load_manifest(guide), MATRIX, "2.13", IndexConfig(), host)
    assert [v.name for v, _ in found] == [f"torch213-cxx11-{expected}-x86_64-linux"]
    plan = found[0][1]
    assert plan.nvcc == host.nvcc  # the machine's nvcc when it is that release, else NVIDIA's wheels


def test_the_command_for_nothing_built(guide: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(guide.parent)
    command = reach.next_command([load_manifest(guide)], MATRIX, IndexConfig(), HOST)
    major, minor = max(v.torch_tuple for v in MATRIX)  # the newest torch's CUDA variant (2.15: CUDA 13.2)
    assert command.startswith(f"python -m pybuild build img2gray --variant torch{major}{minor}-cxx11-cu")
    assert command.endswith("-x86_64-linux")
    tvm = SimpleNamespace(framework="tvm-ffi", root=guide)
    monkeypatch.setattr(reach, "tvm_ffi_version", lambda: None)
    assert reach.next_command([tvm], MATRIX, IndexConfig(), HOST) == "pip install 'apache-tvm-ffi>=0.1.9,<0.2'"  # type: ignore[list-item]
