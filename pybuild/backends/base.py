"""What every backend is: its static facts (from ``backends.json``) and one protocol of behaviour.

:class:`BackendType` is the protocol the rest of pybuild talks to; :class:`BaseBackend` implements it
from the facts alone (a backend this machine cannot build, with no CMake fragment), so a backend
module overrides only what is special about it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

import jinja2

from ..sections.kernel import KernelSpec, own_keys
from ..toolchain import Toolchain, TorchInfo

#: The sections of a backend's CMake fragment (``templates/backends/<name>.cmake.j2``), each a jinja2
#: macro: ``cache`` (cache variables, at the top of CMakeLists.txt), ``helpers`` (functions, in
#: cmake/pybuild.cmake), ``configure`` (after torch is found: languages, toolkits), ``check`` (what
#: the torch found must offer), ``libraries`` (in ``pybuild_torch_libraries``: the torch libraries
#: ``_libs`` a variant links, given this backend's build of torch) and ``target`` (options of the
#: extension target).
Section = Literal["cache", "helpers", "configure", "check", "libraries", "target"]
SECTIONS: tuple[Section, ...] = ("cache", "helpers", "configure", "check", "libraries", "target")
_FACT_KEYS = ("name", "label", "compiled", "versioned", "tag", "tag-digits", "os", "noarch-name", "wheel-tag")


@dataclass(frozen=True)
class Facts:
    """A backend's static facts: one entry of ``backends.json`` (the keys there, snake_case here)."""

    name: str  # the build.toml and variants.json key: "cuda"
    label: str  # how messages write it: "CUDA"
    compiled: bool  # False: exists only as a pure-Python `torch-<noarch_name>` variant
    versioned: bool  # the matrix lists toolkit versions (["12.8"]) rather than `true`
    tag: str  # the backend part of a variant name ("cpu"), or its prefix when versioned ("cu")
    tag_digits: int  # the fewest digits after a versioned tag's prefix
    os: str  # "linux" or "darwin": the one kind of system it exists on
    noarch_name: str  # the pure-Python variant's name is torch-<noarch_name>
    wheel_tag: str | None  # PyTorch's wheels' local version, {version}/{nodots} = the toolkit version

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Facts:
        missing = [k for k in _FACT_KEYS if k not in data]
        unknown = [k for k in data if k not in _FACT_KEYS]
        if missing or unknown:
            msg = f"backend facts {dict(data)!r}: missing keys {missing}, unknown keys {unknown}; see backends.json"
            raise ValueError(msg)
        return cls(**{k.replace("-", "_"): data[k] for k in _FACT_KEYS})

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k.replace("-", "_")) for k in _FACT_KEYS}


