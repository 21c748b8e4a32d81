"""The kernel card: the README.md a published kernel repo opens with.

``render_card`` is pure apart from reading the kernel's files: the same build, version and check
verdict always give the same bytes, so re-running a release compares equal to what was uploaded.
"""

from __future__ import annotations

import ast
import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import yaml
from packaging.version import Version

from . import __version__
from .check import MANYLINUX, CheckReport
from .errors import VariantsError
from .manifest import Manifest
from .metadata import METADATA
from .variants import parse_variant_name

TEMPLATE = "card.md.j2"
_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(Path(__file__).resolve().parent / "templates")),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
)


@dataclass(frozen=True)
class CardVariant:
    name: str
    torch: str
    backend: str
    archs: str
    manylinux: str
    abi3: str


def _verdict(report: CheckReport, variant: str, check: str) -> str:
    for r in report.results:
        if r.variant == variant and r.check == check:
            return {"pass": "yes", "fail": "**no**", "skip": "-"}[r.status]
    return "-"


def _package_info(manifest: Manifest) -> tuple[str, list[str]]:
    """First docstring line and ``__all__`` of the kernel's Python wrapper (read, never imported)."""
    init = manifest.root / manifest.package_dir / manifest.python_name / "__init__.py"
    try:
        tree = ast.parse(init.read_text())
    except (OSError, SyntaxError):
        return "", []
    doc = (ast.get_docstring(tree) or "").strip().splitlines()
    exports: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            with contextlib.suppress(ValueError):  # not a literal list: no exports shown
                exports = [str(x) for x in ast.literal_eval(node.value)]
    return (doc[0] if doc else ""), exports


def _source_commit(build_dir: Path, variants: list[str]) -> tuple[str | None, bool]:
    commits: set[str] = set()
    dirty = False
    for name in variants:
        try:
            meta = json.loads((build_dir / name / METADATA).read_text())
        except (OSError, ValueError):
            continue
        kernel = (meta.get("provenance") or {}).get("kernel") or {}
        if kernel.get("commit"):
            commits.add(kernel["commit"])
            dirty |= bool(kernel.get("dirty"))
    return (commits.pop(), dirty) if len(commits) == 1 else (None, False)


def card_variants(report: CheckReport) -> list[CardVariant]:
    rows = []
    for name in report.variants:
        try:
            v = parse_variant_name(name)
            torch, backend = v.torch or "any", v.backend_tag
        except VariantsError:
            torch, backend = "?", "?"
        archs = ""
        try:
            meta: dict[str, Any] = json.loads((report.build_dir / name / METADATA).read_text())
            archs = ", ".join(meta.get("backend", {}).get("archs") or [])
        except (OSError, ValueError):
            pass
        manylinux = _verdict(report, name, MANYLINUX)
        if manylinux == "-" and name.endswith("-darwin"):
            manylinux = "n/a (macOS)"
        rows.append(CardVariant(name, torch, backend, archs, manylinux, _verdict(report, name, "abi3")))
    return rows


def front_matter(license: str) -> str:
    """The card's YAML front matter (between its ``---`` lines), written by PyYAML's safe dumper: the
    license is one scalar however it is spelled, never more keys. The Hub's license ids are lowercase."""
    return str(yaml.safe_dump({"license": license.lower(), "tags": ["kernels", "pybuild"]}, sort_keys=False))


def render_card(
    manifest: Manifest, *, repo_id: str, version: str, report: CheckReport, noncompliant: list[str] | None = None
) -> str:
    """The README.md of release ``version`` of ``manifest``'s kernel in ``repo_id``."""
    major = Version(version).major
    summary, exports = _package_info(manifest)
    commit, dirty = _source_commit(report.build_dir, report.variants)
    missing: list[str] = []
    for r in report.results:
        if r.check == "variants":
            missing = list(r.data.get("missing", []))
    own_readme = manifest.root / "README.md"
    return _env.get_template(TEMPLATE).render(
        name=manifest.name,
        python_name=manifest.python_name,
        front_matter=front_matter(manifest.license),
        summary=summary or f"The `{manifest.name}` kernel.",
        version=version,
        major=major,
        branch=f"v{major}",
        tag=f"v{version}",
        repo_id=repo_id,
        pybuild_version=__version__,
        source_commit=commit,
        source_dirty=dirty,
        noncompliant=noncompliant or [],
        variants=card_variants(report),
        missing=missing,
        exports=exports,
        readme=own_readme.read_text().strip() if own_readme.is_file() else "",
    )
