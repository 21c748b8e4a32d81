"""The backends: one module each, one protocol (:class:`BackendType`), one registry.

The static facts (names, tags, versioned or not, ...) of the built-in backends live in
``backends.json`` beside this file, which ``nix/lib/backends.nix`` reads too; each backend's module
adds its behaviour (detection, toolchain checks, CMake arguments, ...) and its CMake fragment lives
in ``templates/backends/<name>.cmake.j2``. Everything else asks the registry::

    from pybuild import backends
    backends.get("cuda").tag("13.0")            # "cu130"
    backends.names()                            # ("cuda", "rocm", "cpu", "metal", "xpu")

A backend outside this package (a plugin, a test) joins with :func:`register`.
"""

from __future__ import annotations

import json
import re
from enum import Enum
from typing import Any, NoReturn

from .base import SECTIONS, BackendType, BaseBackend, Facts, ManifestView, Section, VariantView, builtin_facts
from .cpu import Cpu
from .cuda import Cuda
from .metal import Metal
from .noarch_only import Cann, Neuron, Tpu
from .rocm import Rocm
from .xpu import Xpu

__all__ = [
    "SECTIONS",
    "Backend",
    "BackendType",
    "BaseBackend",
    "Facts",
    "ManifestView",
    "Section",
    "VariantView",
    "all_backends",
    "facts_json",
    "get",
    "names",
    "noarch_names",
    "register",
    "tag_error",
    "unregister",
]


class Backend(str, Enum):
    """The built-in backends. Adding one here without its module is a mypy error in :func:`_builtin`."""

    CUDA = "cuda"
    ROCM = "rocm"
    CPU = "cpu"
    METAL = "metal"
    XPU = "xpu"
    NEURON = "neuron"
    TPU = "tpu"
    CANN = "cann"


def assert_never(value: NoReturn) -> NoReturn:  # typing.assert_never, which Python 3.10 lacks
    raise AssertionError(f"unhandled backend {value!r}")


def _builtin(backend: Backend, facts: Facts) -> BackendType:
    match backend:
        case Backend.CUDA:
            return Cuda(facts)
        case Backend.ROCM:
            return Rocm(facts)
        case Backend.CPU:
            return Cpu(facts)
        case Backend.METAL:
            return Metal(facts)
        case Backend.XPU:
            return Xpu(facts)
        case Backend.NEURON:
            return Neuron(facts)
        case Backend.TPU:
            return Tpu(facts)
        case Backend.CANN:
            return Cann(facts)
        case _:
            assert_never(backend)


def _load_builtins() -> dict[str, BackendType]:
    facts = builtin_facts()
    listed = [f.name for f in facts]
    if sorted(listed) != sorted(b.value for b in Backend):
        msg = f"backends.json lists {listed}, the Backend enum {[b.value for b in Backend]}; keep them the same"
        raise RuntimeError(msg)
    return {f.name: _builtin(Backend(f.name), f) for f in facts}


_registry: dict[str, BackendType] = _load_builtins()


def register(backend: BackendType) -> BackendType:
    """Add ``backend`` after the built-in ones (its name, tag and noarch name must be new)."""
    f = backend.facts
    for other in _registry.values():
        for attr in ("name", "tag", "noarch_name"):
            if getattr(other.facts, attr) == getattr(f, attr):
                msg = f"backend {f.name!r}: {attr.replace('_', '-')} {getattr(f, attr)!r} is {other.name}'s already"
                raise ValueError(msg)
    if f.os not in ("linux", "darwin"):
        raise ValueError(f"backend {f.name!r}: os must be linux or darwin, found {f.os!r}")
    # its known versions, and one of exactly tag-digits digits (the fewest its names may carry)
    sample = "1" * max(f.tag_digits - 1, 1) + ".0"
    for version in (*backend.known_versions, sample) if f.versioned else (None,):
        tag = backend.tag(version)
        err = tag_error(backend, version)
        if err is None and version is not None and backend.version_from_tag(tag) != version:
            err = f"tag {tag!r} reads back as version {backend.version_from_tag(tag)!r}, not {version}"
        if err:
            raise ValueError(f"backend {f.name!r}: {err}; fix its tag-digits, known_versions or tag()")
    _registry[f.name] = backend
    return backend


def tag_error(backend: BackendType, version: str | None) -> str | None:
    """Why a variant name cannot carry ``backend`` at ``version`` (its tag is not one of
    :meth:`~BackendType.tag_pattern`'s, so the name would not parse back); None: it can."""
    tag = backend.tag(version)
    if re.fullmatch(backend.tag_pattern(), tag, re.ASCII):
        return None
    what = f"{backend.facts.label} {version}" if version else backend.facts.label
    return f"{what} gives the tag {tag!r}, which variant names cannot carry (they take `{backend.tag_pattern()}`)"


def unregister(name: str) -> None:
    """Remove a backend :func:`register` added (the built-in ones stay)."""
    if name in {b.value for b in Backend}:
        raise ValueError(f"backend {name!r} is built in; it cannot be removed")
    _registry.pop(name, None)


def all_backends() -> tuple[BackendType, ...]:
    """Every backend, in matrix order (variants sort by torch, then this order)."""
    return tuple(_registry.values())


def get(name: str) -> BackendType:
    """The backend called ``name``; KeyError naming the known ones otherwise."""
    try:
        return _registry[name]
    except KeyError:
        raise KeyError(f"unknown backend {name!r}; known: {', '.join(_registry)}") from None


def names() -> tuple[str, ...]:
    """The backends of compiled kernels (matrix keys, `--backend` choices), in matrix order."""
    return tuple(b.name for b in _registry.values() if b.facts.compiled)


def noarch_names() -> tuple[str, ...]:
    """The backends of pure-Python kernels: every backend, in matrix order."""
    return tuple(_registry)


def rank(name: str) -> int:
    """Position of backend ``name`` in matrix order."""
    return list(_registry).index(name)


def by_noarch_name(noarch_name: str) -> BackendType | None:
    """The backend whose pure-Python variant is ``torch-<noarch_name>``."""
    return next((b for b in _registry.values() if b.facts.noarch_name == noarch_name), None)


def facts_json() -> dict[str, Any]:
    """Every registered backend's facts in the shape of ``backends.json`` (what Nix reads)."""
    return {"backends": [b.facts.to_json() for b in _registry.values()]}


def dumps_facts() -> str:
    return json.dumps(facts_json(), indent=2) + "\n"
