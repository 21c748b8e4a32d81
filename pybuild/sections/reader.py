"""Typed access to one table of a ``build.toml``, with errors that name the file and key."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NoReturn

from ..errors import ManifestError
from .keys import did_you_mean

SOURCE_SUFFIXES = {".c", ".cc", ".cpp", ".cxx", ".cu", ".h", ".hh", ".hpp", ".cuh", ".inc", ".metal", ".mm"}
COMPILED_SUFFIXES = {".c", ".cc", ".cpp", ".cxx", ".cu", ".mm", ".metal"}

#: Folders of a kernel that pybuild writes: never a source or include folder.
OUTPUT_DIRS = ("build", ".pybuild")
#: Characters a path in build.toml may not hold: CMake's list separator and bracket nesting, its
#: variable and generator-expression sigil, and the shell's quoting, expansion and globbing.
PATH_METACHARACTERS = ";$`\\\"'[]<>*?|&"

#: How a type reads in an error message ("must be an integer", not "must be a int").
_KIND_NAMES = {
    int: "an integer (e.g. 1)",
    str: "a string",
    bool: "true or false",
    list: "a list",
    dict: "a table",
    float: "a number",
}


class Reader:
    """One TOML table of the manifest at ``path``: typed reads, and failures as one line."""

    def __init__(self, path: Path, section: str, table: Any, allowed: tuple[str, ...] | None = None):
        self.path, self.section = path, section
        if not isinstance(table, dict):
            self.fail(f"[{section}] must be a table; found {type(table).__name__}")
        for key in table:
            if allowed is not None and key not in allowed:
                self.fail(f"unknown key `{key}` in [{section}]; {did_you_mean(key, allowed)}")
        self.table = table

    @classmethod
    def checked(cls, path: Path, section: str, table: Any) -> Reader:
        """A reader over a table the edition's schema has already checked (keys and kinds)."""
        return cls(path, section, table if isinstance(table, dict) else {})

    def fail(self, msg: str) -> NoReturn:
        raise ManifestError(f"{self.path}: {msg}")

    def where(self, key: str) -> str:
        return f"`{key}` in [{self.section}]"

    def get(self, key: str, kind: type, default: Any = None, required: bool = False) -> Any:
        if key not in self.table:
            if required:
                self.fail(f"missing {self.where(key)}; add it, e.g. {key} = ...")
            return default
        value = self.table[key]
        if (
            kind is bool
            and not isinstance(value, bool)
            or kind is not bool
            and not isinstance(value, kind)
            or kind is int
            and isinstance(value, bool)
        ):
            self.fail(f"{self.where(key)} must be {_KIND_NAMES.get(kind, kind.__name__)}; found {value!r}")
        return value

    def str_list(self, key: str, required: bool = False) -> tuple[str, ...]:
        value = self.get(key, list, [], required)
        if not all(isinstance(x, str) for x in value):
            self.fail(f"{self.where(key)} must be a list of strings; found {value!r}")
        return tuple(value)

    def version(self, key: str, example: str = "2.12") -> tuple[int, int] | None:
        """A "major.minor" version key; ``example`` shows one in the error (a torch version, or CUDA's "12.8")."""
        value = self.get(key, str)
        return None if value is None else self.version_text(self.where(key), value, example)

    def version_text(self, where: str, value: str, example: str = "2.12") -> tuple[int, int]:
        m = re.fullmatch(r"(\d+)\.(\d+)", value, re.ASCII)
        if not m:
            self.fail(f'{where} must be "major.minor" like "{example}"; found {value!r}')
        return int(m[1]), int(m[2])

    def path_key(
        self, root: Path, key: str, rel: str, must_be_dir: bool = False, suffixes: frozenset[str] = frozenset()
    ) -> None:
        """``rel`` (a value of ``key``) names a source file (or an include folder) inside ``root``; a
        source file has one of :data:`SOURCE_SUFFIXES` or of ``suffixes`` (a backend's own, like ``.hip``)."""
        where = self.where(key)
        if "\0" in rel or any(ord(c) < 32 or ord(c) == 127 for c in rel):
            self.fail(f"{where}: path {rel!r} contains a control character; name the file plainly")
        bad = sorted({c for c in rel if c in PATH_METACHARACTERS})
        if bad:
            self.fail(
                f"{where}: path {rel!r} contains {' '.join(repr(c) for c in bad)}, which CMake or a shell "
                "would read as a list or an expansion; rename the file with letters, digits, '.', '_', '-' and '/'"
            )
        p = Path(rel)
        if p.is_absolute():
            self.fail(f"{where}: path {rel!r} is absolute; use a path relative to the kernel folder")
        if ".." in p.parts:
            self.fail(f"{where}: path {rel!r} escapes the kernel folder; keep sources inside it")
        if not p.parts and not must_be_dir:
            self.fail(f"{where}: path {rel!r} is the kernel folder itself; name a source file")
        if p.parts and p.parts[0] in OUTPUT_DIRS:
            self.fail(
                f"{where}: path {rel!r} lies in {p.parts[0]}/, which the build writes; keep sources "
                "elsewhere in the kernel folder"
            )
        full = root / p
        try:
            full.resolve().relative_to(root.resolve())
        except ValueError:
            self.fail(f"{where}: path {rel!r} resolves outside the kernel folder (symlink?); copy the file in")
        if must_be_dir:
            if not full.is_dir():
                self.fail(f"{where}: include directory {rel!r} does not exist")
            return
        if full.is_dir():
            self.fail(f"{where}: {rel!r} is a folder; list the source files in it one by one")
        if not full.is_file():
            self.fail(f"{where}: source file {rel!r} does not exist (looked in {root})")
        allowed = SOURCE_SUFFIXES | suffixes
        if p.suffix not in allowed:
            self.fail(f"{where}: {rel!r} is not a C/C++/CUDA source or header ({', '.join(sorted(allowed))})")

    def flags(self, key: str) -> tuple[str, ...]:
        """A list of compiler flags under ``key``: each reaches the compiler as exactly one argument,
        so what CMake would split or evaluate is refused (see :data:`FLAG_RULE`)."""
        values = self.str_list(key)
        for flag in values:
            problem = flag_problem(flag)
            if problem:
                self.fail(f"{self.where(key)}: flag {flag!r} {problem}; write each flag as one plain argument")
        return values

    def paths(
        self, root: Path, key: str, must_be_dir: bool = False, suffixes: frozenset[str] = frozenset()
    ) -> tuple[str, ...]:
        """A list of paths under ``key``, each checked by :meth:`path_key`."""
        values = self.str_list(key)
        for rel in values:
            self.path_key(root, key, rel, must_be_dir, suffixes)
        return values


def flag_problem(flag: str) -> str | None:
    """Why CMake could not pass ``flag`` to a compiler as one literal argument; None if it can."""
    if not flag:
        return "is empty (CMake would pass nothing)"
    if any(ord(c) < 32 or ord(c) == 127 for c in flag):
        return "contains a control character"
    for text, why in ((";", "CMake's list separator"), ("$<", "a CMake generator expression")):
        if text in flag:
            return f"contains {text!r} ({why})"
    if "[" in flag or "]" in flag:
        return "contains a square bracket (CMake joins list elements between brackets)"
    if flag.endswith("\\"):
        return "ends in a backslash (CMake would join it to the next flag)"
    return None
