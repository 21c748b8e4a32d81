"""``python -m pybuild collect``: copy a ``nix build`` result/ into the kernels' build/ folders."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..ui import Reporter
from .common import add_output_flags, farm_root

NAME = "collect"
HELP = "copy a `nix build` result/ into kernels/<name>/build/ (verified, atomic)"
DESCRIPTION = (
    "Copy every result/<variant>/ (or result/<kernel>/<variant>/) into the kernel's build/<variant>/, the "
    "kernel named by each variant's metadata.json. Every digest is verified first and each variant is "
    "replaced in one step; a corrupt or partial result changes nothing."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("result_dir", metavar="RESULT_DIR", help="what `nix build` left, e.g. result")
    p.add_argument(
        "--farm", metavar="DIR", help="the farm root holding kernels/ (default: the nearest variants.json's folder)"
    )
    add_output_flags(p)


def run(args: argparse.Namespace) -> int:
    from ..collect import collect

    farm = Path(args.farm) if args.farm else farm_root()
    rep = Reporter(quiet=args.quiet, json_mode=args.json)
    results = collect(Path(args.result_dir), farm)
    rows = [(c.kernel, c.variant, c.status, str(c.path)) for c in results]
    rep.table(f"Collected {len(rows)} variant(s) from {args.result_dir}", ["kernel", "variant", "status", "path"], rows)
    return 0
