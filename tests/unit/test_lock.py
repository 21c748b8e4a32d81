"""`python -m pybuild lock`: what a lock records of what decided it, and the command's behaviour.

The Nix side of the same hashes is checked in tests/integration/test_nix.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pybuild.manifest import lock
from pybuild.manifest.lock import LOCK_FILE, main, run_locks, write_lock
from pybuild.variants import load_matrix

REPO = Path(__file__).resolve().parents[2]


def copy_kernel(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("build", ".pybuild", "__pycache__"))
    return dest


def farm(root: Path, matrix: dict | None = None) -> Path:
    """A farm at ``root``: the repo's variants.json (or ``matrix``) and a copy of img2gray."""
    root.mkdir()
    text = json.dumps(matrix) if matrix else (REPO / "variants.json").read_text()
    (root / "variants.json").write_text(text)
    return copy_kernel(REPO / "kernels" / "img2gray", root / "kernels" / "img2gray")


def test_comments_and_layout_do_not_make_a_lock_stale(tmp_path: Path) -> None:
    kernel = farm(tmp_path / "f")
    matrix = tmp_path / "f" / "variants.json"
    assert main([str(kernel)]) == 0
    toml = kernel / "build.toml"
    toml.write_text("# a comment\n" + toml.read_text().replace(" = ", "   =   ") + "\n\n")
    matrix.write_text(json.dumps(json.loads(matrix.read_text()), indent=8) + "\n\n")
    assert not write_lock(kernel, load_matrix(matrix), check=True)
    toml.write_text(toml.read_text().replace('backends   =   ["cuda", "cpu"]', 'backends = ["cpu"]', 1))
    assert write_lock(kernel, load_matrix(matrix), check=True)  # what it says counts


def test_a_new_matrix_variant_makes_a_lock_stale(tmp_path: Path) -> None:
    kernel = farm(tmp_path / "f")
    matrix = tmp_path / "f" / "variants.json"
    assert main([str(kernel)]) == 0
    data = json.loads(matrix.read_text())
    data["torch"] = data["torch"][:-1]
    matrix.write_text(json.dumps(data))
    assert write_lock(kernel, load_matrix(matrix), check=True)


def test_noarch_lock_does_not_depend_on_the_matrix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As Nix reads it: a pure-Python kernel's variants are the same for any matrix."""
    kernel = copy_kernel(REPO / "tests" / "fixtures" / "noarch-softcap", tmp_path / "softcap")
    assert main(["--variants", str(REPO / "variants.json"), str(kernel)]) == 0
    assert "matrix-sha256" not in json.loads((kernel / LOCK_FILE).read_text())
    other = REPO / "nix" / "tests" / "fixtures" / "farm" / "variants.json"
    assert main(["--check", "--variants", str(other), str(kernel)]) == 0
    assert "1 lock up to date" in capsys.readouterr().out


def test_a_rules_change_makes_a_lock_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = farm(tmp_path / "f")
    assert main([str(kernel)]) == 0
    monkeypatch.setattr(lock, "RULES_VERSION", lock.RULES_VERSION + 1)
    assert write_lock(kernel, load_matrix(tmp_path / "f" / "variants.json"), check=True)


def test_each_folder_gets_its_own_nearest_matrix(tmp_path: Path) -> None:
    a = farm(tmp_path / "a")
    small = {"torch": [{"version": "2.13", "cpu": True}], "systems": ["x86_64-linux"], "cxx-abi": ["cxx11"]}
    b = farm(tmp_path / "b", small)
    assert run_locks([a, b], report=None) == 0
    names = {d: [v["name"] for v in json.loads((d / LOCK_FILE).read_text())["variants"]] for d in (a, b)}
    assert names[b] == ["torch213-cxx11-cpu-x86_64-linux"] and len(names[a]) > 1
    assert run_locks([a, b], check=True, report=None) == 0


def test_check_names_the_exact_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = copy_kernel(REPO / "kernels" / "img2gray", tmp_path / "img2gray")
    (kernel / LOCK_FILE).unlink()
    other = REPO / "nix" / "tests" / "fixtures" / "farm" / "variants.json"
    assert main(["--check", "--variants", str(other), str(kernel)]) == 1
    out = capsys.readouterr().out
    assert f"stale; run `python -m pybuild lock {kernel} --variants {other}`" in out
    kernel2 = farm(tmp_path / "f")
    (kernel2 / LOCK_FILE).unlink()
    assert main(["--check", str(kernel2)]) == 1
    assert f"stale; run `python -m pybuild lock {kernel2}`\n" in capsys.readouterr().out


def test_quiet_prints_nothing_but_a_stale_lock(tmp_path: Path) -> None:
    kernel = farm(tmp_path / "f")
    (kernel / LOCK_FILE).unlink()
    cmd = [sys.executable, "-m", "pybuild", "lock", "-q", str(kernel)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert (kernel / LOCK_FILE).is_file()
    loud = subprocess.run(cmd[:-2] + [str(kernel)], capture_output=True, text=True, cwd=REPO)
    assert loud.stdout == "1 lock up to date\n"
