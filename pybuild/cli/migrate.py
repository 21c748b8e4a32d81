"""``python -m pybuild migrate``: rewrite build.toml files of older editions as the current one."""

from __future__ import annotations

import argparse

from .. import safeload
from ..errors import ManifestError
from ..ui import Reporter
from .common import add_kernel_dirs, add_output_flags, kernel_dirs

NAME = "migrate"
HELP = "rewrite build.toml files of older editions as edition 5"
DESCRIPTION = (
    "Rewrite each kernel's build.toml in the newest edition (5), keeping comments and layout, and print "
    "the diff. The result is checked to mean exactly what the old file meant. With --check nothing is "
    "written and the exit code says whether any file needs migrating (for CI)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_kernel_dirs(p)
    p.add_argument("--check", action="store_true", help="write nothing; fail if a file is not in edition 5")
    add_output_flags(p, json_flag=False)


def run(args: argparse.Namespace) -> int:
    """Rewrite older-edition build.toml files as the current edition (diff shown; --check for CI)."""
    from ..manifest.migrate import migrate_text, write_migrations

    rep = Reporter(quiet=args.quiet)
    migrations = []
    for d in kernel_dirs(args.kernel_dirs):  # every file migrated in memory before any is written
        path = d / "build.toml"
        try:
            text = safeload.read_text(path, ManifestError, limit=1 << 20)  # a FIFO or /dev/zero is refused
        except UnicodeDecodeError:
            raise ManifestError(f"{path}: not valid UTF-8 text") from None
        migrations.append(migrate_text(text, path))
    pending = [m for m in migrations if m.changed]
    for m in migrations:
        if m.changed:
            print(m.diff(), end="")
        else:
            rep.info(f"{m.path}: already edition 5")
    if args.check:
        if pending:
            raise ManifestError(
                f"{len(pending)} build.toml file(s) not in edition 5: "
                f"{', '.join(str(m.path) for m in pending)}; run `python -m pybuild migrate` on them"
            )
        return 0
    write_migrations(pending)  # all or nothing
    for m in pending:
        rep.info(f"{m.path}: migrated to edition 5 (was {m.edition})")
    return 0
