"""Running a build step (CMake, ninja) with its output in a log file, and one clear error line when
it fails; the step and every process it starts go down with pybuild."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from .errors import BuildError, PybuildError, ToolchainError

#: Runs a command as the leader of its own process group that dies with pybuild: when pybuild exits or
#: is killed (even by SIGKILL), the system sends this wrapper SIGTERM (PR_SET_PDEATHSIG), and it kills
#: the whole group: CMake, ninja and every compiler they started.
_GROUP_WRAPPER = """
import ctypes, os, signal, subprocess, sys
def stop(*_):
    os.killpg(0, signal.SIGKILL)
signal.signal(signal.SIGTERM, stop)
ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
if os.getppid() != int(sys.argv[1]):  # pybuild died before the line above
    stop()
rc = subprocess.call(sys.argv[2:])
sys.exit(rc if rc >= 0 else 128 - rc)
"""


def in_own_group(cmd: list[str]) -> list[str]:
    """``cmd`` wrapped so that a killed pybuild takes it and its children along (Linux; elsewhere as is)."""
    if not sys.platform.startswith("linux"):
        return cmd
    return [sys.executable, "-c", _GROUP_WRAPPER, str(os.getpid()), *cmd]


def run_logged(
    cmd: list[str],
    log: Path,
    cwd: Path | None,
    on_line: Callable[[str], None] | None = None,
    env: dict[str, str] | None = None,
) -> None:
    """Run ``cmd`` appending its output to ``log``; raise BuildError with the log's tail on failure."""
    with log.open("a") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        proc = subprocess.Popen(
            in_own_group(cmd),
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            errors="replace",
            start_new_session=True,
        )
        assert proc.stdout is not None
        tail: list[str] = []
        try:
            for line in proc.stdout:
                f.write(line)
                tail = (tail + [line.rstrip()])[-25:]
                if on_line:
                    on_line(line)
            rc = proc.wait()
        except BaseException:  # Ctrl-C or an error of the caller: take the whole group along, now
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
    if rc != 0:
        at = next((i for i, t in enumerate(tail) if re.search(r"error|Error|ERROR|fatal", t)), None)
        first = tail[at].strip() if at is not None else (tail[-1].strip() if tail else "")
        if at is not None and first.endswith(":"):  # "CMake Error at X (message):" -- the cause follows,
            # one paragraph that CMake wraps over indented lines
            rest = tail[at + 1 :]
            start = next((i for i, t in enumerate(rest) if t.strip()), len(rest))
            end = next((i for i in range(start, len(rest)) if not rest[i].strip()), len(rest))
            first = " ".join([first, *(t.strip() for t in rest[start:end])])
        step = f"{Path(cmd[0]).name} {cmd[1] if len(cmd) > 1 else ''}"
        if any("No space left on device" in t for t in tail):  # the disk, not the code: exit 1, as Python's ENOSPC
            raise PybuildError(
                f"`{step}` failed: no space left on device (full log: {log}); free space on the file system "
                f"of {cwd or Path.cwd()} and the build's temporary folder, then build again"
            )
        msg = f"`{step}` failed (exit {rc}): {first[:500]} (full log: {log})"
        compiler = re.search(r"CMAKE_(CXX|C|CUDA)_COMPILER", "\n".join(tail))
        if compiler and len(cmd) > 1 and cmd[1] == "-S":  # configure could not use a compiler: the toolchain
            env_var = {"CXX": "CXX", "C": "CC", "CUDA": "CUDACXX"}[compiler[1]]
            raise ToolchainError(f"{msg}; check the {compiler[1]} compiler (${env_var}, PATH)")
        raise BuildError(msg)
