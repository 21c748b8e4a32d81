"""RMS norm over the last dimension: ``y = x / sqrt(mean(x**2, -1) + eps) * weight``.

For float32, float16 and bfloat16 tensors ``[..., hidden]`` with a ``[hidden]`` weight of the same
dtype, on CPU and CUDA. The mean of squares is accumulated and every product formed in float32;
the result is rounded once to the input dtype.
"""

from __future__ import annotations

import torch

from ._ops import add_op_namespace_prefix, ops

__all__ = ["rms_norm"]

_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@torch.library.register_fake(add_op_namespace_prefix("rms_norm"))
def _rms_norm_fake(input: torch.Tensor, weight: torch.Tensor, eps: float, out: torch.Tensor) -> None:
    return None


@torch.library.register_fake(add_op_namespace_prefix("rms_norm_alloc"))
def _rms_norm_alloc_fake(input: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return input.new_empty(input.shape)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6, out: torch.Tensor | None = None) -> torch.Tensor:
    """RMS-normalise ``x`` ``[..., hidden]`` over its last dimension and scale by ``weight`` ``[hidden]``.

    Non-contiguous inputs are accepted (copied once). ``out``, if given, must be a contiguous tensor
    of ``x``'s shape, dtype and device.
    """
    # The common call, checked by the op itself (dtypes, shapes, devices, contiguity) before it
    # writes anything: a plain call then costs about what torch's own F.rms_norm does. Whatever the
    # op refuses, and every other call, takes the checks below, which name the problem.
    try:
        if (
            out is None
            and eps.__class__ is float
            and eps >= 0.0
            and not torch.compiler.is_compiling()
            and x.is_contiguous()
            and not (x.requires_grad or weight.requires_grad)
        ):
            return ops.rms_norm_alloc(x, weight, eps)
    except (AttributeError, RuntimeError, TypeError, ValueError):
        out = None
    return _checked(x, weight, eps, out)


def _checked(x: torch.Tensor, weight: torch.Tensor, eps: float, out: torch.Tensor | None) -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or not isinstance(weight, torch.Tensor):
        raise TypeError(
            f"rms_norm: expected torch.Tensor x and weight, got {type(x).__name__} and {type(weight).__name__}"
        )
    if x.dtype not in _DTYPES:
        raise TypeError(f"rms_norm: expected a float32, float16 or bfloat16 tensor, got {x.dtype}")
    if weight.dtype != x.dtype:
        raise TypeError(f"rms_norm: weight must have x's dtype {x.dtype}, got {weight.dtype}")
    if x.dim() < 1 or x.shape[-1] == 0:
        raise ValueError(f"rms_norm: expected x of shape [..., hidden] with hidden > 0, got {tuple(x.shape)}")
    if weight.dim() != 1 or weight.shape[0] != x.shape[-1]:
        raise ValueError(f"rms_norm: expected weight of shape ({x.shape[-1]},), got {tuple(weight.shape)}")
    if x.device.type not in ("cpu", "cuda"):
        raise ValueError(f"rms_norm: supports cpu and cuda tensors, got device {x.device}")
    if weight.device != x.device:
        raise ValueError(f"rms_norm: x is on {x.device} but weight is on {weight.device}")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise TypeError(f"rms_norm: eps must be a float, got {type(eps).__name__} {eps!r}")
    if not eps >= 0.0:
        raise ValueError(f"rms_norm: eps must be >= 0, got {eps}")
    if torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad):
        raise RuntimeError("rms_norm: has no backward; call it under torch.no_grad() or on detached tensors")
    x = x.contiguous()
    weight = weight.contiguous()
    if out is None:
        out = torch.empty_like(x)
    elif out.dtype != x.dtype or out.shape != x.shape or out.device != x.device:
        raise ValueError(
            f"rms_norm: out must be {x.dtype} of shape {tuple(x.shape)} on {x.device}, "
            f"got {out.dtype} {tuple(out.shape)} on {out.device}"
        )
    elif not out.is_contiguous():
        raise ValueError("rms_norm: out must be contiguous")
    ops.rms_norm(x, weight, float(eps), out)
    return out
