"""The ``[kernel.<name>]`` section every backend takes: :class:`KernelSpec`, the keys common to all.

Each backend with compiled kernels subclasses it in its own module (``pybuild.backends.<name>``) and
declares its further TOML keys as fields (:func:`~.keys.key`): the schema of every edition and the
conversion into the model read those declarations, so a key added there is accepted, typed,
converted and refused on other backends' sections without another edit.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from .keys import declared_keys, key
from .reader import COMPILED_SUFFIXES, Reader


class Target(Protocol):
    """What a section asks of a variant to decide whether it is compiled into it."""

    @property
    def backend(self) -> str: ...

    @property
    def backend_version(self) -> str | None: ...


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

    def applies_to(self, variant: Target) -> bool:
        """Whether this section is compiled into ``variant``: its backend only."""
        return variant.backend == self.backend

    @property
    def section_archs(self) -> tuple[str, ...]:
        """The device targets this section's own sources are compiled for, as it names them; empty
        when it names none and takes the build's whole list. The backend's CMake fragment narrows
        each build's list to these, source by source."""
        return ()

    @property
    def cmake_condition(self) -> str | None:
        """A CMake condition the generated project adds to this section's `if(PYBUILD_BACKEND ...)`,
        made of the section's own values (None: the backend alone decides)."""
        return None

    @property
    def scope_note(self) -> str:
        """What the comment above the section in CMakeLists.txt adds to "compiled into <backend>
        variants only" (its :attr:`cmake_condition` in words)."""
        return ""

    def doubts(self, path: Path) -> tuple[str, ...]:
        """One line per value of this section that upstream accepts but whose result is doubtful."""
        return ()

    #: The key of a ``[torch-noarch]`` table that names this backend's device targets for a
    #: pure-Python kernel's metadata (upstream's spelling, ``cuda_capabilities``; None: none).
    noarch_archs_key: ClassVar[str | None] = None

    @classmethod
    def check_noarch_archs(cls, reader: Reader, archs: tuple[str, ...]) -> None:
        """Checks of the device targets a ``[torch-noarch]`` table names for this backend."""

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


def own_keys(cls: type[KernelSpec]) -> tuple[str, ...]:
    """The keys kernel type ``cls`` takes beyond those of every backend."""
    common = declared_keys(KernelSpec)
    return tuple(k for k in declared_keys(cls) if k not in common)
