"""CPU: built wherever torch is installed, imported by any torch of its version."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..sections.kernel import KernelSpec
from ..toolchain import Toolchain, TorchInfo
from .base import BaseBackend, VariantView


@dataclass(frozen=True)
class CpuKernel(KernelSpec):
    """A ``[kernel.*]`` section of backend "cpu": the keys every backend takes."""

    backend: ClassVar[str] = "cpu"


class Cpu(BaseBackend):
    kernel_type = CpuKernel
    env_buildable = True
    builds_with_any_torch = True  # only torch's CPU API, identical in every build of a release

    def host_versions(self, info: TorchInfo, *, require_toolchain: bool = True) -> tuple[str | None, ...]:
        return (None,)

    def unbuildable(self, variant: VariantView, toolchain: Toolchain) -> str | None:
        return None

    def device_available(self) -> bool:
        return True

    def unimportable(self, variant: VariantView, info: TorchInfo) -> str | None:
        return None
