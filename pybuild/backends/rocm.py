"""ROCm: AMD GPUs through HIP. Named, sorted and parsed; this farm builds it on no host yet."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import BaseBackend

if TYPE_CHECKING:
    from ..manifest import Manifest


class Rocm(BaseBackend):
    device_module = "cuda"  # a ROCm build of torch answers through torch.cuda

    def device_available(self) -> bool:
        import torch

        return torch.version.hip is not None and torch.cuda.is_available()

    def metadata_archs(self, manifest: Manifest, archs: tuple[str, ...]) -> tuple[str, ...]:
        return archs or manifest.noarch_rocm_archs
