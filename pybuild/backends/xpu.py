"""XPU: Intel GPUs through SYCL. Named, sorted and parsed; this farm builds it on no host yet."""

from __future__ import annotations

from .base import BaseBackend


class Xpu(BaseBackend):
    device_module = "xpu"
