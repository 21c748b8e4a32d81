"""``python -m pybuild envs``: list (or --clear) the per-variant build environments in the cache."""

from __future__ import annotations

import argparse

from ..ui import Reporter, human_size
from .common import add_output_flags

NAME = "envs"
HELP = "list the per-variant build environments (or --clear them)"
DESCRIPTION = (
    "List the environments `build --all`/`--variant` and `test` made under the user cache dir "
    "(PYBUILD_CACHE_DIR, else $XDG_CACHE_HOME/pybuild, else ~/.cache/pybuild)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--clear", action="store_true", help="remove them all (uv's own cache stays)")
    add_output_flags(p)


def run(args: argparse.Namespace) -> int:
    """List (or remove) the per-variant environments in the cache."""
    from ..envs import clear_env, env_folders, envs_dir, list_envs

    rep = Reporter(quiet=args.quiet, json_mode=args.json)
    if args.clear:  # complete or not; one a run is making now is left to it
        for path in env_folders():
            if clear_env(path):
                rep.info(f"removed {path}")
            else:
                rep.warn(f"{path}: kept, a run is making or using it now; clear again when it is done")
        return 0
    # one row per environment: a variant may have several (other packages, another Python); the
    # folder is <variant>-<key> under the cache folder named in the title, so no cell holds a long path
    found = list_envs()
    rows = [
        (
            m["plan"]["variant"],
            p.name.removeprefix(f"{m['plan']['variant']}-"),
            m.get("torch", "?"),
            " ".join((m.get("compilers") or {}).values()) or m.get("nvcc") or "-",  # "nvcc": older markers
            human_size(size),
            m["plan"]["source"],
        )
        for p, m, size in found
    ]
    rep.table(
        f"{len(rows)} environments in {envs_dir()}, each in the folder <variant>-<key> (uv's cache links "
        "each wheel into them; `du -sh` both for the disk they take)",
        ["variant", "key", "torch", "compiler", "size", "from"],
        rows,
    )
    return 0
