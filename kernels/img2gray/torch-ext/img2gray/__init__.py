"""img2gray: uint8 RGB images (``[..., H, W, 3]``) to uint8 grayscale (``[..., H, W]``).

gray = 0.21 R + 0.72 G + 0.07 B, rounded as ``(21 R + 72 G + 7 B + 50) // 100`` on every device,
so CPU and CUDA results are identical byte for byte.
"""

from __future__ import annotations

import torch

from ._ops import add_op_namespace_prefix, ops

__all__ = ["img2gray"]


@torch.library.register_fake(add_op_namespace_prefix("img2gray"))
def _img2gray_fake(input: torch.Tensor, output: torch.Tensor) -> None:
    return None


def img2gray(image: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Convert uint8 RGB ``image`` of shape ``[..., H, W, 3]`` to uint8 gray ``[..., H, W]``.

    Non-contiguous inputs are accepted (copied once). ``out``, if given, must be a contiguous uint8
    tensor of shape ``image.shape[:-1]`` on the same device.
    """
    if not isinstance(image, torch.Tensor):
        raise TypeError(f"img2gray: expected a torch.Tensor, got {type(image).__name__}")
    if image.dtype != torch.uint8:
        raise TypeError(f"img2gray: expected a uint8 image, got {image.dtype}")
    if image.dim() < 3 or image.shape[-1] != 3:
        raise ValueError(
            f"img2gray: expected an RGB image of shape [H, W, 3] or [N, H, W, 3], got {tuple(image.shape)}"
        )
    if image.device.type not in ("cpu", "cuda"):
        raise ValueError(f"img2gray: supports cpu and cuda tensors, got device {image.device}")
    image = image.contiguous()
    if out is None:
        out = torch.empty(image.shape[:-1], dtype=torch.uint8, device=image.device)
    elif out.dtype != torch.uint8 or out.shape != image.shape[:-1] or out.device != image.device:
        raise ValueError(
            f"img2gray: out must be uint8 of shape {tuple(image.shape[:-1])} on {image.device}, "
            f"got {out.dtype} {tuple(out.shape)} on {out.device}"
        )
    elif not out.is_contiguous():
        raise ValueError("img2gray: out must be contiguous")
    ops.img2gray(image, out)
    return out
