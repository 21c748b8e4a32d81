"""The Python packages behind a kernel's `python-depends` names (``einops``, ``nvidia-cutlass-dsl``,
``tvm-ffi``), from the ``kernels`` loader's own table (``kernels/python_depends.json``), found
without importing the loader (importing it takes a second of huggingface_hub imports)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any


def loader_table() -> dict[str, Any] | None:
    """The installed loader's ``python_depends.json`` (``general`` and ``backends``); None without it."""
    try:
        spec = importlib.util.find_spec("kernels")
        if spec is None or not spec.submodule_search_locations:
            return None
        folder = Path(next(iter(spec.submodule_search_locations)))
        table = json.loads((folder / "python_depends.json").read_text())
    except (ImportError, OSError, ValueError, AttributeError, TypeError):
        return None
    return table if isinstance(table, dict) else None


def python_requirements(names: tuple[str, ...] | list[str], backend: str) -> tuple[str, ...]:
    """The pip requirements of ``names`` for variants of ``backend`` (a name the table lacks, or every
    name where the loader is not installed, is taken as a package name)."""
    table = loader_table() or {}
    out: list[str] = []
    for name in names:
        entry = table.get("general", {}).get(name) or table.get("backends", {}).get(backend, {}).get(name)
        pkgs = [p["pkg"] for p in entry.get("python", [])] if isinstance(entry, dict) else [name]
        out += [p for p in pkgs if p not in out]
    return tuple(out)
