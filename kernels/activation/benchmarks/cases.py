"""Benchmark cases for activation (run with `python -m pybuild bench activation`; pybuild.bench reads this file).

Input [tokens, 2 d] -> output [tokens, d]; bytes per call: 3 d elements per token (2 d read, d
written). Targets: >= 0.85 x the large-copy bandwidth at large sizes (>= 200 MB moved)
and >= torch.compile at every size.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from pybuild.bench import Case, Target

# (tokens, d): 3 MB, 25 MB, 201 MB and 704 MB moved in bf16.
SHAPES = ((128, 4096), (1024, 4096), (4096, 8192), (8192, 14336))
LARGE_BYTES = 200e6


def _eager(op: str):
    def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1] // 2
        return F.silu(x[..., :d]) * x[..., d:]

    def gelu_and_mul(x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1] // 2
        return F.gelu(x[..., :d]) * x[..., d:]

    def gelu_tanh_and_mul(x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1] // 2
        return F.gelu(x[..., :d], approximate="tanh") * x[..., d:]

    return {"silu_and_mul": silu_and_mul, "gelu_and_mul": gelu_and_mul, "gelu_tanh_and_mul": gelu_tanh_and_mul}[op]


TOL = {torch.float32: (1e-4, 1e-4), torch.float16: (2e-3, 4e-3), torch.bfloat16: (2e-2, 3.2e-2)}


def cases(kernel, device: str, quick: bool) -> list[Case]:
    combos = [(op, torch.bfloat16) for op in ("silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul")]
    combos += [("silu_and_mul", torch.float16), ("silu_and_mul", torch.float32)]
    shapes = SHAPES if device == "cuda" else ((128, 4096), (1024, 4096))
    if quick:
        combos, shapes = combos[:1], shapes[:1] + shapes[-1:]
    out = []
    for op, dtype in combos:
        for tokens, d in shapes:

            def make(seed: int, tokens: int = tokens, d: int = d, dtype: torch.dtype = dtype) -> tuple[torch.Tensor]:
                g = torch.Generator(device=device).manual_seed(seed)
                return (torch.randn(tokens, 2 * d, device=device, dtype=dtype, generator=g),)

            nbytes = 3 * tokens * d * torch.empty((), dtype=dtype).element_size()
            targets = (Target("compile", 1.0),) + ((Target("copy_large", 0.85),) if nbytes >= LARGE_BYTES else ())
            atol, rtol = TOL[dtype]
            out.append(
                Case(
                    kernel="activation",
                    op=op,
                    label=f"{tokens}x{d}",
                    dtype=str(dtype).removeprefix("torch."),
                    bytes=nbytes,
                    make=make,
                    ours=getattr(kernel, op),
                    eager=_eager(op),
                    targets=targets,
                    atol=atol,
                    rtol=rtol,
                )
            )
    return out


def sweep_ops(kernel, device: str) -> list:
    """The ops for `python -m pybuild bench activation --sweep N`: x [rows, 2 d], every dtype."""
    from pybuild.bench import SweepOp

    def make(shape, seed: int):
        g = torch.Generator(device=device).manual_seed(seed)
        return (torch.randn(*shape.dims, device=device, dtype=getattr(torch, shape.dtype), generator=g),)

    def nbytes(rows: int, last: int, dtype: str) -> int:  # 2 d read, d written per row
        return 3 * rows * (last // 2) * torch.empty((), dtype=getattr(torch, dtype)).element_size()

    def ours(op: str):
        return lambda x: getattr(kernel, op)(x)

    tol = {str(k).removeprefix("torch."): v for k, v in TOL.items()}
    return [
        SweepOp(
            kernel="activation",
            op=op,
            kind="rows",
            dtypes=("bfloat16", "float16", "float32"),
            make=make,
            ours=ours(op),
            eager=_eager(op),
            bytes_of=nbytes,
            step=2,
            tol=tol,
        )
        for op in ("silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul")
    ]
