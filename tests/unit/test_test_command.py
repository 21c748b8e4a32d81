"""`pybuild test` and `pybuild shell` against a hand-made build of a tiny kernel (no compile): the
environment kernel-builder's test shell gives a kernel's own tests, a relative kernel path, and a
kernel with nothing to test or nothing built, which never passes silently."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pybuild.__main__ import main
from pybuild.manifest import load_manifest
from pybuild.pytest_plugin import BuiltFirst
from pybuild.testshell import local_kernel_ids, suite_environ
from pybuild.variants import parse_variant_name
from tests.helpers.fakebuild import host_cpu_variant, make_kernel

# A suite written for kernel-builder's test shell: `import tinyk`, a helper of the tests package
# imported from the kernel's root (`from tests.utils import ...`), get_kernel by repo id, kernels_ci.
SUITE = """\
import os

import pytest

import tinyk
from tests.utils import ONE


@pytest.mark.kernels_ci
def test_imports_the_build_not_the_source_folder():
    assert "/build/" in tinyk.__file__, tinyk.__file__
    assert tinyk.add_one(ONE) == 2


@pytest.mark.kernels_ci
def test_local_kernels_names_the_repo_ids_of_this_kernel():
    entries = dict(e.split("=", 1) for e in os.environ["LOCAL_KERNELS"].split(":"))
    assert set(entries) == {"kernels-community/tinyk"}  # not "other-org/relu"
    assert entries["kernels-community/tinyk"].endswith(os.environ["PYBUILD_TEST_VARIANT"])


def test_not_marked_for_ci_and_failing():
    assert os.environ.get("RUN_UNMARKED") != "fail", "an unmarked test ran"


