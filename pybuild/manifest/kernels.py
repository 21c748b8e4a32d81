"""The ``[kernel.<name>]`` sections: one type per backend, tagged by ``backend``.

Each type declares its TOML keys as fields (:func:`~pybuild.manifest.schema.key`): the schema of
every edition and the conversion into the model read those declarations, so a key added here is
accepted, typed, converted and refused on other backends' sections without another edit. A key of
one backend in another's section is refused with the backend it applies to.

A backend names its kernel type with :func:`kernel_type`; a new backend adds its type with
:func:`register_kernel_type`.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from .cuda import unknown_cuda_capability
from .reader import COMPILED_SUFFIXES, Reader
from .schema import Kind, Table, declared_keys, fields_table, key

if TYPE_CHECKING:
    from ..variants import Variant

ROCM_ARCH_RE = re.compile(r"^gfx[0-9a-f]{2,4}(:[a-z]+[+-])*$", re.ASCII)


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


@dataclass(frozen=True)
class KernelSpec:
    """One ``[kernel.<name>]`` section; the keys every backend takes."""

    backend: ClassVar[str] = ""
    #: sources compiled on their own that only this backend's sections take (ROCm's `.hip`)
    own_suffixes: ClassVar[frozenset[str]] = frozenset()
    name: str
    depends: tuple[str, ...] = key(
        "depends",
        "str_list",
        doc="libraries the section links: `torch`, and upstream's pinned CUTLASS, SYCL-TLA, metal-cpp names",
    )
    src: tuple[str, ...] = key(
        "src", "str_list", path="file", doc="its sources and headers, relative to the kernel folder"
    )
    include: tuple[str, ...] = key("include", "str_list", path="dir", doc="include folders for its sources")
    cxx_flags: tuple[str, ...] = key("cxx-flags", "str_list", language="CXX,OBJCXX", doc="flags for its C++ sources")

    @property
    def compile_options(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(CMake languages, flags) for every flag key of this type that lists flags (fields declared
        with ``language``), in declaration order: what the generated project passes per source language."""
        return tuple(
            (f.metadata["language"], getattr(self, f.name))
            for f in dataclasses.fields(self)
            if "language" in f.metadata and getattr(self, f.name)
        )

    @property
    def compiled_src(self) -> tuple[str, ...]:
        """The sources compiled on their own (headers listed in `src` are only dependencies)."""
        compiled = COMPILED_SUFFIXES | self.own_suffixes
        return tuple(s for s in self.src if Path(s).suffix in compiled)

    def applies_to(self, variant: Variant) -> bool:
        """Whether this section is compiled into ``variant``: its backend only."""
        return variant.backend == self.backend

    @property
    def section_archs(self) -> tuple[str, ...]:
        """The device targets this section's own sources are compiled for, as it names them; empty
        when it names none and takes the build's whole list. The backend's CMake fragment narrows
        each build's list to these, source by source."""
        return ()

    def check(self, reader: Reader) -> None:
        """Checks of the values that only this backend knows (the kinds are checked already)."""

    @classmethod
    def read(cls, reader: Reader, root: Path, name: str) -> KernelSpec:
        """The section ``reader`` holds, as this type: every declared key read by its kind."""
        values: dict[str, Any] = {}
        for toml, f in declared_keys(cls).items():
            kind, path = f.metadata["kind"], f.metadata.get("path")
            if kind == "version":
                values[f.name] = reader.version(toml, f.metadata.get("example", "2.12"))
            elif path:
                values[f.name] = reader.paths(root, toml, must_be_dir=path == "dir", suffixes=cls.own_suffixes)
            elif "language" in f.metadata:
                values[f.name] = reader.flags(toml)
            else:
                values[f.name] = reader.str_list(toml)
        spec = cls(name=name, **values)
        spec.check(reader)
        return spec


@dataclass(frozen=True)
class CpuKernel(KernelSpec):
    backend: ClassVar[str] = "cpu"


@dataclass(frozen=True)
class MetalKernel(KernelSpec):
    backend: ClassVar[str] = "metal"


