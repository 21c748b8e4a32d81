"""Run commands the way the integration tests do: output captured as text, and by default the test
fails, showing the tails of both streams, when the command does not exit 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run(
    cmd: list[str], env: dict | None = None, cwd: Path = REPO, ok: bool = True, timeout: int = 300
) -> subprocess.CompletedProcess[str]:
    """``cmd`` in ``cwd`` with ``env`` (default: this process's); with ``ok``, it must exit 0."""
    proc = subprocess.run(cmd, env=env or dict(os.environ), cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if ok:
        assert proc.returncode == 0, f"{cmd} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def pybuild(
    *args: str, env: dict | None = None, cwd: Path = REPO, ok: bool = True, timeout: int = 600
) -> subprocess.CompletedProcess[str]:
    """``python -m pybuild ARGS`` with this interpreter."""
    return run([sys.executable, "-m", "pybuild", *args], env=env, cwd=cwd, ok=ok, timeout=timeout)


def run_py(code: str, env: dict | None = None, cwd: Path = REPO) -> dict:
    """``code`` in a fresh interpreter; it must exit 0 and print one JSON object as its last line."""
    proc = run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=cwd)
    return json.loads(proc.stdout.strip().splitlines()[-1])
