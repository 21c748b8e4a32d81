"""Before a build starts: can this toolchain build the variant, and does the farm provide what the
kernel depends on? Each refusal is one line naming what to install or change."""

from __future__ import annotations

from . import backends
from .errors import ToolchainError
from .host import Toolchain
from .manifest import Manifest
from .variants import Variant


def check_variant_buildable(variant: Variant, toolchain: Toolchain) -> None:
    """The toolchain's torch (or tvm-ffi) and backend build ``variant``; else one line saying what to install."""
    info = toolchain.torch
    if variant.tvm_ffi:
        from .host import tvm_ffi_version

        here = tvm_ffi_version()
        if here != variant.torch:
            found = f"tvm-ffi {here}" if here else "no tvm-ffi"
            want = variant.torch or ""
            raise ToolchainError(
                f"variant {variant.name} needs tvm-ffi {want} (pip install "
                f"'apache-tvm-ffi>={want},<{want[:-1]}{int(want[-1]) + 1}'); "
                f"this Python has {found}"
            )
    elif variant.stable_abi:  # any torch from that version on builds it
        if tuple(int(x) for x in info.major_minor.split(".")) < variant.torch_tuple:
            msg = (
                f"variant {variant.name} needs torch {variant.torch} or later, but {toolchain.python} has "
                f"torch {info.version}"
            )
            raise ToolchainError(msg)
    elif variant.torch != info.major_minor:
        msg = f"variant {variant.name} needs torch {variant.torch}, but {toolchain.python} has torch {info.version}"
        raise ToolchainError(msg)
    why = backends.get(variant.backend).unbuildable(variant, toolchain)
    if why is not None:
        raise ToolchainError(why)


#: `depends` this farm provides to a build: torch itself (the farm's own `cutlass` and `cub` names
#: come with the CUDA toolkit or the kernel). Upstream's pinned CUTLASS, SYCL-TLA and metal-cpp are not.
PROVIDED_DEPENDS = ("torch", "cutlass", "cub")


def check_depends(manifest: Manifest, variant: Variant) -> None:
    """Every `depends` of the kernels ``variant`` compiles is one this farm provides."""
    for k in manifest.kernels_for(variant):
        missing = [d for d in k.depends if d not in PROVIDED_DEPENDS]
        if missing:
            msg = (
                f"{manifest.path}: [kernel.{k.name}] depends on {', '.join(missing)}, which this farm does not "
                f"provide to a build, so {variant.name} cannot be built here; vendor the headers into the kernel "
                "folder and list them in `include` instead"
            )
            raise ToolchainError(msg)