@dataclass(frozen=True)
class CudaKernel(KernelSpec):
    backend: ClassVar[str] = "cuda"
    cuda_capabilities: tuple[str, ...] = key(
        "cuda-capabilities",
        "str_list",
        farm=True,
        doc='compute capabilities to build, e.g. ["8.0", "9.0a"] (default: 8.0 8.6 8.9 9.0 10.0 12.0, '
        "each toolkit keeping those it knows)",
    )
    cuda_flags: tuple[str, ...] = key("cuda-flags", "str_list", farm=True, language="CUDA", doc="flags for nvcc")
    #: compiled only into CUDA variants of at least this toolkit
    cuda_minver: tuple[int, int] | None = key(
        "cuda-minver", "version", default=None, example="12.8", doc="compiled only with CUDA toolkits from this one on"
    )

    def applies_to(self, variant: Variant) -> bool:
        """Its backend only, and only CUDA toolkits from `cuda-minver` on."""
        if variant.backend != self.backend:
            return False
        if self.cuda_minver and variant.backend_version:
            return _version_tuple(variant.backend_version) >= self.cuda_minver
        return True

    @property
    def section_archs(self) -> tuple[str, ...]:
        return tuple(c for c in self.cuda_capabilities if c not in self.unknown_capabilities)

    @property
    def unknown_capabilities(self) -> tuple[str, ...]:
        """The capabilities it names that no supported CUDA toolkit knows: dropped from every build, as
        upstream intersects a section's list with each toolkit's."""
        return tuple(c for c in self.cuda_capabilities if unknown_cuda_capability(c))

    def check(self, reader: Reader) -> None:
        unknown = self.unknown_capabilities
        if unknown and len(unknown) == len(self.cuda_capabilities):  # upstream: "empty set of capabilities"
            reader.fail(
                f"`cuda-capabilities` in [{reader.section}] has {unknown[0]!r}, which no supported CUDA toolkit "
                f"knows, and no capability a toolkit knows: that leaves an empty set of capabilities; "
                f"{unknown_cuda_capability(unknown[0])}"
            )


@dataclass(frozen=True)
class RocmKernel(KernelSpec):
    backend: ClassVar[str] = "rocm"
    own_suffixes: ClassVar[frozenset[str]] = frozenset({".hip"})
    rocm_archs: tuple[str, ...] = key("rocm-archs", "str_list", farm=True, doc='AMD GPU targets, e.g. ["gfx942"]')
    hip_flags: tuple[str, ...] = key("hip-flags", "str_list", language="HIP", doc="flags for hipcc")

    def check(self, reader: Reader) -> None:
        for a in self.rocm_archs:
            if not ROCM_ARCH_RE.fullmatch(a):
                reader.fail(
                    f"`rocm-archs` in [{reader.section}] has {a!r}, not an AMD GPU target; use names like "
                    '"gfx90a", "gfx942" or "gfx1100"'
                )


@dataclass(frozen=True)
class XpuKernel(KernelSpec):
    backend: ClassVar[str] = "xpu"
    sycl_flags: tuple[str, ...] = key("sycl-flags", "str_list", language="CXX", doc="flags for the SYCL compiler")


#: backend name -> its kernel section type, in the order the editions list them.
KERNEL_TYPES: dict[str, type[KernelSpec]] = {
    t.backend: t for t in (CpuKernel, CudaKernel, MetalKernel, RocmKernel, XpuKernel)
}

K = TypeVar("K", bound=type[KernelSpec])


def register_kernel_type(cls: K) -> K:
    """Add the kernel section type of a new backend (``cls.backend`` names it); usable as a decorator."""
    KERNEL_TYPES[cls.backend] = cls
    return cls


def kernel_type(backend: str) -> type[KernelSpec]:
    """The kernel section type of ``backend`` (KeyError for a backend without compiled kernels)."""
    return KERNEL_TYPES[backend]


def own_keys(cls: type[KernelSpec]) -> tuple[str, ...]:
    """The keys kernel type ``cls`` takes beyond those of every backend."""
    common = declared_keys(KernelSpec)
    return tuple(k for k in declared_keys(cls) if k not in common)


def owner_of(toml: str) -> str | None:
    """The backend whose kernel type declares the key ``toml`` (None: every backend's, or none's)."""
    owners = [b for b, t in KERNEL_TYPES.items() if toml in declared_keys(t)]
    return owners[0] if len(owners) == 1 else None


def foreign_key_message(toml: str, section: str, backend: str) -> str | None:
    """Why ``toml`` does not belong in the [kernel.*] ``section`` of ``backend``: it applies to another backend."""
    owner = owner_of(toml)
    if owner is None or owner == backend:
        return None
    return f'`{toml}` in [{section}] only applies to backend "{owner}" (this one is {backend!r})'


def kernel_tables(depends_required: bool, farm: bool = False) -> dict[str, Table]:
    """The `[kernel.*]` schema per backend, derived from the kernel types. The farm's own format takes
    one key set for every backend (its keys marked ``farm``), refused per backend when converted."""
    required = ("backend", "src", *(("depends",) if depends_required else ()))
    backend: dict[str, Kind] = {"backend": "str"}
    if farm:
        keys: dict[str, Kind] = {**backend, **{k: f.metadata["kind"] for k, f in declared_keys(KernelSpec).items()}}
        for t in KERNEL_TYPES.values():
            keys.update({k: f.metadata["kind"] for k, f in declared_keys(t).items() if f.metadata.get("farm")})
        common = Table(keys, required=required)
        return {b: common for b in KERNEL_TYPES}
    out = {}
    for b, t in KERNEL_TYPES.items():
        others = {k: f'it only applies to backend "{o}"' for k in _all_keys() if (o := owner_of(k)) not in (None, b)}
        out[b] = fields_table(t, backend, required, elsewhere=others)
    return out


def _all_keys() -> set[str]:
    return {k for t in KERNEL_TYPES.values() for k in declared_keys(t)}
