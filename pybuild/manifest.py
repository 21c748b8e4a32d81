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
from .editions import FARM_DEPENDS, UPSTREAM_DEPENDS, Edition, detect
from .variants import (BACKENDS, NOARCH_BACKENDS, TVM_FFI_VERSION, Variant, noarch_variant, stable_abi_variant,
                       tvm_ffi_variant)

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
KNOWN_DEPENDS = (*FARM_DEPENDS, *(d for d in UPSTREAM_DEPENDS if d not in FARM_DEPENDS))
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
    hip_flags: tuple[str, ...] = ()
    sycl_flags: tuple[str, ...] = ()
    cuda_minver: tuple[int, int] | None = None  # compiled only into CUDA variants of at least this toolkit

    @property
    def compiled_src(self) -> tuple[str, ...]:
        """The sources compiled on their own (headers listed in `src` are only dependencies)."""
        return tuple(s for s in self.src if Path(s).suffix in COMPILED_SUFFIXES)

    def applies_to(self, variant: Variant) -> bool:
        """Whether this section is compiled into ``variant``: its backend only (and its CUDA floor)."""
        if variant.backend != self.backend:
            return False
        if self.cuda_minver and variant.backend_version:
            return _version_tuple(variant.backend_version) >= self.cuda_minver
        return True


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


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
    cuda_minver: tuple[int, int] | None = None  # [general.cuda]: the CUDA toolkits this kernel builds with
    cuda_maxver: tuple[int, int] | None = None
    backend_python_depends: tuple[tuple[str, tuple[str, ...]], ...] = ()  # [general.<backend>] python-depends
    kernel_depends: tuple[tuple[str, int | str], ...] = ()  # (repo id, version or revision), all backends
    torch_cxx_flags: tuple[str, ...] = ()
    stable_abi: tuple[tuple[str, tuple[int, int]], ...] = ()  # backend -> torch version of its stable-ABI build
    noarch_cuda_capabilities: tuple[str, ...] = ()  # [torch-noarch]: written into metadata only
    noarch_rocm_archs: tuple[str, ...] = ()

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
            return tuple(b for b in NOARCH_BACKENDS if b in (self.backends_filter or ()))
        found = {k.backend for k in self.kernels}
        if self.backends_filter is not None:
            found &= set(self.backends_filter)
        return tuple(b for b in BACKENDS if b in found)

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
        out: dict[Variant, Variant] = {}  # in the order of first appearance
        for v in matrix_variants:
            if self.framework == "tvm-ffi" and not v.noarch:  # one per backend version and system
                v = tvm_ffi_variant(v)
            stable = self.stable_abi_for(v.backend)
            if stable is not None and not v.stable_abi and not v.noarch and not v.tvm_ffi:
                if v.torch_tuple < stable:  # built with a torch at least that version
                    continue
                v = stable_abi_variant(v, f"{stable[0]}.{stable[1]}")
            if not self.accepts(v):
                continue
            # a stable-ABI variant is built with the newest matrix torch of its backend version and system
            kept = out.get(v)
            if kept is None or v.build_torch and _version_tuple(v.build_torch) > _version_tuple(kept.build_torch or "0.0"):
                out[v] = v
        return list(out.values())

    def kernels_for(self, variant: Variant | str) -> tuple[KernelSpec, ...]:
        """Kernel sections compiled into ``variant`` (or a variant of backend ``variant``): its
        backend's only."""
        if isinstance(variant, str):
            return tuple(k for k in self.kernels if k.backend == variant)
        return tuple(k for k in self.kernels if k.applies_to(variant))

    def cuda_capabilities(self) -> tuple[str, ...]:
        caps: list[str] = []
        for k in self.kernels:
            if k.backend == "cuda":
                caps += [c for c in k.cuda_capabilities if c not in caps]
        return tuple(caps) or DEFAULT_CUDA_CAPABILITIES

    def accepts(self, variant: Variant) -> bool:
        """Whether this kernel builds for ``variant`` (its backends, torch and CUDA bounds, stable ABI;
        a pure-Python kernel builds exactly its noarch variants)."""
        if variant.backend not in self.backends or variant.noarch != self.noarch:
            return False
        if self.noarch:
            return True
        if variant.tvm_ffi != (self.framework == "tvm-ffi"):
            return False
        if variant.backend == "cuda" and variant.backend_version:
            cu = _version_tuple(variant.backend_version)
            if self.cuda_minver and cu < self.cuda_minver or self.cuda_maxver and cu > self.cuda_maxver:
                return False
        if variant.tvm_ffi:
            return variant.torch == TVM_FFI_VERSION
        stable = self.stable_abi_for(variant.backend)
        if variant.stable_abi or stable is not None:
            return variant.stable_abi and variant.torch_tuple == stable
        t = variant.torch_tuple
        if self.torch_minver and t < self.torch_minver:
            return False
        if self.torch_maxver and t > self.torch_maxver:
            return False
        return True

    @property
    def package_dir(self) -> str:
        """The folder of the Python package's parent: ``torch-ext`` (``tvm-ffi-ext`` for tvm-ffi)."""
        return "tvm-ffi-ext" if self.framework == "tvm-ffi" else "torch-ext"

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
        files.update(f"{self.package_dir}/{self.python_name}/{rel}" for rel in self.package_files())
        return sorted(files)

    def package_files(self) -> list[str]:
        """The files of ``torch-ext/<name>/`` a variant ships (relative to that folder, sorted): those
        whose extension [torch] `pyext` lists, without caches, built extensions and the generated _ops.py."""
        pkg = self.root / self.package_dir / self.python_name
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


