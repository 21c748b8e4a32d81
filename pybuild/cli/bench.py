"""``python -m pybuild bench``: time kernels against torch eager, torch.compile and a device copy.

This module reads the arguments, names the kernels and loads them; the timing, the sweep and their
reports are ``pybuild.bench``'s (``bench_cases``, ``bench_sweep``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .. import backends
from ..errors import UsageError
from ..ui import Reporter
from .common import add_output_flags, check_writable_dir, farm_root, int_at_least, kernel_dirs

NAME = "bench"
HELP = "time kernels against torch eager, torch.compile and a device copy"
DESCRIPTION = (
    "Run each kernel's benchmarks/cases.py cases (building the host variant if needed) on CUDA, or on "
    "the CPU where no GPU is present, next to torch eager, torch.compile and a copy moving the same "
    "bytes; print a table, and with --out write <name>.json and <name>.png."
)


def bench_devices() -> dict[str, bool]:
    """torch device -> whether it is an accelerator: those of the backends pybuild builds in its
    environments (the variants a bench loads), accelerators first."""
    found = {b.torch_device: b.device_module is not None for b in backends.all_backends() if b.env_buildable}
    return dict(sorted(found.items(), key=lambda item: not item[1]))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "kernels",
        nargs="*",
        metavar="KERNEL",
        help="kernel name or folder (default: every kernel with benchmarks/cases.py)",
    )
    accelerators = [d for d, gpu in bench_devices().items() if gpu]
    p.add_argument(
        "--device",
        choices=("auto", *bench_devices()),
        default="auto",
        help=f"default: {' or '.join(accelerators)} when available",
    )
    p.add_argument("--quick", action="store_true", help="fewer sizes and repetitions")
    p.add_argument(
        "--compile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="time torch.compile too (default: on CUDA only)",
    )
    p.add_argument("--out", metavar="DIR", help="write the JSON results and the PNG plot there")
    p.add_argument(
        "--name", metavar="NAME", help="file name stem under --out (default: from the device, e.g. gpu-nvidia-h200)"
    )
    p.add_argument("--record-command", metavar="TEXT", help="command to record in the JSON (default: this one)")
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when a performance target is missed (with "
        "--sweep: when a shape is under 0.95x the best peer in graphs or 1.0x eager in plain calls)",
    )
    p.add_argument(
        "--sweep",
        type=int_at_least(1),
        metavar="N",
        help="instead of the fixed cases, N seeded random shapes per op (the kernel's "
        "benchmarks/cases.py sweep_ops): checked, then timed against eager and torch.compile; "
        "writes sweep-<kernels>-<device>.json and .svg with --out",
    )
    p.add_argument(
        "--shapes",
        metavar="SPEC",
        help="instead of the fixed cases, these shapes, checked and timed as the sweep times its own: "
        "comma-separated ROWSxLAST (rows ops) or HxW / NxHxW (image ops), each with :DTYPE or in every "
        "dtype the op takes, e.g. 344x19373:float16,3x151936",
    )
    p.add_argument("--seed", type=int_at_least(0), default=0, help="the sweep's seed (default 0)")
    p.add_argument(
        "--max-mib",
        type=int_at_least(1),
        default=128,
        metavar="MIB",
        help="the sweep's cap on bytes one call moves, in MiB (default 128)",
    )
    p.add_argument(
        "--workers",
        type=int_at_least(0),
        metavar="K",
        help="processes compiling the sweep's shapes before timing (default: CPUs - 2, at most 12)",
    )
    add_output_flags(p)


def run(args: argparse.Namespace) -> int:
    from .. import bench
    from ..host import torch_info

    given: tuple[tuple[tuple[int, ...], str | None], ...] = ()
    if args.shapes is not None:  # checked before any kernel is loaded (or built)
        if args.sweep is not None:
            raise UsageError("--sweep and --shapes: give one (random shapes, or the ones you name)")
        try:
            given = bench.parse_shapes(args.shapes)
        except ValueError as e:
            raise UsageError(f"--shapes {args.shapes!r}: {e}") from None
    dirs = _kernel_folders(args.kernels)
    if args.name is not None and (not args.name or "/" in args.name or args.name in (".", "..")):
        raise UsageError(f"--name {args.name!r}: a file name without '/', e.g. gpu-h200")
    if args.out:
        check_writable_dir(Path(args.out), "--out")
    torch_info()  # torch installed at all: a toolchain error (exit 5) rather than an ImportError
    device = bench.resolve_device(args.device)
    rep = Reporter(quiet=args.quiet, json_mode=args.json)
    loaded = _load_kernels(dirs, rep)
    compile_ = args.compile if args.compile is not None else bench_devices()[device]
    command = args.record_command or " ".join(["python", "-m", "pybuild", *sys.argv[1:]])
    output = bench.Output(
        out=Path(args.out) if args.out else None, name=args.name, json=args.json, quiet=args.quiet, strict=args.strict
    )
    if given:
        dist = bench.Distribution(seed=args.seed, n=len(given), max_bytes=args.max_mib << 20, given=given)
        return bench.bench_sweep(
            loaded, device, dist, compile_=compile_, workers=args.workers, command=command, output=output, rep=rep
        )
    if args.sweep is not None:
        dist = bench.Distribution(seed=args.seed, n=args.sweep, max_bytes=args.max_mib << 20)
        return bench.bench_sweep(
            loaded, device, dist, compile_=compile_, workers=args.workers, command=command, output=output, rep=rep
        )
    return bench.bench_cases(
        loaded, device, quick=args.quick, compile_=compile_, command=command, output=output, rep=rep
    )


def _kernel_folders(kernels: list[str]) -> list[Path]:
    """The folders of the kernels named (by folder or by name), else of every kernel with cases."""
    from .. import bench

    root = farm_root()
    if not kernels:
        return [d for d in kernel_dirs([]) if bench.has_cases(d)]
    dirs = []
    for k in kernels:
        p = Path(k) if (Path(k) / "build.toml").is_file() else root / "kernels" / k
        if not (p / "build.toml").is_file():  # the kernel's name (rms-norm) for its folder (rms_norm)
            p = root / "kernels" / k.replace("-", "_")
        if not (p / "build.toml").is_file():
            raise UsageError(
                f"{k}: not a kernel name or folder (no build.toml); pass e.g. img2gray or kernels/img2gray"
            )
        dirs.append(p)
    return dirs


def _load_kernels(dirs: list[Path], rep: Reporter) -> list[tuple[str, Any, Any]]:
    """Each kernel's (name, loaded host variant, cases module), every cases module read before the
    first build."""
    from .. import bench
    from ..errors import BuildError
    from ..manifest import load_manifest
    from ..testing import load_built_kernel, test_variant

    cases = [(load_manifest(d), d, bench.load_cases_module(d)) for d in dirs]  # validate before building
    loaded = []
    for manifest, d, module in cases:
        named = test_variant()
        if named:
            rep.info(f"{manifest.name}: loading {named} as built (PYBUILD_TEST_VARIANT)")
        else:
            rep.info(f"{manifest.name}: building (if needed) and loading the host variant")
        try:
            kernel = load_built_kernel(d)
        except RuntimeError as e:  # ensure_built's message carries build's own output: keep its error line
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
            cause = next((ln for ln in lines if ln.startswith("error:")), lines[0] if lines else "")
            raise BuildError(
                f"{d}: building the host variant failed: {cause.removeprefix('error: ')} "
                f"(python -m pybuild build {d} shows the full log)"
            ) from None
        loaded.append((manifest.name, kernel, module))
    return loaded
