"""The documented commands run as written: every command of README.md and docs/ that
tests/helpers/doc_commands.py lists in RUN, in page order, on a scratch copy of the farm, inside a
virtual environment of its own (so `pip install` and `python` are the reader's, not this interpreter's).
tests/unit/test_docs.py checks that every documented command is either here or listed with a reason."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.doc_commands import FARM, OUTSIDE, RUN, documented_commands
from tests.helpers.venvs import nested_venv

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow
torch = pytest.importorskip("torch")
if not torch.__version__.startswith("2.13") or os.uname().machine != "x86_64":
    pytest.skip(
        f"the documented commands name torch 2.13 on x86_64 (have {torch.__version__})", allow_module_level=True
    )


def scratch_farm(dest: Path) -> Path:
    """The farm's files as git sees them (tracked, and new ones it does not ignore), without builds."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def test_documented_commands_run_as_written(tmp_path: Path) -> None:
    farm = scratch_farm(tmp_path / "farm")
    outside = tmp_path / "outside" / "img2gray"
    shutil.copytree(REPO / "tests" / "fixtures" / "guide-img2gray", outside)
    venv_bin = nested_venv(tmp_path / "venv").parent
    env = {**os.environ, "PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(venv_bin.parent)}
    env.pop("PYTHONPATH", None)
    failed = []
    done = set()
    for command in documented_commands():
        if command.text not in RUN or command.text in done:
            continue
        done.add(command.text)
        how = RUN[command.text]
        text = command.text
        for placeholder, value in how.placeholders.items():
            text = text.replace(placeholder, str(farm) if value == FARM else value)
        cwd = outside if how.cwd == OUTSIDE else farm / how.cwd
        proc = subprocess.run(
            ["bash", "-c", text], cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False
        )
        if proc.returncode != 0:
            tail = (proc.stdout[-1500:] + proc.stderr[-1500:]).strip()
            report = f"{command.page}: `{command.text}` exited {proc.returncode}:\n{tail}"
            failed.append(report)
    assert done == set(RUN), f"listed in RUN, shown on no page: {sorted(set(RUN) - done)}"
    assert failed == [], "\n\n".join(failed)
