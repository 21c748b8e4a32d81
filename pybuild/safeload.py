"""Reading untrusted input without surprises: size and nesting limits, duplicate JSON keys, special
files (a FIFO, /dev/zero) where a regular file belongs, and folder trees of any depth or file name.

Every refusal is an error of the caller's class naming the file and the fix; nothing here recurses,
so no input can end in a RecursionError.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .errors import InputLimitError, PybuildError

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

#: Largest build.toml / variants.json / metadata.json read (the real ones are a few KiB).
MAX_FILE_BYTES = 8 << 20
#: Deepest nesting of arrays/objects/tables in a JSON or TOML file.
MAX_NESTING = 32
#: Deepest folder nesting in a kernel's sources or a build tree.
MAX_TREE_DEPTH = 64

ErrorType = type[PybuildError]


def shown(name: str | os.PathLike[str]) -> str:
    """A path as it can be printed: bytes that are not UTF-8 shown as ``\\xff``."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device (like /dev/zero)"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


def read_bytes(path: Path, error: ErrorType = InputLimitError, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (links followed), at most ``limit`` of them.

    A FIFO or device is refused without blocking on it; a folder raises IsADirectoryError and a
    missing file FileNotFoundError, as ``open`` does, for the caller's own messages."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if not stat.S_ISREG(st.st_mode):
            msg = f"{shown(path)}: not a regular file but {_kind(st.st_mode)}; replace it with the file itself"
            raise error(msg)
        if st.st_size > limit:
            raise error(
                f"{shown(path)}: too large ({st.st_size} bytes; at most {limit} are read); is it the right file?"
            )
        os.set_blocking(fd, True)
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise error(f"{shown(path)}: too large (more than {limit} bytes); is it the right file?")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: Path, error: ErrorType = InputLimitError, limit: int = MAX_FILE_BYTES) -> str:
    """:func:`read_bytes` decoded as UTF-8 (UnicodeDecodeError as ``open().read()`` raises it)."""
    return read_bytes(path, error, limit).decode("utf-8")


def _too_deep(where: str, error: ErrorType, what: str) -> PybuildError:
    return error(
        f"{where}: {what} nested deeper than {MAX_NESTING} levels; no {what.split()[0]} file of a "
        "kernel needs that: fix the file"
    )


def check_nesting(data: Any, where: str, error: ErrorType, what: str) -> None:
    """Raise ``error`` if ``data`` nests lists/dicts deeper than :data:`MAX_NESTING` (no recursion)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_NESTING:
            raise _too_deep(where, error, what)
        if isinstance(item, dict):
            stack += [(v, depth + 1) for v in item.values() if isinstance(v, (dict, list))]
        elif isinstance(item, list):
            stack += [(v, depth + 1) for v in item if isinstance(v, (dict, list))]


def loads_json(text: str | bytes, where: str, error: ErrorType = InputLimitError) -> Any:
    """``json.loads`` that refuses duplicate keys, NaN/Infinity and deep nesting with ``error``;
    syntax errors stay ``json.JSONDecodeError``."""

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise error(
                    f"{where}: duplicate key {key!r} in one JSON object; JSON readers disagree on "
                    "which one wins: keep one"
                )
            out[key] = value
        return out

    def no_constant(name: str) -> Any:
        raise json.JSONDecodeError(f"{name} is not JSON", str(text[:0]), 0)

    try:
        data = json.loads(text, object_pairs_hook=unique, parse_constant=no_constant)
    except RecursionError:
        raise _too_deep(where, error, "JSON values") from None
    check_nesting(data, where, error, "JSON values")
    return data


def load_json(path: Path, error: ErrorType = InputLimitError, limit: int = MAX_FILE_BYTES) -> Any:
    """:func:`read_text` then :func:`loads_json`."""
    return loads_json(read_text(path, error, limit), shown(path), error)


def loads_toml(text: str, where: str, error: ErrorType = InputLimitError) -> dict[str, Any]:
    """``tomllib.loads`` that refuses deep nesting with ``error``; syntax errors stay TOMLDecodeError."""
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise _too_deep(where, error, "TOML values") from None
    check_nesting(data, where, error, "TOML values")
    return data


def walk(
    root: Path,
    error: ErrorType = InputLimitError,
    max_depth: int = MAX_TREE_DEPTH,
    prune: Callable[[Path], bool] | None = None,
) -> Iterator[tuple[Path, os.stat_result]]:
    """Every entry under ``root`` with its ``lstat``, parents before children, without following
    symlinked folders and without recursion. A name that is not UTF-8 or a folder deeper than
    ``max_depth`` raises ``error`` naming it. An entry for which ``prune(path)`` is true is neither
    yielded nor, if a folder, entered (nothing in it is looked at)."""
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name, reverse=True)
        for entry in entries:
            path = Path(entry.path)
            if prune is not None and prune(path):
                continue
            try:
                entry.name.encode("utf-8")
            except UnicodeEncodeError:
                raise error(
                    f"{shown(path)}: the file name is not UTF-8; the kernels loader and the Hub need "
                    "UTF-8 paths: rename it"
                ) from None
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                if depth + 1 > max_depth:
                    raise error(
                        f"{shown(folder)}: folders nested deeper than {max_depth} levels under {shown(root)}; "
                        "a kernel never needs that: remove the deep folder"
                    )
                stack.append((path, depth + 1))
            yield path, st
        # parents before children: the entries of a folder come before those of its subfolders only per
        # level; callers that need an order sort the result


def files(
    root: Path,
    error: ErrorType = InputLimitError,
    max_depth: int = MAX_TREE_DEPTH,
    follow_links: bool = False,
    prune: Callable[[Path], bool] | None = None,
) -> list[Path]:
    """The regular files under ``root``, sorted; a FIFO, device or socket raises ``error`` naming it,
    and so does a symlink (a kernel's files are its own: a link may lead out of the kernel folder)
    unless ``follow_links`` (pybuild's own files), which takes links to regular files. Entries for
    which ``prune(path)`` is true are skipped, folders with all they hold."""
    out = []
    for path, st in walk(root, error, max_depth, prune):
        mode = st.st_mode
        if stat.S_ISLNK(mode):
            if not follow_links:
                raise error(
                    f"{shown(path)}: is a symlink; a kernel's files are its own and a link may lead out of "
                    "the kernel folder: replace it with a copy of what it points to, or remove it"
                )
            try:
                mode = path.stat().st_mode
            except OSError:
                continue  # a dangling link: no file
            if stat.S_ISDIR(mode):
                continue
        if stat.S_ISDIR(mode):
            continue
        if not stat.S_ISREG(mode):
            raise error(f"{shown(path)}: not a regular file but {_kind(mode)}; remove it")
        out.append(path)
    return sorted(out)
