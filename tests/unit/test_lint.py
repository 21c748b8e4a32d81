"""The code keeps the house habits: ruff (lint and format) and mypy, as configured in pyproject.toml."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SETUP = "run `bash .ci/setup` (it installs the development dependency group)"


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)


def _ruff() -> str:
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.fail(f"ruff is not installed: {SETUP}")
    return ruff


def test_ruff_lint() -> None:
    result = _run(_ruff(), "check", "--no-cache", "--output-format", "concise", ".")
    assert result.returncode == 0, "ruff check:\n" + result.stdout + result.stderr


def test_ruff_format() -> None:
    result = _run(_ruff(), "format", "--no-cache", "--check", ".")
    assert result.returncode == 0, "run `ruff format .`:\n" + result.stdout + result.stderr


def test_mypy() -> None:
    if importlib.util.find_spec("mypy") is None:
        pytest.fail(f"mypy is not installed: {SETUP}")
    result = _run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, "mypy (pyproject.toml [tool.mypy]):\n" + result.stdout + result.stderr
