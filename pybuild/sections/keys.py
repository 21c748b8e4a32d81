"""TOML keys declared as dataclass fields: what both a table's schema and the typed read of it come
from (:mod:`pybuild.manifest.schema` derives tables from them, :class:`~.kernel.KernelSpec` reads
them)."""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import field
from typing import Any, Literal

Kind = Literal[
    "str", "int", "bool", "str_list", "version", "table", "version_or_backend_table", "kernel_deps", "git_url"
]


def key(toml: str, kind: Kind, default: Any = (), **meta: Any) -> Any:
    """A dataclass field read from the TOML key ``toml`` of kind ``kind``: the declaration that both
    the schema (:func:`pybuild.manifest.schema.fields_table`) and the conversion into the model read."""
    return field(default=default, metadata={"toml": toml, "kind": kind, **meta})


def declared_keys(cls: Any) -> dict[str, dataclasses.Field[Any]]:
    """``{toml key: field}`` for the fields of dataclass ``cls`` declared with :func:`key`."""
    return {f.metadata["toml"]: f for f in dataclasses.fields(cls) if "toml" in f.metadata}


def did_you_mean(key: str, allowed: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1)
    return f"did you mean `{close[0]}`?" if close else f"allowed keys: {', '.join(allowed) or 'none'}"
