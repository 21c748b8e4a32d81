"""`python -m pybuild new`: the kernel folder it writes builds as it is and passes its own tests.

The fast tests check the files and every refusal (exit 2, one line, nothing written); the slow one
builds the CPU variant and runs the generated tests; the gpu one does the same with the CUDA variant
on the GPU machine (benchmarks/run_gpu.sh runs it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pybuild import scaffold
from pybuild.__main__ import main
from pybuild.digest import INCLUDE
from pybuild.errors import ManifestError
from pybuild.host import find_nvcc
from pybuild.manifest import load_manifest

REPO = Path(__file__).resolve().parents[2]
EXPECTED = {
    "build.toml",
    "csrc/my_op.cu",
    "csrc/my_op.h",
    "csrc/my_op_args.h",
    "csrc/my_op_cpu.cpp",
    "csrc/my_op_cuda.cpp",
    "torch-ext/torch_binding.cpp",
    "torch-ext/torch_binding.h",
    "torch-ext/my_op/__init__.py",
    "tests/test_my_op.py",
    "tests/conftest.py",
    "variants.lock.json",
}


def files_under(d: Path) -> set[str]:
    return {p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file()}


def test_new_writes_a_kernel_the_farm_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "my-op"
    assert main(["new", "my-op", "--dir", str(dest), "--license", "MIT"]) == 0
    assert files_under(dest) == EXPECTED
    assert [p.name for p in tmp_path.iterdir()] == ["my-op"]  # no staging folder left
    manifest = load_manifest(dest)
    assert (manifest.name, manifest.python_name, manifest.license) == ("my-op", "my_op", "MIT")
    assert sorted(k.backend for k in manifest.kernels) == ["cpu", "cuda"]
    umask = os.umask(0)
    os.umask(umask)
    assert dest.stat().st_mode & 0o777 == 0o777 & ~umask  # not left private as the staging folder was
    binding = (dest / "torch-ext" / "torch_binding.cpp").read_text()
    assert 'ops.def("my_op(Tensor input, float scale, Tensor! out) -> ()")' in binding
    cu = (dest / "csrc" / "my_op.cu").read_text()
    assert not re.search(r'#include\s*[<"](torch|ATen|c10)/', cu)  # nvcc compiles it without torch
    assert "#include <kernel_farm/pdl.cuh>" in cu  # the farm's shared header; EXPECTED has no copy of it
    out = capsys.readouterr().err  # progress and summaries go to stderr
    assert "next: python -m pybuild build" in out and str(dest) in out


def test_new_outside_a_farm_with_pybuild_installed(tmp_path: Path) -> None:
    """Installed pybuild has no variants.json beside it: `new` writes the kernel without a lock and
    says how to write it; --variants writes it."""
    site = tmp_path / "site"
    shutil.copytree(REPO / "pybuild", site / "pybuild", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(site)}
    dest = tmp_path / "out" / "my-op"
    proc = subprocess.run(
        [sys.executable, "-m", "pybuild", "new", "my-op", "--dir", str(dest)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert files_under(dest) == EXPECTED - {"variants.lock.json"}
    said = "".join(proc.stderr.split())  # as the terminal wraps it
    assert (
        "".join(
            f"no variants.json found, so no variants.lock.json yet: run `python -m pybuild lock {dest} "
            "--variants FILE`".split()
        )
        in said
    )
    dest2 = tmp_path / "out" / "my-op2"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pybuild",
            "new",
            "my-op2",
            "--dir",
            str(dest2),
            "--variants",
            str(REPO / "variants.json"),
            "-q",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    assert (dest2 / "variants.lock.json").is_file()


def test_new_noarch_writes_a_pure_python_kernel(tmp_path: Path) -> None:
    dest = tmp_path / "my-op"
    assert main(["new", "my-op", "--noarch", "--dir", str(dest), "-q"]) == 0
    assert files_under(dest) == {
        "build.toml",
        "torch-ext/my_op/__init__.py",
        "tests/test_my_op.py",
        "tests/conftest.py",
        "variants.lock.json",
    }
    manifest = load_manifest(dest)
    assert manifest.noarch and manifest.backends == ("cuda", "cpu")


def test_new_defaults_to_the_farms_kernels_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "variants.json").write_text((REPO / "variants.json").read_text())
    (tmp_path / "kernels").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(["new", "my-op", "-q"]) == 0
    assert files_under(tmp_path / "kernels" / "my-op") == EXPECTED


def test_new_outside_a_farm_asks_for_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pybuild import variants

    def nowhere(start=None):  # noqa: ANN001, ANN202 - as when pybuild is installed without a farm
        raise variants.VariantsError(f"no variants.json found at or above {tmp_path}")

    monkeypatch.setattr(variants, "find_variants_file", nowhere)
    monkeypatch.chdir(tmp_path)
    assert main(["new", "my-op"]) == 2
    err = capsys.readouterr().err
    assert "new: no farm here" in err and "pass --dir" in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["new", "My_Op"], "use at least two characters, lowercase letters, digits and '-'"),
        (["new", "x-"], "use at least two characters"),
        (["new", "x"], "use at least two characters"),
        (["new", "a--b"], "and no '--'"),
        (["new", "a" * 65], "is 65 characters long; use at most 64"),
        (["new", "class"], "reserved word or built-in name of Python, C++ or torch"),
        (["new", "lambda"], "reserved word or built-in name"),
        (["new", "torch"], "reserved word or built-in name"),
        (["new", "name"], "reserved word or built-in name"),  # every torch.ops namespace has .name
        (["new", "isinstance"], "reserved word or built-in name"),  # the wrapper calls the built-in
        (["new", "my-op", "--dir", ""], "--dir is empty"),
        (["new", "my-op", "--license", "MIT OR"], "give an SPDX identifier"),
        (["new", "my-op", "--license", 'MIT"'], "give an SPDX identifier"),
        (["new", "my-op", "--license", ""], "give an SPDX identifier"),
        (["new"], "the following arguments are required: NAME"),
        (["new", "my-op", "--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_new_refuses_bad_arguments(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if len(argv) > 1 and "--dir" not in argv:
        argv = [*argv, "--dir", str(tmp_path / "k")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == []


def test_new_refuses_an_existing_folder_and_a_taken_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "my-op").mkdir()
    assert main(["new", "my-op", "--dir", str(tmp_path / "my-op")]) == 2
    assert "already exists" in capsys.readouterr().err
    assert list((tmp_path / "my-op").iterdir()) == []
    other = tmp_path / "other"
    shutil.copytree(REPO / "tests" / "fixtures" / "noarch-softcap", other)  # a kernel named softcap
    assert main(["new", "softcap", "--dir", str(tmp_path / "softcap")]) == 2
    err = capsys.readouterr().err
    assert f"{other / 'build.toml'} already names the kernel 'softcap'" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my-op", "other"]
    (tmp_path / "file").write_text("")
    assert main(["new", "ok-op", "--dir", str(tmp_path / "file" / "ok-op")]) == 2
    assert f"{tmp_path / 'file'} is a file" in capsys.readouterr().err
    assert main(["new", "ok-op", "--dir", str(tmp_path / "file" / "x" / "ok-op")]) == 2
    assert f"{tmp_path / 'file'} is a file" in capsys.readouterr().err


def test_an_spdx_expression_is_a_license(tmp_path: Path) -> None:
    scaffold.create_kernel(tmp_path / "my-op", "my-op", "(MIT OR Apache-2.0)")
    assert load_manifest(tmp_path / "my-op").license == "(MIT OR Apache-2.0)"


def test_missing_folders_are_made_and_removed_again_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "my-op", "--dir", str(tmp_path / "a" / "b" / "my-op"), "-q"]) == 0
    assert files_under(tmp_path / "a" / "b" / "my-op") == EXPECTED

    def no_space(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(scaffold.tempfile, "mkdtemp", no_space)
    dest = tmp_path / "c" / "d" / "my-op"
    assert main(["new", "my-op", "--dir", str(dest)]) == 1
    assert f"new: cannot create {dest}: No space left on device; free some disk space" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]


def test_a_failure_while_writing_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(text: str, path: Path):  # noqa: ANN202
        raise ManifestError(f"{path}: broken on purpose")

    monkeypatch.setattr(scaffold, "parse_manifest", broken)
    with pytest.raises(ManifestError):
        scaffold.create_kernel(tmp_path / "my-op", "my-op")
    assert list(tmp_path.iterdir()) == []


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}


def _build_and_test(dest: Path, expect_cuda: bool | None, select: str | None = None) -> str:
    env = _env()
    build = subprocess.run(
        [sys.executable, "-m", "pybuild", "build", str(dest)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    variants = sorted(p.name for p in (dest / "build").iterdir())
    if expect_cuda is None:  # a pure-Python kernel: one variant per backend
        assert variants == ["torch-cpu", "torch-cuda"], variants
    else:
        assert any("-cpu-" in v for v in variants), variants
        assert any("-cu" in v for v in variants) == expect_cuda, variants
    select_args = ["-k", select] if select else []
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *select_args, str(dest / "tests")],
        cwd=dest,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert tests.returncode == 0, tests.stdout[-5000:] + tests.stderr[-3000:]
    return tests.stdout


@pytest.mark.slow
def test_the_new_kernel_builds_and_passes_its_tests_on_cpu(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    if shutil.which("cmake") is None or shutil.which("ninja") is None:
        pytest.skip("needs cmake and ninja")
    # `exp` is also a C library function: the generated C++ must not declare it in the global namespace.
    dest = tmp_path / "exp"
    assert main(["new", "exp", "--dir", str(dest), "-q"]) == 0
    out = _build_and_test(dest, expect_cuda=_cuda())
    assert " passed" in out and " failed" not in out


@pytest.mark.slow
def test_the_new_noarch_kernel_builds_and_passes_its_tests(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    dest = tmp_path / "my-op"
    assert main(["new", "my-op", "--noarch", "--dir", str(dest), "-q"]) == 0
    out = _build_and_test(dest, expect_cuda=None)
    assert " passed" in out and " failed" not in out
    if _cuda():
        assert "SKIPPED" not in out, out[-3000:]  # the CUDA cases ran


@pytest.mark.slow
@pytest.mark.parametrize("name", ["my-op", "half", "rsqrt", "linux"])  # CUDA types, functions, a GNU macro
def test_the_new_cuda_kernel_compiles_for_sm90(name: str, tmp_path: Path) -> None:
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found")
    dest = tmp_path / name
    scaffold.create_kernel(dest, name)
    py = name.replace("-", "_")
    cmd = [
        str(nvcc),
        "-c",
        "-std=c++17",
        "-Xcompiler=-std=gnu++17",
        "-O3",
        "-gencode=arch=compute_90,code=sm_90",
        f"-I{dest / 'csrc'}",
        f"-I{INCLUDE}",
        str(dest / "csrc" / f"{py}.cu"),
        "-o",
        str(tmp_path / "out.o"),
    ]
    if shutil.which("ccache"):
        cmd.insert(0, "ccache")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available() and find_nvcc() is not None


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU, a CUDA torch and nvcc")
def test_the_new_kernel_passes_its_tests_on_cuda(tmp_path: Path) -> None:
    dest = tmp_path / "my-op"
    assert main(["new", "my-op", "--dir", str(dest), "-q"]) == 0
    out = _build_and_test(dest, expect_cuda=True, select="cuda")  # the CPU cases run in CI
    assert "SKIPPED" not in out and " passed" in out, out[-3000:]  # the CUDA cases ran


@pytest.mark.parametrize("noarch", [False, True], ids=["compiled", "noarch"])
def test_new_writes_the_current_edition(noarch: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A new kernel is in edition 5 already: `migrate --check` passes and check-config asks for nothing."""
    dest = tmp_path / "my-op"
    assert main(["new", "my-op", "--dir", str(dest), "-q", *(["--noarch"] if noarch else [])]) == 0
    capsys.readouterr()
    assert main(["migrate", "--check", str(dest)]) == 0
    assert main(["check-config", str(dest)]) == 0
    said = capsys.readouterr().err
    assert "ok (edition 5," in said and "migrate" not in said


def test_new_in_a_git_farm_says_to_git_add_before_nix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`nix build .#NAME` fails for a kernel git does not track yet: `new` says so, with the flags Nix needs."""
    (tmp_path / "variants.json").write_text((REPO / "variants.json").read_text())
    (tmp_path / "kernels").mkdir()
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    assert main(["new", "my-op"]) == 0
    said = " ".join(capsys.readouterr().err.split())
    dest = tmp_path / "kernels" / "my-op"
    assert f"`git add {dest}` first" in said
    assert "nix --extra-experimental-features 'nix-command flakes' build .#my-op -L" in said
    assert main(["new", "other-op", "--dir", str(tmp_path.parent / f"{tmp_path.name}-elsewhere" / "other-op")]) == 0
    assert "git add" not in capsys.readouterr().err  # not in a git work tree: nothing to add
