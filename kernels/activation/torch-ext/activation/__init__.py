"""Gated activations for MLP blocks: ``[..., 2 * d]`` in, ``[..., d]`` out.

``out = act(x[..., :d]) * x[..., d:]`` for float32, float16 and bfloat16 tensors of any leading
shape, computed in float32 and rounded once to the input dtype, on CPU and CUDA.
"""

from __future__ import annotations

import torch

from ._ops import add_op_namespace_prefix, ops

__all__ = ["gelu_and_mul", "gelu_tanh_and_mul", "silu_and_mul"]

_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_OPS = ("silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul")


def _fake(input: torch.Tensor, out: torch.Tensor) -> None:
    return None


for _name in _OPS:
    torch.library.register_fake(add_op_namespace_prefix(_name))(_fake)


def _run(name: str, x: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in _DTYPES:
        raise TypeError(f"{name}: expected a float32, float16 or bfloat16 tensor, got {x.dtype}")
    if x.dim() < 1 or x.shape[-1] % 2 != 0:
        raise ValueError(f"{name}: expected input of shape [..., 2 * d] (even last dimension), got {tuple(x.shape)}")
    if x.device.type not in ("cpu", "cuda"):
        raise ValueError(f"{name}: supports cpu and cuda tensors, got device {x.device}")
    if torch.is_grad_enabled() and x.requires_grad:
        raise RuntimeError(f"{name}: has no backward; call it under torch.no_grad() or on a detached tensor")
    shape = (*x.shape[:-1], x.shape[-1] // 2)
    x = x.contiguous()
    if out is None:
        out = torch.empty(shape, dtype=x.dtype, device=x.device)
    elif out.dtype != x.dtype or tuple(out.shape) != shape or out.device != x.device:
        raise ValueError(
            f"{name}: out must be {x.dtype} of shape {shape} on {x.device}, "
            f"got {out.dtype} {tuple(out.shape)} on {out.device}"
        )
    elif not out.is_contiguous():
        raise ValueError(f"{name}: out must be contiguous")
    getattr(ops, name)(x, out)
    return out


def silu_and_mul(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``silu(x[..., :d]) * x[..., d:]`` for ``x`` of shape ``[..., 2 * d]``; returns ``out`` ``[..., d]``."""
    return _run("silu_and_mul", x, out)


def gelu_and_mul(x: torch.Tensor, out: torch.Tensor | None = None, approximate: str = "none") -> torch.Tensor:
    """``gelu(x[..., :d]) * x[..., d:]``; ``approximate`` is ``"none"`` (erf) or ``"tanh"``, as in
    ``torch.nn.functional.gelu``."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu_and_mul: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _run("gelu_tanh_and_mul" if approximate == "tanh" else "gelu_and_mul", x, out)


def gelu_tanh_and_mul(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``gelu(x[..., :d], approximate="tanh") * x[..., d:]``."""
    return _run("gelu_tanh_and_mul", x, out)