def farm_depends_fix(dep: str) -> str:
    """How to say a farm-only `depends` name (``cutlass``, ``cub``) in upstream's editions."""
    if dep == "cub":
        return "drop it (CUB comes with the CUDA toolkit and needs no `depends`)"
    return ("vendor its headers into the kernel folder and list them in `include`, or name upstream's pinned "
            "version, e.g. \"cutlass_3_6\" (which this farm does not provide to a build)")


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


def _version_text(reader: _Reader, where: str, value: str, example: str = "2.12") -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)\.(\d+)", value, re.ASCII)
    if not m:
        reader.fail(f'{where} must be "major.minor" like "{example}"; found {value!r}')
    return int(m[1]), int(m[2])


def _parse_version(reader: _Reader, key: str, example: str = "2.12") -> tuple[int, int] | None:
    """A "major.minor" version key; ``example`` shows one in the error (a torch version, or CUDA's "12.8")."""
    value = reader.get(key, str)
    return None if value is None else _version_text(reader, reader.where(key), value, example)


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
    """Parse ``build.toml`` text of any edition the farm reads. ``path`` locates the kernel folder for
    the file checks."""
    try:
        data = safeload.loads_toml(text, str(path), ManifestError)
    except tomllib.TOMLDecodeError as e:
        raise ManifestError(f"{path}: TOML syntax error: {e}") from None
    edition, why = detect(data)
    if edition is None:
        raise ManifestError(f"{path}: {why}")
    return _to_model(data, edition, path)


def _table(path: Path, section: str, table: Any) -> _Reader:
    """A reader over a table the edition's schema has already checked (keys and kinds)."""
    return _Reader(path, section, table if isinstance(table, dict) else {}, tuple(table or {}))


def _framework(data: dict[str, Any], edition: Edition) -> str:
    for f in ("torch", "torch-noarch", "tvm-ffi"):
        if f in data:
            if f == "torch" and edition in ("farm", 3) and not data.get("kernel") and not data["torch"].get("src"):
                return "torch-noarch"  # the pre-edition way: a [torch] with only pyext and no kernel sections
            return f
    return "torch-noarch"  # v3 and the farm's format: no framework table is a pure-Python kernel


