"""The pytest plugin of ``pybuild test`` and ``pybuild shell`` (loaded through ``PYTEST_ADDOPTS``):
registers the ``kernels_ci`` marker, and resolves the kernel's package to the built variant.

pytest puts a test package's root folder first on ``sys.path`` (a kernel's ``tests/__init__.py``
makes that the kernel's root), where a source folder named like the package (``rotary/`` beside
``tests/``) would shadow the build: an import finder placed first resolves the packages that
``PYBUILD_TEST_PACKAGES`` names (``{"rotary": "<kernel>/build/<variant>"}``) in their build folder.
Standard library only: it runs in the variant's environment.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

PACKAGES_VAR = "PYBUILD_TEST_PACKAGES"


class BuiltFirst(importlib.abc.MetaPathFinder):
    """Finds each named top-level package in its build folder only (its submodules follow its ``__path__``)."""

    def __init__(self, packages: dict[str, str]):
        self.packages = packages

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        folder = self.packages.get(fullname)
        if folder is None:
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, [folder])


def install(environ: Mapping[str, str] = os.environ) -> None:
    """Put a :class:`BuiltFirst` for the packages ``environ`` names first on ``sys.meta_path`` (once),
    dropping a module of that name imported from elsewhere before."""
    try:
        packages = json.loads(environ.get(PACKAGES_VAR) or "{}")
    except ValueError:
        return
    if not isinstance(packages, dict) or any(isinstance(f, BuiltFirst) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, BuiltFirst({str(k): str(v) for k, v in packages.items()}))
    for name, folder in packages.items():
        module = sys.modules.get(name)
        origin = getattr(module, "__file__", None) or ""
        if module is not None and not os.path.abspath(origin).startswith(os.path.abspath(folder) + os.sep):
            for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
                del sys.modules[loaded]


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "kernels_ci: a test kernel-builder's CI runs (`pybuild test --ci`: only these)")
    install()
