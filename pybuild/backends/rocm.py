"""ROCm: AMD GPUs through HIP. Named, sorted and parsed; this farm builds it on no host yet."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from ..sections.kernel import KernelSpec
from ..sections.keys import key
from ..sections.reader import Reader
from .base import BaseBackend, ManifestView

ROCM_ARCH_RE = re.compile(r"^gfx[0-9a-f]{2,4}(:[a-z]+[+-])*$", re.ASCII)


@dataclass(frozen=True)
class RocmKernel(KernelSpec):
    """A ``[kernel.*]`` section of backend "rocm": its GPU targets, hipcc flags and `.hip` sources."""

    backend: ClassVar[str] = "rocm"
    own_suffixes: ClassVar[frozenset[str]] = frozenset({".hip"})
    noarch_archs_key: ClassVar[str | None] = "rocm_archs"
    rocm_archs: tuple[str, ...] = key("rocm-archs", "str_list", farm=True, doc='AMD GPU targets, e.g. ["gfx942"]')
    hip_flags: tuple[str, ...] = key("hip-flags", "str_list", language="HIP", doc="flags for hipcc")

    def check(self, reader: Reader) -> None:
        for a in self.rocm_archs:
            if not ROCM_ARCH_RE.fullmatch(a):
                reader.fail(
                    f"`rocm-archs` in [{reader.section}] has {a!r}, not an AMD GPU target; use names like "
                    '"gfx90a", "gfx942" or "gfx1100"'
                )


class Rocm(BaseBackend):
    kernel_type = RocmKernel
    torch_toolkit_key: str | None = "hip"  # torch.version.hip
    device_module = "cuda"  # a ROCm build of torch answers through torch.cuda

    def device_available(self) -> bool:
        import torch

        return torch.version.hip is not None and torch.cuda.is_available()

    def metadata_archs(self, manifest: ManifestView, archs: tuple[str, ...]) -> tuple[str, ...]:
        return archs or manifest.noarch_archs(self.name)
