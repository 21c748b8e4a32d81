"""What the commands share: the parser class, the flags several commands take, and turning the
kernel folders and variants.json named on the command line into manifests and a matrix."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import UsageError

if TYPE_CHECKING:
    from ..manifest import Manifest
    from ..variants import Matrix

#: The positional KERNEL_DIR help of the commands that default to every kernel of the farm.
EVERY_KERNEL = "default: every kernel under kernels/"


class Command(Protocol):
    """What each command module declares: its name, its one-line help and description for --help,
    the arguments of its sub-parser, and ``run``, which does the work and returns the exit code."""

    NAME: str
    HELP: str
    DESCRIPTION: str

    def add_arguments(self, p: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


class Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (one line, exit 2) instead of printing usage and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message} (see --help)")


def backend_choices() -> list[str]:
    """The backends a kernel may be generated for (``generate --backend``): every registered backend
    of compiled kernels, a backend added with ``pybuild.backends.register`` included, sorted."""
    from .. import backends

    return sorted(backends.names())


def int_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer >= ``low``, else one line saying what was expected."""
    wanted = "a positive integer" if low == 1 else f"{low} or a positive integer"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}")
        return value

    return parse


def add_debug_flag(p: argparse.ArgumentParser) -> None:
    """--debug after the command too (main reads it from argv; SUPPRESS keeps it out of the namespace)."""
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks on errors")


def add_output_flags(p: argparse.ArgumentParser, json_flag: bool = True) -> None:
    """-q/--quiet, --debug and (unless ``json_flag`` is false) --json."""
    p.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    add_debug_flag(p)
    if json_flag:
        p.add_argument("--json", action="store_true", help="print the result as JSON")


def add_variants_flag(p: argparse.ArgumentParser) -> None:
    """--variants FILE: the matrix to read instead of the nearest variants.json."""
    p.add_argument("--variants", metavar="FILE", help="variants.json to read (default: nearest one)")


def add_kernel_dirs(p: argparse.ArgumentParser, help: str = EVERY_KERNEL) -> None:
    """The KERNEL_DIR... positional (``args.kernel_dirs``); none named means every kernel."""
    p.add_argument("kernel_dirs", nargs="*", metavar="KERNEL_DIR", help=help)


def farm_root() -> Path:
    """The folder of the nearest variants.json, at or above the working directory."""
    from ..variants import find_variants_file

    return find_variants_file().parent


def kernel_dirs(args_dirs: Sequence[str]) -> list[Path]:
    """The kernel folders named, or every ``kernels/*`` with a build.toml when none is named."""
    if args_dirs:
        dirs = []
        for d in args_dirs:
            p = Path(d)
            if (p / "build.toml").is_dir():
                raise UsageError(f"{p / 'build.toml'}: is a folder; a kernel's build.toml must be a file")
            if not os.path.lexists(p):
                raise UsageError(f"{p}: no such file or folder; pass a kernel folder, e.g. kernels/img2gray")
            if not os.path.lexists(p / "build.toml"):  # a FIFO or a device: load_manifest names it
                raise UsageError(f"{p}: not a kernel folder (no build.toml); pass e.g. kernels/img2gray")
            dirs.append(p)
        return dirs
    root = farm_root() / "kernels"
    dirs = sorted(p.parent for p in root.glob("*/build.toml"))
    if not dirs:
        raise UsageError(f"no kernels found under {root}; pass a kernel folder")
    return dirs


def load_manifests(args_dirs: Sequence[str], quiet: bool = False) -> list[Manifest]:
    """Every named kernel (each folder once), all parsed before any work, with names unique; each
    manifest's warnings printed (unless ``quiet``)."""
    from ..manifest import duplicate_name_message, load_manifest
    from ..ui import warning

    seen: dict[Path, Path] = {}
    for d in kernel_dirs(args_dirs):
        seen.setdefault(d.resolve(), d)
    manifests = [load_manifest(d) for d in seen.values()]
    by_name: dict[str, list[Path]] = {}
    for m in manifests:
        by_name.setdefault(m.name, []).append(m.root)
    for name, dirs in by_name.items():
        if len(dirs) > 1:
            raise UsageError(duplicate_name_message(name, dirs))
    for m in manifests if not quiet else ():
        for line in m.warnings:
            warning(line)
    return manifests


def load_matrix(args: argparse.Namespace) -> Matrix:
    """The matrix of ``--variants FILE``, else of the nearest variants.json."""
    from ..variants import find_variants_file
    from ..variants import load_matrix as load

    path = Path(args.variants) if getattr(args, "variants", None) else find_variants_file()
    return load(path)


def check_writable_dir(path: Path, flag: str) -> None:
    """Fail before any work if ``path`` cannot become a folder this process writes into."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {path}: exists and is not a folder; name a folder")
    probe = path
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: {probe} is not writable; pick a folder you can write to")
