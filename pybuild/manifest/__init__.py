"""The kernel manifest, ``build.toml``: its schema declared per edition and per backend, converted into
one frozen :class:`Manifest`.

- :mod:`.kernels`: one ``[kernel.*]`` type per backend (``CudaKernel``, ``RocmKernel``, …), keys
  declared as fields; :func:`kernel_type` / :func:`register_kernel_type` for backends.
- :mod:`.editions`: one module per edition (``v5``, ``v4``, ``v3``, ``farm``) and their detection.
- :mod:`.convert`, :mod:`.load`: document -> model; :mod:`.model`: the model and the variant rule.
- :mod:`.lock`: the variants each kernel builds, written for Nix; :mod:`.migrate`: older editions
  rewritten as edition 5.
"""

from __future__ import annotations

from .convert import KERNEL_SECTION_RE, PYEXT_RE, farm_depends_fix
from .cuda import (
    ALL_CUDA_CAPABILITIES,
    CUDA_CAPABILITIES,
    DEFAULT_CUDA_CAPABILITIES,
    check_cuda_archs,
    cuda_capabilities_for,
)
from .editions import CURRENT_EDITION, FARM_DEPENDS, KNOWN_DEPENDS, UPSTREAM_DEPENDS, Edition, detect, edition_label
from .kernels import (
    KERNEL_TYPES,
    ROCM_ARCH_RE,
    CpuKernel,
    CudaKernel,
    KernelSpec,
    MetalKernel,
    RocmKernel,
    XpuKernel,
    kernel_type,
    register_kernel_type,
)
from .load import duplicate_name_message, load_manifest, loader_python_depends, parse_manifest
from .model import BUILT_SUFFIXES, DEFAULT_PYEXT, NAME_RE, NAME_RULE, Manifest
from .reader import COMPILED_SUFFIXES, SOURCE_SUFFIXES

__all__ = [
    "ALL_CUDA_CAPABILITIES",
    "BUILT_SUFFIXES",
    "COMPILED_SUFFIXES",
    "CUDA_CAPABILITIES",
    "CURRENT_EDITION",
    "DEFAULT_CUDA_CAPABILITIES",
    "DEFAULT_PYEXT",
    "FARM_DEPENDS",
    "KERNEL_SECTION_RE",
    "KERNEL_TYPES",
    "KNOWN_DEPENDS",
    "NAME_RE",
    "NAME_RULE",
    "PYEXT_RE",
    "ROCM_ARCH_RE",
    "SOURCE_SUFFIXES",
    "UPSTREAM_DEPENDS",
    "CpuKernel",
    "CudaKernel",
    "Edition",
    "KernelSpec",
    "Manifest",
    "MetalKernel",
    "RocmKernel",
    "XpuKernel",
    "check_cuda_archs",
    "cuda_capabilities_for",
    "detect",
    "duplicate_name_message",
    "edition_label",
    "farm_depends_fix",
    "kernel_type",
    "load_manifest",
    "loader_python_depends",
    "parse_manifest",
    "register_kernel_type",
]
