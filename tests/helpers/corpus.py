"""Helpers for the fault suite: deep trees made without long paths, and snapshots of a farm that walk
them without recursion."""

from __future__ import annotations

import os
from pathlib import Path


def deep_tree(base: Path, depth: int, leaf: str = "x.py") -> None:
    """``base/d/d/.../d/<leaf>``, ``depth`` folders deep, created relative to open folders (the full
    path is longer than PATH_MAX)."""
    base.mkdir(parents=True, exist_ok=True)
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            new = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = new
        leaf_fd = os.open(leaf, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(leaf_fd, b"# deep\n")
        os.close(leaf_fd)
    finally:
        os.close(fd)


def snapshot(root: Path, skip: tuple[str, ...] = (".pybuild",)) -> dict[bytes, tuple[int, int, int]]:
    """``{relative path: (mode, size, mtime_ns)}`` of everything under ``root`` but ``skip`` folders,
    walked with open folders and an explicit stack (any depth, any name)."""
    out: dict[bytes, tuple[int, int, int]] = {}
    stack: list[tuple[int, bytes]] = [(os.open(root, os.O_RDONLY | os.O_DIRECTORY), b"")]
    while stack:
        fd, rel = stack.pop()
        try:
            for name in os.listdir(fd):
                n = os.fsencode(name)
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                path = rel + b"/" + n if rel else n
                out[path] = (st.st_mode, st.st_size if not os.path.stat.S_ISDIR(st.st_mode) else 0, st.st_mtime_ns)
                if os.path.stat.S_ISDIR(st.st_mode) and name not in skip:
                    stack.append((os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd), path))
        finally:
            os.close(fd)
    return out


def remove_deep(path: Path) -> None:
    """Remove a tree of any depth (pytest's own clean-up recurses)."""
    if not path.is_dir() or path.is_symlink():
        return
    stack = [os.open(path, os.O_RDONLY | os.O_DIRECTORY)]
    names: list[str] = []
    while stack:
        fd = stack[-1]
        sub = None
        for name in os.listdir(fd):
            if os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode & 0o170000 == 0o040000:
                sub = name
                break
            os.unlink(name, dir_fd=fd)
        if sub is None:
            os.close(stack.pop())
            if names:
                os.rmdir(names.pop(), dir_fd=stack[-1])
        else:
            stack.append(os.open(sub, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd))
            names.append(sub)
    os.rmdir(path)
