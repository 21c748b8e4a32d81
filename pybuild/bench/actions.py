"""The ``bench`` command's two actions, whole: run, write the files, print, and the exit code.

``bench_cases`` runs the kernels' fixed cases (``cases()``), ``bench_sweep`` their seeded random
shapes (``sweep_ops()``); the command line only resolves the kernels, builds and loads them, and
passes them here as ``(name, loaded package, cases module)`` triples.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..ui import Reporter
from . import compile_workers, report, runner, sweep, sweep_report
from .environment import device_slug
from .sweep_shapes import Distribution


@dataclass(frozen=True)
class Output:
    """Where and how a run reports: ``out`` (a folder, or None for no files), the file stem
    ``name`` (None: from the device), JSON on stdout, quiet, and whether a shortfall fails."""

    out: Path | None = None
    name: str | None = None
    json: bool = False
    quiet: bool = False
    strict: bool = False


def bench_cases(
    kernels: Sequence[tuple[str, Any, Any]],
    device: str,
    *,
    quick: bool,
    compile_: bool,
    command: str,
    output: Output,
    rep: Reporter,
) -> int:
    """The fixed cases: exit 1 when a target is missed and ``output.strict``, else 0."""

    def save(partial: dict[str, Any]) -> None:  # after every case: a run cut short still leaves its numbers
        if output.out:
            report.write_outputs(partial, output.out, output.name or device_slug(partial), with_plot=False)

    doc = runner.run(kernels, device, quick=quick, compile_=compile_, command=command, log=rep.info, on_case=save)
    if output.out:
        for path in report.write_outputs(doc, output.out, output.name or device_slug(doc)):
            rep.info(f"wrote {path}")
    if output.json:
        print(json.dumps(doc, indent=1))
    else:
        env = doc["environment"]
        title = (
            f"{env['device']['name']} · torch {env['torch']} · large copy {doc['copy_large']['gbps']:.0f} GB/s"
            f" · {doc['method']['timing']}"
        )
        Reporter(quiet=output.quiet).table(title, report.SUMMARY_COLUMNS, report.summary_rows(doc))
    missed, n_targets = report.missed_targets(doc)
    for m in missed:
        rep.info(f"target not met: {m}")
    if n_targets:
        rep.info(f"targets: {n_targets - len(missed)} of {n_targets} met")
    return 1 if missed and output.strict else 0


def bench_sweep(
    kernels: Sequence[tuple[str, Any, Any]],
    device: str,
    dist: Distribution,
    *,
    compile_: bool,
    workers: int | None,
    command: str,
    output: Output,
    rep: Reporter,
) -> int:
    """``dist.n`` seeded shapes per op (or ``dist.given``): exit 1 on a wrong result (and, with
    ``output.strict``, on a ratio under its threshold), else 0. ``workers`` None:
    compile_workers.default_workers()."""
    names = [name.replace("-", "_") for name, _, _ in kernels]
    workers = compile_workers.default_workers() if workers is None else workers

    def save(partial: dict[str, Any]) -> None:
        if output.out:
            sweep_report.write(partial, output.out, output.name or sweep.out_name(names, partial), with_plot=False)

    doc = sweep.run(kernels, device, dist, compile_, workers, command, rep.info, on_shape=save)
    if output.out:
        for path in sweep_report.write(doc, output.out, output.name or sweep.out_name(names, doc)):
            rep.info(f"wrote {path}")
    if output.json:
        print(json.dumps(doc, indent=1))
    else:
        Reporter(quiet=output.quiet).table(
            f"sweep: {sweep_report.drawn(doc['distribution'])}, {doc['seconds']:.0f} s",
            sweep_report.COLUMNS,
            sweep_report.rows(doc),
        )
    wrong = sum(s["shapes"] - s["correct"] for s in doc["summary"].values())
    if wrong:
        rep.info(f"{wrong} shape(s) gave wrong results: see 'correct': false in the JSON")
        return 1
    return 1 if output.strict and not sweep_report.passed(doc) else 0
