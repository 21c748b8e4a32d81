"""Kills at random moments (seeded) leave build/ with the old good tree or the new good tree, never a
mix; `check` agrees; the next run leaves no staging behind. A killed build takes its compiler along.
`build/` on another file system (a symlink to tmpfs) works; a read-only one is named.

The kernel is pure Python so that a build takes a fraction of a second and the kills land all over it:
the staging, locking and swapping under test are the same code for compiled variants (the compiler's
process group is tested on its own, below)."""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from pybuild.build import BuildOptions, build_variant
from pybuild.check import check_variant
from pybuild.manifest import load_manifest
from pybuild.staging import leftovers
from pybuild.variants import parse_variant_name
from tests.helpers.corpus import snapshot
from tests.helpers.fakebuild import make_kernel, make_variant, one_variant_matrix
from tests.hubfixture import DUMMY_TOKEN, HubServer, require_hub_client, use_hub_in_process

REPO = Path(__file__).resolve().parents[2]
CTX = multiprocessing.get_context("fork")
BUILD_KILLS, COLLECT_KILLS, PUBLISH_KILLS = 25, 15, 12
CPU = "torch-cpu"


def softcap_with_parts(dest: Path, parts: int = 200) -> Path:
    """The pure-Python fixture kernel with enough files that assembling it takes a while."""
    shutil.copytree(REPO / "tests" / "fixtures" / "noarch-softcap", dest)
    for i in range(parts):
        (dest / "torch-ext" / "softcap" / f"part{i}.py").write_text(f"X = {i}\n" * 100)
    return dest


def kill_at(target, args: tuple, delay: float) -> int:
    """Run ``target(*args)`` in a forked child and SIGKILL it after ``delay`` s (if still running)."""
    p = CTX.Process(target=target, args=args)
    p.start()
    p.join(delay)
    if p.is_alive():
        os.kill(p.pid, signal.SIGKILL)
    p.join()
    return p.exitcode


def timed(target, args: tuple) -> float:
    start = time.monotonic()
    assert kill_at(target, args, 120) == 0
    return time.monotonic() - start


def _build(kernel: str, variant: str) -> None:
    build_variant(load_manifest(Path(kernel)), parse_variant_name(variant), BuildOptions(force=True))


def marker(variant_dir: Path) -> str:
    return (variant_dir / "softcap" / "__init__.py").read_text().splitlines()[-1]


def good(variant_dir: Path) -> bool:
    """`check` agrees: metadata and digest pass (what can be checked without a compiler's output)."""
    rows = {r.check: r.status for r in check_variant(variant_dir, run_import=False)}
    return rows.get("metadata") == "pass" and rows.get("digest") == "pass"


@pytest.mark.slow
def test_seeded_kills_of_build_collect_and_publish_leave_old_or_new_trees(tmp_path: Path, monkeypatch) -> None:
    require_hub_client()
    farm = tmp_path / "farm"
    (farm / "kernels").mkdir(parents=True)
    shutil.copy(REPO / "variants.json", farm / "variants.json")
    k = softcap_with_parts(farm / "kernels" / "softcap")
    init = k / "torch-ext" / "softcap" / "__init__.py"
    build_variant(load_manifest(k), parse_variant_name(CPU))
    corrupt, stale, outcomes = 0, 0, {"old": 0, "new": 0}

    # build: killed anywhere between its start and a little past its usual end
    duration = timed(_build, (str(k), CPU))
    for seed in range(BUILD_KILLS):
        old = marker(k / "build" / CPU)
        with init.open("a") as f:
            f.write(f"# build {seed}\n")
        kill_at(_build, (str(k), CPU), random.Random(seed).uniform(0, duration * 1.2))
        state = marker(k / "build" / CPU) if (k / "build" / CPU).is_dir() else None
        corrupt += not good(k / "build" / CPU) or state not in (old, f"# build {seed}")
        outcomes["new" if state == f"# build {seed}" else "old"] += 1
        _build(str(k), "torch-cuda")  # the next run, of another variant, clears what the killed one left
        stale += len(leftovers(k))
        _build(str(k), CPU)

    # collect: two results, collected in turn, killed anywhere
    results = []
    for name in ("a", "b"):
        with init.open("a") as f:
            f.write(f"# result {name}\n")
        _build(str(k), CPU)
        results.append(tmp_path / f"result-{name}")
        shutil.copytree(k / "build" / CPU, results[-1] / CPU)

    def _collect(result: str) -> None:
        from pybuild.collect import collect

        collect(Path(result), farm)

    duration = timed(_collect, (str(results[0]),))
    for seed in range(COLLECT_KILLS):
        result = results[seed % 2]
        before = marker(k / "build" / CPU)
        kill_at(_collect, (str(result),), random.Random(100 + seed).uniform(0, duration * 1.2))
        state = marker(k / "build" / CPU)
        corrupt += not good(k / "build" / CPU) or state not in (before, marker(result / CPU))
        outcomes["new" if state != before else "old"] += 1
        _collect(str(result))  # the next run
        stale += len(leftovers(k))

    # publish: killed anywhere; build/ untouched, the remote unchanged, complete, or (killed between
    # the commit and the tag) the complete release on the branch, which the next run tags
    publish_states = _publish_kills(tmp_path, monkeypatch)
    print(
        f"{BUILD_KILLS + COLLECT_KILLS + PUBLISH_KILLS} seeded kills (build {BUILD_KILLS}, collect {COLLECT_KILLS}, "
        f"publish {PUBLISH_KILLS}): {corrupt} corrupt trees, {stale} stale staging after the next run; "
        f"trees after the kill: {outcomes}; remote after a killed publish: {publish_states}"
    )
    assert corrupt == 0 and stale == 0
    assert publish_states.get("corrupt", 0) == 0


