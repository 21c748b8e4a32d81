"""Shared fixtures: paths into the repo and a throwaway kernel folder to break in many ways."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def guide_kernel(tmp_path: Path) -> Path:
    """A copy of the guide's img2gray kernel folder (its build.toml unmodified)."""
    dest = tmp_path / "img2gray"
    shutil.copytree(FIXTURES / "guide-img2gray", dest)
    return dest
