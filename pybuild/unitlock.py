"""Compiler launcher of CUDA units: one compile of a unit at a time across the variants of a kernel.

    python unitlock.py LOCK_DIR WORK_DIR COMMAND...

Runs COMMAND (ccache and the compiler with its arguments) holding an exclusive lock whose name is a
hash of the command with WORK_DIR (the variant's work folder) taken out. Variants built at once
whose device unit compiles with the same command (every torch variant of one CUDA release, see
docs/building.md) then compile it one after another: the first compiles, the others wait and take
ccache's hit, instead of all compiling it at the same time. CMake runs this file by its path with
the Python that runs pybuild (so filelock, one of pybuild's requirements, is there); it imports
nothing of pybuild's.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from filelock import FileLock


def lock_name(command: list[str], work_dir: str) -> str:
    """The lock of ``command``: the same for the same unit compiled in any variant's work folder."""
    text = "\0".join(arg.replace(work_dir, "@WORK@") for arg in command)
    return hashlib.sha256(text.encode()).hexdigest()[:32] + ".lock"


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print("usage: unitlock.py LOCK_DIR WORK_DIR COMMAND...", file=sys.stderr)
        return 2
    lock_dir, work_dir, command = Path(argv[0]), argv[1], argv[2:]
    lock_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(lock_dir / lock_name(command, work_dir)):
        return subprocess.run(command, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
