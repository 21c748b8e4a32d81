"""CPU: built wherever torch is installed, imported by any torch of its version."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import BaseBackend

if TYPE_CHECKING:
    from ..host import Toolchain, TorchInfo
    from ..variants import Variant


class Cpu(BaseBackend):
    env_buildable = True

    def host_versions(self, info: TorchInfo, *, require_toolchain: bool = True) -> tuple[str | None, ...]:
        return (None,)

    def unbuildable(self, variant: Variant, toolchain: Toolchain) -> str | None:
        return None

    def device_available(self) -> bool:
        return True

    def unimportable(self, variant: Variant, info: TorchInfo) -> str | None:
        return None
