"""What a release holds and which refs it names: local, no network apart from nothing at all.

``make_plan`` reads the kernel's files and selects what goes into the repo (sources, the generated
kernel card, ``build/``); nothing reached through a symlink, nothing generated or cached.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .. import safeload
from ..check import CheckReport
from ..digest import DIGEST_EXCLUDED, source_hash
from ..errors import PublishError, UsageError
from ..generate import generated_paths
from ..manifest import Manifest
from ..manifest.convert import is_repo_id
from ..metadata import METADATA
from ..safeload import shown
from .stream import changed_error, hash_file

VERSION_RE = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$", re.ASCII)
CARD = "README.md"

#: What a release holds, relative to the kernel folder.
SOURCE_DIRS = ("csrc", "torch-ext", "tests")
SOURCE_FILES = ("build.toml", "flake.nix", "flake.lock", "LICENSE", "LICENSE.txt", "LICENSE.md")
#: Never uploaded: build trees, caches, generated CMake project files.
EXCLUDED_PARTS = {"__pycache__", ".pybuild", ".pytest_cache", ".git", ".mypy_cache", ".ruff_cache"}
EXCLUDED_SUFFIXES = (".pyc", ".pyo")
EXCLUDED_NAMES = {"compile_commands.json", ".DS_Store", "CMakeCache.txt", "CMakeFiles"}


def git_blob_oid(data: bytes) -> str:
    """The git blob sha1 the Hub reports as a regular file's oid."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass(frozen=True)
class ReleaseFile:
    """One entry of a release's manifest: what is uploaded at ``path``, hashed once when planned."""

    path: str  # path in the repo (posix)
    size: int
    sha256: str
    git_oid: str
    source: Path | None  # the local file, or None for generated content
    content: bytes | None = None  # generated content (the kernel card)

    @classmethod
    def from_bytes(cls, path: str, data: bytes) -> ReleaseFile:
        return cls(path, len(data), hashlib.sha256(data).hexdigest(), git_blob_oid(data), None, data)

    @classmethod
    def from_file(cls, path: str, source: Path) -> ReleaseFile:
        """``source`` streamed once (never read whole): its size, sha256 and git blob id."""
        size, sha256, git_oid = hash_file(source)
        return cls(path, size, sha256, git_oid, source)


@dataclass(frozen=True)
class ReleasePlan:
    kernel: str
    repo_id: str
    repo_type: str
    version: str
    branch: str
    tag: str
    files: tuple[ReleaseFile, ...]
    noncompliant: tuple[str, ...] = ()

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def variants(self) -> list[str]:
        return sorted(
            {f.path.split("/")[1] for f in self.files if f.path.startswith("build/") and f.path.count("/") >= 2}
        )


def parse_version(version: str, manifest: Manifest) -> tuple[int, int, int]:
    m = VERSION_RE.fullmatch(version)
    if not m:
        raise UsageError(f"--version {version!r}: expected MAJOR.MINOR.PATCH, e.g. 1.0.0")
    major, minor, patch = (int(x) for x in m.groups())
    if major != manifest.version:
        msg = (
            f"--version {version}: major {major} differs from `version = {manifest.version}` in [general] of "
            f"{manifest.path} (the v<N> branch that get_kernel(version=N) loads); use "
            f"{manifest.version}.x.y, or bump `version` in build.toml and rebuild"
        )
        raise UsageError(msg)
    return major, minor, patch


def check_repo_id(repo_id: str) -> str:
    if not is_repo_id(repo_id):
        raise UsageError(f"--repo-id {repo_id!r}: expected ORG/NAME, e.g. my-org/img2gray")
    return repo_id


def _excluded(rel: Path) -> bool:
    return (
        any(part in EXCLUDED_PARTS or part in EXCLUDED_NAMES for part in rel.parts) or rel.suffix in EXCLUDED_SUFFIXES
    )


def _refuse_link(path: Path) -> PublishError:
    try:
        target = f" (to {os.readlink(path)})"
    except OSError:
        target = ""
    return PublishError(
        f"{shown(path)}: is a symlink{target}; publish uploads only the kernel's own files and a link "
        "may lead out of the kernel folder: replace it with a copy of what it points to, or remove it"
    )


