"""On a CUDA machine, the real `kernels` loader picks each farm kernel's host CUDA variant (by torch
version, CUDA version and the device's compute capability against metadata.json's archs) and the
op it loads runs on the GPU, equal to the same build's CPU implementation. Each probe runs in a
fresh process, as a downstream user's would, through `get_local_kernel` and through
`LOCAL_KERNELS` + `get_kernel(version=1)`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pybuild.testing import ensure_built, variant_dir_for
from tests.helpers.loader import require_kernels_loader

torch = pytest.importorskip("torch")
require_kernels_loader()

REPO = Path(__file__).resolve().parents[2]
KERNELS = sorted(p.parent.name for p in (REPO / "kernels").glob("*/build.toml"))

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

# argv: how to load ("local" or "hub"), the kernel folder, the repo id LOCAL_KERNELS maps to it.
PROBE = r"""
import json, sys, torch, kernels
from pathlib import Path
how, kernel_dir, repo_id = sys.argv[1:4]
k = kernels.get_local_kernel(Path(kernel_dir)) if how == "local" else kernels.get_kernel(repo_id, version=1)
g = torch.Generator().manual_seed(0)
name = Path(kernel_dir).name
if name == "img2gray":
    x = torch.randint(0, 256, (2, 37, 53, 3), dtype=torch.uint8, generator=g)
    assert torch.equal(k.img2gray(x.cuda()).cpu(), k.img2gray(x))  # the rounding rule, byte for byte
elif name == "activation":
    x = torch.randn(3, 5, 2 * 96, generator=g)
    for fn in ("silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul"):
        torch.testing.assert_close(getattr(k, fn)(x.cuda()).cpu(), getattr(k, fn)(x), atol=1e-5, rtol=1e-5)
elif name == "rms_norm":
    x, w = torch.randn(7, 1024, generator=g), torch.randn(1024, generator=g)
    torch.testing.assert_close(k.rms_norm(x.cuda(), w.cuda()).cpu(), k.rms_norm(x, w), atol=1e-5, rtol=1e-5)
else:
    raise SystemExit(f"no probe for kernel {name!r}: add one to tests/integration/test_gpu_loader.py")
print(json.dumps({"module": k.__name__, "file": k.__file__}))
"""


@pytest.mark.parametrize("how", ["local", "hub"])
@pytest.mark.parametrize("name", KERNELS)
def test_the_loader_picks_the_cuda_variant_and_it_runs(name: str, how: str, tmp_path: Path) -> None:
    kernel_dir = REPO / "kernels" / name
    ensure_built(kernel_dir)
    cuda_variant = variant_dir_for(kernel_dir, "cuda")
    meta = json.loads((cuda_variant / "metadata.json").read_text())
    repo_id = f"farm/{meta['name']}"
    env = {**os.environ, "LOCAL_KERNELS": f"{repo_id}={kernel_dir}"}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, how, str(kernel_dir), repo_id],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["module"] == meta["id"], out
    assert f"/build/{cuda_variant.name}/" in out["file"], out
