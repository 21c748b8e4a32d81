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
