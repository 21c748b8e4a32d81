"""A document that satisfies its edition's schema, turned into the one :class:`Manifest`, checking
what the schema cannot: meaning, paths, bounds. Where editions differ, the edition's
:class:`~pybuild.manifest.editions.base.Schema` says how."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

from .. import backends as registry
from ..errors import ManifestError
from ..sections.kernel import KernelSpec
from ..sections.reader import COMPILED_SUFFIXES, Reader
from .editions import SCHEMAS
from .editions.base import FARM_DEPENDS, Edition, Schema
from .kernels import foreign_key_message, kernel_type
from .model import BUILT_SUFFIXES, DEFAULT_PYEXT, NAME_RULE, Manifest, is_kernel_name

KERNEL_SECTION_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$", re.ASCII)
PYEXT_RE = re.compile(r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$", re.ASCII)
REPO_ID_RE = re.compile(r"[A-Za-z0-9][-A-Za-z0-9_.]*/[A-Za-z0-9][-A-Za-z0-9_.]*", re.ASCII)
#: A git revision as a build.toml may name it: a branch, tag or commit, never an option or a range.
REVISION_RE = re.compile(r"[A-Za-z0-9_][-A-Za-z0-9_./]*", re.ASCII)


def is_repo_id(value: str) -> bool:
    """An ``org/name`` the Hub takes: letters, digits, '-', '_', '.'; no '..' or '--', not ending in
    '.', '-' or '.git' (the rule `publish --repo-id` applies too)."""
    return (
        REPO_ID_RE.fullmatch(value) is not None
        and ".." not in value
        and "--" not in value
        and not value.endswith((".git", ".", "-"))
    )


def _kernel_depends(general: Reader) -> tuple[tuple[str, int | str], ...]:
    """[general] kernel-depends as (repo id, version or revision), each repo id and revision checked."""
    out: list[tuple[str, int | str]] = []
    for dep in general.table.get("kernel-depends", ()):
        repo_id, version = dep["repo-id"], dep.get("version", dep.get("revision"))
        if not is_repo_id(repo_id):
            general.fail(
                f'`repo-id` {repo_id!r} in [general] kernel-depends is not a Hub repo id; use "org/name", '
                'e.g. "kernels-community/activation"'
            )
        if isinstance(version, str) and (not REVISION_RE.fullmatch(version) or ".." in version):
            general.fail(
                f"`revision` {version!r} of {repo_id!r} in [general] kernel-depends is not a branch, tag or "
                'commit; name one, e.g. revision = "v1.2.0" or a commit hash'
            )
        out.append((repo_id, version))
    return tuple(out)


def farm_depends_fix(dep: str) -> str:
    """How to say a farm-only `depends` name (``cutlass``, ``cub``) in upstream's editions."""
    if dep == "cub":
        return "drop it (CUB comes with the CUDA toolkit and needs no `depends`)"
    return (
        "vendor its headers into the kernel folder and list them in `include`, or name upstream's pinned "
        'version, e.g. "cutlass_3_6" (which this farm does not provide to a build)'
    )


def _backends(general: Reader, schema: Schema) -> tuple[str, ...] | None:
    backends = general.get("backends", list)
    if backends is None:
        return None
    allowed = registry.names() if schema.compiled_backends_only else registry.noarch_names()
    for b in backends:
        if b not in allowed:
            close = difflib.get_close_matches(b, allowed, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(allowed)}"
            general.fail(f"`backends` in [general] names unknown backend {b!r}; {hint}")
    if not backends:  # only the farm's format may leave the key out (then: its sections' backends)
        general.fail(
            "`backends` in [general] is empty, which leaves nothing to build; list at least one, "
            'e.g. backends = ["cuda", "cpu"]' + (", or drop the key" if schema.backends_optional else "")
        )
    return tuple(backends)


def _general_header(general: Reader, schema: Schema) -> tuple[str, int]:
    name = general.get("name", str, required=True)
    if not is_kernel_name(name):
        general.fail(f'`name` in [general] is {name!r}; use {NAME_RULE} (e.g. "img2gray", "rms-norm")')
    if general.get("universal", bool, False):
        general.fail(
            "`universal = true` in [general] asks for the legacy torch-universal variant, which this farm "
            "does not build; for a pure-Python kernel drop it, leave out [kernel.*] sections and list "
            '`backends` in [general] (e.g. backends = ["cuda", "cpu"]): it builds torch-cuda, torch-cpu'
        )
    if schema.license_required and "license" not in general.table:  # upstream's v3 conversion refuses it too
        general.fail(
            "missing `license` in [general], which kernel-builder's v3 format requires to build; add the "
            'kernel\'s license, e.g. license = "Apache-2.0"'
        )
    version = general.get("version", int, 1)
    if version < 0:  # upstream reads a whole number from 0 (its usize): `version = 0` is branch v0
        general.fail(f"`version` in [general] must be a whole number from 0 (the v<N> branch); found {version}")
    return name, version


def general_fields(path: Path, data: dict[str, Any], schema: Schema) -> dict[str, Any]:
    """The [general] table (and its sub-tables) as fields of :class:`Manifest`."""
    general = Reader.checked(path, "general", data["general"])
    name, version = _general_header(general, schema)
    backends = _backends(general, schema)
    hub = Reader.checked(path, "general.hub", general.table.get("hub"))
    per_backend = tuple(
        (b, tuple(general.table[b]["python-depends"]))
        for b in registry.noarch_names()
        if isinstance(general.table.get(b), dict) and "python-depends" in general.table[b]
    )
    repo_id = hub.get("repo-id", str)
    if repo_id is not None and not is_repo_id(repo_id):
        hub.fail(f'`repo-id` in [general.hub] is {repo_id!r}; use "org/name", e.g. "kernels-community/{name}"')
    return {
        "name": name,
        "universal": False,
        "version": version,
        "license": general.get("license", str, "Apache-2.0"),
        "license_set": "license" in general.table,
        "python_depends": general.str_list("python-depends"),
        "backends_filter": backends,
        "repo_id": repo_id,
        "hub_branch": hub.get("branch", str),
        "upstream": general.get("upstream", str),
        "source": general.get("source", str),
        "toolkit_bounds": _toolkit_bounds(path, general, schema),
        "backend_python_depends": per_backend,
        "kernel_depends": _kernel_depends(general),
    }


