"""A variant's environment is reached through one link name, so device units compile identically."""

from __future__ import annotations

from pathlib import Path

from pybuild.build import TOOLCHAIN_ALIAS, stable_python


def _venv(path: Path) -> Path:
    (path / "bin").mkdir(parents=True)
    (path / "pyvenv.cfg").write_text("home = /usr/bin\n")
    python = path / "bin" / "python"
    python.write_text("")
    return python


def test_an_environment_is_reached_through_the_work_folders_link(tmp_path: Path) -> None:
    work_a, work_b = tmp_path / "a", tmp_path / "b"
    work_a.mkdir()
    work_b.mkdir()
    env_a, env_b = _venv(tmp_path / "envs" / "torch213-x"), _venv(tmp_path / "envs" / "torch214-y")
    seen_a, seen_b = stable_python(work_a, str(env_a)), stable_python(work_b, str(env_b))
    assert (
        Path(seen_a).relative_to(work_a) == Path(seen_b).relative_to(work_b) == Path(TOOLCHAIN_ALIAS, "bin", "python")
    )
    assert (work_a / TOOLCHAIN_ALIAS).resolve() == env_a.parent.parent.resolve()


def test_a_new_environment_moves_the_link(tmp_path: Path) -> None:
    old, new = _venv(tmp_path / "old"), _venv(tmp_path / "new")
    stable_python(tmp_path, str(old))
    stable_python(tmp_path, str(new))
    assert (tmp_path / TOOLCHAIN_ALIAS).resolve() == (tmp_path / "new").resolve()


def test_a_python_outside_a_venv_is_used_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "usr" / "bin").mkdir(parents=True)
    python = tmp_path / "usr" / "bin" / "python3"
    python.write_text("")
    assert stable_python(tmp_path, str(python)) == str(python)
    assert not (tmp_path / TOOLCHAIN_ALIAS).exists()
