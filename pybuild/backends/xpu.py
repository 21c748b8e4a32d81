"""XPU: Intel GPUs through SYCL. Named, sorted and parsed; this farm builds it on no host yet."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..sections.kernel import KernelSpec
from ..sections.keys import key
from .base import BaseBackend


@dataclass(frozen=True)
class XpuKernel(KernelSpec):
    """A ``[kernel.*]`` section of backend "xpu": its SYCL compiler flags."""

    backend: ClassVar[str] = "xpu"
    sycl_flags: tuple[str, ...] = key("sycl-flags", "str_list", language="CXX", doc="flags for the SYCL compiler")


class Xpu(BaseBackend):
    kernel_type = XpuKernel
    device_module = "xpu"
