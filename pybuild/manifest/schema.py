"""The shape of a ``build.toml`` table, declared as data, and the check of a document against it.

A :class:`Table` says which keys a TOML table takes, of which :data:`Kind`, which are required and
which sub-tables it holds. The kernel tables are not written by hand: :func:`fields_table` derives
them from the fields of the kernel types (each backend's, declared with
:func:`pybuild.sections.keys.key`), so a key added to a kernel type is a key of the schema.
:func:`check_table` names the first offence in one line (table, key, what was expected, a
did-you-mean).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .. import backends as registry
from ..sections.keys import Kind, declared_keys, did_you_mean


@dataclass(frozen=True)
class Table:
    """One TOML table: key -> kind, the required keys, and the sub-tables."""

    keys: dict[str, Kind]
    required: tuple[str, ...] = ()
    tables: dict[str, Table] = field(default_factory=dict)
    #: A hint for a key this table does not take, when another table would (kernel keys of other backends).
    elsewhere: dict[str, str] = field(default_factory=dict)
    #: A key's own example value, where the kind's ("2.11", a torch version) would mislead ("12.8" for CUDA).
    examples: dict[str, str] = field(default_factory=dict)

    def allowed(self) -> tuple[str, ...]:
        return (*self.keys, *self.tables)


def fields_table(
    cls: Any,
    extra: dict[str, Kind] | None = None,
    required: tuple[str, ...] = (),
    elsewhere: dict[str, str] | None = None,
) -> Table:
    """The table of the keys ``cls`` declares (plus ``extra``, first), requiring ``required``."""
    declared = declared_keys(cls)
    keys: dict[str, Kind] = {**(extra or {}), **{k: f.metadata["kind"] for k, f in declared.items()}}
    examples = {k: f.metadata["example"] for k, f in declared.items() if "example" in f.metadata}
    return Table(keys, required=required, elsewhere=elsewhere or {}, examples=examples)


KIND_WORDS = {
    "str": "a string",
    "int": "an integer (e.g. 1)",
    "bool": "true or false",
    "str_list": "a list of strings",
    "version": 'a "major.minor" version string like "2.11"',
    "table": "a table",
    "version_or_backend_table": 'a version like "2.11" or a table of backend = "2.11"',
    "kernel_deps": 'a list of tables like { repo-id = "org/kernel", version = 1 } (a whole number from 0, '
    'or revision = "...")',
    "git_url": 'a git URL like "https://github.com/org/repo.git" or "git@github.com:org/repo.git"',
}


def kind_words(kind: Kind, example: str | None = None) -> str:
    """How a message or the reference writes ``kind``, with the key's own ``example`` where it has one."""
    if example is None:
        return KIND_WORDS[kind]
    if kind == "version":
        return f'a "major.minor" version string like "{example}"'
    return f"{KIND_WORDS[kind].split(' (e.g.')[0]} (e.g. {example})"


_GIT_SCHEMES = ("https", "http", "git", "ssh", "git+ssh", "git+https", "git+http")
_EXAMPLES = {
    "edition": "edition = 5",
    "backends": 'backends = ["cuda"]',
    "license": 'license = "Apache-2.0"',
    "version": "version = 1",
    "depends": 'depends = ["torch"]',
    "src": 'src = ["..."]',
}


_SCP_HOST_RE = re.compile(r"([A-Za-z0-9_][-A-Za-z0-9_.]*@)?[A-Za-z0-9][-A-Za-z0-9.]*", re.ASCII)


def _git_url_ok(value: str) -> bool:
    """A URL `git clone` takes: one of upstream's schemes, or scp-like `host:path` (upstream's GitUrl);
    never one that git would read as an option (`-oProxyCommand=...`) or with a space or control
    character in it."""
    if value.startswith("-") or any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in value):
        return False
    scheme, sep, rest = value.partition("://")
    if sep:
        return scheme in _GIT_SCHEMES and bool(rest) and not rest.startswith("-")
    host, sep, path = value.partition(":")
    return bool(sep and _SCP_HOST_RE.fullmatch(host) and path and not path.startswith(("/", "-")))


def _kernel_dep_ok(dep: Any) -> bool:
    """`{ repo-id = "org/name", version = N }` or `{ repo-id = ..., revision = "..." }`, nothing else."""
    if (
        not isinstance(dep, dict)
        or not isinstance(dep.get("repo-id"), str)
        or set(dep) - {"repo-id", "version", "revision"}
    ):
        return False
    if ("version" in dep) == ("revision" in dep):
        return False
    version = dep.get("version", 0)  # upstream's usize: a whole number from 0, never a boolean
    return (
        isinstance(dep.get("revision", ""), str)
        and isinstance(version, int)
        and not isinstance(version, bool)
        and version >= 0
    )


def kind_ok(kind: Kind, value: Any) -> bool:
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


def _check_key(schema: Table, section: str, key: str, value: Any) -> str | None:
    if key not in schema.keys:
        hint = schema.elsewhere.get(key) or did_you_mean(key, schema.allowed())
        return f"unknown key `{key}` in [{section}]; {hint}"
    kind = schema.keys[key]
    if not kind_ok(kind, value):
        return f"`{key}` in [{section}] must be {kind_words(kind, schema.examples.get(key))}; found {value!r}"
    if kind == "version_or_backend_table" and isinstance(value, dict):
        for b in value:
            known = tuple(sorted(registry.noarch_names()))  # every registered backend, read now (one may join later)
            if b not in known:
                return (
                    f"unknown backend `{b}` in [{section}.{key}]; "
                    f"{did_you_mean(b, known).replace('allowed keys', 'backends')}"
                )
    return None


def check_table(table: Any, schema: Table, section: str) -> str | None:
    """The first way ``table`` breaks ``schema``, in one line without the file name; None if none."""
    if not isinstance(table, dict):
        return f"[{section}] must be a table; found {table!r}"
    for key, value in table.items():
        err = (
            check_table(value, schema.tables[key], f"{section}.{key}")
            if key in schema.tables
            else _check_key(schema, section, key, value)
        )
        if err:
            return err
    for key in schema.required:
        if key not in table:
            return f"missing `{key}` in [{section}]; add it, e.g. {_EXAMPLES.get(key, key + ' = ...')}"
    return None
