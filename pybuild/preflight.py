"""Before a build starts: can this toolchain build the variant, and does the farm provide what the
kernel depends on? Each refusal is one line naming what to install or change."""

from __future__ import annotations

from collections.abc import Callable

from packaging.version import Version

from . import backends
from .deps import Pin, Resolved, resolve
from .errors import ToolchainError
from .generate import manifest_pins
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
        if Version(info.major_minor).release < variant.torch_tuple:
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


def variant_pins(manifest: Manifest, variant: Variant) -> tuple[Pin, ...]:
    """The pinned dependencies the kernel sections compiled into ``variant`` name, once each, in
    manifest order: those of ``variant``'s backend (a CUTLASS pin is for CUDA variants only). Other
    `depends` names need nothing fetched: torch, and the farm's own `cutlass` and `cub`."""
    named = {d for k in manifest.kernels_for(variant) for d in k.depends}
    return tuple(p for p in manifest_pins(manifest) if p.name in named and p.backend == variant.backend)


def resolve_depends(
    manifest: Manifest, variant: Variant, report: Callable[[str], None] | None = None
) -> tuple[Resolved, ...]:
    """The header tree of every pinned dependency ``variant`` compiles against, fetched if needed;
    else one line naming the dependency and how to provide it."""
    return tuple(resolve(pin, report) for pin in variant_pins(manifest, variant))
