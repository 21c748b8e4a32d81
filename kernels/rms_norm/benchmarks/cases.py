"""Benchmark cases for rms_norm (run with `python -m pybuild bench rms_norm`; pybuild.bench reads this file).

x [rows, hidden] and out of the same shape; bytes per call: x read + out written + weight read
once. Targets: >= 0.85 x the large-copy bandwidth at large sizes (>= 200 MB moved) and
>= torch.compile at every size. The torch baseline is torch.nn.functional.rms_norm.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from pybuild.bench import Case, Target

EPS = 1e-6
LARGE_BYTES = 200e6
# (panel, dtype, [(rows, hidden), ...])
GRID = (
    ("rms_norm bfloat16 hidden 4096", torch.bfloat16, ((64, 4096), (512, 4096), (4096, 4096), (32768, 4096))),
    (
        "rms_norm bfloat16 268 MB",
        torch.bfloat16,
        ((524288, 128), (65536, 1024), (16384, 4096), (8192, 8192), (4096, 16384)),
    ),
    ("rms_norm float16 hidden 4096", torch.float16, ((512, 4096), (32768, 4096))),
    ("rms_norm float32 hidden 4096", torch.float32, ((512, 4096), (32768, 4096))),
)
CPU_GRID = (
    ("rms_norm float32", torch.float32, ((64, 4096), (512, 4096))),
    ("rms_norm bfloat16", torch.bfloat16, ((512, 4096),)),
)
TOL = {torch.float32: (1e-4, 1e-4), torch.float16: (2e-3, 4e-3), torch.bfloat16: (2e-2, 3.2e-2)}


def eager(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.rms_norm(x, (x.shape[-1],), w, EPS)


def cases(kernel, device: str, quick: bool) -> list[Case]:
    grid = GRID if device == "cuda" else CPU_GRID
    if quick:
        grid = grid[:1]
    out = []
    for panel, dtype, shapes in grid:
        for rows, hidden in shapes:

            def make(seed: int, rows: int = rows, hidden: int = hidden, dtype: torch.dtype = dtype):
                g = torch.Generator(device=device).manual_seed(seed)
                x = torch.randn(rows, hidden, device=device, dtype=dtype, generator=g)
                w = torch.rand(hidden, device=device, dtype=dtype, generator=g) + 0.5
                return x, w

            esize = torch.empty((), dtype=dtype).element_size()
            nbytes = (2 * rows * hidden + hidden) * esize
            targets = (Target("compile", 1.0),) + ((Target("copy_large", 0.85),) if nbytes >= LARGE_BYTES else ())
            atol, rtol = TOL[dtype]
            out.append(
                Case(
                    kernel="rms_norm",
                    op="rms_norm",
                    label=f"{rows}x{hidden}",
                    dtype=str(dtype).removeprefix("torch."),
                    bytes=nbytes,
                    make=make,
                    ours=lambda x, w: kernel.rms_norm(x, w, EPS),
                    eager=eager,
                    targets=targets,
                    atol=atol,
                    rtol=rtol,
                    panel=panel,
                )
            )
    return out


def sweep_ops(kernel, device: str) -> list:
    """The op for `python -m pybuild bench rms_norm --sweep N`: x [rows, hidden], every dtype."""
    from pybuild.bench import SweepOp

    def make(shape, seed: int):
        rows, hidden = shape.dims
        dtype = getattr(torch, shape.dtype)
        g = torch.Generator(device=device).manual_seed(seed)
        x = torch.randn(rows, hidden, device=device, dtype=dtype, generator=g)
        w = torch.rand(hidden, device=device, dtype=dtype, generator=g) + 0.5
        return x, w

    def nbytes(rows: int, hidden: int, dtype: str) -> int:
        return (2 * rows * hidden + hidden) * torch.empty((), dtype=getattr(torch, dtype)).element_size()

    return [
        SweepOp(
            kernel="rms_norm",
            op="rms_norm",
            kind="rows",
            dtypes=("bfloat16", "float16", "float32"),
            make=make,
            ours=lambda x, w: kernel.rms_norm(x, w, EPS),
            eager=eager,
            bytes_of=nbytes,
            tol={str(k).removeprefix("torch."): v for k, v in TOL.items()},
        )
    ]