def _general_model(path: Path, data: dict[str, Any], edition: Edition) -> dict[str, Any]:
    general = _table(path, "general", data["general"])
    name = general.get("name", str, required=True)
    if not NAME_RE.fullmatch(name):
        general.fail(f"`name` in [general] is {name!r}; use {NAME_RULE} (e.g. \"img2gray\", \"rms-norm\")")
    if general.get("universal", bool, False):
        general.fail("`universal = true` in [general] asks for the legacy torch-universal variant, which this farm "
                     "does not build; for a pure-Python kernel drop it, leave out [kernel.*] sections and list "
                     "`backends` in [general] (e.g. backends = [\"cuda\", \"cpu\"]): it builds torch-cuda, torch-cpu")
    if edition == 3 and "license" not in general.table:  # upstream's v3 conversion refuses it too
        general.fail("missing `license` in [general], which kernel-builder's v3 format requires to build; add the "
                     "kernel's license, e.g. license = \"Apache-2.0\"")
    version = general.get("version", int, 1)
    if version < 1:
        general.fail(f"`version` in [general] must be a positive integer (the v<N> branch); found {version}")
    backends = general.get("backends", list)
    if backends is not None:
        allowed = NOARCH_BACKENDS if edition != "farm" else BACKENDS
        for b in backends:
            if b not in allowed:
                close = difflib.get_close_matches(b, allowed, n=1)
                hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(allowed)}"
                general.fail(f"`backends` in [general] names unknown backend {b!r}; {hint}")
        if not backends:  # only the farm's format may leave the key out (then: its sections' backends)
            general.fail("`backends` in [general] is empty, which leaves nothing to build; list at least one, "
                         "e.g. backends = [\"cuda\", \"cpu\"]" + (", or drop the key" if edition == "farm" else ""))
        backends = tuple(backends)
    hub = _table(path, "general.hub", general.table.get("hub"))
    cuda = _table(path, "general.cuda", general.table.get("cuda"))
    per_backend = tuple((b, tuple(general.table[b]["python-depends"])) for b in ("cuda", "neuron", "tpu", "xpu")
                        if isinstance(general.table.get(b), dict) and "python-depends" in general.table[b])
    cuda_min, cuda_max = _parse_version(cuda, "minver", "12.8"), _parse_version(cuda, "maxver", "12.8")
    if cuda_min and cuda_max and cuda_min > cuda_max:
        cuda.fail(f"`minver` {cuda_min} is above `maxver` {cuda_max} in [general.cuda]; no CUDA toolkit is left")
    repo_id = hub.get("repo-id", str)
    if repo_id is not None and not re.fullmatch(r"[A-Za-z0-9][-A-Za-z0-9_.]*/[A-Za-z0-9][-A-Za-z0-9_.]*", repo_id):
        hub.fail(f"`repo-id` in [general.hub] is {repo_id!r}; use \"org/name\", e.g. \"kernels-community/{name}\"")
    return dict(
        name=name, universal=False, version=version, license=general.get("license", str, "Apache-2.0"),
        license_set="license" in general.table, python_depends=general.str_list("python-depends"),
        backends_filter=backends, repo_id=repo_id, hub_branch=hub.get("branch", str),
        upstream=general.get("upstream", str), source=general.get("source", str), cuda_minver=cuda_min,
        cuda_maxver=cuda_max, backend_python_depends=per_backend,
        kernel_depends=tuple((d["repo-id"], d.get("version", d.get("revision")))
                             for d in general.table.get("kernel-depends", ())),
    )


def _stable_abi(path: Path, torch: _Reader, backends: tuple[str, ...] | None) -> tuple[tuple[str, tuple[int, int]], ...]:
    value = torch.table.get("stable-abi")
    if value is None:
        return ()
    where = "`stable-abi` in [torch]"
    table = {b: value for b in (backends or BACKENDS)} if isinstance(value, str) else value
    out = []
    for b, text in table.items():
        ver = _version_text(torch, f"{where} ({b})", text)
        if ver < (2, 10):
            torch.fail(f"{where} asks for torch {text} for {b}; torch's stable ABI starts at 2.10: use \"2.10\" or later")
        if backends is None or b in backends:  # entries for unlisted backends are ignored, as upstream does
            out.append((b, ver))
    return tuple(out)


