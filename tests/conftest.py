"""Puts the repo on sys.path and registers the shared fixtures of ``tests/helpers/fixtures.py``."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.helpers.fixtures import (  # noqa: E402
    api,
    guide_kernel,
    hub,
    hub_in_process,
    kernel,
    repo_root,
    variants_file,
)

__all__ = ["api", "guide_kernel", "hub", "hub_in_process", "kernel", "repo_root", "variants_file"]
