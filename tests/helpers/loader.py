"""The real `kernels` loader for tests that need it."""

from __future__ import annotations

from types import ModuleType

import pytest


def require_kernels_loader() -> ModuleType:
    """The installed `kernels` package, or skip the calling test module. The repo's own `kernels/`
    folder (the farm's kernels) imports as a namespace package when the repo root is on sys.path,
    so a plain importorskip would pass on a machine without the loader."""
    module = pytest.importorskip("kernels")
    if not hasattr(module, "get_local_kernel"):
        pytest.skip("the kernels package is not installed (pip install kernels)", allow_module_level=True)
    return module
