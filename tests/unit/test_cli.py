"""The CLI: --help everywhere, one-line errors with distinct exit codes, nothing written on bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pybuild.__main__ import main
from pybuild.cli import COMMANDS

REPO = Path(__file__).resolve().parents[2]
#: The modules of pybuild/cli/ that are not a command.
NOT_COMMANDS = {"__init__", "common", "exits"}


@pytest.mark.parametrize("command", [None, *(c.NAME for c in COMMANDS)])
def test_help(command: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--help"] if command is None else [command, "--help"]
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "usage: python -m pybuild" in out
    if command is not None:
        assert f"usage: python -m pybuild {command} " in out and "--debug" in out


def test_every_command_module_is_a_listed_command() -> None:
    """A module added under pybuild/cli/ is a command of its own name, listed once in --help's order."""
    folder = REPO / "pybuild" / "cli"
    modules = {p.stem for p in folder.glob("*.py")} - NOT_COMMANDS
    listed = [c.__name__.rsplit(".", 1)[1] for c in COMMANDS]
    assert sorted(listed) == sorted(modules)
    assert [c.NAME for c in COMMANDS] == [c.__name__.rsplit(".", 1)[1].replace("_", "-") for c in COMMANDS]
    assert len({c.NAME for c in COMMANDS}) == len(COMMANDS)


def test_the_console_script_is_the_cli() -> None:
    """pyproject's `pybuild = "pybuild.__main__:entry"` and `python -m pybuild` run the same main."""
    import pybuild.__main__
    import pybuild.cli

    assert pybuild.__main__.entry is pybuild.cli.entry and pybuild.__main__.main is pybuild.cli.main
    assert 'pybuild = "pybuild.__main__:entry"' in (REPO / "pyproject.toml").read_text()


def test_unknown_flag_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", "--frobnicate"]) == 2
    err = capsys.readouterr().err.strip()
    assert "unrecognized arguments: --frobnicate" in err
    assert len(err.splitlines()) == 1


def test_not_a_kernel_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", str(tmp_path)]) == 2
    assert "not a kernel folder (no build.toml)" in capsys.readouterr().err
    assert main(["build", str(tmp_path / "nonexistent")]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'nonexistent'}: no such file or folder; pass a kernel folder" in err, err


