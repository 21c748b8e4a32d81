"""``build.toml`` in, a frozen :class:`Manifest` out.

Parsing is pure apart from reading the manifest and checking that the files it names exist and
stay inside the kernel folder. Every error names the file and key, shows what was found and says
the fix; unknown keys get a did-you-mean.
"""

from __future__ import annotations

import difflib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import safeload
from .errors import ManifestError
from .variants import BACKENDS, Variant, noarch_variant

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

NAME_RE = re.compile(r"^[a-z][-a-z0-9]*[a-z0-9]$", re.ASCII)
#: NAME_RE in words, for error messages.
NAME_RULE = "at least two characters, lowercase letters, digits and '-', starting with a letter and not ending with '-'"
KERNEL_SECTION_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$", re.ASCII)
SOURCE_SUFFIXES = {".c", ".cc", ".cpp", ".cxx", ".cu", ".h", ".hh", ".hpp", ".cuh", ".inc", ".metal", ".mm"}
COMPILED_SUFFIXES = {".c", ".cc", ".cpp", ".cxx", ".cu", ".mm", ".metal"}
KNOWN_DEPENDS = ("torch", "cutlass", "cub")
#: Extensions of the files of ``torch-ext/<name>/`` shipped with a variant when [torch] names no `pyext`.
DEFAULT_PYEXT = ("py", "pyi")
PYEXT_RE = re.compile(r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$", re.ASCII)
#: Files of ``torch-ext/<name>/`` that the build makes, never copied from the source folder.
_BUILT_SUFFIXES = (".so", ".pyd", ".dylib", ".pyc")
ROCM_ARCH_RE = re.compile(r"^gfx[0-9a-f]{2,4}(:[a-z]+[+-])*$", re.ASCII)

#: CUDA compute capabilities each toolkit release can target (nvcc --list-gpu-arch).
CUDA_CAPABILITIES: dict[str, tuple[str, ...]] = {
    "12.6": ("5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9",
             "9.0", "9.0a"),
    "12.8": ("5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9",
             "9.0", "9.0a", "10.0", "10.0a", "10.1", "10.1a", "12.0", "12.0a"),
    "13.0": ("7.5", "8.0", "8.6", "8.7", "8.8", "8.9", "9.0", "9.0a", "10.0", "10.0a", "10.0f", "10.3",
             "10.3a", "10.3f", "11.0", "11.0a", "11.0f", "12.0", "12.0a", "12.0f", "12.1", "12.1a", "12.1f"),
}
ALL_CUDA_CAPABILITIES = tuple(sorted({c for caps in CUDA_CAPABILITIES.values() for c in caps},
                                     key=lambda c: (float(c.rstrip("af")), c)))
#: Built when a kernel names no capabilities: the datacenter and consumer GPUs in use today.
DEFAULT_CUDA_CAPABILITIES = ("8.0", "8.6", "8.9", "9.0", "10.0", "12.0")

_GENERAL_KEYS = ("name", "universal", "version", "license", "backends", "python-depends")
_TORCH_KEYS = ("src", "include", "minver", "maxver", "pyext")
_KERNEL_KEYS = ("backend", "depends", "src", "include", "cuda-capabilities", "cuda-flags", "cxx-flags",
                "rocm-archs")
_TOP_KEYS = ("general", "torch", "kernel")


@dataclass(frozen=True)
class KernelSpec:
    """One ``[kernel.<name>]`` section."""

    name: str
    backend: str
    depends: tuple[str, ...]
    src: tuple[str, ...]
    include: tuple[str, ...] = ()
    cuda_capabilities: tuple[str, ...] = ()
    cuda_flags: tuple[str, ...] = ()
    cxx_flags: tuple[str, ...] = ()
    rocm_archs: tuple[str, ...] = ()

    @property
    def compiled_src(self) -> tuple[str, ...]:
        return tuple(s for s in self.src if Path(s).suffix in COMPILED_SUFFIXES)


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

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def python_name(self) -> str:
        return self.name.replace("-", "_")

    @property
    def noarch(self) -> bool:
        """A pure-Python kernel: no compiled sources, one ``torch-<backend>`` variant per backend."""
        return not self.kernels

    @property
    def backends(self) -> tuple[str, ...]:
        """Backends this kernel builds for, in matrix order."""
        if self.noarch:
            return tuple(b for b in BACKENDS if b in (self.backends_filter or ()))
        found = {k.backend for k in self.kernels}
        if self.backends_filter is not None:
            found &= set(self.backends_filter)
        return tuple(b for b in BACKENDS if b in found)

    def variants(self, matrix_variants: tuple[Variant, ...] | list[Variant]) -> list[Variant]:
        """The variants this kernel builds: those of the matrix it accepts, or (pure Python) one
        ``torch-<backend>`` per backend, whatever the matrix."""
        if self.noarch:
            return [noarch_variant(b) for b in self.backends]
        return [v for v in matrix_variants if self.accepts(v)]

    def kernels_for(self, backend: str) -> tuple[KernelSpec, ...]:
        """Kernel sections compiled into a ``backend`` variant: that backend's and the CPU ones."""
        return tuple(k for k in self.kernels if k.backend == backend or k.backend == "cpu")

    def cuda_capabilities(self) -> tuple[str, ...]:
        caps: list[str] = []
        for k in self.kernels:
            if k.backend == "cuda":
                caps += [c for c in k.cuda_capabilities if c not in caps]
        return tuple(caps) or DEFAULT_CUDA_CAPABILITIES

    def accepts(self, variant: Variant) -> bool:
        """Whether this kernel builds for ``variant`` (its backends and torch bounds; a pure-Python
        kernel builds exactly its noarch variants)."""
        if variant.backend not in self.backends or variant.noarch != self.noarch:
            return False
        if self.noarch:
            return True
        t = variant.torch_tuple
        if self.torch_minver and t < self.torch_minver:
            return False
        if self.torch_maxver and t > self.torch_maxver:
            return False
        return True

    def source_files(self) -> list[str]:
        """Every file whose content defines a build (relative to the kernel folder), sorted."""
        files = {"build.toml", *self.torch_src}
        for k in self.kernels:
            files.update(k.src)
        root = self.root
        for inc in (*self.torch_include, *(i for k in self.kernels for i in k.include)):
            base = root / inc
            if base.is_dir():
                files.update(str(p.relative_to(root)) for p in safeload.files(base) if p.is_file())
        files.update(f"torch-ext/{self.python_name}/{rel}" for rel in self.package_files())
        return sorted(files)

    def package_files(self) -> list[str]:
        """The files of ``torch-ext/<name>/`` a variant ships (relative to that folder, sorted): those
        whose extension [torch] `pyext` lists, without caches, built extensions and the generated _ops.py."""
        pkg = self.root / "torch-ext" / self.python_name
        if not pkg.is_dir():
            return []
        found = []
        for p in safeload.files(pkg):
            rel = p.relative_to(pkg)
            if not p.is_file() or "__pycache__" in rel.parts or rel.as_posix() == "_ops.py" \
                    or p.name.endswith(_BUILT_SUFFIXES):
                continue
            if any(p.name.endswith("." + ext) for ext in self.torch_pyext):
                found.append(rel.as_posix())
        return sorted(found)


def _suggest(key: str, allowed: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1)
    return f"did you mean `{close[0]}`?" if close else f"allowed keys: {', '.join(allowed)}"


class _Reader:
    """Typed access to one TOML table, with errors that name file and key."""

    def __init__(self, path: Path, section: str, table: Any, allowed: tuple[str, ...]):
        self.path, self.section = path, section
        if not isinstance(table, dict):
            self.fail(f"[{section}] must be a table; found {type(table).__name__}")
        for key in table:
            if key not in allowed:
                self.fail(f"unknown key `{key}` in [{section}]; {_suggest(key, allowed)}")
        self.table = table

    def fail(self, msg: str) -> None:
        raise ManifestError(f"{self.path}: {msg}")

    def where(self, key: str) -> str:
        return f"`{key}` in [{self.section}]"

    def get(self, key: str, kind: type, default: Any = None, required: bool = False) -> Any:
        if key not in self.table:
            if required:
                self.fail(f"missing {self.where(key)}; add it, e.g. {key} = ...")
            return default
        value = self.table[key]
        if kind is bool and not isinstance(value, bool) or kind is not bool and not isinstance(value, kind) \
                or kind is int and isinstance(value, bool):
            self.fail(f"{self.where(key)} must be {_KIND_NAMES.get(kind, kind.__name__)}; found {value!r}")
        return value

    def str_list(self, key: str, required: bool = False) -> tuple[str, ...]:
        value = self.get(key, list, [], required)
        if not all(isinstance(x, str) for x in value):
            self.fail(f"{self.where(key)} must be a list of strings; found {value!r}")
        return tuple(value)


def _check_path(reader: _Reader, root: Path, key: str, rel: str, must_be_dir: bool = False) -> None:
    where = reader.where(key)
    if "\0" in rel or any(ord(c) < 32 for c in rel):
        reader.fail(f"{where}: path {rel!r} contains a control character; name the file plainly")
    p = Path(rel)
    if p.is_absolute():
        reader.fail(f"{where}: path {rel!r} is absolute; use a path relative to the kernel folder")
    if ".." in p.parts:
        reader.fail(f"{where}: path {rel!r} escapes the kernel folder; keep sources inside it")
    full = root / p
    resolved_root = root.resolve()
    try:
        full.resolve().relative_to(resolved_root)
    except ValueError:
        reader.fail(f"{where}: path {rel!r} resolves outside the kernel folder (symlink?); copy the file in")
    if must_be_dir:
        if not full.is_dir():
            reader.fail(f"{where}: include directory {rel!r} does not exist")
        return
    if full.is_dir():
        reader.fail(f"{where}: {rel!r} is a folder; list the source files in it one by one")
    if not full.is_file():
        reader.fail(f"{where}: source file {rel!r} does not exist (looked in {root})")
    if p.suffix not in SOURCE_SUFFIXES:
        reader.fail(f"{where}: {rel!r} is not a C/C++/CUDA source or header ({', '.join(sorted(SOURCE_SUFFIXES))})")


def _parse_torch_bound(reader: _Reader, key: str) -> tuple[int, int] | None:
    value = reader.get(key, str)
    if value is None:
        return None
    m = re.fullmatch(r"(\d)\.(\d+)", value, re.ASCII)
    if not m:
        reader.fail(f'{reader.where(key)} must be "major.minor" like "2.12"; found {value!r}')
    return int(m[1]), int(m[2])


def loader_python_depends() -> tuple[set[str], dict[str, set[str]]] | None:
    """The installed ``kernels`` loader's allow-list for ``python-depends``: (for every backend, per
    backend); None where ``kernels`` is not installed."""
    try:
        import json
        from importlib.resources import files

        table = json.loads(files("kernels").joinpath("python_depends.json").read_text())
        return set(table.get("general", {})), {b: set(v) for b, v in table.get("backends", {}).items()}
    except (ImportError, OSError, ValueError, AttributeError, TypeError):
        return None


#: How a type reads in an error message ("must be an integer", not "must be a int").
_KIND_NAMES = {int: "an integer (e.g. 1)", str: "a string", bool: "true or false", list: "a list", dict: "a table",
               float: "a number"}


def _unknown_cuda_capability(cap: str) -> str | None:
    """Why ``cap`` is not a CUDA capability a supported toolkit knows (None if it is one)."""
    if cap in ALL_CUDA_CAPABILITIES:
        return None
    close = difflib.get_close_matches(cap, ALL_CUDA_CAPABILITIES, n=1)
    return f"did you mean {close[0]!r}?" if close else f"known: {', '.join(ALL_CUDA_CAPABILITIES)}"


def check_cuda_archs(text: str, where: str) -> tuple[str, ...]:
    """CUDA capabilities given as text ("9.0", "8.0,9.0", "8.0;9.0") on the command line or in the
    environment (``where`` names which), checked like build.toml's ``cuda-capabilities``."""
    from .errors import UsageError

    archs = tuple(a for a in re.split(r"[;, ]+", text.strip()) if a)
    if not archs:
        raise UsageError(f"{where}: no CUDA capability given; e.g. 9.0 or 8.0,9.0")
    for a in archs:
        hint = _unknown_cuda_capability(a)
        if hint:
            raise UsageError(f"{where}: {a!r} is not a CUDA capability; {hint}")
    return archs


def duplicate_name_message(name: str, dirs: list[Path]) -> str:
    """One line for kernel folders whose build.toml files share a ``name`` (their builds, metadata and
    Hub repos would collide)."""
    files = " and ".join(str(d / "build.toml") for d in dirs)
    return (f"{files} both name the kernel {name!r}; a kernel's name must be unique in the farm: "
            "rename one ([general] name)")


def parse_manifest(text: str, path: Path) -> Manifest:
    """Parse ``build.toml`` text. ``path`` locates the kernel folder for the file checks."""
    try:
        data = safeload.loads_toml(text, str(path), ManifestError)
    except tomllib.TOMLDecodeError as e:
        raise ManifestError(f"{path}: TOML syntax error: {e}") from None
    root = path.parent
    top = _Reader(path, "top level", data, _TOP_KEYS)
    del top

    general = _Reader(path, "general", data.get("general", None) or _missing(path, "general"), _GENERAL_KEYS)
    name = general.get("name", str, required=True)
    if not NAME_RE.fullmatch(name):
        general.fail(
            f"`name` in [general] is {name!r}; use {NAME_RULE} (e.g. \"img2gray\", \"rms-norm\")"
        )
    universal = general.get("universal", bool, False)
    if universal:
        general.fail("`universal = true` in [general] asks for the legacy torch-universal variant, which this farm "
                     "does not build; for a pure-Python kernel drop it, leave out [kernel.*] sections and list "
                     "`backends` in [general] (e.g. backends = [\"cuda\", \"cpu\"]): it builds torch-cuda, torch-cpu")
    version = general.get("version", int, 1)
    if version < 1:
        general.fail(f"`version` in [general] must be a positive integer (the v<N> branch); found {version}")
    license_ = general.get("license", str, "Apache-2.0")
    python_depends = general.str_list("python-depends")
    backends_filter = general.get("backends", list)
    if backends_filter is not None:
        for b in backends_filter:
            if b not in BACKENDS:
                general.fail(f"`backends` in [general] names unknown backend {b!r}; known: {', '.join(BACKENDS)}")
        backends_filter = tuple(backends_filter)
        if not backends_filter:
            general.fail("`backends` in [general] is empty, which leaves nothing to build; list at least one, "
                         "e.g. backends = [\"cuda\", \"cpu\"], or drop the key")

    torch = _Reader(path, "torch", data.get("torch", {}), _TORCH_KEYS)
    torch_src = torch.str_list("src")
    torch_include = torch.str_list("include")
    if not data.get("kernel") and backends_filter and (torch_src or torch_include):  # before the path checks
        key = "src" if torch_src else "include"
        torch.fail(f"`{key}` in [torch] names C++ files, but no [kernel.*] section compiles anything; add the "
                   "kernel sections, or drop the key for a pure-Python kernel")
    for s in torch_src:
        _check_path(torch, root, "src", s)
    for inc in torch_include:
        _check_path(torch, root, "include", inc, must_be_dir=True)
    pyext = torch.str_list("pyext") if "pyext" in torch.table else DEFAULT_PYEXT
    for ext in pyext:
        if not PYEXT_RE.fullmatch(ext):
            torch.fail(f"`pyext` in [torch] has {ext!r}; list file extensions without the dot, e.g. [\"py\", \"json\"]")
        if "." + ext in _BUILT_SUFFIXES:
            torch.fail(f"`pyext` in [torch] has {ext!r}: built files come from the build, not torch-ext/; drop it")
    if "py" not in pyext:
        torch.fail(f"`pyext` in [torch] is {list(pyext)!r} and leaves out \"py\": the package's Python files would "
                   "not ship; add \"py\"")
    minver = _parse_torch_bound(torch, "minver")
    maxver = _parse_torch_bound(torch, "maxver")
    if minver and maxver and minver > maxver:
        torch.fail(f"`minver` {minver} is above `maxver` {maxver} in [torch]; no torch version is left")

    kernel_tables = data.get("kernel", {})
    if not isinstance(kernel_tables, dict):
        raise ManifestError(f"{path}: `kernel` must be tables like [kernel.{name}]")
    kernels = []
    for kname, table in kernel_tables.items():
        section = f"kernel.{kname}"
        if not KERNEL_SECTION_RE.fullmatch(kname):
            raise ManifestError(f"{path}: [kernel.*] section {kname!r}: kernel names use letters, digits, '_' and '-'")
        r = _Reader(path, section, table, _KERNEL_KEYS)
        backend = r.get("backend", str, required=True)
        if backend not in BACKENDS:
            close = difflib.get_close_matches(backend, BACKENDS, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"use one of {', '.join(BACKENDS)}"
            r.fail(f"`backend` in [{section}] is {backend!r}, an unknown backend; {hint}")
        depends = r.str_list("depends")
        for d in depends:
            if d not in KNOWN_DEPENDS:
                r.fail(f"`depends` in [{section}] names unknown dependency {d!r}; known: {', '.join(KNOWN_DEPENDS)}")
        src = r.str_list("src", required=True)
        if not src:
            r.fail(f"`src` in [{section}] is empty; list at least one source file, e.g. src = [\"csrc/{kname}.cu\"]")
        for s in src:
            _check_path(r, root, "src", s)
        if not any(Path(s).suffix in COMPILED_SUFFIXES for s in src):
            r.fail(f"`src` in [{section}] lists only headers; add the .cu/.cpp file that defines the kernel")
        include = r.str_list("include")
        for inc in include:
            _check_path(r, root, "include", inc, must_be_dir=True)
        caps = r.str_list("cuda-capabilities")
        if caps and backend != "cuda":
            r.fail(f"`cuda-capabilities` in [{section}] only applies to backend \"cuda\" (this one is {backend!r})")
        for c in caps:
            hint = _unknown_cuda_capability(c)
            if hint:
                r.fail(f"`cuda-capabilities` in [{section}] has {c!r}, which no supported CUDA toolkit knows; {hint}")
        rocm_archs = r.str_list("rocm-archs")
        if rocm_archs and backend != "rocm":
            r.fail(f"`rocm-archs` in [{section}] only applies to backend \"rocm\" (this one is {backend!r})")
        for a in rocm_archs:
            if not ROCM_ARCH_RE.fullmatch(a):
                r.fail(f"`rocm-archs` in [{section}] has {a!r}, not an AMD GPU target; use names like \"gfx90a\", "
                       "\"gfx942\" or \"gfx1100\"")
        kernels.append(
            KernelSpec(
                name=kname,
                backend=backend,
                depends=depends,
                src=src,
                include=include,
                cuda_capabilities=caps,
                cuda_flags=r.str_list("cuda-flags"),
                cxx_flags=r.str_list("cxx-flags"),
                rocm_archs=rocm_archs,
            )
        )
    if kernels and not torch_src:
        raise ManifestError(f"{path}: `src` in [torch] is empty; list the binding, e.g. [\"torch-ext/torch_binding.cpp\"]")
    if not kernels:  # a pure-Python (noarch) kernel, or a compiled one missing its sections
        if not backends_filter:
            raise ManifestError(
                f"{path}: no [kernel.<name>] section; add one with backend and src, e.g. [kernel.{name}] "
                f"backend = \"cpu\", src = [\"csrc/{name}.cpp\"] (or, for a pure-Python kernel, list its "
                "backends in [general], e.g. backends = [\"cuda\", \"cpu\"])"
            )
        for key in ("minver", "maxver"):
            if key in torch.table:
                torch.fail(f"`{key}` in [torch] does not apply to a pure-Python kernel: its torch-<backend> "
                           "variants load with any torch version; drop it")
    if not (root / "torch-ext" / name.replace("-", "_") / "__init__.py").is_file():
        raise ManifestError(
            f"{path}: missing Python package torch-ext/{name.replace('-', '_')}/__init__.py; "
            "the kernel's wrapper lives there"
        )
    manifest = Manifest(
        path=path,
        name=name,
        universal=universal,
        version=version,
        license=license_,
        license_set="license" in general.table,
        python_depends=python_depends,
        torch_src=torch_src,
        torch_include=torch_include,
        torch_minver=minver,
        torch_maxver=maxver,
        torch_pyext=tuple(pyext),
        backends_filter=backends_filter,
        kernels=tuple(kernels),
    )
    if not manifest.backends:
        raise ManifestError(f"{path}: `backends` in [general] leaves no backend that a [kernel.*] section builds")
    allow = loader_python_depends()
    if allow is not None and python_depends:
        general_ok, per_backend = allow
        ok = general_ok.union(*(per_backend.get(b, set()) for b in manifest.backends))
        refused = [d for d in python_depends if d not in ok]
        if refused:
            raise ManifestError(f"{path}: `python-depends` in [general] names {', '.join(map(repr, refused))}, which "
                                f"the kernels loader refuses for backends {list(manifest.backends)}; allowed: "
                                f"{', '.join(sorted(ok)) or 'none'} (kernels/python_depends.json)")
    return manifest


def _missing(path: Path, section: str) -> Any:
    raise ManifestError(f"{path}: missing [{section}] table; add it with at least name = \"...\"")


def load_manifest(kernel_dir: Path) -> Manifest:
    """Read ``kernel_dir/build.toml``."""
    path = kernel_dir / "build.toml"
    try:
        text = safeload.read_text(path, ManifestError, limit=1 << 20)
    except FileNotFoundError:
        raise ManifestError(f"{path}: not found; a kernel folder needs a build.toml") from None
    except UnicodeDecodeError:
        raise ManifestError(f"{path}: not valid UTF-8 text") from None
    except OSError as e:  # a folder, a dangling link, a link loop, no permission
        raise ManifestError(f"{path}: cannot be read ({e.strerror}); a kernel folder needs a build.toml file") from None
    return parse_manifest(text, path)


def cuda_capabilities_for(manifest: Manifest, cuda_version: str, section_path: Path | None = None) -> tuple[str, ...]:
    """The capabilities to build for one CUDA toolkit; an explicit one the toolkit lacks is an error."""
    known = CUDA_CAPABILITIES.get(cuda_version)
    explicit = any(k.cuda_capabilities for k in manifest.kernels if k.backend == "cuda")
    caps = manifest.cuda_capabilities()
    if known is None:
        return caps
    if explicit:
        missing = [c for c in caps if c not in known]
        if missing:
            msg = (
                f"{section_path or manifest.path}: `cuda-capabilities` {missing} are not supported by CUDA "
                f"{cuda_version}; drop them or narrow the variants (e.g. [torch] minver) to toolkits that know them"
            )
            raise ManifestError(msg)
        return caps
    return tuple(c for c in caps if c in known)
