"""The ``build.toml`` editions this farm reads, declared as data: which keys each table takes, of
which kind, which are required.

Upstream kernel-builder writes an ``edition`` into ``[general]`` (5 today) and still reads the two
pre-edition formats before it (its v4, then v3); this farm also reads its own pre-edition format
(``universal``, backends from the ``[kernel.*]`` sections). :func:`detect` picks the edition the way
upstream does (``edition = 5``, else the stricter v4, else v3), then the farm's format;
:func:`validate` checks a TOML document against one edition's schema and names the first offence
in one line (file, table, key, what was expected, a did-you-mean). Meaning is shared by every
edition: ``manifest.py`` turns any of them into the one :class:`~pybuild.manifest.Manifest`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["str", "int", "bool", "str_list", "version", "table", "version_or_backend_table", "kernel_deps",
               "git_url"]

#: Every backend upstream names; `neuron`, `tpu` and `cann` exist only for pure-Python kernels.
UPSTREAM_BACKENDS = ("cann", "cpu", "cuda", "metal", "neuron", "rocm", "tpu", "xpu")
#: Backends a `[kernel.*]` section may compile for.
KERNEL_BACKENDS = ("cpu", "cuda", "metal", "rocm", "xpu")
#: Upstream's `depends` of a kernel section (its deps.rs), and the farm's own names.
UPSTREAM_DEPENDS = ("cutlass_2_10", "cutlass_3_5", "cutlass_3_6", "cutlass_3_8", "cutlass_3_9", "cutlass_4_0",
                    "cutlass_4_4", "cutlass_4_5", "sycl_tla", "metal-cpp", "torch")
FARM_DEPENDS = ("torch", "cutlass", "cub")

Edition = Literal[5, 4, 3, "farm"]
EDITIONS: tuple[Edition, ...] = (5, 4, 3, "farm")
CURRENT_EDITION = 5
FRAMEWORKS = ("torch", "torch-noarch", "tvm-ffi")
#: [torch-noarch] keys upstream spells with underscores (also read with dashes here).
NOARCH_SPELLINGS = ("cuda_capabilities", "rocm_archs")


@dataclass(frozen=True)
class Table:
    """One TOML table: key -> kind, the required keys, and the sub-tables."""

    keys: dict[str, Kind]
    required: tuple[str, ...] = ()
    tables: dict[str, Table] = field(default_factory=dict)

    def allowed(self) -> tuple[str, ...]:
        return (*self.keys, *self.tables)


def _kernel(extra: dict[str, Kind], depends_required: bool) -> Table:
    keys: dict[str, Kind] = {"backend": "str", "depends": "str_list", "src": "str_list", "include": "str_list",
                             "cxx-flags": "str_list", **extra}
    return Table(keys, required=("backend", "src", *(("depends",) if depends_required else ())))


def _kernels(depends_required: bool, farm: bool = False) -> dict[str, Table]:
    """The `[kernel.*]` schema per backend (upstream: one type per backend, tagged by `backend`)."""
    if farm:  # the farm's format: one key set for every backend, checked per backend by manifest.py
        common = _kernel({"cuda-capabilities": "str_list", "cuda-flags": "str_list", "rocm-archs": "str_list"},
                         depends_required)
        return {b: common for b in KERNEL_BACKENDS}
    return {
        "cpu": _kernel({}, depends_required),
        "cuda": _kernel({"cuda-capabilities": "str_list", "cuda-flags": "str_list", "cuda-minver": "version"},
                        depends_required),
        "metal": _kernel({}, depends_required),
        "rocm": _kernel({"rocm-archs": "str_list", "hip-flags": "str_list"}, depends_required),
        "xpu": _kernel({"sycl-flags": "str_list"}, depends_required),
    }


_HUB = Table({"repo-id": "str", "branch": "str"})
_PYDEPS: dict[str, Kind] = {"python-depends": "str_list"}
_KDEPS: dict[str, Kind] = {"kernel-depends": "kernel_deps"}


def _general(edition: Edition) -> Table:
    if edition == "farm":
        return Table({"name": "str", "universal": "bool", "version": "int", "license": "str", "backends": "str_list",
                      "python-depends": "str_list"}, required=("name",), tables={"hub": _HUB})
    keys: dict[str, Kind] = {"name": "str", "version": "int", "license": "str", "upstream": "git_url",
                             "backends": "str_list", "python-depends": "str_list"}
    cuda: dict[str, Kind] = {"minver": "version", "maxver": "version", **_PYDEPS}
    tables = {"hub": _HUB, "cuda": Table(cuda), "neuron": Table(dict(_PYDEPS)), "xpu": Table(dict(_PYDEPS))}
    required: tuple[str, ...] = ("name", "backends")
    if edition in (4, 5):
        keys["source"] = "git_url"
        required = ("name", "version", "license", "backends")
    if edition == 5:
        keys.update({"edition": "int", **_KDEPS})
        required = ("name", "version", "edition", "license", "backends")
        tables = {"hub": _HUB, "cuda": Table({**cuda, **_KDEPS}), "neuron": Table({**_PYDEPS, **_KDEPS}),
                  "tpu": Table(dict(_PYDEPS)), "xpu": Table({**_PYDEPS, **_KDEPS})}
    return Table(keys, required=required, tables=tables)


def _frameworks(edition: Edition) -> dict[str, Table]:
    if edition == "farm":
        return {"torch": Table({"src": "str_list", "include": "str_list", "minver": "version", "maxver": "version",
                                "pyext": "str_list"})}
    torch: dict[str, Kind] = {"src": "str_list", "include": "str_list", "minver": "version", "maxver": "version",
                              "pyext": "str_list"}
    tvm: dict[str, Kind] = {"src": "str_list", "include": "str_list", "pyext": "str_list"}
    out = {"torch": Table(torch), "tvm-ffi": Table(tvm, required=("src",))}
    if edition in (4, 5):
        torch.update({"cxx-flags": "str_list",
                      "stable-abi": "version" if edition == 4 else "version_or_backend_table"})
        tvm["cxx-flags"] = "str_list"
        # upstream's TorchNoarch has no kebab-case renaming: it reads `cuda_capabilities`, `rocm_archs`;
        # the farm also takes the dashed spelling of every other table (not both at once)
        out["torch-noarch"] = Table({"pyext": "str_list", "cuda-capabilities": "str_list", "rocm-archs": "str_list",
                                     "cuda_capabilities": "str_list", "rocm_archs": "str_list"})
    return out


@dataclass(frozen=True)
class Schema:
    edition: Edition
    general: Table
    frameworks: dict[str, Table]
    kernels: dict[str, Table]

    @property
    def top(self) -> tuple[str, ...]:
        return ("general", *self.frameworks, "kernel")


SCHEMAS: dict[Edition, Schema] = {
    e: Schema(e, _general(e), _frameworks(e), _kernels(depends_required=e != "farm", farm=e == "farm"))
    for e in EDITIONS
}


def edition_label(edition: Edition) -> str:
    return "the farm's pre-edition format" if edition == "farm" else \
        f"edition {edition}" if edition == 5 else f"pre-edition format v{edition}"


def did_you_mean(key: str, allowed: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1)
    return f"did you mean `{close[0]}`?" if close else f"allowed keys: {', '.join(allowed) or 'none'}"


_KIND_WORDS = {"str": "a string", "int": "an integer (e.g. 1)", "bool": "true or false",
               "str_list": "a list of strings", "version": 'a "major.minor" version string like "2.11"',
               "table": "a table", "version_or_backend_table": 'a version like "2.11" or a table of backend = "2.11"',
               "kernel_deps": 'a list of tables like { repo-id = "org/kernel", version = 1 } (a whole number from 0, '
                              'or revision = "...")',
               "git_url": 'a git URL like "https://github.com/org/repo.git" or "git@github.com:org/repo.git"'}
_GIT_SCHEMES = ("https", "http", "git", "ssh", "git+ssh", "git+https", "git+http")


def _git_url_ok(value: str) -> bool:
    """A URL `git clone` takes: one of upstream's schemes, or scp-like `host:path` (upstream's GitUrl)."""
    scheme, sep, rest = value.partition("://")
    if sep:
        return scheme in _GIT_SCHEMES and bool(rest)
    host, sep, path = value.partition(":")
    return bool(sep and host and path and not path.startswith("/") and " " not in value)


def _kernel_dep_ok(dep: Any) -> bool:
    """`{ repo-id = "org/name", version = N }` or `{ repo-id = ..., revision = "..." }`, nothing else."""
    if not isinstance(dep, dict) or not isinstance(dep.get("repo-id"), str) or set(dep) - {"repo-id", "version", "revision"}:
        return False
    if ("version" in dep) == ("revision" in dep):
        return False
    version = dep.get("version", 0)  # upstream's usize: a whole number from 0, never a boolean
    return isinstance(dep.get("revision", ""), str) and isinstance(version, int) and not isinstance(version, bool) \
        and version >= 0


def _kind_ok(kind: Kind, value: Any) -> bool:
    if kind == "str" or kind == "version":
        return isinstance(value, str)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "str_list":
        return isinstance(value, list) and all(isinstance(x, str) for x in value)
    if kind == "kernel_deps":
        return isinstance(value, list) and all(_kernel_dep_ok(d) for d in value)
    if kind == "git_url":
        return isinstance(value, str) and _git_url_ok(value)
    if kind == "version_or_backend_table":
        return isinstance(value, str) or isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    return isinstance(value, dict)


def _check_table(table: Any, schema: Table, section: str) -> str | None:
    if not isinstance(table, dict):
        return f"[{section}] must be a table; found {table!r}"
    for key, value in table.items():
        if key in schema.tables:
            err = _check_table(value, schema.tables[key], f"{section}.{key}")
            if err:
                return err
            continue
        if key not in schema.keys:
            return f"unknown key `{key}` in [{section}]; {did_you_mean(key, schema.allowed())}"
        kind = schema.keys[key]
        if not _kind_ok(kind, value):
            return f"`{key}` in [{section}] must be {_KIND_WORDS[kind]}; found {value!r}"
        if kind == "version_or_backend_table" and isinstance(value, dict):
            for b in value:
                if b not in UPSTREAM_BACKENDS:
                    return (f"unknown backend `{b}` in [{section}.{key}]; "
                            f"{did_you_mean(b, UPSTREAM_BACKENDS).replace('allowed keys', 'backends')}")
    for key in schema.required:
        if key not in table:
            example = {"edition": "edition = 5", "backends": 'backends = ["cuda"]', "license": 'license = "Apache-2.0"',
                       "version": "version = 1", "depends": 'depends = ["torch"]', "src": 'src = ["..."]'}
            return f"missing `{key}` in [{section}]; add it, e.g. {example.get(key, key + ' = ...')}"
    return None


def validate(data: dict[str, Any], edition: Edition) -> str | None:
    """The first way ``data`` breaks ``edition``'s schema, in one line without the file name; None if none."""
    schema = SCHEMAS[edition]
    for key in data:
        if key not in schema.top:
            return f"unknown key `{key}` in [top level]; {did_you_mean(key, schema.top)}"
    if "general" not in data:
        return 'missing [general] table; add it with at least name = "..."'
    err = _check_table(data["general"], schema.general, "general")
    if err:
        return err
    present = [f for f in schema.frameworks if f in data]
    if edition in (4, 5) and len(present) != 1:
        return (f"{'no' if not present else 'more than one'} framework table ({', '.join(present) or 'none found'}); "
                "a kernel has exactly one of [torch], [torch-noarch], [tvm-ffi] (an empty [torch-noarch] for a "
                "pure-Python kernel)")
    if edition == 3 and len(present) > 1:
        return "both [torch] and [tvm-ffi]; a kernel has exactly one framework table"
    for f in present:
        err = _check_table(data[f], schema.frameworks[f], f)
        if err:
            return err
    noarch = data.get("torch-noarch")
    for key in NOARCH_SPELLINGS:
        if isinstance(noarch, dict) and key in noarch and key.replace("_", "-") in noarch:
            return (f"both `{key}` and `{key.replace('_', '-')}` in [torch-noarch]; they are the same key, "
                    "keep one")
    kernels = data.get("kernel", {})
    if not isinstance(kernels, dict):
        return "`kernel` must be tables like [kernel.<name>]"
    for kname, table in kernels.items():
        section = f"kernel.{kname}"
        if not isinstance(table, dict):
            return f"[{section}] must be a table; found {table!r}"
        backend = table.get("backend")
        if not isinstance(backend, str):
            return f'missing `backend` in [{section}]; add it, e.g. backend = "cuda"' if backend is None else \
                f"`backend` in [{section}] must be a string; found {backend!r}"
        if backend not in schema.kernels:
            close = difflib.get_close_matches(backend, KERNEL_BACKENDS, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"use one of {', '.join(KERNEL_BACKENDS)}"
            return f"`backend` in [{section}] is {backend!r}, an unknown backend; {hint}"
        err = _check_table(table, schema.kernels[backend], section)
        if err:
            return err
    return None


def detect(data: dict[str, Any]) -> tuple[Edition | None, str | None]:
    """(edition, None) for the edition ``data`` is written in, or (None, the one-line reason) when it
    is none of them. Like upstream: ``edition = 5`` is edition 5; without an edition, v4 (stricter)
    before v3; then the farm's own format. The reason given is the one of the likeliest edition."""
    general = data.get("general")
    edition = general.get("edition") if isinstance(general, dict) else None
    if edition is not None:
        if edition != CURRENT_EDITION or isinstance(edition, bool):
            return None, (f"`edition` in [general] is {edition!r}; this farm reads edition {CURRENT_EDITION} "
                          f"(and the pre-edition formats); set edition = {CURRENT_EDITION} and run "
                          "`python -m pybuild check-config`")
        err = validate(data, 5)
        return (5, None) if err is None else (None, err)
    errors: dict[Edition, str] = {}
    for candidate in (4, 3, "farm"):
        err = validate(data, candidate)
        if err is None and candidate == 3 and "license" not in general and validate(data, "farm") is None \
                and all(b in KERNEL_BACKENDS for b in general.get("backends", ())):
            return "farm", None  # v3 needs a license; without one it is the farm's format, whose default is Apache-2.0
        if err is None:
            return candidate, None
        errors[candidate] = err
    likely: Edition = "farm"
    if isinstance(general, dict) and "backends" in general and "universal" not in general:
        likely = 4 if ("version" in general and "license" in general) else 3
    if any(k in data for k in ("torch-noarch", "tvm-ffi")):
        likely = 4
    return None, errors[likely]
