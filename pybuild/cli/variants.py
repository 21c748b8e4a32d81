"""``python -m pybuild variants``: list the variant matrix, the host's variants marked."""

from __future__ import annotations

import argparse
import json

from ..errors import PybuildError
from ..ui import Reporter
from .common import add_debug_flag, add_variants_flag, load_manifests, load_matrix

NAME = "variants"
HELP = "list the variant matrix (host variant marked)"
DESCRIPTION = "List the variants of variants.json; the host's own variant is marked."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kernel", metavar="DIR", help="only the variants this kernel builds for")
    add_variants_flag(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the variant names, one per line")
    add_debug_flag(p)


def run(args: argparse.Namespace) -> int:
    from ..host import host_variants

    matrix = load_matrix(args)
    variants = list(matrix.variants)
    manifest = load_manifests([args.kernel])[0] if args.kernel else None
    if manifest is not None:
        variants = manifest.variants(variants)
    try:
        host = {v.name for v in host_variants()}
    except PybuildError:
        host = set()
    if args.json:
        out = [
            {
                "name": v.name,
                "torch": v.torch,
                "backend": v.backend,
                "backend-version": v.backend_version,
                "cxx-abi": v.cxx_abi,
                "system": v.system,
                "host": v.noarch or v.name in host,  # every machine builds a noarch variant
            }
            for v in variants
        ]
        print(json.dumps(out, indent=2))
        return 0
    if args.quiet:
        print("\n".join(v.name for v in variants))
        return 0
    noun = "variant" if len(variants) == 1 else "variants"
    title = f"{len(variants)} {noun} from {matrix.path}" + (f" for {manifest.name}" if manifest else "")
    rows = [
        (
            v.name,
            v.torch or "any",
            v.backend_tag,
            v.cxx_abi or "-",
            v.system or "any",
            "◀ host" if v.noarch or v.name in host else "",
        )
        for v in variants
    ]
    Reporter().table(title, ["variant", "torch", "backend", "abi", "system", ""], rows)
    if manifest is not None and manifest.noarch:
        print("(a pure-Python kernel: every machine builds all of these; each loads with any torch of its backend)")
    elif not host & {v.name for v in variants}:
        print("(this machine's variant is not in the list)" if host else "(no torch installed: host variant unknown)")
    return 0
