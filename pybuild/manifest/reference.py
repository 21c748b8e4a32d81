"""The ``build.toml`` reference in Markdown, generated from the declared schema: the tables and keys
of the current edition with their kinds (from :mod:`.editions`), the kernel keys of each backend
(from the kernel types' fields), and how the older editions differ.

    python -m pybuild.manifest.reference > docs/manifest-reference.md
"""

from __future__ import annotations

import sys

from ..sections.kernel import KernelSpec
from ..sections.keys import declared_keys
from .editions import CURRENT_EDITION, SCHEMAS, Schema
from .kernels import kernel_types
from .schema import Table, kind_words

#: What each key of the current edition's tables means ("table.key"; kernel keys document themselves).
MEANING = {
    "general.name": "the kernel's name: lowercase letters, digits and '-' (the Python package is the name with '_')",
    "general.version": "the major version: the kernel is published on the Hub branch `v<version>`",
    "general.edition": "the edition the file is written in (the older formats, at the end, have none)",
    "general.license": "the kernel's license (SPDX), written into metadata.json",
    "general.upstream": "the git URL of the project the kernel comes from",
    "general.source": "the git URL of the kernel's own source",
    "general.backends": "the backends it builds for; a compiled kernel also needs a [kernel.*] section of each",
    "general.python-depends": "Python packages the kernel needs at run time (from the loader's allow-list)",
    "general.kernel-depends": "other Hub kernels it loads, each by `repo-id` and `version` or `revision`",
    "general.hub.repo-id": 'the Hub repository `publish` uploads to by default ("org/name")',
    "general.hub.branch": "the Hub branch `publish` uploads to by default",
    "general.cuda.minver": 'the oldest CUDA toolkit it builds with ("12.8")',
    "general.cuda.maxver": "the newest CUDA toolkit it builds with",
    "torch.src": "the binding: C++ sources registering the ops with torch",
    "torch.include": "include folders for the binding",
    "torch.minver": 'the oldest torch it builds for ("2.11")',
    "torch.maxver": "the newest torch it builds for",
    "torch.pyext": "extensions of the files of torch-ext/<name>/ that ship (default: py, pyi)",
    "torch.cxx-flags": "flags for every C++ source",
    "torch.stable-abi": "build once per backend version against torch's stable ABI: a version, or a table "
    "backend = version",
    "torch-noarch.pyext": "as in [torch]",
    "torch-noarch.cuda-capabilities": "CUDA capabilities written into metadata.json (also `cuda_capabilities`)",
    "torch-noarch.rocm-archs": "ROCm targets written into metadata.json (also `rocm_archs`)",
    "tvm-ffi.src": "the binding: C++ sources registering the functions with tvm-ffi",
    "tvm-ffi.include": "include folders for the binding",
    "tvm-ffi.pyext": "as in [torch]",
    "tvm-ffi.cxx-flags": "flags for every C++ source",
}
#: The value column where the kind's words say too much: the one edition read.
_VALUE = {"general.edition": f"`{CURRENT_EDITION}`"}
_SAME_AS = {"python-depends": "general.python-depends", "kernel-depends": "general.kernel-depends"}
_UNDERSCORED = ("cuda_capabilities", "rocm_archs")  # the same keys as their dashed spelling


def meaning(section: str, key: str) -> str:
    if key in _SAME_AS and section != "general":
        return f"as in [general], for the {section.split('.')[-1]} backend only"
    return MEANING[f"{section}.{key}"]


def _rows(section: str, table: Table) -> list[str]:
    rows = ["| key | value | required | meaning |", "|---|---|---|---|"]
    for k, kind in table.keys.items():
        if section == "torch-noarch" and k in _UNDERSCORED:
            continue
        value = _VALUE.get(f"{section}.{k}") or kind_words(kind, table.examples.get(k))
        rows.append(f"| `{k}` | {value} | {'yes' if k in table.required else ''} | {meaning(section, k)} |")
    return rows


def _kernel_rows(cls: type[KernelSpec], inherited: bool) -> list[str]:
    rows = []
    for k, f in declared_keys(cls).items():
        if inherited or k not in declared_keys(KernelSpec):
            required = "yes" if k in ("src", "depends") else ""
            value = kind_words(f.metadata["kind"], f.metadata.get("example"))
            rows.append(f"| `{k}` | {value} | {required} | {f.metadata['doc']} |")
    return rows


def _tables(schema: Schema) -> list[tuple[str, Table]]:
    out = [("general", schema.general), *((f"general.{n}", t) for n, t in schema.general.tables.items())]
    return out + list(schema.frameworks.items())


def _older(schema: Schema, current: Schema) -> list[str]:
    """How ``schema`` differs from the current edition, key by key."""
    now = {s: set(t.keys) for s, t in _tables(current)}
    lines = []
    for section, table in _tables(schema):
        extra = sorted(set(table.keys) - now.get(section, set()))
        missing = sorted(now.get(section, set()) - set(table.keys))
        if extra:
            lines.append(f"- [{section}] also takes {', '.join(f'`{k}`' for k in extra)}")
        if missing and section in now:
            lines.append(f"- [{section}] has no {', '.join(f'`{k}`' for k in missing)}")
    missing_tables = [s for s in now if s not in dict(_tables(schema))]
    if missing_tables:
        lines.append(f"- no {', '.join(f'[{s}]' for s in missing_tables)}")
    return lines + _older_rules(schema)


def _older_rules(schema: Schema) -> list[str]:
    """How ``schema`` reads differently beyond its keys: an optional `backends`, one kernel key set."""
    lines = []
    if schema.backends_optional:
        lines.append(
            "- `backends` is optional in [general]: left out, the kernel builds for the backends of its "
            "[kernel.*] sections"
        )
    kernel_tables = list(schema.kernels().values())
    if len(kernel_tables) > 1 and all(t is kernel_tables[0] for t in kernel_tables):
        keys = ", ".join(f"`{k}`" for k in kernel_tables[0].keys)
        lines.append(
            f"- [kernel.<name>] takes one key set that serves every backend ({keys}); a key that applies "
            "to another backend than the section's is refused when the file is read"
        )
    return lines


def render() -> str:
    current = SCHEMAS[CURRENT_EDITION]
    out = [
        "# build.toml reference",
        "",
        "Generated from pybuild's declared schema by `python -m pybuild.manifest.reference`; do not edit.",
        "",
        f"pybuild reads edition {CURRENT_EDITION} (below) and the older formats listed at the end; "
        "`python -m pybuild migrate` rewrites an older file as the current edition. A kernel has exactly one "
        "of [torch], [torch-noarch] (pure Python) and [tvm-ffi], and, when compiled, one or more "
        "[kernel.<name>] sections.",
    ]
    for section, table in _tables(current):
        out += ["", f"## [{section}]", "", *_rows(section, table)]
    out += [
        "",
        "## [kernel.<name>]",
        "",
        f"Every section takes `backend` (one of {', '.join(f'`{b}`' for b in kernel_types())}) and:",
        "",
        "| key | value | required | meaning |",
        "|---|---|---|---|",
        *_kernel_rows(KernelSpec, True),
    ]
    for backend, cls in kernel_types().items():
        rows = _kernel_rows(cls, False)
        out += ["", f'### backend = "{backend}"', ""]
        out += ["| key | value | required | meaning |", "|---|---|---|---|", *rows] if rows else ["No keys of its own."]
    out += ["", "## Older formats", ""]
    for edition, schema in SCHEMAS.items():
        if edition != CURRENT_EDITION:
            out += [f"### {schema.label}", "", *(_older(schema, current) or ["- the same tables and keys"]), ""]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
