"""CUDA's version facts, from the ``cuda`` table of ``backends.json``: the toolkits a matrix may list,
the compute capabilities each knows, the defaults, the CUDA release of PyPI's torch wheels; and the
checks of a list of capabilities."""

from __future__ import annotations

import difflib
import re

from ..errors import UsageError
from .base import builtin_data

_DATA = builtin_data()["cuda"]
#: Every CUDA toolkit a matrix may list (torch has published wheels for it).
KNOWN_CUDA: tuple[str, ...] = tuple(_DATA["toolkits"])
#: The compute capabilities each toolkit release can target (nvcc --list-gpu-arch), where pybuild checks them.
CUDA_CAPABILITIES: dict[str, tuple[str, ...]] = {v: tuple(c) for v, c in _DATA["toolkits"].items() if c is not None}
ALL_CUDA_CAPABILITIES = tuple(
    sorted({c for caps in CUDA_CAPABILITIES.values() for c in caps}, key=lambda c: (float(c.rstrip("af")), c))
)
#: Built when a kernel names no capabilities: the datacenter and consumer GPUs in use today.
DEFAULT_CUDA_CAPABILITIES: tuple[str, ...] = tuple(_DATA["default-capabilities"])
#: The CUDA release of each torch minor's wheels on PyPI (PyPI has no other CUDA release, and no CPU
#: build of these on Linux).
PYPI_TORCH_CUDA: dict[str, str] = dict(_DATA["pypi-torch"])


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