def _toolkit_bounds(
    path: Path, general: Reader, schema: Schema
) -> tuple[tuple[str, tuple[tuple[int, int] | None, tuple[int, int] | None]], ...]:
    """[general.<backend>] `minver`/`maxver` (upstream's edition defines them for CUDA): the toolkit
    versions of that backend the kernel builds with, per backend that has them."""
    out = []
    for b in registry.noarch_names():
        table = general.table.get(b)
        if not isinstance(table, dict) or not {"minver", "maxver"} & set(table):
            continue
        r = Reader.checked(path, f"general.{b}", table)
        examples = schema.general.tables[b].examples if b in schema.general.tables else {}
        lo, hi = r.version("minver", examples.get("minver", "1.0")), r.version("maxver", examples.get("minver", "1.0"))
        if lo and hi and lo > hi:
            label = registry.get(b).facts.label
            r.fail(f"`minver` {lo} is above `maxver` {hi} in [general.{b}]; no {label} toolkit is left")
        out.append((b, (lo, hi)))
    return tuple(out)


def _depends(r: Reader, depends: tuple[str, ...], schema: Schema) -> None:
    for d in depends:
        if d in FARM_DEPENDS and d not in schema.depends:
            r.fail(
                f"`depends` in [{r.section}] names {d!r}, a name of the farm's own format that upstream's "
                f"editions refuse; {farm_depends_fix(d)}"
            )
        if d not in schema.depends:
            close = difflib.get_close_matches(d, schema.depends, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(schema.depends)}"
            r.fail(f"`depends` in [{r.section}] names unknown dependency {d!r}; {hint}")


def kernel_section(path: Path, kname: str, table: dict[str, Any], schema: Schema) -> KernelSpec:
    """One ``[kernel.<kname>]`` section as the kernel type of its backend."""
    section = f"kernel.{kname}"
    if not KERNEL_SECTION_RE.fullmatch(kname):
        raise ManifestError(f"{path}: [kernel.*] section {kname!r}: kernel names use letters, digits, '_' and '-'")
    r = Reader.checked(path, section, table)
    backend = r.get("backend", str, required=True)
    for key in table:  # the farm's format takes every backend's keys in every section
        foreign = foreign_key_message(key, section, backend)
        if foreign:
            r.fail(foreign)
    _depends(r, r.str_list("depends"), schema)
    if not r.str_list("src", required=True):
        r.fail(f'`src` in [{section}] is empty; list at least one source file, e.g. src = ["csrc/{kname}.cu"]')
    return kernel_type(backend).read(r, path.parent, kname)


def framework_of(data: dict[str, Any], schema: Schema) -> str:
    for f in ("torch", "torch-noarch", "tvm-ffi"):
        if f in data:
            if (
                f == "torch"
                and schema.pyext_only_torch_is_noarch
                and not data.get("kernel")
                and not data["torch"].get("src")
            ):
                return "torch-noarch"  # the pre-edition way: a [torch] with only pyext and no kernel sections
            return f
    return "torch-noarch"  # v3 and the farm's format: no framework table is a pure-Python kernel


def stable_abi(torch: Reader, backends: tuple[str, ...] | None) -> tuple[tuple[str, tuple[int, int]], ...]:
    value = torch.table.get("stable-abi")
    if value is None:
        return ()
    where = "`stable-abi` in [torch]"
    table = dict.fromkeys(backends or registry.names(), value) if isinstance(value, str) else value
    out = []
    for b, text in table.items():
        ver = torch.version_text(f"{where} ({b})", text)
        if backends is None or b in backends:  # entries for unlisted backends are ignored, as upstream does
            out.append((b, ver))
    return tuple(out)


def pyext(reader: Reader) -> tuple[str, ...]:
    section = reader.section
    exts = reader.str_list("pyext") if "pyext" in reader.table else DEFAULT_PYEXT
    for ext in exts:
        if not PYEXT_RE.fullmatch(ext):
            reader.fail(
                f'`pyext` in [{section}] has {ext!r}; list file extensions without the dot, e.g. ["py", "json"]'
            )
        if "." + ext in BUILT_SUFFIXES:
            reader.fail(
                f"`pyext` in [{section}] has {ext!r}: built files come from the build, not the package; drop it"
            )
    if "py" not in exts:
        reader.fail(
            f'`pyext` in [{section}] is {list(exts)!r} and leaves out "py": the package\'s Python files '
            'would not ship; add "py"'
        )
    return tuple(exts)


def noarch_list(reader: Reader, key: str) -> tuple[str, ...]:
    """A [torch-noarch] list in upstream's spelling (``cuda_capabilities``) or the dashed one."""
    return reader.str_list(key) if key in reader.table else reader.str_list(key.replace("_", "-"))


def schema_of(edition: Edition) -> Schema:
    return SCHEMAS[edition]


__all__ = ["COMPILED_SUFFIXES", "Manifest", "farm_depends_fix", "general_fields", "is_repo_id", "kernel_section"]
