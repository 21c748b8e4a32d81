"""Puts the repo on sys.path and registers the shared fixtures of ``tests/helpers/fixtures.py``."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.helpers.fixtures import api, guide_kernel, hub, kernel, repo_root  # noqa: E402

__all__ = ["guide_kernel", "hub", "api", "kernel", "repo_root"]
