"""Rewrite a ``build.toml`` of an older edition as edition 5, keeping its comments and layout.

``migrate_text`` is pure: text in, text out. It edits the TOML document (tomlkit keeps comments,
order and formatting of what it does not touch) and then proves the result: the new text must
parse as edition 5 into the same model as the old one (apart from the edition itself).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.container import Container
from tomlkit.items import Comment, InlineTable, Table, Whitespace

from ..errors import ManifestError
from .convert import farm_depends_fix
from .editions import CURRENT_EDITION, FARM_DEPENDS, UPSTREAM_DEPENDS, detect, edition_label
from .load import parse_manifest
from .model import Manifest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclasses.dataclass(frozen=True)
class Migration:
    path: Path
    old: str
    new: str
    edition: object  # the edition the file was written in

    @property
    def changed(self) -> bool:
        return self.old != self.new

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.old.splitlines(keepends=True),
                self.new.splitlines(keepends=True),
                fromfile=f"{self.path} (before)",
                tofile=f"{self.path} (edition 5)",
            )
        )


def _comparable(m: Manifest) -> Manifest:
    """The model without what only records the edition (and pure-Python noise of the old formats)."""
    linked = ("torch",) if m.edition == "farm" else ()  # the farm's format links torch, listed or not
    kernels = tuple(dataclasses.replace(k, depends=tuple(sorted({*linked, *k.depends}))) for k in m.kernels)
    return dataclasses.replace(m, edition=5, license_set=True, backends_filter=m.backends, kernels=kernels)


def migrate_text(text: str, path: Path) -> Migration:
    """``text`` (a build.toml at ``path``) as edition 5. Raises ManifestError when the old manifest is
    broken or lacks what edition 5 requires (a license)."""
    old = parse_manifest(text, path)  # the old manifest must be valid in its own edition first
    data = tomllib.loads(text)
    edition, _ = detect(data)
    if edition == CURRENT_EDITION:
        return Migration(path, text, text, edition)
    for k in old.kernels:
        for d in k.depends:
            if d in FARM_DEPENDS and d not in UPSTREAM_DEPENDS:
                raise ManifestError(
                    f"{path}: `depends` in [kernel.{k.name}] names {d!r}, which has no equivalent in "
                    f"edition {CURRENT_EDITION}; {farm_depends_fix(d)}, then migrate"
                )
    doc = tomlkit.parse(text)
    general = _as_table(doc, "general", path)
    if "license" not in general:
        raise ManifestError(
            f"{path}: edition {CURRENT_EDITION} requires `license` in [general]; add the kernel's "
            'license, e.g. license = "Apache-2.0", then migrate'
        )
    if "universal" in general:
        del general["universal"]  # false (true is refused when parsing): the default of every edition
    added: dict[str, Any] = {}
    if "version" not in general:
        added["version"] = old.version
    if "backends" not in general:
        added["backends"] = _array(old.backends)
    added["edition"] = CURRENT_EDITION
    _add_keys(doc, "general", added)
    if old.noarch and "torch-noarch" not in doc:
        noarch = tomlkit.table()
        if "torch" in doc:  # the old formats' [torch] with only `pyext`: the same keys in [torch-noarch]
            for key, value in doc["torch"].items():
                noarch[key] = value
            del doc["torch"]
        doc["torch-noarch"] = noarch
    if edition == "farm":  # the farm links torch into every section; upstream only through depends = ["torch"]
        kernels = doc.get("kernel") or {}
        for name, table in list(kernels.items()):
            if "depends" not in table:
                _add_keys(kernels, name, {"depends": _array(("torch",))})  # optional in the farm's format only
            elif "torch" not in table["depends"]:
                table["depends"].insert(0, "torch")
    new_text = tomlkit.dumps(doc)
    if "\r\n" in text:  # tomlkit writes the lines it adds with "\n": keep the file's own line ends
        new_text = re.sub(r"\r?\n", "\r\n", new_text)
    new = parse_manifest(new_text, path)
    if _comparable(new) != _comparable(old):
        diff = [
            f.name
            for f in dataclasses.fields(Manifest)
            if getattr(_comparable(new), f.name) != getattr(_comparable(old), f.name)
        ]
        raise ManifestError(
            f"{path}: migrating from {edition_label(edition)} would change {', '.join(diff)}; "  # type: ignore[arg-type]
            "please report this and migrate by hand"
        )
    return Migration(path, text, new_text, edition)


def _as_table(doc: Any, key: str, path: Path) -> Table:
    """``doc[key]`` as a ``[key]`` table: an inline table (``general = { name = "x" }``) is rewritten as one."""
    value = doc[key]
    if isinstance(value, Table):
        return value
    if not isinstance(value, InlineTable):  # the manifest parsed, so [general] is a table of some kind
        raise ManifestError(
            f"{path}: `{key}` is written in a form migrate cannot rewrite; write it as a [{key}] table, then migrate"
        )
    table = tomlkit.table()
    for k, v in value.items():
        table[k] = v
    doc[key] = table
    return doc[key]


def _add_keys(parent: Any, name: str, keys: dict[str, Any]) -> None:
    """Add ``keys`` to the table ``parent[name]`` right after its last key. tomlkit keeps the comments
    and blank lines above the next table's header at the end of this one: appended keys would land
    below them, under the wrong header. So the table is rebuilt with the keys before that tail."""
    table = parent[name]
    body = (
        [(k, v) for k, v in table.value.body if k is not None or isinstance(v, (Comment, Whitespace))]
        if isinstance(table, Table)
        else []
    )
    last = max((i for i, (k, _) in enumerate(body) if k is not None), default=-1)
    if last == len(body) - 1:  # an inline table, or nothing after the last key: append
        for key, value in keys.items():
            table[key] = value
        return
    out = Table(
        Container(), table.trivia, table.is_aot_element(), table.is_super_table(), display_name=table.display_name
    )
    for k, v in body[: last + 1]:
        out.add(k, v) if k is not None else out.add(v)  # type: ignore[call-overload]
    for key, value in keys.items():
        out[key] = value
    for _, v in body[last + 1 :]:
        if isinstance(v, Comment) and v is body[-1][1]:  # end on whitespace, or tomlkit adds a blank line
            trail, v.trivia.trail = v.trivia.trail, ""
            out.add(v)
            out.add(Whitespace(trail))
        else:
            out.add(v)  # type: ignore[call-overload]
    parent[name] = out


def _array(items: Any) -> Any:
    arr = tomlkit.array()
    arr.extend(items)
    return arr


def write_migrations(migrations: list[Migration]) -> None:
    """Write every migrated build.toml, all or nothing: each new text first goes to a temporary file
    in its kernel's ``.pybuild/`` (the same file system; a kill leaves nothing beside build.toml),
    with the old file's permissions; only when all are written are they renamed over the old files.
    A symlinked build.toml is refused: migrate rewrites the kernel's own file, never a link's target."""
    staged: list[tuple[Path, Path]] = []
    current = migrations[0].path if migrations else Path("build.toml")
    try:
        for m in migrations:
            current = m.path
            st = m.path.lstat()
            if stat.S_ISLNK(st.st_mode):
                raise ManifestError(
                    f"{m.path}: is a symlink; migrate rewrites a kernel's own build.toml: run it where the "
                    "file itself lies, or replace the link with a copy"
                )
            work = m.path.parent / ".pybuild"
            work.mkdir(exist_ok=True)
            fd, name = tempfile.mkstemp(dir=work, prefix="migrate.build.toml.")
            staged.append((Path(name), m.path))
            with os.fdopen(fd, "wb") as f:
                f.write(m.new.encode("utf-8"))
                f.flush()
                os.fsync(f.fileno())
            os.chmod(name, stat.S_IMODE(st.st_mode))
    except OSError as e:
        for staged_file, _ in staged:
            staged_file.unlink(missing_ok=True)
        raise ManifestError(f"{current}: cannot be rewritten ({e.strerror}); nothing was migrated") from None
    except BaseException:
        for staged_file, _ in staged:
            staged_file.unlink(missing_ok=True)
        raise
    for staged_file, path in staged:
        os.replace(staged_file, path)
