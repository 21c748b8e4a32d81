"""`pybuild check`: the verdict for a good build, a tampered file, a non-abi3 extension, a glibc-2.32
extension, an RPATH into a build tree, broken metadata, a failing import and missing variants."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pybuild.__main__ import main
from pybuild.check import MANYLINUX, check_kernel
from pybuild.elf import dynamic_entries
from pybuild.variants import load_matrix
from tests.helpers.fakebuild import GLIBC_232, NON_ABI3, make_kernel, make_variant, one_variant_matrix, reseal

pytest.importorskip("kernel_abi_check")


@pytest.fixture
def kernel(tmp_path: Path) -> Path:
    return make_kernel(tmp_path)


@pytest.fixture
def matrix(tmp_path: Path):
    return load_matrix(one_variant_matrix(tmp_path / "variants.json"))


def quick_check(path: Path, matrix):
    """check_kernel without the import check (a fresh interpreter importing torch takes seconds)."""
    return check_kernel(path, matrix, run_import=False)


def verdicts(report) -> dict[tuple[str, str], str]:
    return {(r.variant, r.check): r.status for r in report.results}


def detail(report, check: str) -> str:
    return next(r.detail for r in report.results if r.check == check)


def test_good_build_passes_every_check(kernel: Path, matrix) -> None:
    vdir = make_variant(kernel)
    report = check_kernel(kernel, matrix)
    v = vdir.name
    assert verdicts(report) == {
        (v, "metadata"): "pass",
        (v, "digest"): "pass",
        (v, "abi3"): "pass",
        (v, MANYLINUX): "pass",
        (v, "rpath"): "pass",
        (v, "runtime"): "pass",
        (v, "sources"): "pass",
        (v, "import"): "pass",
        ("*", "variants"): "pass",
    }
    assert report.ok
    assert "exports add_one" in detail(report, "import")
    assert not list(vdir.rglob("__pycache__")), "the import check must not write into build/"


def test_cli_exit_codes_and_table(kernel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_variant(kernel)
    variants = str(one_variant_matrix(tmp_path / "variants.json"))
    assert main(["check", str(kernel), "--variants", variants]) == 0
    out = capsys.readouterr()
    assert "check tinyk" in out.out and "abi3" in out.out and "all checks passed for tinyk" in out.err
    (kernel / "build" / next((kernel / "build").iterdir()).name / "tinyk" / "__init__.py").write_text("x = 1\n")
    assert main(["check", str(kernel), "--variants", variants, "--no-import"]) == 8
    err = capsys.readouterr().err
    assert "tinyk: 1 check(s) failed: digest" in err and "see the table above" in err
    assert main(["check", str(kernel), "--variants", variants, "--json", "--no-import"]) == 8
    data = json.loads(capsys.readouterr().out)
    assert data[0]["ok"] is False and {r["check"] for r in data[0]["results"] if r["status"] == "fail"} == {"digest"}


@pytest.mark.parametrize(
    "tamper, fragment",
    [
        (lambda v: (v / "tinyk" / "__init__.py").write_text("import os\n"), "changed file tinyk/__init__.py"),
        (lambda v: (v / "tinyk" / "extra.py").write_text(""), "unexpected file tinyk/extra.py"),
        (lambda v: (v / "tinyk" / "_tinyk_ext.abi3.so").unlink(), "missing file tinyk/_tinyk_ext.abi3.so"),
    ],
)
def test_tampered_file_fails_the_digest(kernel: Path, matrix, tamper, fragment: str) -> None:
    vdir = make_variant(kernel)
    tamper(vdir)
    report = quick_check(kernel, matrix)
    assert verdicts(report)[(vdir.name, "digest")] == "fail"
    assert fragment in detail(report, "digest")
    assert [r.check for r in report.failures] == ["digest"]


def test_non_abi3_extension(kernel: Path, matrix) -> None:
    vdir = make_variant(kernel, so_source=NON_ABI3)
    report = quick_check(kernel, matrix)
    assert verdicts(report)[(vdir.name, "abi3")] == "fail"
    assert "PyUnicode_AsUTF8 is not in Python's stable ABI" in detail(report, "abi3")
    assert [r.check for r in report.failures] == ["abi3"]


def test_newer_glibc_is_not_manylinux_2_28_and_says_how_to_fix(kernel: Path, matrix) -> None:
    vdir = make_variant(kernel, so_source=GLIBC_232)
    report = quick_check(kernel, matrix)
    assert verdicts(report)[(vdir.name, MANYLINUX)] == "fail"
    text = detail(report, MANYLINUX)
    assert text.startswith("NOT manylinux_2_28: needs glibc 2.32")
    assert "GLIBC_2.32 (__libc_single_threaded)" in text
    assert "Nix toolchain" in text and "manylinux_2_28 container" in text


def test_embedded_cxx_runtime(kernel: Path, matrix, tmp_path: Path) -> None:
    """A module linked with -static-libstdc++ carries its own exception runtime: refused."""
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("needs g++")
    vdir = make_variant(kernel)
    so = next(vdir.rglob("*.so"))
    src = tmp_path / "throws.cpp"
    src.write_text(
        '#include <stdexcept>\nextern "C" int f(int x) { if (x < 0) throw std::runtime_error("neg"); return x; }\n'
    )
    subprocess.run([gxx, "-shared", "-fPIC", "-static-libstdc++", str(src), "-o", str(so)], check=True)
    reseal(vdir)
    report = quick_check(kernel, matrix)
    assert verdicts(report)[(vdir.name, "runtime")] == "fail"
    assert "defines __cxa_throw" in detail(report, "runtime")


def test_rpath_into_build_tree(kernel: Path, matrix) -> None:
    vdir = make_variant(kernel, so_extra=("-Wl,-rpath,/tmp/somewhere/build/lib",))
    report = quick_check(kernel, matrix)
    assert verdicts(report)[(vdir.name, "rpath")] == "fail"
    assert "/tmp/somewhere/build/lib" in detail(report, "rpath")


@pytest.mark.parametrize(
    "written, shown",
    [
        ("/opt/café/lib", "/opt/café/lib"),  # UTF-8, as written (not read as latin-1: "cafÃ©")
        ("/opt/caf\udce9/lib", "/opt/caf\ufffd/lib"),  # a latin-1 byte, not UTF-8: a replacement character
    ],
)
def test_a_non_ascii_rpath_is_shown_as_written(kernel: Path, matrix, written: str, shown: str) -> None:
    vdir = make_variant(kernel, so_extra=(f"-Wl,-rpath,{written}",))
    (so,) = (vdir / "tinyk").glob("*.so")
    entries = dynamic_entries(so)
    assert ("RUNPATH", shown) in entries or ("RPATH", shown) in entries, entries
    report = quick_check(kernel, matrix)
    assert shown in detail(report, "rpath") and "Ã" not in detail(report, "rpath")


@pytest.mark.parametrize(
    "metadata, fragment",
    [
        ({"backend": {"type": "cuda"}}, "backend.type is 'cuda' but the variant name says 'cpu'"),
        ({"name": "Tiny_K"}, "does not match"),
        ({"version": "one"}, "`version` must be an integer"),
        ({"python-depends": ["numpy"]}, "python-depends ['numpy'] are not in the kernels loader's allow-list"),
        ({"python-depends": [{}]}, "`python-depends` must be a list of package names, found [{}]"),
        ({"python-depends": "einops"}, "`python-depends` must be a list of package names, found 'einops'"),
    ],
)
def test_bad_metadata(kernel: Path, matrix, metadata: dict, fragment: str) -> None:
    vdir = make_variant(kernel, metadata=metadata)
    report = quick_check(kernel, matrix)
    assert verdicts(report)[(vdir.name, "metadata")] == "fail"
    assert fragment in detail(report, "metadata")


def test_missing_or_invalid_metadata(kernel: Path, matrix) -> None:
    vdir = make_variant(kernel)
    (vdir / "metadata.json").write_text("{not json")
    report = quick_check(kernel, matrix)
    assert verdicts(report) == {(vdir.name, "metadata"): "fail", ("*", "variants"): "pass"}
    assert "invalid JSON" in detail(report, "metadata")


def test_import_failure_in_fresh_interpreter(kernel: Path, matrix) -> None:
    vdir = make_variant(kernel)
    (vdir / "tinyk" / "__init__.py").write_text("raise ImportError('libfoo.so.1: cannot open shared object file')\n")
    reseal(vdir)
    report = check_kernel(kernel, matrix)
    assert verdicts(report)[(vdir.name, "import")] == "fail"
    assert "libfoo.so.1: cannot open shared object file" in detail(report, "import")


def test_stale_build(kernel: Path, matrix) -> None:
    vdir = make_variant(kernel)
    (kernel / "csrc" / "tinyk_cpu.cpp").write_text("// edited after the build\n")
    report = quick_check(kernel, matrix)
    assert verdicts(report)[(vdir.name, "sources")] == "fail"
    assert "stale" in detail(report, "sources")


def test_variant_of_another_torch_is_not_imported(kernel: Path, matrix) -> None:
    vdir = make_variant(kernel, "torch299-cxx11-cpu-x86_64-linux")
    report = check_kernel(kernel, matrix)
    assert verdicts(report)[(vdir.name, "import")] == "skip"
    assert "built for torch 2.99" in detail(report, "import")


def test_missing_variants_are_listed(kernel: Path, repo_root: Path) -> None:
    vdir = make_variant(kernel)
    report = quick_check(kernel, load_matrix(repo_root / "variants.json"))
    cov = next(r for r in report.results if r.check == "variants")
    assert cov.status == "fail"
    assert vdir.name not in cov.data["missing"] and vdir.name in cov.data["required"]
    assert all("-cpu-" in n for n in cov.data["required"])  # a CPU-only kernel needs no CUDA variant
    assert len(cov.data["missing"]) == len(cov.data["required"]) - 1


def test_targets_build_dir_and_variant_dir(kernel: Path, matrix) -> None:
    vdir = make_variant(kernel)
    by_build = quick_check(kernel / "build", matrix)
    assert by_build.kernel == "tinyk" and by_build.ok
    by_variant = quick_check(vdir, matrix)
    assert {r.check for r in by_variant.results} >= {"metadata", "digest", "abi3"}


@pytest.mark.parametrize(
    "args, code, fragment",
    [
        (["check", "/nonexistent/x"], 2, "neither a kernel folder"),
        (["check", "kernels/img2gray", "--variant", "torch100-cxx11-cpu-x86_64-linux"], 2, "not built under"),
    ],
)
def test_usage_errors(
    args: list[str],
    code: int,
    fragment: str,
    repo_root: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(repo_root)
    assert main(args) == code
    err = capsys.readouterr().err
    assert fragment in err and len(err.strip().splitlines()) == 1


def test_a_corrupt_extension_is_a_failed_row_not_an_abort(kernel: Path, matrix) -> None:
    vdir = make_variant(kernel)
    (so,) = vdir.rglob("*.so")
    so.write_bytes(b"\x7fELF truncated")
    report = quick_check(kernel, matrix)
    rows = verdicts(report)
    assert rows[(vdir.name, "rpath")] == "fail" and rows[(vdir.name, "digest")] == "fail", rows
    assert f"{so.name}: not a readable shared object" in detail(report, "rpath")


def test_an_extension_readelf_cannot_read_is_a_failed_row_everywhere(kernel: Path, matrix) -> None:
    """A Mach-O file (a darwin build checked here): kernel-abi-check reads it, readelf does not."""
    vdir = make_variant(kernel)
    (so,) = vdir.rglob("*.so")
    so.write_bytes(bytes.fromhex("cffaedfe0c000001000000000600000000000000000000000000000000000000"))
    report = quick_check(kernel, matrix)  # no exception escapes any row
    rows = verdicts(report)
    assert rows[(vdir.name, "rpath")] == "fail", rows
    assert rows[(vdir.name, "abi3")] == "fail" and "not a readable shared object" in detail(report, "abi3"), rows
