"""``python -m pybuild clean``: remove what `generate` wrote (and with --build, the build outputs)."""

from __future__ import annotations

import argparse

from ..ui import Reporter
from .common import add_kernel_dirs, add_output_flags, kernel_dirs

NAME = "clean"
HELP = "remove generated files (and with --build, build outputs)"
DESCRIPTION = (
    "Remove exactly the files `generate` wrote; with --build also the kernel's build/ and .pybuild/ folders "
    "and the extension `pip install -e` built into its package folder."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_kernel_dirs(p, help="default: every kernel")
    p.add_argument(
        "--build", action="store_true", help="also remove build/, .pybuild/ and the editable install's extension"
    )
    add_output_flags(p, json_flag=False)


def run(args: argparse.Namespace) -> int:
    import shutil

    from ..build import BUILD_DIR, WORK_DIR
    from ..generate import clean_project, editable_extensions
    from ..manifest import load_manifest

    rep = Reporter(quiet=args.quiet)
    # every manifest is read before anything is removed: a broken one stops the command untouched
    manifests = [(d, load_manifest(d)) for d in kernel_dirs(args.kernel_dirs)]
    for d, manifest in manifests:
        removed = clean_project(manifest)
        for rel in removed:
            rep.info(f"  removed {d / rel}")
        if args.build:
            for extra in (BUILD_DIR, WORK_DIR):
                if (d / extra).is_dir():
                    shutil.rmtree(d / extra)
                    rep.info(f"  removed {d / extra}/")
            for built in [d / "compile_commands.json", *editable_extensions(manifest)]:
                if built.is_file():
                    built.unlink()
                    rep.info(f"  removed {built}")
        if not removed and not args.build:
            rep.info(f"  {d}: nothing to clean")
    return 0
