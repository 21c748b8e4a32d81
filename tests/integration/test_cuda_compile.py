"""Every kernel's CUDA sources compile with this machine's nvcc for sm_90 (compile only: no GPU here).

Sources that include only headers the CPU build of torch ships compile here; a .cu that needs a
CUDA build of torch (c10/cuda, ATen/cuda) is compiled and tested by the GPU script instead.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pybuild.digest import INCLUDE
from pybuild.host import find_nvcc
from pybuild.manifest import load_manifest
from pybuild.testing import compile_cuda

REPO = Path(__file__).resolve().parents[2]
CUDA_ONLY_HEADERS = re.compile(r'#include\s*[<"](c10/cuda/|ATen/cuda/|torch/cuda)')
TORCH_HEADERS = re.compile(r'#include\s*[<"](torch/|ATen/|c10/)')

SOURCES = sorted(
    (kernel_dir.name, src)
    for kernel_dir in (p.parent for p in (REPO / "kernels").glob("*/build.toml"))
    for k in load_manifest(kernel_dir).kernels
    if k.backend == "cuda"
    for src in k.src
    if src.endswith(".cu")
)


@pytest.mark.slow
@pytest.mark.parametrize(("kernel", "src"), SOURCES, ids=[f"{k}/{s}" for k, s in SOURCES])
def test_cu_compiles_for_sm90(kernel: str, src: str, tmp_path: Path) -> None:
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found")
    kernel_dir = REPO / "kernels" / kernel
    text = (kernel_dir / src).read_text()
    if CUDA_ONLY_HEADERS.search(text):
        pytest.skip(f"{src} needs a CUDA build of torch; compiled by the GPU script")
    manifest = load_manifest(kernel_dir)
    kernel_includes = [kernel_dir / i for k in manifest.kernels for i in k.include]
    if not kernel_includes and not TORCH_HEADERS.search(text):
        # The kernel's own spill test compiles it so (testing.compile_cuda): the same command, so
        # that ccache compiles it once for both.
        proc = compile_cuda(kernel_dir / src, tmp_path / "out.o", "sm_90")
        assert proc.returncode == 0, proc.stderr[-3000:]
        check_sm90(nvcc, tmp_path / "out.o")
        return
    torch = pytest.importorskip("torch.utils.cpp_extension")
    includes = [kernel_dir / "csrc", kernel_dir / "torch-ext", INCLUDE]  # INCLUDE: <kernel_farm/...>
    includes += kernel_includes
    includes += [Path(p) for p in torch.include_paths()]
    cmd = [
        str(nvcc),
        "-c",
        "-std=c++17",
        "-O3",
        "-gencode=arch=compute_90,code=sm_90",
        "--expt-relaxed-constexpr",
        "-DCUDA_KERNEL",
        *(f"-I{i}" for i in includes),
        str(kernel_dir / src),
        "-o",
        str(tmp_path / "out.o"),
    ]
    if shutil.which("ccache"):
        cmd.insert(0, "ccache")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    check_sm90(nvcc, tmp_path / "out.o")


def check_sm90(nvcc: Path, obj: Path) -> None:
    """``obj`` is not empty and, where cuobjdump is found, holds sm_90 code."""
    assert obj.stat().st_size > 0
    cuobjdump = shutil.which("cuobjdump") or (nvcc.parent / "cuobjdump")
    if Path(cuobjdump).is_file():
        listing = subprocess.run([str(cuobjdump), "--list-elf", str(obj)], capture_output=True, text=True, check=False)
        assert "sm_90" in listing.stdout, listing.stdout + listing.stderr
