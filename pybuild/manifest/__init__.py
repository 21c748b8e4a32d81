"""The kernel manifest, ``build.toml``: its schema declared per edition and per backend, converted into
one frozen :class:`Manifest`.

- :mod:`.kernels`: the ``[kernel.*]`` type of each backend, asked of the registry (each backend
  declares its own in ``pybuild/backends/``), and the schema tables derived from them.
- :mod:`.editions`: one module per edition (``v5``, ``v4``, ``v3``, ``farm``) and their detection.
- :mod:`.convert`, :mod:`.load`: document -> model; :mod:`.model`: the model and the variant rule.
- :mod:`.lock`: the variants each kernel builds, written for Nix; :mod:`.migrate`: older editions
  rewritten as edition 5.
"""

from __future__ import annotations

from ..sections.kernel import KernelSpec
from ..sections.reader import COMPILED_SUFFIXES, SOURCE_SUFFIXES
from .convert import KERNEL_SECTION_RE, PYEXT_RE, farm_depends_fix
from .editions import CURRENT_EDITION, FARM_DEPENDS, KNOWN_DEPENDS, UPSTREAM_DEPENDS, Edition, detect, edition_label
from .kernels import kernel_type, kernel_types
from .load import duplicate_name_message, load_manifest, loader_python_depends, parse_manifest
from .model import BUILT_SUFFIXES, DEFAULT_PYEXT, NAME_RULE, Manifest, is_kernel_name

__all__ = [
    "BUILT_SUFFIXES",
    "COMPILED_SUFFIXES",
    "CURRENT_EDITION",
    "DEFAULT_PYEXT",
    "FARM_DEPENDS",
    "KERNEL_SECTION_RE",
    "KNOWN_DEPENDS",
    "NAME_RULE",
    "PYEXT_RE",
    "SOURCE_SUFFIXES",
    "UPSTREAM_DEPENDS",
    "Edition",
    "KernelSpec",
    "Manifest",
    "detect",
    "duplicate_name_message",
    "edition_label",
    "farm_depends_fix",
    "is_kernel_name",
    "kernel_type",
    "kernel_types",
    "load_manifest",
    "loader_python_depends",
    "parse_manifest",
]
