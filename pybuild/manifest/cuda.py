"""CUDA compute capabilities: which each toolkit knows, the defaults, and checks of a list of them."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ManifestError, UsageError

if TYPE_CHECKING:
    from .model import Manifest

#: CUDA compute capabilities each toolkit release can target (nvcc --list-gpu-arch).
CUDA_CAPABILITIES: dict[str, tuple[str, ...]] = {
    "12.6": ("5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "9.0a"),
    "12.8": (
        "5.0",
        "5.2",
        "5.3",
        "6.0",
        "6.1",
        "6.2",
        "7.0",
        "7.2",
        "7.5",
        "8.0",
        "8.6",
        "8.7",
        "8.9",
        "9.0",
        "9.0a",
        "10.0",
        "10.0a",
        "10.1",
        "10.1a",
        "12.0",
        "12.0a",
    ),
    "13.0": (
        "7.5",
        "8.0",
        "8.6",
        "8.7",
        "8.8",
        "8.9",
        "9.0",
        "9.0a",
        "10.0",
        "10.0a",
        "10.0f",
        "10.3",
        "10.3a",
        "10.3f",
        "11.0",
        "11.0a",
        "11.0f",
        "12.0",
        "12.0a",
        "12.0f",
        "12.1",
        "12.1a",
        "12.1f",
    ),
}
ALL_CUDA_CAPABILITIES = tuple(
    sorted({c for caps in CUDA_CAPABILITIES.values() for c in caps}, key=lambda c: (float(c.rstrip("af")), c))
)
#: Built when a kernel names no capabilities: the datacenter and consumer GPUs in use today.
DEFAULT_CUDA_CAPABILITIES = ("8.0", "8.6", "8.9", "9.0", "10.0", "12.0")


def unknown_cuda_capability(cap: str) -> str | None:
    """Why ``cap`` is not a CUDA capability a supported toolkit knows (None if it is one)."""
    if cap in ALL_CUDA_CAPABILITIES:
        return None
    close = difflib.get_close_matches(cap, ALL_CUDA_CAPABILITIES, n=1)
    return f"did you mean {close[0]!r}?" if close else f"known: {', '.join(ALL_CUDA_CAPABILITIES)}"


def check_cuda_archs(text: str, where: str) -> tuple[str, ...]:
    """CUDA capabilities given as text ("9.0", "8.0,9.0", "8.0;9.0") on the command line or in the
    environment (``where`` names which), checked like build.toml's ``cuda-capabilities``."""
    archs = tuple(a for a in re.split(r"[;, ]+", text.strip()) if a)
    if not archs:
        raise UsageError(f"{where}: no CUDA capability given; e.g. 9.0 or 8.0,9.0")
    for a in archs:
        hint = unknown_cuda_capability(a)
        if hint:
            raise UsageError(f"{where}: {a!r} is not a CUDA capability; {hint}")
    return archs


def cuda_capabilities_for(manifest: Manifest, cuda_version: str, section_path: Path | None = None) -> tuple[str, ...]:
    """The capabilities to build for one CUDA toolkit: those the kernel names (or the defaults) that
    the toolkit knows, as upstream intersects them. An empty intersection is an error."""
    known = CUDA_CAPABILITIES.get(cuda_version)
    caps = manifest.cuda_capabilities()
    if known is None:
        return caps
    kept = tuple(c for c in caps if c in known)
    if not kept:
        msg = (
            f"{section_path or manifest.path}: `cuda-capabilities` {list(caps)} leave an empty set of capabilities "
            f"for CUDA {cuda_version} (it knows {', '.join(known)}); add one it knows or narrow the variants "
            "([general.cuda] minver/maxver)"
        )
        raise ManifestError(msg)
    return kept
