"""Reading the dynamic section of a built extension (RPATH/RUNPATH, NEEDED) with ``readelf``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from .errors import ToolchainError
from .safeload import shown


class NotELFError(ValueError):
    """A file named like an extension that readelf cannot read (corrupt, truncated, not ELF)."""


def dynamic_entries(so: Path) -> list[tuple[str, str]]:
    """``[(tag, value)]`` of the dynamic section, e.g. ``("RUNPATH", "/x:/y")``, ``("NEEDED", "libc.so.6")``."""
    readelf = shutil.which("readelf")
    if readelf is None:
        raise ToolchainError("`readelf` not found; install binutils (apt-get install binutils)")
    # bytes in and out: a file name (echoed in readelf's messages) need not be UTF-8
    out = subprocess.run([readelf, "-d", "-W", os.fsencode(so)], capture_output=True, text=True, check=False,
                         errors="replace")
    if out.returncode != 0:
        raise NotELFError(f"{shown(so.name)}: not a readable shared object ({out.stderr.strip() or 'readelf failed'})")
    entries = []
    for line in out.stdout.splitlines():
        m = re.match(r"\s*0x[0-9a-f]+\s+\((\w+)\)\s+.*?\[(.*)\]\s*$", line)
        if m:
            entries.append((m[1], m[2]))
    return entries


def rpaths(so: Path) -> list[str]:
    return [p for tag, v in dynamic_entries(so) if tag in ("RPATH", "RUNPATH") for p in v.split(":") if p]


def bad_rpaths(so: Path) -> list[str]:
    """RPATH/RUNPATH entries other than ``$ORIGIN``-relative ones: they point into the machine
    that built the file (its build tree or toolchain) and do not exist where the kernel is loaded."""
    return [p for p in rpaths(so) if not p.startswith("$ORIGIN")]


#: Defined only by a C++ runtime (libstdc++/libc++abi). A module that defines them carries its own
#: copy: exceptions thrown in it (a failed TORCH_CHECK) are not caught by torch's runtime and crash.
CXX_RUNTIME_SYMBOLS = ("__cxa_throw", "__cxa_begin_catch", "__gxx_personality_v0")


def embedded_cxx_runtime(so: Path) -> list[str]:
    """C++-runtime symbols ``so`` defines itself (empty when it links the shared runtime)."""
    nm = shutil.which("nm")
    if nm is None:
        raise ToolchainError("`nm` not found; install binutils (apt-get install binutils)")
    out = subprocess.run([nm, "-D", "--defined-only", os.fsencode(so)], capture_output=True, text=True, check=False,
                         errors="replace")
    defined = {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}
    return [s for s in CXX_RUNTIME_SYMBOLS if s in defined]
