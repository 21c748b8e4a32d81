"""The one model every edition converts into: a frozen :class:`Manifest`, and the rule of which
variants of the matrix a kernel builds (:meth:`Manifest.variants`, :meth:`Manifest.accepts`), which
pybuild also writes for Nix (``pybuild.manifest.lock``)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from kernels_data import KernelName
from packaging.licenses import InvalidLicenseExpression, canonicalize_license_expression
from packaging.version import Version

from .. import backends as registry
from .. import safeload
from ..sections.kernel import KernelSpec
from ..variants import (
    TVM_FFI_VERSION,
    Variant,
    noarch_variant,
    stable_abi_variant,
    tvm_ffi_variant,
)
from .editions.base import Edition

#: The loader's kernel-name rule (kernels-data's ``KernelName``) in words, for error messages.
NAME_RULE = "at least two characters, lowercase letters, digits and '-', starting with a letter and not ending with '-'"
#: Extensions of the files of ``torch-ext/<name>/`` shipped with a variant when [torch] names no `pyext`.
DEFAULT_PYEXT = ("py", "pyi")
#: Files of ``torch-ext/<name>/`` that the build makes, never copied from the source folder.
BUILT_SUFFIXES = (".so", ".pyd", ".dylib", ".pyc")


def is_kernel_name(name: str) -> bool:
    """Whether the ``kernels`` loader accepts ``name`` as a kernel name (kernels-data's ``KernelName``,
    the rule :data:`NAME_RULE` states)."""
    try:
        KernelName(name)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Manifest:
    """A parsed, validated ``build.toml``."""

    path: Path  # the build.toml
    name: str
    universal: bool = False
    version: int = 1
    license: str = "Apache-2.0"
    license_set: bool = False  # build.toml names the license (else the default above applies)
    python_depends: tuple[str, ...] = ()
    torch_src: tuple[str, ...] = ()
    torch_include: tuple[str, ...] = ()
    torch_minver: tuple[int, int] | None = None
    torch_maxver: tuple[int, int] | None = None
    torch_pyext: tuple[str, ...] = DEFAULT_PYEXT
    backends_filter: tuple[str, ...] | None = None
    kernels: tuple[KernelSpec, ...] = field(default_factory=tuple)
    edition: Edition = "farm"
    framework: str = "torch"  # "torch" | "torch-noarch" | "tvm-ffi"
    repo_id: str | None = None  # [general.hub] repo-id: publish's default --repo-id
    hub_branch: str | None = None
    upstream: str | None = None
    source: str | None = None
    #: [general.<backend>] minver/maxver: the toolkits of that backend this kernel builds with
    toolkit_bounds: tuple[tuple[str, tuple[tuple[int, int] | None, tuple[int, int] | None]], ...] = ()
    backend_python_depends: tuple[tuple[str, tuple[str, ...]], ...] = ()  # [general.<backend>] python-depends
    kernel_depends: tuple[tuple[str, int | str], ...] = ()  # (repo id, version or revision), all backends
    torch_cxx_flags: tuple[str, ...] = ()
    stable_abi: tuple[tuple[str, tuple[int, int]], ...] = ()  # backend -> torch version of its stable-ABI build
    #: [torch-noarch]'s device targets per backend (`cuda_capabilities`, `rocm_archs`): metadata only
    noarch_backend_archs: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: what the manifest asks for that upstream accepts but that is doubtful: one line each, to print
    warnings: tuple[str, ...] = field(default=(), compare=False)

    @property
    def license_warning(self) -> str | None:
        """Why `license` is not an SPDX expression (upstream takes any string, so this is a warning);
        None if it is one."""
        try:
            canonicalize_license_expression(self.license)
        except InvalidLicenseExpression:
            return (
                f"{self.path}: `license` in [general] is {self.license!r}, not an SPDX license expression; "
                'it is published as given. Use an SPDX identifier, e.g. license = "Apache-2.0" or "MIT"'
            )
        return None

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def python_name(self) -> str:
        return self.name.replace("-", "_")

    @property
    def noarch(self) -> bool:
        """A pure-Python kernel: no compiled sources, one ``torch-<backend>`` variant per backend."""
        return self.framework == "torch-noarch"

    @property
    def backends(self) -> tuple[str, ...]:
        """Backends this kernel builds for, in matrix order (then the noarch-only ones): a pure-Python
        kernel's listed backends; else those of its [kernel.*] sections that `backends` lists (a listed
        backend without a section of it builds nothing)."""
        if self.noarch:
            return tuple(b for b in registry.noarch_names() if b in (self.backends_filter or ()))
        found = {k.backend for k in self.kernels}
        if self.backends_filter is not None:
            found &= set(self.backends_filter)
        return tuple(b for b in registry.names() if b in found)

    def stable_abi_for(self, backend: str) -> tuple[int, int] | None:
        """The torch version whose stable ABI ``backend`` is built against; None: the full ABI."""
        return dict(self.stable_abi).get(backend)

    def python_depends_for(self, backend: str) -> tuple[str, ...]:
        """[general] python-depends and those of [general.<backend>]."""
        extra = dict(self.backend_python_depends).get(backend, ())
        return (*self.python_depends, *(d for d in extra if d not in self.python_depends))

    def variants(self, matrix_variants: tuple[Variant, ...] | list[Variant]) -> list[Variant]:
        """The variants this kernel builds: those of the matrix it accepts, one stable-ABI variant per
        backend version and system for backends in [torch.stable-abi], or (pure Python) one
        ``torch-<backend>`` per backend, whatever the matrix."""
        if self.noarch:
            return [noarch_variant(b) for b in self.backends]
        return list(self.variant_sources(matrix_variants))

    def variant_sources(self, matrix_variants: tuple[Variant, ...] | list[Variant]) -> dict[Variant, Variant]:
        """{variant built: the matrix variant whose toolchain builds it}, in the order of first
        appearance; a stable-ABI or tvm-ffi variant is built with the newest matrix torch of its
        backend version and system (the last in matrix order among equals). Compiled kernels only."""
        out: dict[Variant, tuple[Variant, Variant]] = {}
        for m in matrix_variants:
            v = self.framed(m)
            if v is None or not self.accepts(v):
                continue
            kept = out.get(v)
            if kept is None or m.torch_tuple >= kept[1].torch_tuple:
                out[v] = (v, m)
        return dict(out.values())

    def framed(self, v: Variant, tvm_ffi: str = TVM_FFI_VERSION) -> Variant | None:
        """Variant ``v`` (of the matrix, or of this machine) as this kernel's framework builds it: a
        tvm-ffi kernel's variant of tvm-ffi ``tvm_ffi``, a stable-ABI variant for backends in
        [torch.stable-abi] (None where ``v``'s torch is older than that stable ABI), else ``v``."""
        if self.framework == "tvm-ffi" and not v.noarch:  # one per backend version and system
            return tvm_ffi_variant(v, tvm_ffi)
        stable = self.stable_abi_for(v.backend)
        if stable is not None and not v.stable_abi and not v.noarch and not v.tvm_ffi:
            if v.torch_tuple < stable:  # built with a torch at least that version
                return None
            return stable_abi_variant(v, f"{stable[0]}.{stable[1]}")
        return v

    def kernels_for(self, variant: Variant | str) -> tuple[KernelSpec, ...]:
        """Kernel sections compiled into ``variant`` (or a variant of backend ``variant``): its
        backend's only."""
        if isinstance(variant, str):
            return tuple(k for k in self.kernels if k.backend == variant)
        return tuple(k for k in self.kernels if k.applies_to(variant))

    def noarch_archs(self, backend: str) -> tuple[str, ...]:
        """The device targets a pure-Python kernel's ``[torch-noarch]`` names for ``backend`` (its
        metadata's ``backend.archs``)."""
        return dict(self.noarch_backend_archs).get(backend, ())

    def accepts(self, variant: Variant) -> bool:
        """Whether this kernel builds for ``variant`` (its backends, torch and CUDA bounds, stable ABI;
        a pure-Python kernel builds exactly its noarch variants)."""
        if variant.backend not in self.backends or variant.noarch != self.noarch:
            return False
        if self.noarch:
            return True
        if variant.tvm_ffi != (self.framework == "tvm-ffi"):
            return False
        lo, hi = dict(self.toolkit_bounds).get(variant.backend, (None, None))
        if variant.backend_version and (lo or hi):
            version = Version(variant.backend_version).release
            if lo and version < lo or hi and version > hi:
                return False
        if variant.tvm_ffi:
            return variant.torch == TVM_FFI_VERSION
        stable = self.stable_abi_for(variant.backend)
        if variant.stable_abi or stable is not None:
            return variant.stable_abi and variant.torch_tuple == stable
        t = variant.torch_tuple
        too_old = self.torch_minver is not None and t < self.torch_minver
        too_new = self.torch_maxver is not None and t > self.torch_maxver
        return not (too_old or too_new)

    @property
    def package_dir(self) -> str:
        """The folder of the Python package's parent: ``torch-ext`` (``tvm-ffi-ext`` for tvm-ffi)."""
        return "tvm-ffi-ext" if self.framework == "tvm-ffi" else "torch-ext"

    def source_files(self, error: safeload.ErrorType = safeload.InputLimitError) -> list[str]:
        """Every file whose content defines a build (relative to the kernel folder), sorted. A symlink
        or special file in an include folder or the package raises ``error`` naming it."""
        files = {"build.toml", *self.torch_src}
        for k in self.kernels:
            files.update(k.src)
        root = self.root
        for inc in (*self.torch_include, *(i for k in self.kernels for i in k.include)):
            base = root / inc
            if base.is_dir():
                whole = base.resolve() == root.resolve()  # `include = ["."]`: the kernel folder itself
                found = safeload.files(base, error, prune=functools.partial(_not_included, root, whole=whole))
                files.update(str(p.relative_to(root)) for p in found if not whole or p.suffix in INCLUDED_SUFFIXES)
        files.update(f"{self.package_dir}/{self.python_name}/{rel}" for rel in self.package_files(error))
        return sorted(files)

    def package_files(self, error: safeload.ErrorType = safeload.InputLimitError) -> list[str]:
        """The files of ``torch-ext/<name>/`` a variant ships (relative to that folder, sorted): those
        whose extension [torch] `pyext` lists, without caches, built extensions and the generated _ops.py.
        A symlink or special file in the package raises ``error`` naming it (never followed)."""
        pkg = self.root / self.package_dir / self.python_name
        if not pkg.is_dir():
            return []
        found = []
        for p in safeload.files(pkg, error):
            rel = p.relative_to(pkg)
            if "__pycache__" in rel.parts or rel.as_posix() == "_ops.py" or p.name.endswith(BUILT_SUFFIXES):
                continue
            if any(p.name.endswith("." + ext) for ext in self.torch_pyext):
                found.append(rel.as_posix())
        return sorted(found)


#: What the kernel folder contributes as an include folder (`include = ["."]`): its C/C++/CUDA headers
#: and sources, not the tests, docs, links or secrets it also holds. Any other include folder gives all.
INCLUDED_SUFFIXES = frozenset(
    {".c", ".cc", ".cpp", ".cxx", ".cu", ".h", ".hh", ".hpp", ".hxx", ".cuh", ".inc", ".inl", ".ipp", ".tcc"}
    | {".def", ".metal", ".mm", ".hip"}
)
#: Folders at the kernel's top that no include folder reaches into: the build's outputs and the
#: generated project (cmake/ holds pybuild's copies of its shared headers, hashed as such).
_OUTSIDE_INCLUDES = ("build", ".pybuild", "cmake")


def _not_included(root: Path, path: Path, whole: bool) -> bool:
    """Whether an include folder's walk skips ``path``: hidden entries (.git, .env), caches, the build's
    own folders at the kernel's top, and in the kernel folder itself (``whole``) any link or special
    file that could be no header (`result` of nix build, a linked compile_commands.json)."""
    rel = path.relative_to(root)
    if whole and path.suffix not in INCLUDED_SUFFIXES and (path.is_symlink() or not (path.is_dir() or path.is_file())):
        return True
    return (
        path.name.startswith(".")
        or path.name == "__pycache__"
        or (len(rel.parts) == 1 and rel.parts[0] in _OUTSIDE_INCLUDES)
    )
