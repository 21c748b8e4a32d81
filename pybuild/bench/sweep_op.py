"""One op of a kernel as ``bench --sweep`` sees it: what a kernel's ``sweep_ops`` returns, read by the
sweep (:mod:`.sweep`) and its compile workers (:mod:`.compile_workers`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .sweep_shapes import Shape


@dataclass
class SweepOp:
    """One op of a kernel for the sweep. ``make(shape, seed)`` returns fresh arguments on the device."""

    kernel: str
    op: str
    kind: str  # "rows": [rows, last]; "image": [H, W] or [N, H, W] uint8 RGB
    dtypes: tuple[str, ...]
    make: Callable[[Shape, int], tuple[Any, ...]]
    ours: Callable[..., Any]
    eager: Callable[..., Any]
    bytes_of: Callable[[int, int, str], int] | None = None  # rows ops: bytes one call moves
    bytes_per_pixel: int = 4  # image ops
    step: int = 1  # rows ops: the last dimension is a multiple of this
    tol: dict[str, tuple[float, float]] = field(default_factory=dict)  # dtype -> (atol, rtol)
    exact: bool = False
