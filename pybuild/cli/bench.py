"""``python -m pybuild bench``: time kernels against torch eager, torch.compile and a device copy.

This module reads the arguments and names the kernels; the timing, the sweep and their reports are
``pybuild.bench`` and ``pybuild.sweep``'s."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..ui import Reporter
from .common import add_output_flags, check_writable_dir, farm_root, int_at_least, kernel_dirs

NAME = "bench"
HELP = "time kernels against torch eager, torch.compile and a device copy"
DESCRIPTION = ("Run each kernel's benchmarks/<name>.py cases (building the host variant if needed) on CUDA, or on "
               "the CPU where no GPU is present, next to torch eager, torch.compile and a copy moving the same "
               "bytes; print a table, and with --out write <name>.json and <name>.png.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("kernels", nargs="*", metavar="KERNEL",
                   help="kernel name or folder (default: every kernel with benchmarks/<name>.py)")
    p.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto", help="default: cuda when available")
    p.add_argument("--quick", action="store_true", help="fewer sizes and repetitions")
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                   help="time torch.compile too (default: on CUDA only)")
    p.add_argument("--out", metavar="DIR", help="write the JSON results and the PNG plot there")
    p.add_argument("--name", metavar="NAME",
                   help="file name stem under --out (default: from the device, e.g. gpu-nvidia-h200)")
    p.add_argument("--record-command", metavar="TEXT", help="command to record in the JSON (default: this one)")
    p.add_argument("--strict", action="store_true", help="exit 1 when a performance target is missed (with "
                   "--sweep: when a shape is under 0.95x the best peer in graphs or 1.0x eager in plain calls)")
    p.add_argument("--sweep", type=int_at_least(1), metavar="N",
                   help="instead of the fixed cases, N seeded random shapes per op (the kernel's "
                        "benchmarks/<name>.py sweep_ops): checked, then timed against eager and torch.compile; "
                        "writes sweep-<kernels>-<device>.json and .svg with --out")
    p.add_argument("--seed", type=int_at_least(0), default=0, help="the sweep's seed (default 0)")
    p.add_argument("--max-mib", type=int_at_least(1), default=128, metavar="MIB",
                   help="the sweep's cap on bytes one call moves, in MiB (default 128)")
    p.add_argument("--workers", type=int_at_least(0), metavar="K",
                   help="processes compiling the sweep's shapes before timing (default: CPUs - 2, at most 12)")
    add_output_flags(p)


def run(args: argparse.Namespace) -> int:
    from .. import bench
    from ..host import torch_info

    root = farm_root()
    dirs = _kernel_folders(root, args.kernels)
    if args.name is not None and (not args.name or "/" in args.name or args.name in (".", "..")):
        raise UsageError(f"--name {args.name!r}: a file name without '/', e.g. gpu-h200")
    if args.out:
        check_writable_dir(Path(args.out), "--out")
    torch_info()  # torch installed at all: a toolchain error (exit 5) rather than an ImportError
    device = bench.resolve_device(args.device)
    rep = Reporter(quiet=args.quiet, json_mode=args.json)
    loaded, names = _load_kernels(root, dirs, rep)
    compile_ = args.compile if args.compile is not None else device == "cuda"
    command = args.record_command or " ".join(["python", "-m", "pybuild", *sys.argv[1:]])
    if args.sweep is not None:
        return _sweep(args, loaded, names, device, compile_, command, rep)
    return _cases(args, loaded, device, compile_, command, rep)


def _kernel_folders(root: Path, kernels: list[str]) -> list[Path]:
    """The folders of the kernels named (by folder or by name), else of every kernel with cases."""
    from ..manifest import load_manifest

    if not kernels:
        return [d for d in kernel_dirs([])
                if (root / "benchmarks" / f"{load_manifest(d).python_name}.py").is_file()]
    dirs = []
    for k in kernels:
        p = Path(k) if (Path(k) / "build.toml").is_file() else root / "kernels" / k
        if not (p / "build.toml").is_file():  # the kernel's name (rms-norm) for its folder (rms_norm)
            p = root / "kernels" / k.replace("-", "_")
        if not (p / "build.toml").is_file():
            raise UsageError(f"{k}: not a kernel name or folder (no build.toml); pass e.g. img2gray or "
                             "kernels/img2gray")
        dirs.append(p)
    return dirs


def _load_kernels(root: Path, dirs: list[Path], rep: Reporter) -> tuple[list[tuple[str, Any, Any]], list[str]]:
    """Each kernel's (name, loaded host variant, bench cases module), every cases module read before
    the first build; and the kernels' Python names."""
    from .. import bench
    from ..errors import BuildError
    from ..manifest import load_manifest
    from ..testing import load_built_kernel

    modules = [(load_manifest(d), d) for d in dirs]
    cases = [(m, d, bench.load_cases_module(root, m.python_name)) for m, d in modules]  # validate before building
    loaded = []
    for manifest, d, module in cases:
        rep.info(f"{manifest.name}: building (if needed) and loading the host variant")
        try:
            kernel = load_built_kernel(d)
        except RuntimeError as e:  # ensure_built's message carries build's own output: keep its error line
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
            cause = next((ln for ln in lines if ln.startswith("error:")), lines[0] if lines else "")
            raise BuildError(f"{d}: building the host variant failed: {cause.removeprefix('error: ')} "
                             f"(python -m pybuild build {d} shows the full log)") from None
        loaded.append((manifest.name, kernel, module))
    return loaded, [m.python_name for m, _, _ in cases]


