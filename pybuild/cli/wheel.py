"""``python -m pybuild wheel``: pack each built variant as a pip wheel."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UsageError
from ..ui import Reporter, human_size
from .common import add_output_flags, check_writable_dir

NAME = "wheel"
HELP = "one pip wheel per built variant"
DESCRIPTION = (
    "Pack each built variant as a wheel, e.g. img2gray-1.1.2+torch213cpucxx11-cp39-abi3-linux_x86_64.whl, "
    "requiring the torch minor it was built for. The platform tag is manylinux_2_28 only if the build "
    "fits it. A pure-Python variant (torch-cuda, ...) makes a py3-none-any wheel that accepts any torch."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "kernel_dir",
        metavar="KERNEL_DIR",
        help="the kernel folder whose build/ to pack (e.g. kernels/img2gray), its build/, or one variant folder",
    )
    p.add_argument("--variant", action="append", metavar="NAME", help="only this built variant (repeatable)")
    p.add_argument(
        "--version", metavar="X.Y.Z", help="the wheels' version, not pybuild's (default: <build.toml version>.0.0)"
    )
    p.add_argument("-o", "--out-dir", default="dist", metavar="DIR", help="where to write the wheels (default: dist)")
    add_output_flags(p, json_flag=False)


def run(args: argparse.Namespace) -> int:
    from ..check import MANYLINUX, find_target
    from ..wheel import build_wheel, wheel_spec

    rep = Reporter(quiet=args.quiet)
    target = find_target(Path(args.kernel_dir))
    dirs = [d for d in target.variant_dirs if not args.variant or d.name in args.variant]
    if args.variant and len(dirs) != len(set(args.variant)):
        missing = sorted(set(args.variant) - {d.name for d in dirs})
        raise UsageError(f"--variant {', '.join(missing)}: not built under {target.build_dir}")
    if not dirs:
        raise UsageError(f"{target.build_dir}: nothing built; run `python -m pybuild build` first")
    version = args.version or f"{target.manifest.version if target.manifest else 1}.0.0"
    if args.version and target.manifest:
        from ..publish import parse_version

        parse_version(args.version, target.manifest)  # the major is build.toml's, as for `publish`
    for d in dirs:  # every variant is checked before the first wheel is written
        wheel_spec(d, version)
    out_dir = Path(args.out_dir)
    check_writable_dir(out_dir, "--out-dir")
    rows = []
    for d in dirs:
        path = build_wheel(d, version, out_dir)
        rows.append((d.name, str(path), human_size(path.stat().st_size)))
        if f"-{MANYLINUX}_" not in path.name and path.name.endswith(("linux_x86_64.whl", "linux_aarch64.whl")):
            rep.info(
                f"note: {path.name} is tagged linux_*, not {MANYLINUX}: a host build; PyPI refuses such wheels "
                "(build the variant with Nix or in a manylinux_2_28 container for a portable one)"
            )
    rep.table(f"{len(rows)} wheel(s) of {target.kernel} {version}", ["variant", "wheel", "size"], rows)
    return 0
