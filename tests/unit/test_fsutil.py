"""All-or-nothing file-system steps."""

from __future__ import annotations

import os
from pathlib import Path

from pybuild.fsutil import remove_tree, replace_dir
from pybuild.staging import leftovers, owned_staging, remove_dead_leftovers, variant_lock
from tests.helpers.corpus import deep_tree


def test_replace_dir_swaps_complete_trees(tmp_path: Path) -> None:
    final = tmp_path / "build" / "v"
    with variant_lock(tmp_path, "v"), owned_staging(tmp_path, "v") as first:
        (first / "a.txt").write_text("one")
        replace_dir(first, final)
    assert (final / "a.txt").read_text() == "one" and not first.exists()

    with variant_lock(tmp_path, "v"), owned_staging(tmp_path, "v") as second:
        (second / "b.txt").write_text("two")
        replace_dir(second, final)
    assert sorted(p.name for p in final.iterdir()) == ["b.txt"]
    assert not second.exists()
    assert sorted(p.name for p in (tmp_path / "build").iterdir()) == ["v"]  # no leftovers beside it


def test_staging_lives_beside_its_destination_and_names_its_owner(tmp_path: Path) -> None:
    with variant_lock(tmp_path, "v"), owned_staging(tmp_path, "v") as staging:
        assert staging.parent == tmp_path / "build" and f".{os.getpid()}." in staging.name
        assert os.stat(staging).st_dev == os.stat(tmp_path / "build").st_dev


def test_dead_leftovers_are_removed_live_ones_kept(tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    dead = tmp_path / "build" / ".staging.v.999999.abcd1234"
    (dead / "pkg").mkdir(parents=True)
    (dead / "pkg" / "half-written.so").write_bytes(b"\0")
    old_tree = tmp_path / "build" / ".v.old-1234abcd"
    old_tree.mkdir()
    legacy = tmp_path / ".pybuild" / "staging-collect-v-0123abcd"
    legacy.mkdir(parents=True)
    (tmp_path / ".pybuild" / "staging-w-12345678").write_text("a file swapped out of build/ by an older pybuild")
    keep = tmp_path / ".pybuild" / "v" / "stamp.json"
    keep.parent.mkdir()
    keep.write_text("{}")
    assert len(leftovers(tmp_path)) == 4
    removed = remove_dead_leftovers(tmp_path, held="other")
    assert len(removed) == 4 and {dead, old_tree, legacy} <= set(removed)
    assert leftovers(tmp_path) == [] and keep.exists()


def test_remove_tree_handles_any_depth_and_never_follows_links(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    deep_tree(tmp_path / "t", 3000)
    (tmp_path / "t" / "link").symlink_to(outside)
    remove_tree(tmp_path / "t")
    assert not (tmp_path / "t").exists() and (outside / "keep").exists()
    remove_tree(tmp_path / "missing")  # fine


def test_a_failed_configure_names_its_cause_and_a_missing_compiler_is_the_toolchain(tmp_path: Path) -> None:
    import pytest

    from pybuild.build import _run_logged
    from pybuild.errors import BuildError, ToolchainError

    fake = tmp_path / "cmake"
    fake.write_text(
        "#!/bin/sh\necho '-- Configuring'\necho 'CMake Error at CMakeLists.txt:46 (message):'\n"
        "echo ''\necho \"  $CAUSE\"\nexit 1\n"
    )
    fake.chmod(0o755)
    log = tmp_path / "build.log"
    env = {"PATH": "/usr/bin:/bin", "CAUSE": "Torch not found: pass -DTorch_DIR"}
    with pytest.raises(BuildError) as info:
        _run_logged([str(fake), "-S", "src"], log, cwd=tmp_path, env=env)
    assert not isinstance(info.value, ToolchainError)
    assert "CMake Error at CMakeLists.txt:46 (message): Torch not found: pass -DTorch_DIR" in str(info.value)
    env["CAUSE"] = "The CMAKE_CXX_COMPILER: /nonexistent/g++ is not a full path to an existing compiler tool."
    with pytest.raises(ToolchainError, match=r"/nonexistent/g\+\+ is not a full path.*check the CXX compiler \(\$CXX"):
        _run_logged([str(fake), "-S", "src"], log, cwd=tmp_path, env=env)


def test_two_runs_clearing_the_same_dead_staging_never_fail(tmp_path: Path) -> None:
    """Runs of two other variants start together and both find one dead run's staging: one removes it,
    the other finds it gone or being removed; neither fails."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    for round_ in range(10):
        dead = tmp_path / "build" / f".staging.x.999999.{round_:08x}"
        for i in range(30):
            deep_tree(dead / f"p{i}", 20)
        errors = ctx.Queue()

        def clear(variant: str, errors=errors) -> None:  # this round's queue, bound now
            try:
                with variant_lock(tmp_path, variant):
                    pass
            except BaseException as e:  # noqa: BLE001 (reported to the test)
                errors.put(f"{type(e).__name__}: {e}")

        procs = [ctx.Process(target=clear, args=(v,)) for v in ("a", "b", "c")]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=60)
        failed = [] if errors.empty() else [errors.get(timeout=1)]
        assert not failed, f"round {round_}: {failed}"
        assert all(p.exitcode == 0 for p in procs) and not dead.exists()


def test_a_failing_caller_takes_the_compilers_along(tmp_path: Path) -> None:
    """An exception (or Ctrl-C) while pybuild reads a build's output kills the build's whole process
    group at once, not only when pybuild exits."""
    import time

    import pytest

    from pybuild.build import _run_logged

    pids: list[int] = []

    def on_line(line: str) -> None:
        pids.append(int(line))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run_logged(["sh", "-c", "sleep 60 & echo $!; wait"], tmp_path / "log", None, on_line)

    def alive(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    deadline = time.monotonic() + 10
    while alive(pids[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pids[0]), "the compiler outlived the exception"


def test_a_tree_swapped_out_by_a_killed_fallback_swap_is_put_back(tmp_path: Path) -> None:
    """Without RENAME_EXCHANGE, replace_dir renames build/<v> aside then the new tree in: a kill between
    the two leaves only build/.<v>.old-*, the sole copy of the variant, which the next run restores."""
    for held in ("v", "other"):
        old = tmp_path / "build" / ".v.old-1234abcd"
        old.mkdir(parents=True)
        (old / "metadata.json").write_text("{}")
        with variant_lock(tmp_path, held):
            pass
        assert (tmp_path / "build" / "v" / "metadata.json").exists() and not old.exists(), held
        old.mkdir()  # beside a build/v: a leftover to delete
        with variant_lock(tmp_path, held):
            pass
        assert not old.exists() and (tmp_path / "build" / "v" / "metadata.json").exists()
        remove_tree(tmp_path / "build" / "v")


def test_a_run_that_must_wait_for_the_lock_says_so(tmp_path: Path) -> None:
    import threading

    said: list[str] = []
    with variant_lock(tmp_path, "v", lambda: said.append("waiting")):
        pass
    assert said == []  # free: no message
    with variant_lock(tmp_path, "v"):

        def second_run() -> None:
            with variant_lock(tmp_path, "v", lambda: said.append("waiting")):
                pass

        t = threading.Thread(target=second_run)
        t.start()
        t.join(0.5)
    t.join(5)
    assert said == ["waiting"]
