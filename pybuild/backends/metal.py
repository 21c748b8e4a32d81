"""Metal: Apple GPUs, on darwin only. Named, sorted and parsed; this farm builds it on no host yet."""

from __future__ import annotations

from .base import BaseBackend


class Metal(BaseBackend):
    device_module = "mps"
