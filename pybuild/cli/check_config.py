"""``python -m pybuild check-config``: validate build.toml files without building."""

from __future__ import annotations

import argparse
import json

from ..ui import Reporter
from .common import add_kernel_dirs, add_output_flags, add_variants_flag, load_manifests, load_matrix

NAME = "check-config"
HELP = "validate build.toml files without building"
DESCRIPTION = (
    "Parse each kernel's build.toml (every edition this farm reads: upstream's edition 5, its "
    "pre-edition v4 and v3, and the farm's own format), check the files it names, and list the "
    "variants it gives. Exits non-zero with one line naming the file, key and fix on the first "
    "broken one."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_kernel_dirs(p)
    add_variants_flag(p)
    add_output_flags(p)


def run(args: argparse.Namespace) -> int:
    """Validate build.toml files without building: edition, keys, files, and the variants they give."""
    from ..manifest.editions import CURRENT_EDITION, edition_label

    rep = Reporter(quiet=args.quiet, json_mode=args.json)
    manifests = load_manifests(args.kernel_dirs, quiet=args.quiet)  # the first broken one raises its one-line error
    matrix = load_matrix(args)
    rows = []
    for m in manifests:
        variants = m.variants(matrix.variants)
        note = (
            ""
            if m.edition == CURRENT_EDITION
            else f"; `python -m pybuild migrate {m.root}` writes edition {CURRENT_EDITION}"
        )
        rows.append(
            {
                "kernel": m.name,
                "path": str(m.path),
                "edition": m.edition,
                "framework": m.framework,
                "backends": list(m.backends),
                "variants": [v.name for v in variants],
                "repo-id": m.repo_id,
                "warnings": list(m.warnings),
            }
        )
        if m.license_warning:
            rep.warn(m.license_warning)
        built = f"{len(variants)} variant{'' if len(variants) == 1 else 's'}"
        rep.info(
            f"{m.path}: ok ({edition_label(m.edition)}, {m.framework}, backends {', '.join(m.backends)}; {built}){note}"
        )
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0
