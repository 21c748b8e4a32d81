"""Concurrent runs never clobber each other: builds of two different variants plus two of the same
variant at once, round after round, all succeed with valid trees; a waiting build of the same variant
finds the fresh result under the lock instead of building again; `collect` of one variant during a build
of another works; a staging folder whose owner is alive is never removed, one whose owner died is
removed by the next run of any variant.

The kernel is pure Python (its variants are assembled, not compiled): what is under test is the
staging, locking and swapping, which is the same code for compiled variants."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
from pathlib import Path

import pytest

from pybuild.build import BuildOptions, build_variant
from pybuild.digest import digest_mismatches
from pybuild.manifest import load_manifest
from pybuild.metadata import read_metadata
from pybuild.variants import parse_variant_name

REPO = Path(__file__).resolve().parents[2]
ROUNDS = 20
CTX = multiprocessing.get_context("fork")


PARTS = 150  # files in the package: assembling takes long enough for the runs to overlap


@pytest.fixture
def softcap(tmp_path: Path) -> Path:
    k = tmp_path / "softcap"
    shutil.copytree(REPO / "tests" / "fixtures" / "noarch-softcap", k)
    return k


def dead_leftovers(kernel: Path, tag: int) -> None:
    """What a killed run of a third variant left: a staging folder of many files, whose owner is gone
    (no one holds its lock), for every run of the round to find and clear at once."""
    dead = kernel / "build" / f".staging.torch-xpu.999999.{tag:08x}"
    for i in range(PARTS):
        (dead / "softcap" / f"d{i % 10}").mkdir(parents=True, exist_ok=True)
        (dead / "softcap" / f"d{i % 10}" / f"part{i}.py").write_text("X = 1\n")


def _build(kernel: str, variant: str, force: bool, queue) -> None:
    try:
        r = build_variant(load_manifest(Path(kernel)), parse_variant_name(variant), BuildOptions(force=force))
        queue.put((variant, r.status, ""))
    except BaseException as e:  # noqa: BLE001 (reported to the test)
        queue.put((variant, "error", f"{type(e).__name__}: {e}"))


def run_together(jobs: list[tuple[str, str, bool]]) -> list[tuple[str, str, str]]:
    queue = CTX.Queue()
    procs = [CTX.Process(target=_build, args=(k, v, f, queue)) for k, v, f in jobs]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    return results


def assert_good_tree(variant_dir: Path) -> None:
    meta = read_metadata(variant_dir)
    assert not digest_mismatches(variant_dir, meta["digest"]["files"]), variant_dir


def staging_leftovers(kernel: Path) -> list[str]:
    """Staging folders (and swapped-out old trees) anywhere pybuild stages: .pybuild/ and build/."""
    return sorted(
        str(p)
        for d in (kernel / ".pybuild", kernel / "build")
        if d.is_dir()
        for p in d.iterdir()
        if "staging" in p.name or ".old-" in p.name
    )


def test_two_variants_plus_two_of_the_same_twenty_rounds(softcap: Path) -> None:
    """Each round starts with a dead run's staging, which all four runs try to clear at once."""
    k = str(softcap)
    for i in range(PARTS):
        (softcap / "torch-ext" / "softcap" / f"part{i}.py").write_text(f"X = {i}\n" * 100)
    failures, built_twice = [], 0
    for i in range(ROUNDS):
        (softcap / "torch-ext" / "softcap" / "__init__.py").open("a").write(f"# round {i}\n")  # a new build is due
        dead_leftovers(softcap, i)
        results = run_together(
            [(k, "torch-cpu", True), (k, "torch-cuda", False), (k, "torch-cuda", False), (k, "torch-cpu", True)]
        )
        failures += [r for r in results if r[1] == "error"]
        cuda = sorted(s for v, s, _ in results if v == "torch-cuda")
        built_twice += cuda == ["built", "built"]
        for v in ("torch-cpu", "torch-cuda"):
            assert_good_tree(softcap / "build" / v)
            assert f"# round {i}" in (softcap / "build" / v / "softcap" / "__init__.py").read_text(), [
                r for r in results if r[1] == "error"
            ]
        assert staging_leftovers(softcap) == []
    print(
        f"{ROUNDS} rounds x 4 concurrent builds, each round after a killed run: {len(failures)} failures, "
        f"{built_twice} rounds where the same variant was built twice"
    )
    assert failures == [], failures[:3]
    assert built_twice == 0  # the second waits for the lock, then finds the first's fresh result


def _collect(result: str, farm: str, queue) -> None:
    from pybuild.collect import collect

    try:
        queue.put(("collect", ",".join(c.status for c in collect(Path(result), Path(farm))), ""))
    except BaseException as e:  # noqa: BLE001
        queue.put(("collect", "error", f"{type(e).__name__}: {e}"))


def test_collect_of_one_variant_during_builds_of_another(tmp_path: Path) -> None:
    farm = tmp_path / "farm"
    (farm / "kernels").mkdir(parents=True)
    shutil.copy(REPO / "variants.json", farm / "variants.json")
    k = farm / "kernels" / "softcap"
    shutil.copytree(REPO / "tests" / "fixtures" / "noarch-softcap", k)
    for i in range(300):  # a package of many files: the copies take a while
        (k / "torch-ext" / "softcap" / f"part{i}.py").write_text(f"X = {i}\n" * 200)
    build_variant(load_manifest(k), parse_variant_name("torch-cpu"))
    result = tmp_path / "result"
    shutil.copytree(k / "build" / "torch-cpu", result / "torch-cpu")
    failures = []
    for _ in range(10):
        shutil.rmtree(k / "build" / "torch-cpu")
        queue = CTX.Queue()
        procs = [
            CTX.Process(target=_build, args=(str(k), "torch-cuda", True, queue)),
            CTX.Process(target=_collect, args=(str(result), str(farm), queue)),
            CTX.Process(target=_build, args=(str(k), "torch-cuda", True, queue)),
        ]
        for p in procs:
            p.start()
        out = [queue.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        failures += [o for o in out if o[1] == "error"]
        assert_good_tree(k / "build" / "torch-cpu")
        assert_good_tree(k / "build" / "torch-cuda")
    assert failures == []


def _hold_staging(kernel: str, variant: str, ready, release) -> None:
    """Own a staging folder of ``variant`` (as a build does) until told to stop."""
    from pybuild.staging import owned_staging, variant_lock

    with variant_lock(Path(kernel), variant), owned_staging(Path(kernel), variant) as staging:
        (staging / "half-written").write_text("x")
        ready.set()
        release.wait(60)


def test_live_staging_is_kept_and_dead_staging_is_removed_by_any_variant(softcap: Path) -> None:
    ready, release = CTX.Event(), CTX.Event()
    owner = CTX.Process(target=_hold_staging, args=(str(softcap), "torch-cuda", ready, release))
    owner.start()
    assert ready.wait(30)
    live = staging_leftovers(softcap)
    assert len(live) == 1
    build_variant(load_manifest(softcap), parse_variant_name("torch-cpu"))  # another variant's run
    assert staging_leftovers(softcap) == live  # its owner is alive: kept
    os.kill(owner.pid, signal.SIGKILL)  # the owner dies mid-way
    owner.join()
    assert staging_leftovers(softcap) == live
    r = build_variant(load_manifest(softcap), parse_variant_name("torch-cpu"))
    assert r.status == "up to date"
    assert staging_leftovers(softcap) == []  # removed by the next run of any variant, even one with nothing to do
