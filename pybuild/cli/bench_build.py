"""``python -m pybuild bench-build KERNEL``: time a cold variant, the cold matrix, a no-op, a one-line
edit and a second machine on the shared cache; write them as JSON with the machine, plus a table.

The legs and their rules are ``pybuild.buildbench``'s; this module reads the arguments, runs the
legs in order and reports them."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..ui import Reporter
from .common import add_output_flags, add_variants_flag, check_writable_dir, load_matrix

if TYPE_CHECKING:
    from ..buildbench import Leg, Plan, Runner

NAME = "bench-build"
HELP = "time the build itself: one cold variant, the cold matrix, a no-op, a one-line edit, a second machine"
DESCRIPTION = (
    "Build a copy of KERNEL in a scratch folder, each leg with its own ccache folder: one variant cold, "
    "every selected variant cold, the same again (no-op), again after a one-line edit of one source, "
    "and, with --cache, on a second machine (fresh HOME, environments and local ccache) from the "
    "shared cache. Prints each leg's time and its ratio to the cold variant, with ccache's hits; "
    "--out writes them as JSON with the machine's description."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("kernel", metavar="KERNEL", help="the kernel's folder")
    p.add_argument(
        "--variant",
        action="append",
        metavar="NAME",
        help="time this variant (repeatable; default: every variant of the matrix this machine builds)",
    )
    p.add_argument(
        "--reference", metavar="NAME", help="the cold-variant leg's variant (default: the newest torch's CUDA one)"
    )
    p.add_argument(
        "--cache",
        metavar="URL",
        help="a shared cache (redis://HOST:PORT) the first machine fills and the second-machine leg reads; "
        "without it that leg is skipped (env PYBUILD_SHARED_CACHE does the same)",
    )
    p.add_argument("--cuda-archs", metavar="LIST", help="CUDA capabilities of CUDA variants, e.g. 9.0")
    p.add_argument("-j", "--jobs", type=int, metavar="N", help="compile jobs of each build (default: build's)")
    p.add_argument("--work", metavar="DIR", help="scratch folder (default: a temporary one, removed at the end)")
    p.add_argument("--out", metavar="FILE", help="write the result as JSON here")
    p.add_argument("--record-command", metavar="TEXT", help="the command to record in the JSON (default: this one)")
    add_variants_flag(p)
    add_output_flags(p)


def run(args: argparse.Namespace) -> int:
    from .. import buildbench as bb
    from ..cache import shared_cache

    rep = Reporter(quiet=args.quiet, json_mode=args.json)
    kernel = Path(args.kernel)
    if not (kernel / "build.toml").is_file():
        raise UsageError(f"bench-build: {kernel}: no build.toml there; name a kernel folder")
    if args.out:
        check_writable_dir(Path(args.out).parent, "--out")
    matrix = load_matrix(args)
    cache = shared_cache(args.cache)
    p = bb.plan(kernel, matrix, args.variant or [], args.reference)
    for line in p.refused:
        rep.info(f"not timed: {line}")
    rep.info(f"timing {len(p.variants)} variant(s) of {p.manifest.name}; reference {p.reference.name}")
    runner = bb.Runner(matrix.path, cache, args.cuda_archs, args.jobs, rep.info)
    with _scratch(args.work) as work:
        legs = _legs(p, runner, work, rep)
    rows = bb.legs_table(legs)
    if not args.json:
        rep.table(
            f"bench-build {p.manifest.name} ({len(p.variants)} variants)",
            ["leg", "time", "ratio", "built", "ccache hits (direct+pre)", "remote hits", "misses", "note"],
            rows,
        )
    for name, g in bb.goals(legs).items():
        if "goal" in g:
            verdict = {True: "met", False: "missed", None: "not measured"}[g["met"]]  # type: ignore[index]
            rep.info(f"goal {name}: {g['value']} (at most {g['goal']}): {verdict}")
        else:
            rep.info(f"{name}: {g['value']} compiles for {g['variants']} variants")
    doc = {
        "kernel": p.manifest.name,
        "command": args.record_command or "python -m pybuild " + shlex.join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": bb.machine(),
        "variants": [v.name for v in p.variants],
        "reference": p.reference.name,
        "cuda-archs": args.cuda_archs,
        "shared-cache": None if cache is None else cache.url.split("://", 1)[0],
        "not-timed": p.refused,
        "legs": bb.as_json(legs),
        "goals": bb.goals(legs),
    }
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
        rep.info(f"wrote {args.out}")
    if args.json:
        print(json.dumps(doc, indent=2))
    return 0


@contextlib.contextmanager
def _scratch(work: str | None) -> Iterator[Path]:
    if work:
        Path(work).mkdir(parents=True, exist_ok=True)
        yield Path(work).resolve()
        return
    with tempfile.TemporaryDirectory(prefix="pybuild-bench-build-") as tmp:
        yield Path(tmp)


def _legs(p: Plan, runner: Runner, work: Path, rep: Reporter) -> list[Leg]:
    """Run the legs in order; each one's Leg."""
    from .. import buildbench as bb

    environ = dict(os.environ)
    rep.info("environments: making or finding them (not timed)")
    bb.prepare_envs(p, rep.info)
    legs: list[Leg] = []

    rep.info(f"cold-variant: {p.reference.name}")
    single = bb.copy_kernel(p.manifest, work / "single" / p.manifest.root.name)
    s, built, stats, each = runner.build(single, [p.reference], work / "ccache-single", environ, shared=False)
    base = s
    legs.append(bb.Leg("cold-variant", s, 1.0, built, 1, stats, p.reference.name, per_variant=each))

    rep.info(f"cold-matrix: {len(p.variants)} variants")
    a = bb.copy_kernel(p.manifest, work / "a" / p.manifest.root.name)
    s, built, stats, each = runner.build(a, p.variants, work / "ccache-a", environ)
    legs.append(bb.Leg("cold-matrix", s, s / base, built, len(p.variants), stats, per_variant=each))

    rep.info("no-op")
    s, built, stats, each = runner.build(a, p.variants, work / "ccache-a", environ)
    legs.append(bb.Leg("no-op", s, s / base, built, len(p.variants), stats, per_variant=each))

    path, before = bb.edit_one_source(p, a)
    rep.info(f"edit: one line added to {path.relative_to(a)}")
    s, built, stats, each = runner.build(a, p.variants, work / "ccache-a", environ)
    note = f"one line in {path.relative_to(a)}"
    legs.append(bb.Leg("edit", s, s / base, built, len(p.variants), stats, note, per_variant=each))
    path.write_text(before)

    if runner.cache is None:
        rep.info("second-machine: skipped, no shared cache given (--cache redis://HOST:PORT)")
        legs.append(bb.Leg("second-machine", 0.0, None, 0, len(p.variants), {}, "skipped: no shared cache given"))
        return legs
    with bb.second_machine(work / "machine-b") as env_b:
        rep.info("second-machine: its environments (not timed)")
        env_seconds = bb.prepare_envs(p, rep.info)
        b = bb.copy_kernel(p.manifest, work / "machine-b" / "src" / p.manifest.root.name)
        rep.info("second-machine: build from the shared cache")
        s, built, stats, each = runner.build(b, p.variants, work / "machine-b" / "ccache", env_b)
    note = f"environments made in {env_seconds:.0f} s before, not timed"
    legs.append(bb.Leg("second-machine", s, s / base, built, len(p.variants), stats, note, per_variant=each))
    return legs
