"""Who may write and remove what under a kernel's ``build/``, when several runs share the folder.

* Each variant has a lock, ``.pybuild/<variant>.lock`` (an advisory ``flock``, released by the system
  when its holder exits or is killed). A build or collect of a variant holds it from its up-to-date
  check to its final swap, so runs of the same variant take turns and runs of different variants
  proceed side by side.
* A run assembles a variant in a staging folder ``build/.staging.<variant>.<owner pid>.<random>``:
  inside ``build/`` itself, hence on the destination's file system wherever ``build/`` is (a symlink
  to tmpfs, a bind mount), so the final swap is one atomic rename.
* A staging folder is removed only by its owner, or once its owner is provably gone: its variant's
  lock can be taken. Every run, of any variant, first removes what dead runs left (their staging
  folders, old trees swapped out but not yet deleted; an old tree whose replacement never arrived is
  put back as ``build/<variant>``), and leaves the staging of live runs alone.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

from .errors import PybuildError
from .fsutil import locked, remove_tree, try_locked

WORK_DIR = ".pybuild"
BUILD_DIR = "build"
PREFIX = ".staging."
#: Leftovers and whose they are: build/.staging.<variant>.<pid>.<hex>, build/.<variant>.old-<hex> (swapped
#: out by the non-atomic fallback of replace_dir), and .pybuild/staging-[collect-]<variant>-<hex> (older
#: pybuild versions).
_LEFTOVER = (
    re.compile(r"^\.staging\.(?P<variant>[^.]+)\.\d+\.[0-9a-f]+$"),
    re.compile(r"^\.(?P<variant>[^.]+)\.old-[0-9a-f]+$"),
    re.compile(r"^staging-(?:collect-)?(?P<variant>.+)-[0-9a-f]{8}$"),
)


def lock_path(kernel_root: Path, variant: str) -> Path:
    return kernel_root / WORK_DIR / f"{variant}.lock"


def leftovers(kernel_root: Path) -> list[Path]:
    """Every staging folder or swapped-out tree under ``build/`` and ``.pybuild/``, live or not."""
    found = []
    for d in (kernel_root / BUILD_DIR, kernel_root / WORK_DIR):
        if d.is_dir():
            found += [p for p in d.iterdir() if _owner_variant(p.name) is not None]
    return sorted(found)


def _owner_variant(name: str) -> str | None:
    for pattern in _LEFTOVER:
        m = pattern.match(name)
        if m:
            return m["variant"]
    return None


@contextlib.contextmanager
def _lock_if_free(kernel_root: Path, variant: str) -> Iterator[bool]:
    """Take ``variant``'s lock if no live run holds it, and hold it for the block: yields True when
    taken (its owner is gone and no other cleaner is removing its leftovers right now)."""
    path = lock_path(kernel_root, variant)
    with contextlib.ExitStack() as stack:
        try:
            # no .pybuild/ (no run made a lock here) or a lock file that cannot be opened: cannot tell
            free = path.parent.is_dir() and stack.enter_context(try_locked(path))
        except OSError:
            free = False
        yield free


def remove_dead_leftovers(kernel_root: Path, held: str | None = None) -> list[Path]:
    """Remove the staging folders and swapped-out trees of runs that are gone. ``held`` is the variant
    whose lock the caller holds (no one else can be staging it), if any. A dead run's leftovers are
    removed under its variant's lock, so two runs clearing them take turns (the second finds them gone)."""
    removed = []
    for p in leftovers(kernel_root):
        variant = _owner_variant(p.name)
        assert variant is not None
        if variant == held:
            _clear(kernel_root, p, variant)
            removed.append(p)
            continue
        with _lock_if_free(kernel_root, variant) as free:
            if free and os.path.lexists(p):
                _clear(kernel_root, p, variant)
                removed.append(p)
    return removed


def _clear(kernel_root: Path, p: Path, variant: str) -> None:
    """Remove a dead run's leftover ``p`` (its variant's lock held); but an old tree swapped out by the
    non-atomic fallback of replace_dir whose run died before the new tree took its place is the only
    copy of build/<variant>: put it back."""
    final = kernel_root / BUILD_DIR / variant
    if _LEFTOVER[1].match(p.name) and p.parent == final.parent and not os.path.lexists(final):
        os.rename(p, final)
        return
    remove_tree(p)


@contextlib.contextmanager
def variant_lock(kernel_root: Path, variant: str, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold ``variant``'s lock (waiting for another run of it, after calling ``on_wait``); first clear
    what dead runs left."""
    with locked(lock_path(kernel_root, variant), on_wait):
        remove_dead_leftovers(kernel_root, variant)
        yield


def read_only_message(build_dir: Path, e: OSError | None = None) -> str:
    why = f" ({e.strerror})" if e is not None and e.strerror else ""
    return (
        f"{build_dir}: cannot write there{why}; pybuild writes build/<variant>/ in place: make it writable "
        "(remount read-write, fix its permissions) or point build/ at a writable folder"
    )


def check_writable(build_dir: Path, error: type[PybuildError] = PybuildError) -> None:
    """Refuse a ``build/`` that exists but cannot be written (a read-only mount), before any work: a
    file-system error (exit 1), whichever command meets it."""
    if build_dir.is_dir() and not os.access(build_dir, os.W_OK | os.X_OK):
        raise error(read_only_message(build_dir))


@contextlib.contextmanager
def owned_staging(kernel_root: Path, variant: str, error: type[PybuildError] = PybuildError) -> Iterator[Path]:
    """A new staging folder for ``variant`` in ``build/`` (the caller holds :func:`variant_lock`),
    removed again if the block fails before the staging folder was swapped in."""
    build = kernel_root / BUILD_DIR
    try:
        build.mkdir(parents=True, exist_ok=True)
        staging = build / f"{PREFIX}{variant}.{os.getpid()}.{secrets.token_hex(4)}"
        staging.mkdir()
    except OSError as e:
        if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise error(read_only_message(build, e)) from None
        raise
    try:
        yield staging
    except BaseException:
        if os.path.lexists(staging):
            remove_tree(staging)
        raise
