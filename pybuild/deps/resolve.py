"""Where a build finds a pinned dependency's header tree, in order:

1. a local tree or archive the user names (``PYBUILD_DEP_<NAME>``, e.g. ``PYBUILD_DEP_CUTLASS_3_6``);
2. the cache (``<cache>/deps/<name>-<version>/``, see :func:`pybuild.fsutil.cache_root`);
3. the package index, where it serves a wheel with exactly that tree (``nvidia-cutlass`` 3.5.1, 3.6.0, 3.8.0);
4. the tag's archive, from ``PYBUILD_DEPS_MIRROR`` (a folder or URL holding ``cutlass-3.6.0.tar.gz``) if set,
   else from the pinned URL.

Whatever is unpacked is checked against the pin's tree hash before it is used, and moved into the
cache only when complete; a local folder is used as it is (it is the user's own tree).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
import uuid
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..errors import ToolchainError
from ..fsutil import cache_root, locked, remove_tree
from .pins import Pin

MARKER = ".pybuild-dep.json"
MIRROR_VAR = "PYBUILD_DEPS_MIRROR"
#: No pinned tree comes near this; a larger download is refused rather than unpacked.
MAX_ARCHIVE_BYTES = 1 << 30

Report = Callable[[str], None]


@dataclass(frozen=True)
class Resolved:
    """A dependency's header tree on this machine."""

    pin: Pin
    root: Path  # the tree: ``root/include`` etc.
    tree_sha256: str
    source: str  # one line for people: where it came from

    @property
    def include_dirs(self) -> tuple[Path, ...]:
        return tuple(self.root / i for i in self.pin.include if (self.root / i).is_dir())


def deps_dir() -> Path:
    return (cache_root() / "deps").absolute()  # handed to CMake, which runs in another folder


def tree_digest(root: Path, include: tuple[str, ...]) -> str:
    """sha256 of the ``<sha256>  <path>`` lines, sorted by path, of every regular file under ``include``."""
    lines = []
    for folder in include:
        base = root / folder
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for name in filenames:
                path = Path(dirpath) / name
                if path.is_file():
                    rel = path.relative_to(root).as_posix()
                    lines.append((rel, hashlib.sha256(path.read_bytes()).hexdigest()))
    lines.sort()
    return hashlib.sha256("".join(f"{d}  {p}\n" for p, d in lines).encode()).hexdigest()


def resolve(pin: Pin, report: Report | None = None, python: str | None = None) -> Resolved:
    """The header tree of ``pin`` on this machine, fetched into the cache if needed; else one line saying
    how to provide it (:class:`ToolchainError`)."""
    say = report or (lambda _msg: None)
    override = os.environ.get(pin.env_var, "").strip()
    if override:
        return _from_override(pin, Path(override).expanduser().absolute(), say)
    final = deps_dir() / f"{pin.name}-{pin.version}"
    cached = _cached(pin, final)
    if cached:
        return cached
    if pin.tree_sha256 is None:
        msg = (
            f"{pin.name} ({pin.label}) is provided to Nix builds only (`nix build`); "
            f"for a build here, set {pin.env_var} to a {pin.label} source tree"
        )
        raise ToolchainError(msg)
    with locked(deps_dir() / f".{pin.name}.lock", lambda: say(f"waiting for another fetch of {pin.label}")):
        cached = _cached(pin, final)  # fetched by the run this one waited for
        if cached:
            return cached
        tried = []
        for label, strict, fetch in _sources(pin, python or sys.executable):
            say(f"fetching {pin.label} ({pin.name}) from {label}")
            with tempfile.TemporaryDirectory(prefix="pybuild-dep-") as tmp:
                try:
                    archive = fetch(Path(tmp))
                except _Unavailable as e:
                    tried.append(f"{label}: {e}")
                    continue
                resolved = _install(pin, archive, final, label, strict=strict)
                if resolved is not None:
                    return resolved
                tried.append(f"{label}: its headers differ from the pin")
    msg = (
        f"{pin.name} ({pin.label}) is not in {final} and could not be fetched ({'; '.join(tried)}); "
        f"set {pin.env_var} to a {pin.label} source tree or {pin.archive}, or {MIRROR_VAR} to a folder or URL "
        f"holding {pin.archive}"
    )
    raise ToolchainError(msg)


class _Unavailable(Exception):
    """A source that cannot provide the dependency here (offline, not served); the next one is tried."""


def _cached(pin: Pin, final: Path) -> Resolved | None:
    try:
        data = json.loads((final / MARKER).read_text())
    except (OSError, ValueError):
        return None
    if pin.tree_sha256 is None or not isinstance(data, dict) or data.get("tree-sha256") != pin.tree_sha256:
        return None
    return Resolved(pin, final, pin.tree_sha256, f"the cache ({final})")


def _from_override(pin: Pin, path: Path, say: Report) -> Resolved:
    if path.is_dir():
        if not (path / pin.include[0]).is_dir():
            msg = f"{pin.env_var}={path}: not a {pin.label} source tree (no {pin.include[0]}/ in it)"
            raise ToolchainError(msg)
        digest = tree_digest(path, pin.include)
        if pin.tree_sha256 and digest != pin.tree_sha256:
            say(f"{pin.env_var}: {path} differs from {pin.label} as pinned; using it as given")
        return Resolved(pin, path, digest, f"{pin.env_var} ({path})")
    if path.is_file():
        if pin.tree_sha256 is None:
            msg = (
                f"{pin.env_var}={path}: {pin.label} has no pinned tree hash to check an archive by; "
                "unpack it and name the folder"
            )
            raise ToolchainError(msg)
        final = deps_dir() / f"{pin.name}-{pin.version}"
        with locked(deps_dir() / f".{pin.name}.lock"):
            cached = _cached(pin, final)
            if cached:
                return cached
            resolved = _install(pin, path, final, f"{pin.env_var} ({path})", strict=True)
            assert resolved is not None  # strict: a mismatch raises
            return resolved
    raise ToolchainError(f"{pin.env_var}={path}: no such folder or archive; point it at a {pin.label} source tree")


