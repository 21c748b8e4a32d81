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

REPO = Path(__file__).resolve().parents[2]
CUDA_ONLY_HEADERS = re.compile(r'#include\s*[<"](c10/cuda/|ATen/cuda/|torch/cuda)')

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
    torch = pytest.importorskip("torch.utils.cpp_extension")
    manifest = load_manifest(kernel_dir)
    includes = [kernel_dir / "csrc", kernel_dir / "torch-ext", INCLUDE]  # INCLUDE: <kernel_farm/...>
    includes += [kernel_dir / i for k in manifest.kernels for i in k.include]
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
    assert (tmp_path / "out.o").stat().st_size > 0
    cuobjdump = shutil.which("cuobjdump") or (nvcc.parent / "cuobjdump")
    if Path(cuobjdump).is_file():
        listing = subprocess.run(
            [str(cuobjdump), "--list-elf", str(tmp_path / "out.o")], capture_output=True, text=True, check=False
        )
        assert "sm_90" in listing.stdout, listing.stdout + listing.stderr
