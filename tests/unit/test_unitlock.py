"""The CUDA launcher's lock: one name for one unit across variants' work folders, held while it runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from filelock import FileLock

from pybuild import unitlock

SCRIPT = Path(unitlock.__file__)


def _command(work: str) -> list[str]:
    return ["ccache", "nvcc", f"-I{work}/toolchain/include", "-c", "/k/csrc/x.cu", "-o", "CMakeFiles/x.cu.o"]


def test_one_unit_has_one_lock_in_every_variant() -> None:
    a = unitlock.lock_name(_command("/k/.pybuild/torch213-cu130"), "/k/.pybuild/torch213-cu130")
    b = unitlock.lock_name(_command("/k/.pybuild/torch214-cu130"), "/k/.pybuild/torch214-cu130")
    other = unitlock.lock_name([*_command("/k/.pybuild/v"), "-DX"], "/k/.pybuild/v")
    assert a == b != other


def test_the_command_runs_under_the_lock_and_its_exit_code_is_returned(tmp_path: Path) -> None:
    command = [sys.executable, "-c", "import sys; sys.exit(3)"]
    locks = tmp_path / "locks"
    done = subprocess.run([sys.executable, str(SCRIPT), str(locks), str(tmp_path), *command], check=False)
    assert done.returncode == 3
    # while another process holds the unit's lock, the launcher waits
    lock = FileLock(locks / unitlock.lock_name(command, str(tmp_path)))
    with lock:
        proc = subprocess.Popen([sys.executable, str(SCRIPT), str(locks), str(tmp_path), *command])
        try:
            proc.wait(timeout=1.5)
            waited = False
        except subprocess.TimeoutExpired:
            waited = True
        assert waited, "the launcher ran while the lock was held"
    assert proc.wait(timeout=30) == 3