def _sources(pin: Pin, python: str) -> Iterator[tuple[str, bool, Callable[[Path], Path]]]:
    """The remote sources of ``pin`` in order, each a (label, whether a tree that differs from the pin
    is refused rather than passed over, fetch into a folder -> archive path)."""
    if pin.index is not None:
        wheel = pin.index

        def from_index(tmp: Path) -> Path:
            cmd = [python, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
            cmd += ["--disable-pip-version-check", "--dest", str(tmp), wheel.requirement]
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
            except (OSError, subprocess.TimeoutExpired) as e:
                raise _Unavailable(f"pip download {wheel.requirement}: {e}") from None
            wheels = sorted(tmp.glob("*.whl"))
            if done.returncode != 0 or not wheels:
                last = (done.stderr.strip().splitlines() or ["no wheel"])[-1]
                raise _Unavailable(f"pip download {wheel.requirement}: {last}")
            return wheels[0]

        yield "the package index", False, from_index
    mirror = os.environ.get(MIRROR_VAR, "").strip()
    url = pin.url
    if mirror:
        url = mirror if "://" in mirror else Path(mirror).expanduser().resolve().as_uri()
        url = url.rstrip("/") + "/" + pin.archive

    def download(tmp: Path) -> Path:
        dest = tmp / pin.archive
        try:
            with urllib.request.urlopen(url, timeout=60) as response, dest.open("wb") as out:
                total = 0
                while chunk := response.read(1 << 20):
                    total += len(chunk)
                    if total > MAX_ARCHIVE_BYTES:
                        raise _Unavailable(f"{url}: larger than {MAX_ARCHIVE_BYTES >> 20} MiB")
                    out.write(chunk)
        except (OSError, urllib.error.URLError, ValueError) as e:
            reason = getattr(e, "reason", None) or e
            raise _Unavailable(f"{url}: {reason}") from None
        return dest

    yield url, True, download


def _install(pin: Pin, archive: Path, final: Path, label: str, *, strict: bool) -> Resolved | None:
    """Unpack ``pin``'s header folders from ``archive`` (its tag's archive, or the index's wheel) into the
    cache, checked against the pin. A mismatch is refused (``strict``) or returns None."""
    deps_dir().mkdir(parents=True, exist_ok=True)
    staging = deps_dir() / f".staging-{pin.name}-{uuid.uuid4().hex[:8]}"
    try:
        staging.mkdir()
        _unpack(pin, archive, staging)
        digest = tree_digest(staging, pin.include)
        if digest != pin.tree_sha256:
            if strict:
                msg = (
                    f"{label}: {archive.name} does not hold {pin.label} as pinned (header tree sha256 {digest}, "
                    f"pinned {pin.tree_sha256}); refusing to use it"
                )
                raise ToolchainError(msg)
            return None
        (staging / MARKER).write_text(json.dumps({"name": pin.name, "tree-sha256": digest, "source": label}) + "\n")
        if final.exists() or final.is_symlink():
            remove_tree(final)  # an incomplete or outdated tree: the marker did not match
        os.rename(staging, final)
    finally:
        if staging.exists():
            remove_tree(staging)
    return Resolved(pin, final, digest, label)


def _member_path(name: str, prefix: str, include: tuple[str, ...]) -> PurePosixPath | None:
    """Where an archive member goes in the tree (relative), or None for a member outside the header folders."""
    path = PurePosixPath(name)
    parts = PurePosixPath(prefix).parts
    if path.is_absolute() or ".." in path.parts or path.parts[: len(parts)] != parts:
        return None
    rel = PurePosixPath(*path.parts[len(parts) :]) if len(path.parts) > len(parts) else None
    if rel is None:
        return None
    if any(i == "." or rel.parts[: len(PurePosixPath(i).parts)] == PurePosixPath(i).parts for i in include):
        return rel
    return None


def _unpack(pin: Pin, archive: Path, dest: Path) -> None:
    """Copy the regular files of the header folders out of a tar archive or a wheel (zip); links and
    anything else in those folders are refused."""
    wheel = archive.suffix in (".whl", ".zip")
    prefix = pin.index.prefix if archive.suffix == ".whl" and pin.index else pin.prefix
    try:
        if wheel:
            with zipfile.ZipFile(archive) as z:
                for info in z.infolist():
                    rel = _member_path(info.filename, prefix, pin.include)
                    if rel is None or info.is_dir():
                        continue
                    if (info.external_attr >> 16) & 0o170000 == 0o120000:
                        raise ToolchainError(f"{archive.name}: {info.filename} is a link; refusing the archive")
                    _write(dest / rel, z.read(info))
            return
        with tarfile.open(archive) as t:
            for member in t:
                rel = _member_path(member.name, prefix, pin.include)
                if rel is None or member.isdir():
                    continue
                if not member.isfile():
                    raise ToolchainError(f"{archive.name}: {member.name} is not a regular file; refusing the archive")
                f = t.extractfile(member)
                assert f is not None
                _write(dest / rel, f.read())
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as e:
        raise ToolchainError(f"{archive.name}: not a readable archive ({e})") from None


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(0o644)
