"""File-system steps that must be all-or-nothing."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from filelock import FileLock, ReadWriteLock, Timeout

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2). False where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    rc = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    if ctypes.get_errno() in (errno.ENOSYS, errno.EINVAL, errno.EPERM):
        return False
    raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()), str(a))


def replace_dir(staging: Path, final: Path) -> None:
    """Move the complete directory ``staging`` to ``final``, replacing what was there.

    Readers see either the old tree or the new one, never a mix: an existing ``final`` is swapped
    with ``staging`` in one system call, then the old tree is deleted.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    if not final.exists():
        os.rename(staging, final)
        return
    if _exchange(staging, final):
        remove_tree(staging)  # now the old tree
        return
    old = final.with_name(f".{final.name}.old-{uuid.uuid4().hex[:8]}")
    os.rename(final, old)
    os.rename(staging, final)
    remove_tree(old)


def remove_tree(path: Path) -> None:
    """Remove ``path`` (a folder tree of any depth, a file or a link; never what a link points to),
    without recursion. A missing path is fine, and so is anything in it vanishing meanwhile (removed
    by someone else)."""
    try:
        os.unlink(path)
        return
    except FileNotFoundError:
        return
    except (IsADirectoryError, PermissionError):
        pass  # a folder (Linux says EISDIR, POSIX allows EPERM)
    flags = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0)
    try:
        stack = [(os.open(path, flags), "")]  # (open folder, its name in the parent)
    except FileNotFoundError:
        return
    try:
        while stack:
            fd, _ = stack[-1]
            sub = None
            for entry in os.scandir(fd):
                if entry.is_dir(follow_symlinks=False):
                    sub = entry.name
                    break
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.name, dir_fd=fd)
            if sub is not None:
                with contextlib.suppress(FileNotFoundError):  # removed meanwhile: scan this folder again
                    stack.append((os.open(sub, flags, dir_fd=fd), sub))
                continue
            os.close(fd)
            _, name = stack.pop()
            if stack:
                with contextlib.suppress(FileNotFoundError):
                    os.rmdir(name, dir_fd=stack[-1][0])
    finally:
        for fd, _ in stack:
            os.close(fd)
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(path)


@contextlib.contextmanager
def try_locked(path: Path) -> Iterator[bool]:
    """Yields whether the exclusive advisory lock on ``path`` was free; if it was, it is held for the
    block. Never waits."""
    lock = FileLock(path)
    with _held_if_free(lambda: lock.acquire(blocking=False), lock.release) as free:
        yield free


@contextlib.contextmanager
def _held_if_free(acquire: Callable[[], object], release: Callable[[], object]) -> Iterator[bool]:
    """Yields whether ``acquire`` (a non-blocking acquire) got the lock; if it did, ``release`` runs
    after the block."""
    try:
        acquire()
    except Timeout:
        yield False
        return
    try:
        yield True
    finally:
        release()


@contextlib.contextmanager
def locked(path: Path, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` for the duration of the block; ``on_wait`` is called
    first if another holder makes this one wait."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(path)
    try:
        lock.acquire(blocking=False)
    except Timeout:
        if on_wait is not None:
            on_wait()
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


# A lock that many runs share while one other may only take it alone: filelock's reader/writer lock
# (an SQLite file, released by the system when its holder exits, like the exclusive ones above). Its
# file is its own: it is never also taken with :func:`locked` or :func:`try_locked`.


@contextlib.contextmanager
def shared_lock(path: Path) -> Iterator[None]:
    """A shared hold of the reader/writer lock ``path`` for the block: many holders at once, and
    :func:`try_sole_lock` fails while one is held. Waits while a sole hold is taken."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with ReadWriteLock(path, is_singleton=False).read_lock():
        yield


@contextlib.contextmanager
def try_sole_lock(path: Path) -> Iterator[bool]:
    """Yields whether the reader/writer lock ``path`` had no holder (no :func:`shared_lock`); if so,
    it is held alone for the block, so no shared hold starts meanwhile. Never waits."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = ReadWriteLock(path, is_singleton=False)
    with _held_if_free(lambda: lock.acquire_write(blocking=False), lock.release) as free:
        yield free


def cache_root() -> Path:
    """``PYBUILD_CACHE_DIR``, else ``$XDG_CACHE_HOME/pybuild``, else ``~/.cache/pybuild``."""
    if os.environ.get("PYBUILD_CACHE_DIR"):
        return Path(os.environ["PYBUILD_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pybuild"


def dir_size(path: Path) -> int:
    from .safeload import walk

    return sum(st.st_size for _, st in walk(path, max_depth=1 << 30) if stat.S_ISREG(st.st_mode))
