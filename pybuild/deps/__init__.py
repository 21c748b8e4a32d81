"""The C++ dependencies a kernel section names in `depends` beyond torch (upstream's pinned CUTLASS
versions, SYCL-TLA, metal-cpp): their pins (:mod:`.pins`, one JSON table that Nix reads too) and
where a build finds each header tree (:mod:`.resolve`)."""

from __future__ import annotations

from .pins import IndexWheel, Pin, pin_for, pins
from .resolve import MIRROR_VAR, Resolved, deps_dir, resolve, tree_digest

__all__ = ["MIRROR_VAR", "IndexWheel", "Pin", "Resolved", "deps_dir", "pin_for", "pins", "resolve", "tree_digest"]
