"""Interpreters the tests hand on (to Nix, to nested virtual environments) that see what this one sees,
also when this interpreter is itself a virtual environment's."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path


def this_python() -> str:
    """This interpreter as invoked, absolute. A venv's ``bin/python`` is a link to the base interpreter:
    its real path would run with the base interpreter's site-packages, not the venv's."""
    return os.path.abspath(sys.executable)


def nested_venv(dest: Path) -> Path:
    """A new virtual environment at ``dest`` whose interpreter also sees this interpreter's
    site-packages, after its own; its python. ``--system-site-packages`` would give the base
    interpreter's instead, which lack torch, setuptools and wheel where this interpreter is a venv's."""
    subprocess.run([this_python(), "-m", "venv", str(dest)], check=True, capture_output=True, timeout=300)
    py = dest / "bin" / "python"
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    ours = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    (Path(site) / "_outer_site_packages.pth").write_text("\n".join(ours) + "\n")
    return py