def _own_file(root: Path, rel: str) -> Path | None:
    """``root/rel`` if it is a regular file reached without any symlink on the way (None if absent)."""
    path, mode = root, stat.S_IFDIR  # "." names the root folder itself: no file
    for part in Path(rel).parts:
        path = path / part
        try:
            mode = path.lstat().st_mode
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(mode):
            raise _refuse_link(path)
    if not stat.S_ISREG(mode):
        if stat.S_ISDIR(mode):
            return None
        raise PublishError(f"{shown(path)}: not a regular file; publish uploads files only: remove it")
    return path


def _hidden_in_build(rel: Path) -> bool:
    """``build/.staging.*`` and other dot entries of build/: a run's work in progress, never a variant."""
    return rel.parts[0] == "build" and len(rel.parts) > 1 and rel.parts[1].startswith(".")


def select_files(manifest: Manifest) -> list[tuple[str, Path]]:
    """``(path in repo, local file)`` for the kernel's sources and ``build/``; never generated or cached
    files, and nothing reached through a symlink (refused by name) or that is not a regular file."""
    root = manifest.root
    generated = set(generated_paths(manifest))
    chosen: dict[str, Path] = {}
    for name in SOURCE_FILES:
        found = _own_file(root, name)
        if found is not None:
            chosen[name] = found
    # Everything build.toml names (sources, include folders, the wrapper), wherever it lives:
    # the published repo must rebuild from its own files.
    for rel in manifest.source_files(PublishError):
        if rel not in generated and not _excluded(Path(rel)):
            found = _own_file(root, rel)
            if found is not None:
                chosen[rel] = found

    def skipped(path: Path) -> bool:
        rel = path.relative_to(root)
        return _excluded(rel) or _hidden_in_build(rel)

    # Include folders are uploaded (above) file by file; a symlinked folder in one is refused by name,
    # not left out (the release could not rebuild without it).
    for inc in (*manifest.torch_include, *(i for k in manifest.kernels for i in k.include)):
        base = root / inc
        if _own_file(root, inc) is None and base.is_dir():
            for p, st in safeload.walk(base, PublishError, prune=skipped):
                if stat.S_ISLNK(st.st_mode):
                    raise _refuse_link(p)

    for d in (*SOURCE_DIRS, "build"):
        chosen.update(_folder_files(root, d, generated, skipped))
    return sorted(chosen.items())


def _folder_files(
    root: Path, folder: str, generated: set[str], skipped: Callable[[Path], bool]
) -> Iterator[tuple[str, Path]]:
    """The files of ``root/folder`` to upload; never descends into a symlinked folder, a staging folder
    or an excluded part. Compiled files only from ``build/``."""
    base = root / folder
    if base.is_symlink():
        raise _refuse_link(base)
    if not base.is_dir():
        return
    for p, st in safeload.walk(base, PublishError, prune=skipped):
        if stat.S_ISLNK(st.st_mode):
            raise _refuse_link(p)
        if stat.S_ISDIR(st.st_mode):
            continue
        if not stat.S_ISREG(st.st_mode):
            raise PublishError(f"{shown(p)}: not a regular file; publish uploads files only: remove it")
        posix = p.relative_to(root).as_posix()
        if folder != "build" and (posix in generated or p.suffix in (".so", ".dylib", ".pyd")):
            continue
        yield posix, p


def _refuse_strays(selected: list[tuple[str, Path]], variants: set[str]) -> None:
    """``build/`` holds only the variants ``check`` verified: anything else there (a stray
    ``build/credentials.txt``, a folder that is no variant) would be uploaded unchecked."""
    for rel, path in selected:
        parts = rel.split("/")
        if parts[0] == "build" and (len(parts) < 3 or parts[1] not in variants):
            raise PublishError(
                f"{shown(path)}: is not in a built variant that `check` verified; build/ holds only what "
                "the build made: move it out of build/"
            )


