"""Moved to :mod:`pybuild.manifest.editions`; this name stays for existing imports."""

from .manifest.editions import *  # noqa: F403
from .manifest.editions import __all__ as __all__