def _pyext(reader: _Reader, section: str) -> tuple[str, ...]:
    pyext = reader.str_list("pyext") if "pyext" in reader.table else DEFAULT_PYEXT
    for ext in pyext:
        if not PYEXT_RE.fullmatch(ext):
            reader.fail(f"`pyext` in [{section}] has {ext!r}; list file extensions without the dot, e.g. [\"py\", \"json\"]")
        if "." + ext in _BUILT_SUFFIXES:
            reader.fail(f"`pyext` in [{section}] has {ext!r}: built files come from the build, not the package; drop it")
    if "py" not in pyext:
        reader.fail(f"`pyext` in [{section}] is {list(pyext)!r} and leaves out \"py\": the package's Python files "
                    "would not ship; add \"py\"")
    return tuple(pyext)


def _kernel_model(path: Path, root: Path, kname: str, table: dict[str, Any], name: str,
                  edition: Edition = "farm") -> KernelSpec:
    section = f"kernel.{kname}"
    if not KERNEL_SECTION_RE.fullmatch(kname):
        raise ManifestError(f"{path}: [kernel.*] section {kname!r}: kernel names use letters, digits, '_' and '-'")
    r = _table(path, section, table)
    backend = r.get("backend", str, required=True)
    depends = r.str_list("depends")
    known = KNOWN_DEPENDS if edition == "farm" else UPSTREAM_DEPENDS  # upstream's editions: its names only
    for d in depends:
        if d in FARM_DEPENDS and d not in known:
            r.fail(f"`depends` in [{section}] names {d!r}, a name of the farm's own format that upstream's "
                   f"editions refuse; {farm_depends_fix(d)}")
        if d not in known:
            close = difflib.get_close_matches(d, known, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(known)}"
            r.fail(f"`depends` in [{section}] names unknown dependency {d!r}; {hint}")
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
    for key in ("cuda-capabilities", "cuda-flags", "cuda-minver"):
        if key in r.table and backend != "cuda":
            r.fail(f"`{key}` in [{section}] only applies to backend \"cuda\" (this one is {backend!r})")
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
    return KernelSpec(name=kname, backend=backend, depends=depends, src=src, include=include,
                      cuda_capabilities=caps, cuda_flags=r.str_list("cuda-flags"), cxx_flags=r.str_list("cxx-flags"),
                      rocm_archs=rocm_archs, hip_flags=r.str_list("hip-flags"), sycl_flags=r.str_list("sycl-flags"),
                      cuda_minver=_parse_version(r, "cuda-minver", "12.8"))