def _match_checked_digests(root: Path, files: list[ReleaseFile], variants: set[str]) -> None:
    """Every file of a built variant is the one ``check`` verified: its sha256 is the one the
    variant's metadata.json records (and check compared), and no recorded file is missing."""
    by_variant: dict[str, dict[str, ReleaseFile]] = {}
    for f in files:
        parts = f.path.split("/", 2)
        if parts[0] == "build" and len(parts) == 3 and parts[1] in variants:
            by_variant.setdefault(parts[1], {})[parts[2]] = f
    for variant, found in sorted(by_variant.items()):
        try:
            recorded = safeload.load_json(root / "build" / variant / METADATA, PublishError)["digest"]["files"]
        except (KeyError, TypeError):
            continue  # no digest recorded: check's `digest` row says so
        if not isinstance(recorded, dict):
            continue  # not a digest the loader reads: check's `digest` row says so
        for rel, f in sorted(found.items()):
            if rel in DIGEST_EXCLUDED or "__pycache__" in rel.split("/"):
                continue
            want = recorded.get(rel)
            got = base64.b64encode(bytes.fromhex(f.sha256)).decode()
            if want != got:
                why = "not in its variant's digest" if want is None else "its sha256 is not metadata.json's"
                raise changed_error(root / f.path, why)
        for rel in sorted(set(recorded) - set(found)):
            raise changed_error(root / "build" / variant / rel, "it is gone")


def _match_checked_sources(manifest: Manifest, files: list[ReleaseFile], report: CheckReport) -> None:
    """The sources to upload are those ``check`` found the variants built from: their source hash,
    computed from the release manifest's digests, is the one each passing `sources` row verified."""
    passed = [r.variant for r in report.results if r.check == "sources" and r.status == "pass"]
    if not passed:
        return
    by_path = {f.path: f for f in files}

    def sha256_of(rel: str) -> bytes:
        f = by_path.get(rel)
        return bytes.fromhex(f.sha256 if f is not None else hash_file(manifest.root / rel)[1])

    now = source_hash(manifest, sha256_of)
    for variant in passed:
        meta = safeload.load_json(manifest.root / "build" / variant / METADATA, PublishError)
        info = meta.get("pybuild") if isinstance(meta, dict) else None
        built = info.get("source-hash") if isinstance(info, dict) else None
        if built and built != now:
            msg = (
                f"{manifest.root}: the kernel's sources changed after they were checked ({variant} was built "
                f"from source hash {built[:10]}, the files to upload hash to {now[:10]}); nothing was committed: "
                f"rebuild, run `python -m pybuild check` and publish again"
            )
            raise PublishError(msg)


def noncompliance_lines(report: CheckReport) -> list[str]:
    lines = []
    for r in report.failures:
        where = f" for `{r.variant}`" if r.variant != "*" else ""
        lines.append(f"`{r.check}` failed{where}: {r.detail}")
    return lines


def make_plan(
    manifest: Manifest,
    *,
    repo_id: str,
    version: str,
    report: CheckReport,
    allow_noncompliant: bool,
    repo_type: str = "kernel",
) -> ReleasePlan:
    """What a release of ``manifest``'s kernel would write; refuses a build that fails ``check``."""
    from ..card import render_card

    check_repo_id(repo_id)
    major, _, _ = parse_version(version, manifest)
    noncompliant = noncompliance_lines(report)
    built = [r for r in report.results if r.variant != "*"]
    if not built:
        raise PublishError(f"{manifest.root}/build: nothing built; run `python -m pybuild build {manifest.root}` first")
    if noncompliant and not allow_noncompliant:
        failed = ", ".join(sorted({r.check for r in report.failures}))
        msg = (
            f"{manifest.root}: the build fails `python -m pybuild check` ({failed}); fix that (see the table), "
            "or pass --allow-noncompliant to publish anyway (recorded in the kernel card)"
        )
        raise PublishError(msg)
    selected = select_files(manifest)
    _refuse_strays(selected, set(report.variants))
    files = [ReleaseFile.from_file(rel, p) for rel, p in selected]
    _match_checked_digests(manifest.root, files, set(report.variants))
    _match_checked_sources(manifest, files, report)
    card = render_card(
        manifest,
        repo_id=repo_id,
        version=version,
        report=report,
        noncompliant=noncompliant if allow_noncompliant else [],
    )
    files = [f for f in files if f.path != CARD] + [ReleaseFile.from_bytes(CARD, card.encode())]
    return ReleasePlan(
        kernel=manifest.name,
        repo_id=repo_id,
        repo_type=repo_type,
        version=version,
        branch=f"v{major}",
        tag=f"v{version}",
        files=tuple(sorted(files, key=lambda f: f.path)),
        noncompliant=tuple(noncompliant),
    )
