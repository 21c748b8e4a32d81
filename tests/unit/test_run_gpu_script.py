"""benchmarks/run_gpu.sh (the GPU run): its arguments are checked before any work, here on the CPU."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "run_gpu.sh"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OUT": str(cwd / "out")}  # where results and the log would go
    return subprocess.run(
        ["bash", str(SCRIPT), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_the_script_parses() -> None:
    assert subprocess.run(["bash", "-n", str(SCRIPT)], check=False).returncode == 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["--explore"], "usage: "),  # the research runs are not part of the GPU run
        (["--no-bench", "--quick"], "--quick trims the bench, which --no-bench leaves out; drop --quick"),
        (["--no-tests", "--no-bench"], "--no-tests --no-bench leaves nothing to run; add --sweep N"),
        (["--sweep", "0"], "--sweep takes a positive number of shapes per op"),
        (["--sweep", "5", "--seed", "-1"], "--seed a number >= 0"),
        (["--sweep", "5", "--seed", "1,,2"], "--seed a number >= 0 (or several: 1,2,3)"),
        (["--sweep"], "--sweep needs a value"),
        (["--wheels", "empty"], "--wheels empty: no .whl files there"),
        (["--variant", "../x"], "--variant takes a variant name such as torch215-cxx11-cu132-x86_64-linux"),
        (["--variant", "torch299-cxx11-cu999-x86_64-linux"], "torch299-cxx11-cu999-x86_64-linux is not built;"),
    ],
)
def test_bad_arguments_exit_2_with_one_line_before_any_work(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "empty").mkdir()
    proc = run(*args, cwd=tmp_path)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert proc.stdout == "" and not (tmp_path / "out").exists()  # nothing run, nothing written


def test_a_variant_of_another_torch_than_the_one_that_imports_stops_the_run(tmp_path: Path) -> None:
    """--variant NAME loads a variant built elsewhere: the torch that imports must be one it loads under."""
    farm = tmp_path / "farm"
    (farm / "benchmarks").mkdir(parents=True)
    (farm / "benchmarks" / "run_gpu.sh").write_bytes(SCRIPT.read_bytes())
    (farm / "pybuild").symlink_to(SCRIPT.parents[1] / "pybuild")  # the check is pybuild's
    (farm / "kernels" / "k").mkdir(parents=True)
    (farm / "kernels" / "k" / "build.toml").write_text("")
    here = torch_version()

    def run_variant(variant: str) -> subprocess.CompletedProcess[str]:
        (farm / "kernels" / "k" / "build" / variant).mkdir(parents=True)
        (farm / "kernels" / "k" / "build" / variant / "metadata.json").write_text("{}")
        return subprocess.run(
            ["bash", str(farm / "benchmarks" / "run_gpu.sh"), "--variant", variant, "--no-bench"],
            cwd=tmp_path,
            env={**os.environ, "OUT": str(tmp_path / "out")},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    proc = run_variant("torch299-cxx11-cu129-x86_64-linux")
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    refusal = f"--variant torch299-cxx11-cu129-x86_64-linux needs torch 2.99, and torch {here} imports here; carry"
    assert refusal in proc.stdout + proc.stderr
    assert "== " in proc.stdout and "tests (pytest" not in proc.stdout  # stopped before the tests
    # A variant of the torch that imports here: the run goes on to the tests (none in this farm).
    major, minor = here.split(".")[:2]
    proc = run_variant(f"torch{major}{minor}-cxx11-cpu-x86_64-linux")
    assert "tests (pytest, one process per kernel)" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]


def torch_version() -> str:
    done = subprocess.run(
        ["python3", "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()
