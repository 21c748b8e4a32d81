"""``python -m pybuild shell``: a shell, or one command, in the environment ``test`` runs a kernel's
tests in (kernel-builder's test shell)."""

from __future__ import annotations

import argparse
import os

from ..errors import PybuildError, UsageError
from ..ui import Reporter
from .common import add_output_flags, add_variants_flag, load_manifests, load_matrix
from .test import add_no_build_flag, prepare

NAME = "shell"
HELP = "a shell (or the command after --) in the environment `test` runs a variant's tests in"
DESCRIPTION = (
    "Build the variant if needed, then start $SHELL (or run the command after `--`) in the kernel's folder "
    "with the environment `test` gives its tests: the Python that runs them first on PATH (this one where "
    "its torch is the variant's, else the variant's environment), the built variant first on the import "
    "path, LOCAL_KERNELS naming it, pytest's kernels_ci marker registered. Exits with the shell's or the "
    "command's exit code."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("kernel_dir", nargs="?", default=".", metavar="KERNEL_DIR", help="default: the current folder")
    p.add_argument("--variant", required=True, metavar="NAME", help="the variant, e.g. torch214-cxx11-cpu-x86_64-linux")
    add_no_build_flag(p)
    add_variants_flag(p)
    add_output_flags(p, json_flag=False)


def run(args: argparse.Namespace) -> int:
    """Prepare the variant as `test` does, then run the shell or the command in its environment."""
    import subprocess

    from ..testshell import suite_environ

    rep = Reporter(quiet=args.quiet)
    matrix = load_matrix(args)
    manifests = load_manifests([args.kernel_dir], quiet=args.quiet)
    if manifests[0].noarch:
        raise UsageError(f"shell: {manifests[0].root} is a pure-Python kernel; its tests need no build (use pytest)")
    args.torch = None
    ((manifest, variant, (runner,)),) = prepare(args, [args.variant], manifests, matrix, rep)
    environ = suite_environ(manifest, variant, os.environ, runner)
    cmd = args.pytest_args or [os.environ.get("SHELL") or "/bin/sh"]
    rep.info(
        f"{manifest.name} {variant.name}: running {cmd[0]} in {manifest.root} with {runner.python} "
        f"(torch {runner.torch.version}) and the built variant first on the import path"
    )
    try:
        return subprocess.run(cmd, env=environ, cwd=manifest.root.resolve(), check=False).returncode
    except OSError as e:
        raise PybuildError(f"shell: cannot run {cmd[0]!r}: {e.strerror}; name a command on PATH after `--`") from None
