"""The ``build.toml`` editions this farm reads, one module each: upstream's edition 5 (:mod:`.v5`),
its pre-edition formats v4 and v3 (:mod:`.v4`, :mod:`.v3`) and the farm's own pre-edition format
(:mod:`.farm`). Each declares its schema and the rules in which its meaning differs; the conversion
into the one model (``pybuild.manifest.convert``) reads them.

:func:`detect` picks the edition the way upstream does (``edition = 5``, else the stricter v4, else
v3), then the farm's format; :func:`validate` checks a document against one edition's schema and
names the first offence in one line (table, key, what was expected, a did-you-mean).
"""

from __future__ import annotations

import difflib
from typing import Any

from ..kernels import kernel_types
from ..schema import check_table, did_you_mean
from . import farm, v3, v4, v5
from .base import CURRENT_EDITION, FARM_DEPENDS, KNOWN_DEPENDS, NOARCH_SPELLINGS, UPSTREAM_DEPENDS, Edition, Schema
from .base import framework_tables as framework_tables

__all__ = [
    "CURRENT_EDITION",
    "EDITIONS",
    "FARM_DEPENDS",
    "KNOWN_DEPENDS",
    "SCHEMAS",
    "UPSTREAM_DEPENDS",
    "Edition",
    "Schema",
    "detect",
    "did_you_mean",
    "edition_label",
    "validate",
]

SCHEMAS: dict[Edition, Schema] = {s.edition: s for s in (v5.SCHEMA, v4.SCHEMA, v3.SCHEMA, farm.SCHEMA)}
EDITIONS: tuple[Edition, ...] = tuple(SCHEMAS)
FRAMEWORKS = ("torch", "torch-noarch", "tvm-ffi")


def edition_label(edition: Edition) -> str:
    return SCHEMAS[edition].label


def _check_frameworks(data: dict[str, Any], schema: Schema) -> str | None:
    present = [f for f in schema.frameworks if f in data]
    if schema.one_framework and len(present) != 1:
        return (
            f"{'no' if not present else 'more than one'} framework table ({', '.join(present) or 'none found'}); "
            "a kernel has exactly one of [torch], [torch-noarch], [tvm-ffi] (an empty [torch-noarch] for a "
            "pure-Python kernel)"
        )
    if not schema.one_framework and len(present) > 1:
        return "both [torch] and [tvm-ffi]; a kernel has exactly one framework table"
    for f in present:
        err = check_table(data[f], schema.frameworks[f], f)
        if err:
            return err
    noarch = data.get("torch-noarch")
    for key in NOARCH_SPELLINGS:
        if isinstance(noarch, dict) and key in noarch and key.replace("_", "-") in noarch:
            return f"both `{key}` and `{key.replace('_', '-')}` in [torch-noarch]; they are the same key, keep one"
    return None


def _check_kernels(data: dict[str, Any], schema: Schema) -> str | None:
    kernels = data.get("kernel", {})
    if not isinstance(kernels, dict):
        return "`kernel` must be tables like [kernel.<name>]"
    tables = schema.kernels()
    for kname, table in kernels.items():
        section = f"kernel.{kname}"
        if not isinstance(table, dict):
            return f"[{section}] must be a table; found {table!r}"
        backend = table.get("backend")
        if not isinstance(backend, str):
            return (
                f'missing `backend` in [{section}]; add it, e.g. backend = "cuda"'
                if backend is None
                else f"`backend` in [{section}] must be a string; found {backend!r}"
            )
        if backend not in tables:
            close = difflib.get_close_matches(backend, tuple(kernel_types()), n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"use one of {', '.join(kernel_types())}"
            return f"`backend` in [{section}] is {backend!r}, an unknown backend; {hint}"
        err = check_table(table, tables[backend], section)
        if err:
            return err
    return None


def validate(data: dict[str, Any], edition: Edition) -> str | None:
    """The first way ``data`` breaks ``edition``'s schema, in one line without the file name; None if none."""
    schema = SCHEMAS[edition]
    for key in data:
        if key not in schema.top:
            return f"unknown key `{key}` in [top level]; {did_you_mean(key, schema.top)}"
    if "general" not in data:
        return 'missing [general] table; add it with at least name = "..."'
    return (
        check_table(data["general"], schema.general, "general")
        or _check_frameworks(data, schema)
        or _check_kernels(data, schema)
    )


def _likeliest(data: dict[str, Any]) -> Edition:
    """The edition a document that fits none was most likely meant to be written in."""
    general = data.get("general")
    likely: Edition = "farm"
    if isinstance(general, dict) and "backends" in general and "universal" not in general:
        likely = 4 if ("version" in general and "license" in general) else 3
    if any(k in data for k in ("torch-noarch", "tvm-ffi")):
        likely = 4
    return likely


def detect(data: dict[str, Any]) -> tuple[Edition | None, str | None]:
    """(edition, None) for the edition ``data`` is written in, or (None, the one-line reason) when it
    is none of them. Like upstream: ``edition = 5`` is edition 5; without an edition, v4 (stricter)
    before v3; then the farm's own format. The reason given is the one of the likeliest edition."""
    general = data.get("general")
    if not isinstance(general, dict):
        return None, validate(data, _likeliest(data))
    edition = general.get("edition")
    if edition is not None:
        if edition != CURRENT_EDITION or isinstance(edition, bool):
            return None, (
                f"`edition` in [general] is {edition!r}; this farm reads edition {CURRENT_EDITION} "
                f"(and the pre-edition formats); set edition = {CURRENT_EDITION} and run "
                "`python -m pybuild check-config`"
            )
        err = validate(data, 5)
        return (5, None) if err is None else (None, err)
    errors: dict[Edition, str] = {}
    for candidate in (4, 3, "farm"):
        err = validate(data, candidate)
        if (
            err is None
            and candidate == 3
            and "license" not in general
            and validate(data, "farm") is None
            and all(b in kernel_types() for b in general.get("backends", ()))
        ):
            return "farm", None  # v3 needs a license; without one it is the farm's format, whose default is Apache-2.0
        if err is None:
            return candidate, None
        errors[candidate] = err
    return None, errors[_likeliest(data)]