def _cases(args: argparse.Namespace, loaded: list, device: str, compile_: bool, command: str,
           rep: Reporter) -> int:
    """``bench``: the kernels' fixed cases; exit 1 with --strict when a performance target is missed."""
    from .. import bench

    def save(partial: dict) -> None:  # after every case: a run cut short still leaves its numbers
        if args.out:
            bench.write_outputs(partial, Path(args.out), args.name or bench.device_slug(partial), with_plot=False)

    doc = bench.run(loaded, device, quick=args.quick, compile_=compile_, command=command, log=rep.info, on_case=save)
    if args.out:
        for path in bench.write_outputs(doc, Path(args.out), args.name or bench.device_slug(doc)):
            rep.info(f"wrote {path}")
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        env = doc["environment"]
        title = (f"{env['device']['name']} · torch {env['torch']} · large copy {doc['copy_large']['gbps']:.0f} GB/s"
                 f" · {doc['method']['timing']}")
        Reporter(quiet=args.quiet).table(title, bench.SUMMARY_COLUMNS, bench.summary_rows(doc))
    missed = [f"{r['kernel']} {r['op']} {r['label']} {r['dtype']}: {t['target']} (got {t['ratio'] or 0:.3f}; "
              f"{t.get('verdict', 'missed')})"
              for r in doc["results"] for t in r["targets"] if not t["met"]]
    n_targets = sum(len(r["targets"]) for r in doc["results"])
    for m in missed:
        rep.info(f"target not met: {m}")
    if n_targets:
        rep.info(f"targets: {n_targets - len(missed)} of {n_targets} met")
    return 1 if missed and args.strict else 0


def _sweep(args: argparse.Namespace, loaded: list, names: list[str], device: str, compile_: bool,
           command: str, rep: Reporter) -> int:
    """``bench --sweep N``: N seeded shapes per op; exit 1 on a wrong result (and with --strict on a
    ratio under its threshold)."""
    from .. import sweep, sweep_report
    from ..sweep_shapes import Distribution

    dist = Distribution(seed=args.seed, n=args.sweep, max_bytes=args.max_mib << 20)
    workers = args.workers if args.workers is not None else sweep.default_workers()

    def save(partial: dict) -> None:
        if args.out:
            sweep_report.write(partial, Path(args.out), args.name or sweep.out_name(names, partial), with_plot=False)

    doc = sweep.run(loaded, device, dist, compile_, workers, command, rep.info, on_shape=save)
    if args.out:
        for path in sweep_report.write(doc, Path(args.out), args.name or sweep.out_name(names, doc)):
            rep.info(f"wrote {path}")
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        Reporter(quiet=args.quiet).table(f"sweep: seed {args.seed}, {args.sweep} shapes per op, "
                                         f"{doc['seconds']:.0f} s", sweep_report.COLUMNS, sweep_report.rows(doc))
    wrong = sum(s["shapes"] - s["correct"] for s in doc["summary"].values())
    if wrong:
        rep.info(f"{wrong} shape(s) gave wrong results: see 'correct': false in the JSON")
        return 1
    return 1 if args.strict and not sweep_report.passed(doc) else 0