def test_a_variant_outside_the_matrix_names_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    """One line with the nearest names and the command that lists them all, not a list of every name."""
    kernel = REPO / "kernels" / "img2gray"
    assert main(["build", str(kernel), "--variant", "torch213-cxx11-cu999-x86_64-linux"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "did you mean torch213-cxx11-" in err and f"`python -m pybuild variants --kernel {kernel}`" in err
    names = err.replace(str(kernel), "KERNEL")  # a checkout's path may itself hold "torch2"
    assert "[" not in err and names.count("torch2") <= 4, err


def test_broken_manifest_one_line_nothing_written(guide_kernel: Path) -> None:
    """Through a real subprocess: exit code 3, one line on stderr, no traceback, no files."""
    toml = guide_kernel / "build.toml"
    toml.write_text(toml.read_text().replace('depends = ["torch"]', 'depends = ["torch"]\ncuda-capabilites = ["9.0"]'))
    before = sorted(guide_kernel.rglob("*"))
    for command in (["build"], ["generate"]):
        proc = subprocess.run(
            [sys.executable, "-m", "pybuild", *command, str(guide_kernel)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 3, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1, proc.stderr
        assert "Traceback" not in proc.stderr
        assert "did you mean `cuda-capabilities`?" in lines[0]
        assert sorted(guide_kernel.rglob("*")) == before


def test_variants_json(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert main(["variants", "--json", "--kernel", str(REPO / "kernels" / "img2gray")]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = [r["name"] for r in rows]
    assert "torch213-cxx11-cpu-x86_64-linux" in names
    assert not any("rocm" in n for n in names)  # img2gray has no ROCm kernel
    from pybuild.host import host_variants

    host = [r["name"] for r in rows if r["host"]]
    expected = [v.name for v in host_variants() if v.name in names]
    assert sorted(host) == sorted(expected) and len(host) >= 1, (host, expected)  # table order vs host order


def test_clean_reads_every_manifest_before_removing_anything(tmp_path: Path, capsys) -> None:
    from tests.helpers.fakebuild import make_kernel

    good, broken = make_kernel(tmp_path / "a"), make_kernel(tmp_path / "b")
    (good / "build" / "some-variant").mkdir(parents=True)
    (broken / "build.toml").write_text((broken / "build.toml").read_text() + "\nlicence = 'MIT'\n")
    assert main(["clean", "--build", str(good), str(broken)]) == 3
    assert "licence" in capsys.readouterr().err
    assert (good / "build" / "some-variant").is_dir()  # nothing removed


def test_bench_rejects_output_arguments_before_any_work(tmp_path: Path, capsys) -> None:
    assert main(["bench", "img2gray", "--device", "cpu", "--name", "a/b", "--out", str(tmp_path)]) == 2
    assert "--name 'a/b'" in capsys.readouterr().err
    (tmp_path / "f").write_text("")
    assert main(["bench", "img2gray", "--device", "cpu", "--out", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "not a folder" in err
    assert list(tmp_path.iterdir()) == [tmp_path / "f"]


def test_bench_takes_the_kernel_name_too(capsys) -> None:
    # rms-norm is the kernel's name, rms_norm its folder: both name it (checked up to the output flags)
    assert main(["bench", "rms-norm", "--device", "cpu", "--name", "x/y"]) == 2
    assert "--name" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("err", "fragment"),
    [
        (
            OSError(28, "No space left on device", "/farm/build/x"),
            "/farm/build/x: No space left on device; the disk is full",
        ),
        (
            PermissionError(13, "Permission denied", "/farm/kernels"),
            "/farm/kernels: Permission denied; check the permissions",
        ),
        (NotADirectoryError(20, "Not a directory", "/farm/dist"), "a file stands where a folder is needed"),
    ],
)
def test_file_system_errors_are_one_line_with_the_fix(
    err: OSError, fragment: str, monkeypatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import pybuild.cli.variants as variants_command

    def fail(args):  # noqa: ANN001, ANN202
        raise err

    monkeypatch.setattr(variants_command, "run", fail)
    assert main(["variants"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], lines


def test_help_lists_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "3 build.toml" in text and "6 compile/link" in text and "9 publish" in text


def test_no_command_and_misplaced_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    captured = capsys.readouterr()
    assert "usage: python -m pybuild" in captured.out
    assert captured.err.strip() == "error: python -m pybuild: no command given; choose one of those listed above"
    assert main(["variants", "--frobnicate"]) == 2  # named by the subcommand, not the top-level parser
    assert "python -m pybuild variants: unrecognized arguments: --frobnicate" in capsys.readouterr().err
    assert main(["variants", "-q", "--debug", "--kernel", str(REPO / "kernels" / "img2gray")]) == 0
    names = capsys.readouterr().out.split()
    assert "torch213-cxx11-cpu-x86_64-linux" in names and all(n.startswith("torch2") for n in names)


def test_an_unknown_top_level_flag_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--bogus"]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == (
        "error: python -m pybuild: unrecognized arguments: --bogus (see python -m pybuild --help)"
    )
    assert "no command given" not in captured.err and not captured.out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--all", "--variant", "x"], "error: build: --all and --variant x exclude each other"),
        (["--all", "--variant", "torch213-cxx11-cpu-x86_64-linux"], "exclude each other"),
        (["--variant", "x"], "error: --variant x: not a variant name; `python -m pybuild variants` lists them"),
        (["--variant", "torch213-cxx11-cpu-x86_64-linux", "--variant", "torch2x"], "--variant torch2x: not a variant"),
    ],
)
def test_build_refuses_a_variant_clash_or_an_unknown_name_before_any_work(
    guide_kernel: Path,
    argv: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import pybuild.build
    import pybuild.matrix
    import pybuild.selection

    def no_work(*args: object, **kwargs: object) -> None:
        raise AssertionError("planned or built before refusing the arguments")

    # selection holds its own reference to plan_jobs: patching only matrix's would leak into a
    # selection first imported during this test, and miss one imported before
    monkeypatch.setattr(pybuild.matrix, "plan_jobs", no_work)
    monkeypatch.setattr(pybuild.selection, "plan_jobs", no_work)
    monkeypatch.setattr(pybuild.build, "build_variant", no_work)
    before = sorted(guide_kernel.rglob("*"))
    assert main(["build", str(guide_kernel), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert sorted(guide_kernel.rglob("*")) == before


def test_build_refuses_bad_arguments_before_any_work(
    guide_kernel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = sorted(guide_kernel.rglob("*"))
    assert main(["build", str(guide_kernel), "--cuda-archs", "banana"]) == 2
    assert "--cuda-archs: 'banana' is not a CUDA capability" in capsys.readouterr().err
    assert main(["build", str(guide_kernel), "--cuda-archs", "9.1"]) == 2
    assert "did you mean" in capsys.readouterr().err
    assert main(["build", str(guide_kernel), "--cuda-archs", ""]) == 2
    assert "--cuda-archs: no CUDA capability given" in capsys.readouterr().err
    from pybuild.backends.cuda_archs import check_cuda_archs

    assert check_cuda_archs("8.0;9.0", "x") == check_cuda_archs(" 8.0, 9.0 ", "x") == ("8.0", "9.0")
    # --variant is checked against every kernel named before the first one builds
    other = _renamed_copy(guide_kernel, tmp_path / "other", "img2gray-two")
    toml = other / "build.toml"
    assert main(["build", str(guide_kernel), str(other), "--variant", "torch299-cxx11-cpu-x86_64-linux"]) == 2
    err = capsys.readouterr().err
    assert "--variant torch299-cxx11-cpu-x86_64-linux: not a variant of variants.json for img2gray" in err
    # two folders with the same kernel name (its builds, metadata and Hub repo would collide)
    twin = tmp_path / "twin"
    shutil.copytree(guide_kernel, twin)
    toml = twin / "build.toml"
    assert main(["build", str(guide_kernel), str(twin)]) == 2
    err = capsys.readouterr().err
    assert "both name the kernel 'img2gray'" in err and str(toml) in err
    assert sorted(guide_kernel.rglob("*")) == before


def _renamed_copy(kernel: Path, dest: Path, name: str) -> Path:
    """A copy of ``kernel`` under another kernel name (build.toml and the Python package folder)."""
    shutil.copytree(kernel, dest, ignore=shutil.ignore_patterns("build", ".pybuild", "__pycache__"))
    old = next(p.name for p in (dest / "torch-ext").iterdir() if (p / "__init__.py").is_file())
    (dest / "torch-ext" / old).rename(dest / "torch-ext" / name.replace("-", "_"))
    toml = dest / "build.toml"
    toml.write_text(toml.read_text().replace(f'name = "{old.replace("_", "-")}"', f'name = "{name}"'))
    return dest


def test_build_refuses_a_file_where_build_goes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    kernel = _renamed_copy(REPO / "kernels" / "img2gray", tmp_path / "k", "img2gray")  # has a CPU kernel
    (kernel / "build").write_text("not a folder")
    before = sorted(kernel.rglob("*"))
    assert main(["build", "-q", str(kernel)]) == 6
    assert f"{kernel / 'build'}: a file stands where pybuild needs a folder; move it away" in capsys.readouterr().err
    assert sorted(kernel.rglob("*")) == before  # no .pybuild/, no generated project


def test_generate_checks_every_kernel_before_writing(
    guide_kernel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    other = _renamed_copy(guide_kernel, tmp_path / "other", "img2gray-two")
    (other / "setup.py").write_text("# the author's own\n")
    before = sorted(guide_kernel.rglob("*"))
    assert main(["generate", "--backend", "cuda", str(guide_kernel), str(other)]) == 1
    assert "setup.py: exists and was not generated by pybuild" in capsys.readouterr().err
    assert sorted(guide_kernel.rglob("*")) == before  # the first kernel was not generated either


def test_a_torch_bound_that_excludes_the_host_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    kernel = _renamed_copy(REPO / "kernels" / "img2gray", tmp_path / "k", "img2gray")
    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    toml = kernel / "build.toml"
    toml.write_text(toml.read_text().replace("[torch]\n", f'[torch]\nminver = "{major}.{minor + 1}"\n'))
    assert main(["build", str(kernel)]) == 5  # nothing built is a failure, not a silent success
    captured = capsys.readouterr()
    text = " ".join((captured.out + captured.err).split())
    assert f'torch {major}.{minor} is outside [torch] minver = "{major}.{minor + 1}" of {toml}' in text, text
    assert "nothing built" in text and "Build summary" not in text
    # the one command that builds something: a CPU variant of a torch the bound admits, in an environment
    assert f"try `python -m pybuild build {kernel} --variant torch" in text and "-cxx11-cpu-" in text, text
    assert not (kernel / "build").exists() and not (kernel / ".pybuild").exists()


def test_plain_build_of_a_cuda_only_kernel_builds_its_cuda_variant_in_an_environment(
    guide_kernel: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The guide's kernel (CUDA only) where torch is a CPU build: plain `build` builds the CUDA variant
    of this torch release in its environment, as `--variant` would, instead of building nothing."""
    pytest.importorskip("torch")
    from pybuild import matrix
    from pybuild.build import BuildResult
    from pybuild.host import host_system, host_variants, torch_info

    if any(v.backend == "cuda" for v in host_variants()):
        pytest.skip("this Python's torch builds the CUDA variant itself")
    seen = []

    def fake_build_in_envs(jobs, options, new_task, notify, **kw):  # noqa: ANN001, ANN003, ANN202
        seen.extend((job.variant.name, [m.name for m in job.manifests]) for job in jobs)
        return [BuildResult("img2gray", job.variant.name, "built", 1.0, 1, guide_kernel) for job in jobs]

    monkeypatch.setattr(matrix, "build_in_envs", fake_build_in_envs)
    assert main(["build", str(guide_kernel)]) == 0
    torch = torch_info().major_minor.replace(".", "")
    assert len(seen) == 1 and seen[0][1] == ["img2gray"], seen
    assert seen[0][0].startswith(f"torch{torch}-cxx11-cu") and seen[0][0].endswith(host_system()), seen
    err = " ".join(capsys.readouterr().err.split())
    assert f"building {seen[0][0]} in its own environment" in err and "no host variant" not in err


def test_reading_a_manifest_imports_neither_the_loader_nor_the_hub_client() -> None:
    """An up-to-date `build` stays quick: reading build.toml finds the loader's python-depends table
    without importing `kernels` (and with it huggingface_hub, a second of imports)."""
    code = (
        "import sys; from pybuild.__main__ import main; rc = main(['check-config', '-q', 'kernels/img2gray']); "
        "print(rc, sorted(m for m in ('kernels', 'huggingface_hub', 'torch') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.stdout.split("\n")[-2] == "0 []", proc.stdout + proc.stderr


def test_plain_build_says_which_variant_it_leaves_to_an_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A kernel that builds its CPU variant here does not also get its CUDA variant by default; the
    build says so, with the command that builds it."""
    pytest.importorskip("torch")
    import pybuild.build
    from pybuild.build import BuildResult
    from pybuild.host import host_variants, torch_info

    if any(v.backend == "cuda" for v in host_variants()):
        pytest.skip("this Python's torch builds the CUDA variant itself")
    kernel = _renamed_copy(REPO / "kernels" / "img2gray", tmp_path / "k", "img2gray")
    monkeypatch.setattr(
        pybuild.build,
        "build_variant",
        lambda m, v, o, progress: BuildResult(m.name, v.name, "built", 1.0, 1, kernel / "build" / v.name),
    )
    assert main(["build", str(kernel)]) == 0
    err = " ".join(capsys.readouterr().err.split())
    torch = torch_info().major_minor.replace(".", "")
    assert f"not built by default: torch{torch}-cxx11-cu" in err, err
    assert f"python -m pybuild build {kernel} --variant torch{torch}-cxx11-cu" in err


#: Two variants this Python's torch builds at once, as on a GPU machine: the kernel's CPU and CUDA ones.
TWO_HOST_VARIANTS = ["torch213-cxx11-cpu-x86_64-linux", "torch213-cxx11-cu130-x86_64-linux"]


def _two_host_variants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of img2gray whose host variants are :data:`TWO_HOST_VARIANTS` (a CPU and a CUDA one)."""
    from pybuild import selection
    from pybuild.variants import parse_variant_name

    kernel = _renamed_copy(REPO / "kernels" / "img2gray", tmp_path / "k", "img2gray")
    monkeypatch.setattr(selection, "kernel_host_variants", lambda m: [parse_variant_name(n) for n in TWO_HOST_VARIANTS])
    return kernel


def test_host_variants_build_at_once_with_their_share_of_jobs_and_report_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A kernel's CPU and CUDA variants of this torch build at the same time (each build waits for the
    other to be running), with half of --jobs each; the summary keeps the selection's order though the
    first variant finishes last."""
    import threading
    import time

    import pybuild.build
    from pybuild.build import BuildResult

    kernel = _two_host_variants(tmp_path, monkeypatch)
    both_running = threading.Barrier(2, timeout=10)  # broken (an error) unless the two builds overlap
    jobs: dict[str, int | None] = {}
    finished: list[str] = []

    def fake_build(manifest, variant, options, progress):  # noqa: ANN001, ANN202
        progress("compiling", 0.0)
        both_running.wait()
        if variant.name == TWO_HOST_VARIANTS[0]:
            time.sleep(0.2)
        jobs[variant.name] = options.jobs
        finished.append(variant.name)
        return BuildResult(manifest.name, variant.name, "built", 1.0, 1, kernel / "build" / variant.name)

    monkeypatch.setattr(pybuild.build, "build_variant", fake_build)
    assert main(["build", str(kernel), "--parallel", "2", "--jobs", "4", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert finished == TWO_HOST_VARIANTS[::-1]
    assert [(r["variant"], r["status"]) for r in rows] == [(n, "built") for n in TWO_HOST_VARIANTS]
    assert jobs == dict.fromkeys(TWO_HOST_VARIANTS, 2)


@pytest.mark.parametrize("keep_going", [False, True])
def test_host_builds_one_at_a_time_stop_at_the_first_failure_without_keep_going(
    keep_going: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--parallel 1 is the serial loop: one build at a time, in order, and without -k the first failure
    starts nothing more; the exit code is the first failure's, each failure one error line."""
    import threading

    import pybuild.build
    from pybuild.errors import BuildError, ToolchainError

    kernel = _two_host_variants(tmp_path, monkeypatch)
    running, started = threading.Semaphore(1), []

    def fake_build(manifest, variant, options, progress):  # noqa: ANN001, ANN202
        assert running.acquire(blocking=False), "two builds at once with --parallel 1"
        try:
            started.append(variant.name)
            raise (ToolchainError if variant.name == TWO_HOST_VARIANTS[0] else BuildError)(f"{variant.name} broke")
        finally:
            running.release()

    monkeypatch.setattr(pybuild.build, "build_variant", fake_build)
    argv = ["build", str(kernel), "--parallel", "1", "--json", *(["-k"] if keep_going else [])]
    assert main(argv) == ToolchainError.exit_code
    captured = capsys.readouterr()
    expected = TWO_HOST_VARIANTS if keep_going else TWO_HOST_VARIANTS[:1]
    assert started == expected
    assert [(r["variant"], r["status"]) for r in json.loads(captured.out)] == [(n, "failed") for n in expected]
    errors = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert errors == [f"error: img2gray {n}: {n} broke" for n in expected]


@pytest.mark.parametrize("keep_going", [False, True])
def test_host_builds_failing_at_once_say_one_error_line_without_keep_going(
    keep_going: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two builds running at once that both fail (a bad input each variant reads) print one error
    line without -k, each its own with -k; the JSON lists both as failed either way."""
    import threading

    import pybuild.build
    from pybuild.errors import BuildError

    kernel = _two_host_variants(tmp_path, monkeypatch)
    both_running = threading.Barrier(2, timeout=10)

    def fake_build(manifest, variant, options, progress):  # noqa: ANN001, ANN202
        both_running.wait()
        raise BuildError("csrc/bad.cu: broken")

    monkeypatch.setattr(pybuild.build, "build_variant", fake_build)
    argv = ["build", str(kernel), "--parallel", "2", "--json", *(["-k"] if keep_going else [])]
    assert main(argv) == BuildError.exit_code
    captured = capsys.readouterr()
    assert [r["status"] for r in json.loads(captured.out)] == ["failed", "failed"]
    errors = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert len(errors) == (2 if keep_going else 1), captured.err
    assert all(line.endswith("csrc/bad.cu: broken") for line in errors)
