"""Command line: ``python -m pybuild <command>``. ``main(argv)`` returns the exit code.

One module per command (``cli/build.py`` is ``python -m pybuild build``), each declaring its name,
help, arguments and ``run`` (``common.Command``); ``COMMANDS`` lists them in the order of ``--help``.
The flags several commands share are in ``common``, the exit codes in ``exits``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .. import __version__
from ..errors import UsageError
from . import (
    bench,
    bench_build,
    build,
    check,
    check_config,
    clean,
    collect,
    envs,
    generate,
    lock,
    migrate,
    new,
    publish,
    shell,
    test,
    variants,
    wheel,
)
from .common import Command, Parser
from .exits import EPILOG, guarded

COMMANDS: tuple[Command, ...] = (  # the order a kernel meets them (docs/cli.md follows it)
    new,
    lock,
    check_config,
    migrate,
    variants,
    generate,
    clean,
    build,
    test,
    shell,
    envs,
    collect,
    check,
    publish,
    wheel,
    bench,
    bench_build,
)


def make_parser() -> argparse.ArgumentParser:
    """The parser of every command; each sub-parser's ``func`` default is its command's ``run``."""
    parser = Parser(
        prog="python -m pybuild",
        description="Kernel build farm: build PyTorch custom-op kernels for every variant, check and publish them.",
        epilog=EPILOG,
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"pybuild {__version__}",
        help="print pybuild's version (after `publish` or `wheel`, --version is the release's)",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        p = sub.add_parser(command.NAME, help=command.HELP, description=command.DESCRIPTION)
        command.add_arguments(p)
        p.set_defaults(func=command.run)
    return parser


def _dispatch(argv: list[str], passed_on: list[str]) -> int:
    """Parse ``argv`` and run its command (``passed_on``: what followed ``--``, for `test`)."""
    args, extra = make_parser().parse_known_args(argv)
    if not getattr(args, "command", None):
        if extra:  # e.g. `python -m pybuild --bogus`: name it, not the missing command
            raise UsageError(
                f"python -m pybuild: unrecognized arguments: {' '.join(extra)} (see python -m pybuild --help)"
            )
        make_parser().print_help()
        raise UsageError("python -m pybuild: no command given; choose one of those listed above")
    if passed_on and args.command not in ("test", "shell"):
        raise UsageError(
            f"python -m pybuild {args.command}: arguments after `--` are only for `test` (pytest's) "
            "and `shell` (the command)"
        )
    args.pytest_args = passed_on
    if extra:
        raise UsageError(
            f"python -m pybuild {args.command}: unrecognized arguments: {' '.join(extra)} "
            f"(see python -m pybuild {args.command} --help)"
        )
    return int(args.func(args))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names (default: ``sys.argv[1:]``) and return its exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    passed_on = argv[argv.index("--") + 1 :] if "--" in argv else []  # `test ... -- PYTEST_ARGS`, `shell ... -- CMD`
    argv = argv[: argv.index("--")] if "--" in argv else argv
    return guarded(lambda: _dispatch(argv, passed_on), debug="--debug" in argv)


def entry() -> None:
    """The ``pybuild`` console script."""
    sys.exit(main())
