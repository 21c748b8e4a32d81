"""The paper cuts of an untrusted kernel folder: `migrate` keeps a file's permissions, line ends and
kind and is all or nothing; a byte-order mark is named; a full disk is not a compile error;
`clean --build` and `generate` stay inside the kernel folder and out of a running build's way."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from pybuild.__main__ import main
from pybuild.errors import PybuildError
from pybuild.fsutil import locked
from pybuild.logged_run import run_logged
from tests.helpers.fakebuild import BUILD_TOML, make_kernel

FARM_TOML = BUILD_TOML.replace("version = 1\n", 'version = 1\nlicense = "MIT"\n')  # the farm's format


@pytest.fixture
def tinyk(tmp_path: Path) -> Path:
    k = make_kernel(tmp_path / "kernels")
    (k / "build.toml").write_text(FARM_TOML)
    return k


def one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("mode", [0o600, 0o444, 0o640])
def test_migrate_keeps_the_files_permissions(tinyk: Path, mode: int) -> None:
    toml = tinyk / "build.toml"
    os.chmod(toml, mode)
    assert main(["migrate", str(tinyk), "-q"]) == 0
    assert "edition = 5" in toml.read_text() and stat.S_IMODE(toml.stat().st_mode) == mode


def test_migrate_refuses_a_symlinked_build_toml_and_leaves_the_link(
    tinyk: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text(FARM_TOML)
    (tinyk / "build.toml").unlink()
    (tinyk / "build.toml").symlink_to(elsewhere)
    assert main(["migrate", str(tinyk), "-q"]) == 3
    assert "build.toml: is a symlink; migrate rewrites a kernel's own build.toml" in one_error(capsys)
    assert (tinyk / "build.toml").is_symlink() and elsewhere.read_text() == FARM_TOML


def test_migrate_keeps_crlf_line_ends(tinyk: Path) -> None:
    toml = tinyk / "build.toml"
    toml.write_bytes(FARM_TOML.replace("\n", "\r\n").encode())
    assert main(["migrate", str(tinyk), "-q"]) == 0
    data = toml.read_bytes()
    assert b"edition = 5\r\n" in data and data.count(b"\n") == data.count(b"\r\n")


@pytest.mark.parametrize("argv", [["migrate"], ["check-config"]])
def test_a_byte_order_mark_is_named(tinyk: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    (tinyk / "build.toml").write_bytes(b"\xef\xbb\xbf" + FARM_TOML.encode())
    assert main([*argv, str(tinyk)]) == 3
    assert "starts with a UTF-8 byte-order mark, which TOML does not allow; save it without one" in one_error(capsys)


def test_migrating_several_kernels_is_all_or_nothing(tinyk: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The second kernel cannot be written (its .pybuild is a file): the first stays as it was, and the
    error names the second's build.toml, not a temporary file."""
    second = make_kernel(tinyk.parent, "tinyk2")
    (second / "build.toml").write_text(FARM_TOML)
    os.rename(second / ".pybuild", second / "old-pybuild")
    (second / ".pybuild").write_text("not a folder")
    assert main(["migrate", str(tinyk), str(second), "-q"]) == 3
    line = one_error(capsys)
    assert f"{second / 'build.toml'}: cannot be rewritten" in line and "nothing was migrated" in line, line
    assert (tinyk / "build.toml").read_text() == FARM_TOML == (second / "build.toml").read_text()
    assert sorted(p.name for p in tinyk.iterdir() if p.name.startswith((".build", "build.toml."))) == []
    assert list((tinyk / ".pybuild").glob("migrate.*")) == []


