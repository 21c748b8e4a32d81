"""File-system steps that must be all-or-nothing."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

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
        shutil.rmtree(staging)
        return
    old = final.with_name(f".{final.name}.old-{uuid.uuid4().hex[:8]}")
    os.rename(final, old)
    os.rename(staging, final)
    shutil.rmtree(old)


def new_staging_dir(parent: Path, label: str) -> Path:
    parent.mkdir(parents=True, exist_ok=True)
    path = parent / f"staging-{label}-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    return path


def remove_stale_staging(parent: Path) -> None:
    if parent.is_dir():
        for p in parent.glob("staging-*"):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:  # a file swapped out of build/ by replace_dir
                p.unlink(missing_ok=True)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` for the duration of the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