KERNELS = ["kernels-community/tinyk", "other-org/relu"]  # get_kernel("kernels-community/tinyk")
"""


@pytest.fixture
def tinyk(kernel: Path) -> Path:
    """The tiny kernel, built (by hand), with a suite in tests/ (a package, as community kernels have
    it) and a source folder `tinyk/` at its root that would shadow the build."""
    (kernel / "tests").mkdir()
    (kernel / "tests" / "__init__.py").write_text("")
    (kernel / "tests" / "test_tinyk.py").write_text(SUITE)
    (kernel / "tests" / "utils.py").write_text("ONE = 1\n")
    (kernel / "tinyk").mkdir()
    (kernel / "tinyk" / "__init__.py").write_text("raise ImportError('the source folder, not the build')\n")
    return kernel


def run_test(kernel: Path | str, variants_file: Path, *extra: str) -> int:
    return main(["test", str(kernel), "--variant", host_cpu_variant(), "--variants", str(variants_file), *extra])


def test_the_suite_runs_against_the_build_with_this_python(
    tinyk: Path, variants_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_test(tinyk, variants_file, "--no-build", "--", "-W", "error::pytest.PytestUnknownMarkWarning") == 0
    err = capsys.readouterr().err
    assert "this Python's torch" in err and "is the variant's; using it" in err and "no environment made" in err


def test_a_relative_kernel_path(
    tinyk: Path, variants_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tinyk.parent)
    assert run_test("tinyk", variants_file, "--no-build") == 0
    assert "file or directory not found" not in capsys.readouterr().out


def test_ci_runs_only_the_tests_marked_kernels_ci(
    tinyk: Path, variants_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUN_UNMARKED", "fail")
    assert run_test(tinyk, variants_file, "--no-build") == 1
    assert run_test(tinyk, variants_file, "--no-build", "--ci") == 0


def test_ci_with_no_marked_test_fails(tinyk: Path, variants_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = tinyk / "tests" / "test_tinyk.py"
    suite.write_text(suite.read_text().replace("@pytest.mark.kernels_ci\n", ""))
    assert run_test(tinyk, variants_file, "--no-build", "--ci") == 1
    assert "no test is marked kernels_ci (pytest exit 5); nothing was tested" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("tests", "fragment"),
    [
        (None, "no tests/ folder, so there is nothing to test; add tests/test_tinyk.py"),
        ({"__init__.py": ""}, "no test files (pytest collects test_*.py and *_test.py)"),
        ({"helpers.py": "X = 1\n"}, "no test files"),
    ],
    ids=["no-tests-folder", "empty-package", "no-test-file"],
)
def test_nothing_to_test_fails_before_building(
    tmp_path: Path, variants_file: Path, tests: dict[str, str] | None, fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    k = make_kernel(tmp_path)  # not built: a build would fail on its stub sources
    if tests is not None:
        (k / "tests").mkdir()
        for name, text in tests.items():
            (k / "tests" / name).write_text(text)
    assert run_test(k, variants_file) == 1
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1
    assert not (k / "build").exists()


def test_no_build_with_nothing_built_runs_no_pytest(
    tmp_path: Path, variants_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    k = make_kernel(tmp_path)
    (k / "tests").mkdir()
    (k / "tests" / "conftest.py").write_text("open(__file__ + '.ran', 'w').close()\n")
    (k / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    assert run_test(k, variants_file, "--no-build") == 1
    err = capsys.readouterr().err
    assert f"build/{host_cpu_variant()}: not built, and --no-build builds nothing" in err
    assert not (k / "tests" / "conftest.py.ran").exists()


def test_shell_runs_a_command_in_the_same_environment(tinyk: Path, variants_file: Path) -> None:
    check = "import tinyk, sys; sys.exit(0 if '/build/' in tinyk.__file__ else 3)"
    argv = ["shell", str(tinyk), "--variant", host_cpu_variant(), "--no-build", "--variants", str(variants_file)]
    assert main([*argv, "--", sys.executable, "-c", check]) == 0  # run in the kernel's root, beside tinyk/
    assert main([*argv, "--", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]) == 0
    assert main([*argv, "--", "sh", "-c", "exit 7"]) == 7


def test_shell_names_a_missing_command(tinyk: Path, variants_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["shell", str(tinyk), "--variant", host_cpu_variant(), "--no-build", "--variants", str(variants_file)]
    assert main([*argv, "--", "no-such-command-here"]) == 1
    assert "shell: cannot run 'no-such-command-here'" in capsys.readouterr().err


def test_environment_and_repo_ids(tinyk: Path) -> None:
    m = load_manifest(tinyk)
    assert local_kernel_ids(m) == ["kernels-community/tinyk"]
    v = parse_variant_name(host_cpu_variant())
    env = suite_environ(m, v, {"PYTHONPATH": "/elsewhere", "PYTEST_ADDOPTS": "-x"})
    built = str((tinyk / "build" / v.name).resolve())
    assert env["PYTHONPATH"].split(":")[0] == built and env["PYTHONPATH"].endswith(":/elsewhere")
    assert env["PYTHONSAFEPATH"] == "1" and env["PYTEST_ADDOPTS"] == "-p pybuild.pytest_plugin -x"
    assert json.loads(env["PYBUILD_TEST_PACKAGES"]) == {"tinyk": built}


def test_the_plugins_finder_resolves_the_package_in_its_build_only(tinyk: Path) -> None:
    built = tinyk / "build" / host_cpu_variant()
    finder = BuiltFirst({"tinyk": str(built)})
    spec = finder.find_spec("tinyk")
    assert spec is not None and spec.origin == str(built / "tinyk" / "__init__.py")
    assert finder.find_spec("os") is None
    assert BuiltFirst({"tinyk": str(tinyk / "nowhere")}).find_spec("tinyk") is None


def test_a_cuda_torch_here_runs_its_own_variant_without_an_environment(
    guide_kernel: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GPU machine's case: torch 2.11 + CUDA 13.0 in this Python, no network. Its variant runs here
    (built here where nvcc is present; with --no-build also without nvcc); another variant does not."""
    from pybuild import host
    from pybuild.backends import cuda
    from pybuild.cli.test import _runs_here

    info = host.TorchInfo(version="2.11.0+cu130", path=Path("/nowhere"), toolkits=(("cuda", "13.0"),))
    monkeypatch.setattr(host, "torch_info", lambda: info)
    monkeypatch.setattr(host, "host_system", lambda: "x86_64-linux")
    m = load_manifest(guide_kernel)
    mine, other = (parse_variant_name(f"torch211-cxx11-{cu}-x86_64-linux") for cu in ("cu130", "cu128"))
    monkeypatch.setattr(cuda, "find_nvcc", lambda: Path("/usr/local/cuda/bin/nvcc"))
    assert _runs_here(m, mine, no_build=False) and not _runs_here(m, other, no_build=False)
    monkeypatch.setattr(cuda, "find_nvcc", lambda: None)
    assert not _runs_here(m, mine, no_build=False)  # building needs nvcc: the variant's environment has one
    assert _runs_here(m, mine, no_build=True)


def test_torch_of_the_wrong_shape_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    kernel = Path(__file__).resolve().parents[2] / "kernels" / "img2gray"
    rc = main(["test", str(kernel), "--variant", "torch-stable-abi211-cpu-x86_64-linux", "--torch", "2.x"])
    err = capsys.readouterr().err
    assert rc == 2 and "'2.x': expected a torch release as MAJOR.MINOR" in err and "--torch" in err, err