def test_a_dotted_general_names_the_file(tinyk: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = FARM_TOML.replace('[general]\nname = "tinyk"\nversion = 1\nlicense = "MIT"\n', "")
    text = 'general.name = "tinyk"\ngeneral.version = 1\ngeneral.license = "MIT"\n' + text
    (tinyk / "build.toml").write_text(text)
    assert main(["migrate", str(tinyk)]) == 3
    assert f"{tinyk / 'build.toml'}: `general` is written in a form migrate cannot rewrite" in one_error(capsys)


def test_a_full_disk_is_not_a_compile_error(tmp_path: Path) -> None:
    script = "import sys; print('x.o: No space left on device', file=sys.stderr); sys.exit(1)"
    with pytest.raises(PybuildError) as err:
        run_logged([sys.executable, "-c", script], tmp_path / "build.log", cwd=tmp_path)
    assert type(err.value) is PybuildError and err.value.exit_code == 1  # not BuildError (exit 6)
    assert "no space left on device" in str(err.value) and str(tmp_path) in str(err.value)


def test_clean_build_empties_a_symlinked_build_folder_and_keeps_the_link(tinyk: Path, tmp_path: Path) -> None:
    target = tmp_path / "fast-disk"
    (target / "torch213-cxx11-cpu-x86_64-linux").mkdir(parents=True)
    (tinyk / "build").symlink_to(target)
    assert main(["clean", "--build", str(tinyk), "-q"]) == 0
    assert (tinyk / "build").is_symlink() and list(target.iterdir()) == []
    assert not (tinyk / ".pybuild").exists()


def test_clean_build_waits_for_no_one_and_removes_nothing_while_a_build_runs(
    tinyk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tinyk / "build" / "torch213-cxx11-cpu-x86_64-linux").mkdir(parents=True)
    with locked(tinyk / ".pybuild" / "torch213-cxx11-cpu-x86_64-linux.lock"):  # a running build holds it
        assert main(["clean", "--build", str(tinyk), "-q"]) == 1
    assert "a build of torch213-cxx11-cpu-x86_64-linux is running" in one_error(capsys)
    assert (tinyk / "build" / "torch213-cxx11-cpu-x86_64-linux").is_dir()


@pytest.mark.parametrize("command", ["generate", "clean"])
def test_generate_and_clean_never_go_through_a_symlinked_cmake_folder(
    tinyk: Path, tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "pybuild.cmake").write_text("# Generated by pybuild: someone else's file\n")
    (tinyk / "cmake").symlink_to(outside)
    argv = ["generate", str(tinyk), "--backend", "cpu"] if command == "generate" else ["clean", str(tinyk)]
    assert main([*argv, "-q"]) == 1
    assert f"{tinyk / 'cmake'}: is a symlink" in one_error(capsys)
    assert sorted(p.name for p in outside.iterdir()) == ["pybuild.cmake"]
    assert (outside / "pybuild.cmake").read_text() == "# Generated by pybuild: someone else's file\n"


# --- environments ---------------------------------------------------------------------------------------


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PYBUILD_CACHE_DIR", str(tmp_path / "cache"))
    envs = tmp_path / "cache" / "envs"
    envs.mkdir(parents=True)
    return envs


def env_folder(envs: Path, name: str, marker: object | None) -> Path:
    d = envs / name
    (d / "bin").mkdir(parents=True)
    (d / "bin" / "python").write_text("")
    if marker is not None:
        (d / "pybuild-env.json").write_text(json.dumps(marker))
    return d


GOOD = {"key": "k", "plan": {"variant": "torch213-cxx11-cpu-x86_64-linux", "source": "index"}, "extra": []}


@pytest.mark.parametrize(
    "marker",
    [[1, 2], {"key": "k"}, {"key": "k", "plan": "x"}, {"key": "k", "plan": {"variant": 1}}, {"key": 3, "plan": {}}],
    ids=["a-list", "no-plan", "plan-a-string", "variant-a-number", "key-a-number"],
)
def test_envs_lists_a_marker_of_the_wrong_shape_as_incomplete(
    cache: Path, marker: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from pybuild.envs import MARKER

    assert MARKER == "pybuild-env.json"
    env_folder(cache, "bad", marker)
    env_folder(cache, "good", GOOD)
    assert main(["envs", "--json"]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    assert [row["variant"] for row in json.loads(out.out)] == [GOOD["plan"]["variant"]]  # "good" only


def test_envs_clear_removes_incomplete_ones_and_keeps_one_being_made(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env_folder(cache, "complete", GOOD)
    env_folder(cache, "incomplete", None)  # an interrupted run's
    busy = env_folder(cache, "busy", None)
    with locked(cache / "busy.lock"):  # a run is making it
        assert main(["envs", "--clear"]) == 0
    assert sorted(p.name for p in cache.iterdir() if p.is_dir()) == ["busy"] and busy.is_dir()
    assert f"{busy}: kept, a run is making or using it now" in capsys.readouterr().err


def test_envs_clear_keeps_one_a_test_run_uses(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`pybuild test` holds its environment in use while the tests run; `envs --clear` keeps it then,
    and removes it once the run is over."""
    from pybuild.envs import env_in_use

    used = env_folder(cache, "used", GOOD)
    with env_in_use(used):
        assert main(["envs", "--clear"]) == 0
        assert used.is_dir() and (used / "pybuild-env.json").is_file()
    assert f"{used}: kept" in capsys.readouterr().err
    assert main(["envs", "--clear"]) == 0
    assert not used.exists()


def test_a_half_removed_environment_is_made_again_not_trusted(cache: Path) -> None:
    from pybuild.envs import _read_marker

    class Plan:  # a CPU environment's plan: no CUDA runtime to link
        key = "k"
        torch_cuda = None
        nvcc = None

    d = env_folder(cache, "half", GOOD)
    assert _read_marker(d, Plan()) == GOOD  # type: ignore[arg-type]
    (d / "bin" / "python").unlink()  # a removal cut short
    assert _read_marker(d, Plan()) is None  # type: ignore[arg-type]
