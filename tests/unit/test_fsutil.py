"""All-or-nothing file-system steps."""

from __future__ import annotations

from pathlib import Path

from pybuild.fsutil import new_staging_dir, remove_stale_staging, replace_dir


def test_replace_dir_swaps_complete_trees(tmp_path: Path) -> None:
    final = tmp_path / "build" / "v"
    first = new_staging_dir(tmp_path / "work", "v")
    (first / "a.txt").write_text("one")
    replace_dir(first, final)
    assert (final / "a.txt").read_text() == "one" and not first.exists()

    second = new_staging_dir(tmp_path / "work", "v")
    (second / "b.txt").write_text("two")
    replace_dir(second, final)
    assert sorted(p.name for p in final.iterdir()) == ["b.txt"]
    assert not second.exists()
    assert sorted(p.name for p in (tmp_path / "build").iterdir()) == ["v"]  # no leftovers beside it


def test_stale_staging_is_removed(tmp_path: Path) -> None:
    stale = new_staging_dir(tmp_path, "v")
    (stale / "half-written.so").write_bytes(b"\0")
    keep = tmp_path / "stamp.json"
    keep.write_text("{}")
    remove_stale_staging(tmp_path)
    assert not stale.exists() and keep.exists()


def test_a_stale_staging_file_is_removed_too(tmp_path: Path) -> None:
    (tmp_path / "staging-v-1234").write_text("a file replace_dir swapped out of build/")
    remove_stale_staging(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_failed_configure_names_its_cause_and_a_missing_compiler_is_the_toolchain(tmp_path: Path) -> None:
    import pytest

    from pybuild.build import _run_logged
    from pybuild.errors import BuildError, ToolchainError

    fake = tmp_path / "cmake"
    fake.write_text("#!/bin/sh\necho '-- Configuring'\necho 'CMake Error at CMakeLists.txt:46 (message):'\n"
                    "echo ''\necho \"  $CAUSE\"\nexit 1\n")
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
