"""A CUDA variant built on a machine with no GPU, in the variant's own environment (torch's CUDA
wheel from the package index, nvcc from this machine or from NVIDIA's wheels): a kernel that includes
ATen's CUDA headers (which include cusparse.h and cublas_v2.h, in NVIDIA's wheels and in no
toolkit of nvcc alone) and a pinned CUTLASS header (`depends = ["cutlass_3_6"]`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pybuild.backends.cuda import cuda_toolkit_root, find_nvcc

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "aten-cuda-headers"
MIRROR = REPO.parent / "shared" / "deps" / "cutlass"
VARIANT = "torch213-cxx11-cu130-x86_64-linux"

pytestmark = pytest.mark.slow


def test_aten_cuda_headers_and_a_pinned_cutlass_build_in_the_variants_environment(tmp_path: Path) -> None:
    nvcc = find_nvcc()
    if nvcc is not None and (cuda_toolkit_root(nvcc) / "include" / "cusparse.h").is_file():
        pytest.skip(f"{cuda_toolkit_root(nvcc)} has the CUDA libraries' headers: this test needs a toolkit without")
    kdir = tmp_path / "aten-cuda-headers"
    shutil.copytree(FIXTURE, kdir)
    env = {**os.environ, "PYBUILD_CUDA_ARCHS": "9.0"}
    if MIRROR.is_dir():  # where the package index's wheel is out of reach
        env.setdefault("PYBUILD_DEPS_MIRROR", str(MIRROR))
    done = subprocess.run(
        [sys.executable, "-m", "pybuild", "build", str(kdir), "--variant", VARIANT],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = kdir / "build" / VARIANT
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["backend"]["type"] == "cuda"
    assert list((out / "aten_cuda_headers").glob("*.abi3.so"))
    commands = json.loads((kdir / "compile_commands.json").read_text())
    fill = next(c["command"] for c in commands if c["file"].endswith("fill.cu"))
    assert "/nvidia/" in fill and "/include" in fill  # NVIDIA's wheels' headers
    assert "cutlass" in fill  # the pinned tree's include folders
