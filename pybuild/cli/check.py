"""``python -m pybuild check``: check built variants before they are published."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..ui import Reporter, out_console, printable
from .common import add_output_flags, add_variants_flag, kernel_dirs, load_matrix

if TYPE_CHECKING:
    from ..check import CheckReport

NAME = "check"
HELP = "check built variants: metadata, digests, abi3, manylinux, RPATH, import"
DESCRIPTION = (
    "Check every built variant of a kernel before it is published: metadata.json as the kernels loader "
    "reads it, digests, abi3 and manylinux_2_28 symbols (kernel-abi-check), RPATH, import in a fresh "
    "interpreter, and that every variant the matrix requires is present. Exit 8 when a check fails "
    "(other codes, e.g. 5 for a missing tool: python -m pybuild --help)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="a kernel folder, its build/, or one variant folder (default: every kernel under kernels/)",
    )
    p.add_argument(
        "--variant",
        action="append",
        metavar="NAME",
        help="only this built variant (repeatable; skips the required-variants check)",
    )
    p.add_argument("--no-import", action="store_true", help="skip the import check")
    add_variants_flag(p)
    add_output_flags(p)


def run(args: argparse.Namespace) -> int:
    from ..check import check_kernel, failure_summary, find_target, select_variant_dirs
    from ..errors import CheckError

    rep = Reporter(quiet=args.quiet)
    matrix = load_matrix(args)
    paths = [Path(p) for p in args.paths] or kernel_dirs([])
    for path in paths:  # every argument is valid before any work starts
        select_variant_dirs(find_target(path), args.variant)
    reports = []
    for path in paths:
        with rep.task(f"checking {path}") as update:
            update("metadata, digests, ABI, imports", None)
            reports.append(check_kernel(path, matrix, variants=args.variant, run_import=not args.no_import))
    if args.json:
        print(json.dumps([r.to_json() for r in reports], indent=2))
    else:
        for report in reports:
            print_check(rep, report)
    failed = [r for r in reports if not r.ok]
    if failed:
        msg = "; ".join(f"{r.kernel}: {len(r.failures)} check(s) failed: {failure_summary(r)}" for r in failed)
        raise CheckError(msg + ("" if args.json else " (see the table above)"))
    rep.info(f"all checks passed for {', '.join(r.kernel for r in reports)}")
    return 0


def print_check(rep: Reporter, report: CheckReport) -> None:
    """One kernel's check results as a table, and the variants the matrix wants that are missing."""
    mark = {"pass": "pass", "fail": "FAIL", "skip": "skip"}
    rows = [(r.variant, r.check, mark[r.status], r.detail) for r in report.results]
    rep.table(f"check {report.kernel} ({report.build_dir})", ["variant", "check", "result", "detail"], rows)
    for r in report.results:
        if r.check == "variants" and r.data.get("missing") and not rep.quiet:
            missing = ", ".join(r.data["missing"])
            out_console.print(
                printable(f"missing variants of {report.kernel} ({len(r.data['missing'])}): {missing}"),
                markup=False,
            )
