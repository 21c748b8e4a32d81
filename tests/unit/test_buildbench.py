"""bench-build's pure parts: which source the edit leg touches, how the legs are tabled."""

from __future__ import annotations

from pathlib import Path

import pytest

from pybuild.buildbench import EDIT_LINE, Leg, Plan, copy_kernel, edit_one_source, goals, legs_table
from pybuild.manifest import load_manifest
from pybuild.variants import load_matrix, parse_variant_name

REPO = Path(__file__).resolve().parents[2]
CPU = parse_variant_name("torch213-cxx11-cpu-x86_64-linux")
CUDA = parse_variant_name("torch213-cxx11-cu130-x86_64-linux")


@pytest.mark.parametrize(
    ("variants", "edited"),
    [([CPU, CUDA], "csrc/img2gray.cu"), ([CPU], "csrc/img2gray_cpu.cpp"), ([CUDA], "csrc/img2gray.cu")],
)
def test_the_edit_touches_a_source_the_timed_variants_compile(tmp_path: Path, variants: list, edited: str) -> None:
    manifest = load_manifest(REPO / "kernels" / "img2gray")
    copy = copy_kernel(manifest, tmp_path / "img2gray")
    assert not (copy / "build").exists() and not (copy / ".pybuild").exists()
    plan = Plan(manifest, load_matrix(REPO / "variants.json"), variants, variants[-1])
    path, before = edit_one_source(plan, copy)
    assert path == copy / edited
    assert path.read_text() == before + EDIT_LINE.format(n=1)
    assert (manifest.root / edited).read_text() == before  # the kernel itself is untouched


def test_each_leg_is_one_row_with_its_ratio_and_ccache_counters() -> None:
    legs = [
        Leg("cold-variant", 40.0, 1.0, 1, 1, {"cache_miss": 4}),
        Leg("second-machine", 6.0, 0.15, 4, 4, {"direct_cache_hit": 12, "remote_storage_hit": 12}, "note"),
        Leg("second-machine", 0.0, None, 0, 4, {}, "skipped: no shared cache given"),
    ]
    assert legs_table(legs) == [
        ("cold-variant", "40.0 s", "1.00x", "1/1", "0+0", "0", "4", ""),
        ("second-machine", "6.0 s", "0.15x", "4/4", "12+0", "12", "0", "note"),
        ("second-machine", "0.0 s", "-", "0/4", "0+0", "0", "0", "skipped: no shared cache given"),
    ]


def test_goals_compare_the_legs_as_the_farm_states_them() -> None:
    legs = [
        Leg("cold-variant", 100.0, 1.0, 1, 1, {}),
        Leg("cold-matrix", 140.0, 1.4, 4, 4, {}),
        Leg("no-op", 1.4, 0.014, 0, 4, {}),
        Leg("edit", 90.0, 0.9, 4, 4, {"cache_miss": 5}),
        Leg("second-machine", 35.0, 0.35, 4, 4, {}),
    ]
    assert goals(legs) == {
        "cold-matrix/cold-variant": {"value": 1.4, "goal": 1.5, "met": True},
        "second-machine/cold-matrix": {"value": 0.25, "goal": 0.2, "met": False},
        "no-op-seconds": {"value": 1.4, "goal": 1.0, "met": False},
        "edit-compiles": {"value": 5, "variants": 4},
    }
    skipped = [*legs[:4], Leg("second-machine", 0.0, None, 0, 4, {}, "skipped")]
    assert goals(skipped)["second-machine/cold-matrix"] == {"value": None, "goal": 0.2, "met": None}


def test_the_machine_counts_the_cores_this_process_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run pinned with taskset (or a container's cpuset) records the cores it had, not the machine's."""
    import os

    from pybuild import buildbench, jobs

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {2, 5}, raising=False)
    monkeypatch.delenv("MAX_JOBS", raising=False)
    assert buildbench.machine()["cores"] == 2
    assert jobs.compile_jobs(mem_gib=64.0) == 2  # and a pinned build starts no more compile jobs than that
    monkeypatch.delattr(os, "sched_getaffinity")
    assert jobs.usable_cores() == os.cpu_count()
