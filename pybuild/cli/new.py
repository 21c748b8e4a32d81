"""``python -m pybuild new``: start a kernel folder with a working example op and its tests."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UsageError, VariantsError
from ..manifest.lock import COMMAND, LOCK_FILE
from ..ui import Reporter
from .common import add_output_flags, farm_root

NAME = "new"
HELP = "start a kernel folder with a working example op and its tests"
DESCRIPTION = (
    "Write kernels/NAME/ (or --dir): build.toml; csrc/ with a CUDA kernel that includes no torch header, "
    "its torch-facing launcher and a CPU implementation; torch-ext/ with the op's registration and a "
    "Python wrapper (input checks, a fake implementation for torch.compile); and tests/ against plain "
    "torch, opcheck and torch.compile. The example op is x * scale; `python -m pybuild build` builds it "
    "as it is. Nothing is written if any check fails."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "name",
        metavar="NAME",
        help="the kernel's name: lowercase letters, digits and '-', e.g. my-op (its Python package and op are my_op)",
    )
    p.add_argument("--dir", metavar="DIR", help="the folder to create (default: kernels/NAME in the farm)")
    p.add_argument("--license", default="Apache-2.0", metavar="SPDX", help="build.toml's license (default: Apache-2.0)")
    p.add_argument(
        "--noarch",
        action="store_true",
        help="a pure-Python kernel instead (a torch.library.custom_op, "
        "e.g. for Triton): no compiled code, torch-cuda and torch-cpu variants that load with any torch",
    )
    p.add_argument(
        "--variants",
        metavar="FILE",
        type=Path,
        help="the matrix to write its variants.lock.json for "
        "(default: the nearest variants.json; with none, no lock is written)",
    )
    add_output_flags(p, json_flag=False)


def run(args: argparse.Namespace) -> int:
    from ..scaffold import check_license, check_name, create_kernel

    rep = Reporter(quiet=args.quiet)
    check_name(args.name)  # before looking for the farm: a bad name is the first thing to hear about
    check_license(args.license)
    if args.dir is not None and not args.dir.strip():
        raise UsageError("new: --dir is empty; give the folder to create, or leave --dir out for kernels/NAME")
    if args.dir is not None:
        dest = Path(args.dir)
    else:
        try:
            dest = farm_root() / "kernels" / args.name
        except VariantsError:
            raise UsageError(
                f"new: no farm here (no variants.json at or above {Path.cwd()}); run it from the farm's "
                "root, or pass --dir to create the kernel elsewhere"
            ) from None
    files = create_kernel(dest, args.name, args.license, noarch=args.noarch, variants=args.variants)
    kind = "a pure-Python (noarch) example op" if args.noarch else "an example op on CPU and CUDA"
    rep.info(f"created {dest}/ with {kind}, {args.name.replace('-', '_')}(x, scale) = x * scale:")
    for rel in files:
        rep.info(f"  {dest / rel}")
    if LOCK_FILE not in files:
        rep.info(
            f"no variants.json found, so no {LOCK_FILE} yet: run `{COMMAND} {dest} --variants FILE` and "
            "commit it (without it, Nix computes it when it evaluates the kernel)"
        )
    rep.info(f"next: python -m pybuild build {dest} && python -m pytest {dest / 'tests'}")
    if _untracked_in_git(dest):
        # a flake in a git repository sees only what git tracks: `nix build .#NAME` would not find it
        rep.info(
            f"for Nix: `git add {dest}` first (a flake sees only the files git tracks), then "
            f"`nix --extra-experimental-features 'nix-command flakes' build .#{args.name} -L` (docs/nix.md)"
        )
    return 0


def _untracked_in_git(dest: Path) -> bool:
    """Whether ``dest`` lies in a git work tree that does not track it yet."""
    import subprocess

    try:
        proc = subprocess.run(
            ["git", "-C", str(dest), "ls-files", "--error-unmatch", "build.toml"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode != 0 and "did not match" in proc.stderr