def _publish_kills(tmp_path: Path, monkeypatch) -> dict[str, int]:
    from huggingface_hub import HfApi

    from pybuild.check import check_kernel
    from pybuild.publish import make_plan, publish_plan
    from pybuild.variants import load_matrix

    k = make_kernel(tmp_path / "pub")
    make_variant(k)
    (k / "tests").mkdir()
    matrix = load_matrix(one_variant_matrix(tmp_path / "pub" / "variants.json"))
    report = check_kernel(k, matrix, run_import=False)
    states: dict[str, int] = {}
    with HubServer() as hub:
        use_hub_in_process(monkeypatch, hub.endpoint, tmp_path / "hf")

        def plan(version: str):
            (k / "tests" / "test_v.py").write_text(f"VERSION = {version!r}\n")
            return make_plan(
                load_manifest(k), repo_id="org/tinyk", version=version, report=report, allow_noncompliant=False
            )

        def run(p) -> None:
            publish_plan(HfApi(endpoint=hub.endpoint, token=DUMMY_TOKEN), p, info=lambda m: None)

        def refs() -> dict:
            if ("kernel", "org/tinyk") not in hub.store.repos:
                return {}
            r = hub.store.refs("kernel", "org/tinyk")
            return {"v1": r["branches"].get("v1"), "tags": r["tags"]}

        duration = timed(run, (plan("1.0.0"),))
        for seed in range(PUBLISH_KILLS):
            version = f"1.0.{seed + 1}"
            p = plan(version)
            before, local = refs(), snapshot(k)
            kill_at(run, (p,), random.Random(200 + seed).uniform(0, duration * 1.2))
            after = refs()
            tag = after["tags"].get(f"v{version}")
            if after == before:
                state = "unchanged"
            elif tag is not None and after["v1"] == tag:
                state = "complete"
            elif tag is None and after["v1"] != before["v1"] and after["tags"] == before["tags"]:
                state = "committed, not yet tagged"
            else:
                state = "corrupt"
            states[state] = states.get(state, 0) + 1
            assert snapshot(k) == local  # publish writes nothing locally
            run(p)  # the next run completes the release
            done = refs()
            assert done["v1"] == done["tags"][f"v{version}"], (seed, state, done)
    return states


def test_a_killed_build_takes_its_compiler_along(tmp_path: Path) -> None:
    """CMake, ninja and the compilers run in a process group that dies with pybuild, even by SIGKILL."""
    from pybuild.build import _run_logged

    pid_file = tmp_path / "compiler.pid"

    def build() -> None:  # a "compiler" that would run for five minutes, started the way builds start them
        _run_logged(["sh", "-c", f"sleep 300 & echo $! > {pid_file}; wait"], tmp_path / "log", cwd=tmp_path)

    p = CTX.Process(target=build)
    p.start()
    for _ in range(200):
        if pid_file.is_file() and pid_file.read_text().strip():
            break
        time.sleep(0.05)
    compiler = int(pid_file.read_text())
    os.kill(p.pid, signal.SIGKILL)
    p.join()
    for _ in range(100):
        try:
            os.kill(compiler, 0)
        except ProcessLookupError:
            break
        try:
            with open(f"/proc/{compiler}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":  # a zombie waiting for its parent: gone
                    break
        except (FileNotFoundError, ProcessLookupError):
            break  # reaped between the two looks: gone
        time.sleep(0.05)
    else:
        os.kill(compiler, signal.SIGKILL)
        pytest.fail("the compiler kept running after its build was killed")


def test_build_dir_on_another_file_system_is_swapped_atomically(tmp_path: Path) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("needs /dev/shm on another file system than the temporary folder")
    k = softcap_with_parts(tmp_path / "softcap", parts=3)
    elsewhere = Path(__import__("tempfile").mkdtemp(dir=shm, prefix="pybuild-test-"))
    try:
        (k / "build").symlink_to(elsewhere)
        for force in (False, True):  # a new tree, then a swap over the old one
            r = build_variant(load_manifest(k), parse_variant_name(CPU), BuildOptions(force=force))
            assert r.status == "built" and good(k / "build" / CPU)
        assert leftovers(k) == [] and sorted(os.listdir(elsewhere)) == [CPU]
    finally:
        shutil.rmtree(elsewhere)


def test_a_read_only_build_dir_is_named(tmp_path: Path, capsys) -> None:
    from pybuild.__main__ import main

    k = softcap_with_parts(tmp_path / "softcap", parts=3)
    build = k / "build"
    build.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a read-only file system")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(build)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount here: {mounted.stderr.decode().strip()}")
    try:
        assert main(["build", str(k), "--variants", str(REPO / "variants.json")]) == 1  # a file-system error
        err = capsys.readouterr().err
        assert "cannot write there (" not in err or "Read-only file system" in err
        assert f"{build}: cannot write there" in err and "Invalid cross-device link" not in err, err
    finally:
        subprocess.run(["umount", str(build)], check=True)
