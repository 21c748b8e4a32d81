"""Variants within this machine's reach beyond its own Python's torch: those a per-variant environment
builds here (torch, nvcc, CMake and ninja from the package index).

Plain ``build`` builds a kernel's host variants; a compiled kernel with none (the guide's CUDA-only
img2gray on a machine whose torch is a CPU build) gets the variants of this machine's torch release
that an environment builds instead, so the default always builds something it can. When nothing
at all is built, :func:`next_command` names the one command that would build something.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from packaging.version import InvalidVersion, Version

from . import backends
from .envplan import EnvPlan, HostFacts, IndexConfig, env_torch, plan_env
from .host import tvm_ffi_version
from .manifest import Manifest
from .variants import Variant


def env_variants(
    manifest: Manifest,
    matrix_variants: Sequence[Variant],
    torch: str,
    config: IndexConfig,
    host: HostFacts,
) -> list[tuple[Variant, EnvPlan]]:
    """``manifest``'s matrix variants built with torch ``torch`` ("2.13") on this system that an
    environment builds here, each with its plan: one per backend, the one that uses this machine's
    nvcc first, else the newest backend release. Pure."""
    if manifest.noarch:
        return []
    by_backend: dict[str, list[tuple[Variant, EnvPlan]]] = {}
    for variant in manifest.variants(list(matrix_variants)):
        # a tvm-ffi kernel builds against this Python's tvm-ffi, which an environment does not hold
        if variant.system != host.system or env_torch(variant) != torch or variant.tvm_ffi:
            continue
        plan = plan_env(variant, config, host)
        if isinstance(plan, EnvPlan):
            by_backend.setdefault(variant.backend, []).append((variant, plan))
    chosen = []
    for planned in by_backend.values():
        planned.sort(key=lambda vp: (vp[1].nvcc is not None, _release(vp[0].backend_version)))
        chosen.append(planned[-1])
    return chosen


def next_command(
    manifests: Sequence[Manifest], matrix_variants: Sequence[Variant], config: IndexConfig, host: HostFacts
) -> str:
    """The one command that builds something for ``manifests`` here: ``--variant`` of the first variant
    an environment builds (one needing no device toolkit first, of the newest torch), else ``--all``;
    for a tvm-ffi kernel where this Python has no tvm-ffi, installing it."""
    for manifest in manifests:
        if manifest.framework == "tvm-ffi":
            if tvm_ffi_version() is None:
                return "pip install 'apache-tvm-ffi>=0.1.9,<0.2'"
            continue
        candidates = [
            v
            for v in manifest.variants(list(matrix_variants))
            if v.system == host.system and isinstance(plan_env(v, config, host), EnvPlan)
        ]
        candidates.sort(key=lambda v: (_needs_device(v), [-x for x in _release(env_torch(v))]))
        if candidates:
            return f"python -m pybuild build {_shown(manifest.root)} --variant {candidates[0].name}"
    return f"python -m pybuild build {' '.join(_shown(m.root) for m in manifests)} --all"


def _needs_device(variant: Variant) -> bool:
    """Whether ``variant``'s backend runs on a device (and so needs its toolkit in the environment)."""
    return backends.get(variant.backend).device_module is not None


def _release(version: str | None) -> tuple[int, ...]:
    """A release as numbers, "13.0" -> (13, 0); None or an odd string gives () and sorts first."""
    try:
        return Version(version or "").release
    except InvalidVersion:
        return ()


def _shown(path: Path) -> str:
    """``path`` as the user may type it here: relative to the working folder when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve())) or "."
    except ValueError:
        return str(path)
