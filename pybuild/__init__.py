"""pybuild: the kernel build farm's Python glue.

Reads a kernel's ``build.toml`` and the farm's ``variants.json``, generates the kernel's CMake
project, builds the host variant, and lays the result out the way the ``kernels`` loader expects.
Run it as ``python -m pybuild <command>``.
"""

from __future__ import annotations

__version__ = "0.1.0"