def _to_model(data: dict[str, Any], edition: Edition, path: Path) -> Manifest:
    """Turn a document that satisfies ``edition``'s schema into the one model, checking meaning."""
    root = path.parent
    general = _general_model(path, data, edition)
    name, backends_filter = general["name"], general["backends_filter"]
    framework = _framework(data, edition)
    section = framework if framework in data else "torch"
    torch = _table(path, section, data.get(section, {}))
    kernel_tables = data.get("kernel", {})
    if framework == "torch-noarch" and kernel_tables:
        first = next(iter(kernel_tables))
        raise ManifestError(f"{path}: [kernel.{first}] in a pure-Python kernel ([torch-noarch]); compiled kernels "
                            "take a [torch] table with the binding in `src`: replace [torch-noarch] with it, or drop "
                            "the [kernel.*] sections")
    torch_src = torch.str_list("src")
    torch_include = torch.str_list("include")
    if not kernel_tables and backends_filter and (torch_src or torch_include):  # before the path checks
        key = "src" if torch_src else "include"
        torch.fail(f"`{key}` in [{section}] names C++ files, but no [kernel.*] section compiles anything; add the "
                   "kernel sections, or drop the key for a pure-Python kernel")
    for s in torch_src:
        _check_path(torch, root, "src", s)
    for inc in torch_include:
        _check_path(torch, root, "include", inc, must_be_dir=True)
    minver, maxver = _parse_version(torch, "minver"), _parse_version(torch, "maxver")
    if minver and maxver and minver > maxver:
        torch.fail(f"`minver` {minver} is above `maxver` {maxver} in [{section}]; no torch version is left")
    kernels = tuple(_kernel_model(path, root, k, t, name, edition) for k, t in kernel_tables.items())
    if framework != "torch-noarch" and not kernels or framework == "torch-noarch" and not backends_filter \
            and "torch-noarch" not in data:
        raise ManifestError(
            f"{path}: no [kernel.<name>] section; add one with backend and src, e.g. [kernel.{name}] "
            f"backend = \"cpu\", src = [\"csrc/{name}.cpp\"] (or, for a pure-Python kernel, list its "
            "backends in [general], e.g. backends = [\"cuda\", \"cpu\"], and leave out the [kernel.*] sections)"
        )
    if kernels and not torch_src:
        raise ManifestError(f"{path}: `src` in [{section}] is empty; list the binding, e.g. [\"torch-ext/torch_binding.cpp\"]")
    if framework == "torch-noarch":
        if not backends_filter:
            raise ManifestError(f"{path}: a pure-Python kernel lists its backends; add backends = [\"cuda\", \"cpu\"] "
                                "(or the ones it runs on) to [general]")
        for key in ("minver", "maxver"):
            if key in torch.table:
                torch.fail(f"`{key}` in [torch] does not apply to a pure-Python kernel: its torch-<backend> "
                           "variants load with any torch version; drop it")
    noarch_caps = _noarch_list(torch, "cuda_capabilities") if framework == "torch-noarch" else ()
    for c in noarch_caps:
        hint = _unknown_cuda_capability(c)
        if hint:
            torch.fail(f"`cuda-capabilities` in [{section}] has {c!r}, which no supported CUDA toolkit knows; {hint}")
    manifest = Manifest(
        path=path, **general, torch_src=torch_src, torch_include=torch_include, torch_minver=minver,
        torch_maxver=maxver, torch_pyext=_pyext(torch, section), kernels=kernels, edition=edition,
        framework=framework, torch_cxx_flags=torch.str_list("cxx-flags"),
        stable_abi=_stable_abi(path, torch, backends_filter) if framework == "torch" else (),
        noarch_cuda_capabilities=noarch_caps,
        noarch_rocm_archs=_noarch_list(torch, "rocm_archs") if framework == "torch-noarch" else (),
    )
    pkg = f"{manifest.package_dir}/{manifest.python_name}/__init__.py"
    if not (root / pkg).is_file():
        raise ManifestError(f"{path}: missing Python package {pkg}; the kernel's wrapper lives there")
    if not manifest.backends:
        raise ManifestError(f"{path}: `backends` in [general] leaves no backend that a [kernel.*] section builds")
    _check_python_depends(manifest)
    return manifest


def _noarch_list(reader: _Reader, key: str) -> tuple[str, ...]:
    """A [torch-noarch] list in upstream's spelling (``cuda_capabilities``) or the dashed one."""
    return reader.str_list(key) if key in reader.table else reader.str_list(key.replace("_", "-"))


def _check_python_depends(manifest: Manifest) -> None:
    allow = loader_python_depends()
    if allow is None:
        return
    general_ok, per_backend = allow
    for backend in manifest.backends:
        wanted = manifest.python_depends_for(backend)
        ok = general_ok | per_backend.get(backend, set())
        refused = [d for d in wanted if d not in ok]
        if refused:
            where = "[general]" if any(d in manifest.python_depends for d in refused) else f"[general.{backend}]"
            raise ManifestError(f"{manifest.path}: `python-depends` in {where} names {', '.join(map(repr, refused))}, "
                                f"which the kernels loader refuses for backend {backend}; allowed: "
                                f"{', '.join(sorted(ok)) or 'none'} (kernels/python_depends.json)")


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
    """The capabilities to build for one CUDA toolkit: those the kernel names (or the defaults) that
    the toolkit knows, as upstream intersects them. An empty intersection is an error."""
    known = CUDA_CAPABILITIES.get(cuda_version)
    caps = manifest.cuda_capabilities()
    if known is None:
        return caps
    kept = tuple(c for c in caps if c in known)
    if not kept:
        msg = (f"{section_path or manifest.path}: `cuda-capabilities` {list(caps)} leave an empty set of capabilities "
               f"for CUDA {cuda_version} (it knows {', '.join(known)}); add one it knows or narrow the variants "
               "([general.cuda] minver/maxver)")
        raise ManifestError(msg)
    return kept
