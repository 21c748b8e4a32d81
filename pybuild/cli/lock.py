"""``python -m pybuild lock``: write each kernel's variants.lock.json, the variants Nix builds."""

from __future__ import annotations

import argparse

from ..manifest import lock
from .common import add_output_flags

NAME = "lock"
HELP = "write variants.lock.json (the variants Nix builds) beside each build.toml"
DESCRIPTION = lock.DESCRIPTION


def add_arguments(p: argparse.ArgumentParser) -> None:
    lock.add_arguments(p)
    add_output_flags(p, json_flag=False)


def run(args: argparse.Namespace) -> int:
    return lock.run_locks(args.kernel_dirs, args.variants, args.check)
