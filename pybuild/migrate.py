"""Moved to :mod:`pybuild.manifest.migrate`; this name stays for existing imports."""

from .manifest.migrate import Migration as Migration
from .manifest.migrate import migrate_text as migrate_text
