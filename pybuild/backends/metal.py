"""Metal: Apple GPUs, on darwin only. Named, sorted and parsed; this farm builds it on no host yet."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..sections.kernel import KernelSpec
from .base import BaseBackend


@dataclass(frozen=True)
class MetalKernel(KernelSpec):
    """A ``[kernel.*]`` section of backend "metal": the keys every backend takes."""

    backend: ClassVar[str] = "metal"


class Metal(BaseBackend):
    kernel_type = MetalKernel
    device_module = "mps"