def builtin_data() -> dict[str, Any]:
    """``backends.json`` as read: the facts of every built-in backend (``backends``) and the further
    facts of some (``cuda``: its toolkits and their capabilities)."""
    text = resources.files(__package__).joinpath("backends.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def builtin_facts() -> list[Facts]:
    """The facts of the built-in backends, in matrix order, from ``backends.json``."""
    return [Facts.from_json(entry) for entry in builtin_data()["backends"]]


class VariantView(Protocol):
    """What a backend reads of a variant (``pybuild.variants.Variant``, which names itself through the
    registry and so lies above it)."""

    @property
    def name(self) -> str: ...

    @property
    def backend(self) -> str: ...

    @property
    def backend_version(self) -> str | None: ...


class ManifestView(Protocol):
    """What a backend reads of a kernel's manifest (``pybuild.manifest.Manifest``, which asks the
    registry for the backends' section types and so lies above it)."""

    @property
    def path(self) -> Path: ...

    @property
    def kernels(self) -> tuple[KernelSpec, ...]: ...

    def noarch_archs(self, backend: str) -> tuple[str, ...]:
        """The device targets a pure-Python kernel's ``[torch-noarch]`` names for ``backend``."""
        ...


class BackendType(Protocol):
    """Everything backend-specific. One object per backend, kept by the registry in ``__init__``."""

    facts: Facts

    @property
    def name(self) -> str: ...

    def tag(self, version: str | None) -> str:
        """The backend part of a variant name: ``cu130`` for CUDA 13.0, ``cpu``; a versioned backend
        without a version (a pure-Python variant's) gives its name, ``cuda``."""

    def tag_pattern(self) -> str:
        """A regular expression matching exactly the tags :meth:`tag` makes."""

    def version_from_tag(self, tag: str) -> str | None:
        """The toolkit version a tag of :meth:`tag_pattern` names (``cu130`` -> ``13.0``)."""

    def wheel_tag(self, version: str | None) -> str | None:
        """The local version of PyTorch's wheels of this backend (``cu128``, ``rocm7.1``; None: none)."""

    def runs_on(self, system: str) -> bool:
        """Whether the backend exists on a Nix-style system (``x86_64-linux``)."""

    def host_versions(self, info: TorchInfo, *, require_toolchain: bool = True) -> tuple[str | None, ...]:
        """The backend versions this machine builds with torch ``info`` (``(None,)`` for an unversioned
        backend it builds, ``()`` for none)."""

    def find_compiler(self) -> Path | None:
        """This machine's device compiler of the backend (CUDA's nvcc; None: none, or it needs none)."""

    def unbuildable(self, variant: VariantView, toolchain: Toolchain) -> str | None:
        """Why ``toolchain`` cannot build ``variant`` of this backend (None: it can)."""

    def default_archs(self, manifest: ManifestView, version: str | None) -> tuple[str, ...]:
        """The device architectures ``manifest`` asks for with toolkit ``version`` (None: any)."""

    def build_archs(
        self, manifest: ManifestView, variant: VariantView, override: tuple[str, ...] | None
    ) -> tuple[str, ...]:
        """The device architectures a build of ``variant`` targets (``override``: from the command line)."""

    def cmake_args(
        self, manifest: ManifestView, variant: VariantView, toolchain: Toolchain, archs: tuple[str, ...]
    ) -> list[str]:
        """Extra CMake configure arguments (compilers); raises ToolchainError if the toolchain cannot."""

    def build_environ(self, archs: tuple[str, ...]) -> dict[str, str]:
        """Environment variables the configure and compile steps get."""

    def key_inputs(self, toolchain: Toolchain) -> dict[str, str | None]:
        """What else decides a build of this backend's variants, for its content key: the toolkit's
        version and the compiler flag variables its compiles read (by name)."""

    def toolkit_version(self, info: TorchInfo) -> str | None:
        """The toolkit version of torch ``info`` recorded in a build's metadata (None: none)."""

    @property
    def torch_toolkit_key(self) -> str | None:
        """The name under which torch's ``version.py`` reports this backend's toolkit (None: none)."""

    def metadata_archs(self, manifest: ManifestView, archs: tuple[str, ...]) -> tuple[str, ...]:
        """The ``backend.archs`` of metadata.json for a build targeting ``archs`` (a pure-Python
        variant builds none and declares the manifest's)."""

    def unimportable(self, variant: VariantView, info: TorchInfo) -> str | None:
        """Why a Python with torch ``info`` cannot import ``variant`` (None: it can try)."""

    @property
    def device_module(self) -> str | None:
        """The ``torch.<module>`` whose ``is_available()`` says a device is here (None: always)."""

    def device_available(self) -> bool:
        """Whether this process's torch runs this backend's kernels here (imports torch)."""

    @property
    def torch_device(self) -> str:
        """The torch device type its kernels run on (``cuda``, ``cpu``): what a kernel's tests pass."""

    @property
    def known_versions(self) -> tuple[str, ...]:
        """The toolkit versions a matrix may list (empty: any)."""

    @property
    def env_buildable(self) -> bool:
        """Whether pybuild's environments (``pybuild env``) build this backend's variants."""

    def pypi_torch_toolkit(self, torch: str) -> str | None:
        """The toolkit version of PyPI's Linux wheels of torch release ``torch`` when they are this
        backend's build (None: they are not, or pybuild does not know the release)."""

    def wheel_toolkit(self, version: str | None) -> str | None:
        """The toolkit release a torch wheel of this backend at ``version`` reports, which its build
        environment provides alongside (None: it needs none)."""

    @property
    def builds_with_any_torch(self) -> bool:
        """Whether its variants build against any build of their torch release (they use only the API
        every build has), so an environment may take another backend's wheel when its own is out of reach."""

    @property
    def kernel_type(self) -> type[KernelSpec] | None:
        """The type of this backend's ``[kernel.*]`` sections (None: it compiles none)."""

    @property
    def manifest_keys(self) -> tuple[str, ...]:
        """The keys a ``[kernel.*]`` section of this backend may have beyond the common ones."""

    def cmake_fragment(self, section: Section, archs: tuple[str, ...]) -> str:
        """One section of the backend's CMake fragment, rendered for a build targeting ``archs`` (empty
        when the build is another backend's); "" if it has none."""


_fragments = jinja2.Environment(
    loader=jinja2.PackageLoader("pybuild", "templates"),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
)


def render_fragment(template: jinja2.Template, section: Section, archs: tuple[str, ...]) -> str:
    """The ``section`` macro of a fragment template, called with the build's ``archs``, without the
    newlines around it ("" if the template has no such macro or it renders blank)."""
    macro = getattr(template.module, section, None)
    text = str(macro(archs)) if macro is not None else ""
    return text.removeprefix("\n").rstrip("\n") if text.strip() else ""


class BaseBackend:
    """A backend known by its facts only: pybuild names, sorts and parses its variants but cannot build
    or import them here. Subclasses override what they can do."""

    known_versions: tuple[str, ...] = ()
    device_module: str | None = None
    env_buildable = False

    def __init__(self, facts: Facts) -> None:
        self.facts = facts

    #: The type of this backend's ``[kernel.*]`` sections, declared in its module (None: it compiles none).
    kernel_type: ClassVar[type[KernelSpec] | None] = None

    @property
    def manifest_keys(self) -> tuple[str, ...]:
        """The keys a ``[kernel.*]`` section of this backend may have beyond the common ones: the
        fields its kernel type declares."""
        return () if self.kernel_type is None else own_keys(self.kernel_type)

    def __repr__(self) -> str:
        return f"<backend {self.name}>"

    @property
    def name(self) -> str:
        return self.facts.name

    def tag(self, version: str | None) -> str:
        if not self.facts.versioned:
            return self.facts.tag
        if version is None:  # a pure-Python variant's backend has no version: its name stands
            return self.name
        return self.facts.tag + version.replace(".", "")

    def tag_pattern(self) -> str:
        if not self.facts.versioned:
            return re.escape(self.facts.tag)
        return re.escape(self.facts.tag) + rf"\d{{{self.facts.tag_digits},}}"

    def version_from_tag(self, tag: str) -> str | None:
        if not self.facts.versioned:
            return None
        digits = tag[len(self.facts.tag) :]
        return f"{digits[:-1]}.{digits[-1]}"

    def wheel_tag(self, version: str | None) -> str | None:
        if self.facts.wheel_tag is None:
            return None
        v = version or ""
        return self.facts.wheel_tag.replace("{version}", v).replace("{nodots}", v.replace(".", ""))

    def runs_on(self, system: str) -> bool:
        return system.endswith(f"-{self.facts.os}")

    def host_versions(self, info: TorchInfo, *, require_toolchain: bool = True) -> tuple[str | None, ...]:
        return ()

    def find_compiler(self) -> Path | None:
        return None

    def unbuildable(self, variant: VariantView, toolchain: Toolchain) -> str | None:
        return f"variant {variant.name}: backend {self.name} cannot be built on this host"

    def default_archs(self, manifest: ManifestView, version: str | None) -> tuple[str, ...]:
        return ()

    def build_archs(
        self, manifest: ManifestView, variant: VariantView, override: tuple[str, ...] | None
    ) -> tuple[str, ...]:
        return ()

    def cmake_args(
        self, manifest: ManifestView, variant: VariantView, toolchain: Toolchain, archs: tuple[str, ...]
    ) -> list[str]:
        return []

    def build_environ(self, archs: tuple[str, ...]) -> dict[str, str]:
        return {}

    def key_inputs(self, toolchain: Toolchain) -> dict[str, str | None]:
        return {name: os.environ.get(name, "") for name in ("CXX", "CXXFLAGS", "LDFLAGS")}

    def toolkit_version(self, info: TorchInfo) -> str | None:
        return None

    def metadata_archs(self, manifest: ManifestView, archs: tuple[str, ...]) -> tuple[str, ...]:
        return archs

    def unimportable(self, variant: VariantView, info: TorchInfo) -> str | None:
        return f"backend {self.name} is not available on this machine"

    builds_with_any_torch = False
    torch_toolkit_key: str | None = None

    def pypi_torch_toolkit(self, torch: str) -> str | None:
        return None

    def wheel_toolkit(self, version: str | None) -> str | None:
        return None

    def device_available(self) -> bool:
        if self.device_module is None:
            return False
        import torch

        module = getattr(torch, self.device_module, None)
        return bool(module is not None and module.is_available())

    @property
    def torch_device(self) -> str:
        return self.device_module or "cpu"

    def fragment_template(self) -> jinja2.Template | None:
        """``templates/backends/<name>.cmake.j2``, if the backend has one."""
        try:
            return _fragments.get_template(f"backends/{self.name}.cmake.j2")
        except jinja2.TemplateNotFound:
            return None

    def cmake_fragment(self, section: Section, archs: tuple[str, ...]) -> str:
        template = self.fragment_template()
        return "" if template is None else render_fragment(template, section, archs)
