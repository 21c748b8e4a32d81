"""``python -m pybuild clean``: remove what `generate` wrote (and with --build, the build outputs)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path

from ..ui import Reporter
from .common import add_kernel_dirs, add_output_flags, kernel_dirs

NAME = "clean"
HELP = "remove generated files (and with --build, build outputs)"
DESCRIPTION = (
    "Remove exactly the files `generate` wrote; with --build also the kernel's build/ and .pybuild/ folders "
    "and the extension `pip install -e` built into its package folder."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_kernel_dirs(p, help="default: every kernel")
    p.add_argument(
        "--build", action="store_true", help="also remove build/, .pybuild/ and the editable install's extension"
    )
    add_output_flags(p, json_flag=False)


def run(args: argparse.Namespace) -> int:
    from ..build import BUILD_DIR, WORK_DIR
    from ..generate import clean_project, editable_extensions
    from ..manifest import load_manifest

    rep = Reporter(quiet=args.quiet)
    # every manifest is read before anything is removed: a broken one stops the command untouched
    manifests = [(d, load_manifest(d)) for d in kernel_dirs(args.kernel_dirs)]
    for d, manifest in manifests:
        removed = clean_project(manifest)
        for rel in removed:
            rep.info(f"  removed {d / rel}")
        if args.build:
            with _no_build_running(d):
                for extra in (BUILD_DIR, WORK_DIR):
                    _remove_outputs(d / extra, rep)
            for built in [d / "compile_commands.json", *editable_extensions(manifest)]:
                if built.is_file():
                    built.unlink()
                    rep.info(f"  removed {built}")
        if not removed and not args.build:
            rep.info(f"  {d}: nothing to clean")
    return 0


@contextlib.contextmanager
def _no_build_running(kernel: Path) -> Iterator[None]:
    """Hold the lock of every variant that has one (``.pybuild/<variant>.lock``) while the build
    outputs are removed; a variant whose lock a running build holds stops the command, removing nothing."""
    from ..errors import PybuildError
    from ..fsutil import try_locked

    with contextlib.ExitStack() as stack:
        work = kernel / ".pybuild"
        for lock in sorted(work.glob("*.lock")) if work.is_dir() and not work.is_symlink() else ():
            if not stack.enter_context(try_locked(lock)):
                raise PybuildError(
                    f"{kernel}: a build of {lock.stem} is running (it holds {lock}); wait for it to finish, "
                    "then clean --build"
                )
        yield


def _remove_outputs(folder: Path, rep: Reporter) -> None:
    """Remove ``folder`` (build/ or .pybuild/); a symlinked one (build/ on tmpfs or another disk) keeps
    its link and loses what it holds."""
    from ..fsutil import remove_tree

    if folder.is_symlink():
        if folder.is_dir():
            for child in sorted(folder.iterdir()):
                remove_tree(child)
            rep.info(f"  emptied {folder}/ (a symlink, kept)")
        return
    if folder.is_dir():
        remove_tree(folder)
        rep.info(f"  removed {folder}/")
