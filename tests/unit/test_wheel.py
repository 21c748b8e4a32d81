"""`pybuild wheel`: names, tags that tell the truth, PEP 427 RECORD, reproducible bytes."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import time
import zipfile
from pathlib import Path

import pytest
from packaging.metadata import Metadata

from pybuild.__main__ import main
from pybuild.variants import parse_variant_name
from pybuild.wheel import ZIP_EPOCH, build_wheel, local_label
from tests.helpers.fakebuild import GLIBC_232, host_cpu_variant, make_kernel, make_variant

pytest.importorskip("kernel_abi_check")

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "name, label",
    [
        ("torch213-cxx11-cpu-x86_64-linux", "torch213cpucxx11"),
        ("torch27-cxx11-cu128-x86_64-linux", "torch27cu128cxx11"),  # the guide's wheel name
        ("torch211-cxx11-rocm71-x86_64-linux", "torch211rocm71cxx11"),
        ("torch212-metal-aarch64-darwin", "torch212metal"),
        ("torch-stable-abi211-cu130-x86_64-linux", "torchstableabi211cu130"),
        ("torch-neuron", "torchneuron"),
        ("tvm-ffi01-cpu-x86_64-linux", "tvmffi01cpu"),
    ],
)
def test_local_version_label(name: str, label: str) -> None:
    assert local_label(parse_variant_name(name)) == label


def read_wheel(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


def test_wheel_name_metadata_and_record(tmp_path: Path) -> None:
    vdir = make_variant(make_kernel(tmp_path))
    whl = build_wheel(vdir, "1.1.2", tmp_path / "dist")
    v = parse_variant_name(vdir.name)
    arch = v.system.split("-")[0]
    # A gcc-built extension using nothing newer than glibc 2.28 may say manylinux_2_28.
    assert whl.name == f"tinyk-1.1.2+{local_label(v)}-cp39-abi3-manylinux_2_28_{arch}.whl"
    files = read_wheel(whl)
    di = f"tinyk-1.1.2+{local_label(v)}.dist-info"
    assert sorted(files) == sorted(
        [
            "tinyk/__init__.py",
            "tinyk/_tinyk_ext.abi3.so",
            f"{di}/METADATA",
            f"{di}/WHEEL",
            f"{di}/kernel-metadata.json",
            f"{di}/RECORD",
        ]
    )
    assert list(files)[-1] == f"{di}/RECORD"
    meta = Metadata.from_email(files[f"{di}/METADATA"])  # validates, as installers read it (names any case)
    assert (meta.name, str(meta.version)) == ("tinyk", f"1.1.2+{local_label(v)}")
    assert [str(r) for r in meta.requires_dist or []] == [f"torch=={v.torch}.*"]
    assert str(meta.requires_python) == ">=3.9"
    wheel = files[f"{di}/WHEEL"].decode()
    assert "Root-Is-Purelib: false\n" in wheel and f"Tag: cp39-abi3-manylinux_2_28_{arch}\n" in wheel
    rows = list(csv.reader(io.StringIO(files[f"{di}/RECORD"].decode())))
    assert {r[0] for r in rows} == set(files)
    for path, digest, size in rows:
        if path.endswith("RECORD"):
            assert (digest, size) == ("", "")
            continue
        expected = base64.urlsafe_b64encode(hashlib.sha256(files[path]).digest()).rstrip(b"=").decode()
        assert digest == f"sha256={expected}" and int(size) == len(files[path])
    with zipfile.ZipFile(whl) as zf:
        mode = zf.getinfo("tinyk/_tinyk_ext.abi3.so").external_attr >> 16
        assert mode & 0o111, "the extension keeps its executable bit"


def test_metadata_field_names_are_lowercase_and_the_docs_say_why_that_is_valid(tmp_path: Path) -> None:
    import email.parser

    vdir = make_variant(make_kernel(tmp_path))
    files = read_wheel(build_wheel(vdir, "1.0.0", tmp_path / "dist"))
    (text,) = [data.decode() for name, data in files.items() if name.endswith(".dist-info/METADATA")]
    assert text.startswith("metadata-version: 2.1\nname: tinyk\n"), text  # packaging's as_rfc822() spelling
    message = email.parser.Parser().parsestr(text)  # how installers read it: names in any case
    assert message["Name"] == "tinyk" and message["Requires-Dist"].startswith("torch")
    docs = " ".join((REPO / "docs" / "publishing.md").read_text().split())
    assert "field names in lowercase" in docs and "case-insensitive" in docs


def test_non_manylinux_build_gets_the_plain_linux_tag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = make_kernel(tmp_path)
    vdir = make_variant(kernel, so_source=GLIBC_232)
    assert main(["wheel", str(kernel), "--version", "1.0.0", "-o", str(tmp_path / "dist")]) == 0
    (whl,) = (tmp_path / "dist").glob("*.whl")
    arch = parse_variant_name(vdir.name).system.split("-")[0]
    assert whl.name.endswith(f"-cp39-abi3-linux_{arch}.whl") and "manylinux" not in whl.name
    assert "not manylinux_2_28" in capsys.readouterr().err


def test_reproducible_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vdir = make_variant(make_kernel(tmp_path))
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    a_path = build_wheel(vdir, "1.0.0", tmp_path / "a")
    with zipfile.ZipFile(a_path) as zf:
        dates = {i.filename: i.date_time for i in zf.infolist()}
    assert any(name.endswith("RECORD") for name in dates)
    assert set(dates.values()) == {ZIP_EPOCH}, f"every entry, RECORD included, has the fixed date: {dates}"
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() - 3 * 365 * 86400)  # a clock years away
    b = build_wheel(vdir, "1.0.0", tmp_path / "b").read_bytes()
    monkeypatch.undo()
    assert a_path.read_bytes() == b
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    c = build_wheel(vdir, "1.0.0", tmp_path / "c")
    with zipfile.ZipFile(c) as zf:
        assert {i.date_time[0] for i in zf.infolist()} == {2023}


def test_default_version_and_variant_selection(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = make_kernel(tmp_path)
    make_variant(kernel)
    out = tmp_path / "dist"
    assert main(["wheel", str(kernel), "--variant", host_cpu_variant(), "-o", str(out)]) == 0
    assert [p.name.split("+")[0] for p in out.glob("*.whl")] == ["tinyk-1.0.0"]  # build.toml version 1
    assert main(["wheel", str(kernel), "--variant", "torch100-cxx11-cpu-x86_64-linux", "-o", str(out)]) == 2
    assert "not built under" in capsys.readouterr().err
    assert main(["wheel", str(kernel), "--version", "1.0", "-o", str(out)]) == 2
    capsys.readouterr()
    assert main(["wheel", str(kernel), "--version", "2.0.0", "-o", str(tmp_path / "other")]) == 2
    assert "major 2 differs from `version = 1`" in capsys.readouterr().err  # as `publish` says
    assert not (tmp_path / "other").exists()


@pytest.mark.parametrize("command", ["check", "publish", "wheel"])
def test_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    assert f"usage: python -m pybuild {command}" in capsys.readouterr().out


def test_a_tampered_build_is_not_packed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = make_kernel(tmp_path)
    vdir = make_variant(kernel)
    init = vdir / "tinyk" / "__init__.py"
    init.write_text(init.read_text() + "\nprint('not what was built')\n")
    assert main(["wheel", str(kernel), "-o", str(tmp_path / "dist")]) != 0
    err = capsys.readouterr().err
    assert "differ from metadata.json's digest" in err and "changed file tinyk/__init__.py" in err
    assert not (tmp_path / "dist").exists()


@pytest.mark.parametrize(
    "metadata, message",
    [
        ([1], "not a kernel metadata object"),
        ({"name": "tinyk", "python-depends": "einops"}, '"python-depends" must be a list'),
    ],
)
def test_malformed_metadata_is_one_line(
    tmp_path: Path, metadata, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    kernel = make_kernel(tmp_path)
    vdir = make_variant(kernel)
    (vdir / "metadata.json").write_text(json.dumps(metadata))
    assert main(["wheel", str(kernel), "-o", str(tmp_path / "dist")]) != 0
    err = capsys.readouterr().err.strip()
    assert message in err and "Traceback" not in err and len(err.splitlines()) == 1
    assert not (tmp_path / "dist").exists()


@pytest.mark.parametrize("depends, bad", [(["einops[bad"], "einops[bad"), (["pyyaml", "numpy>="], "numpy>=")])
def test_invalid_wheel_metadata_names_the_key_to_fix(
    tmp_path: Path, depends: list[str], bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = make_kernel(tmp_path)
    make_variant(kernel, metadata={"python-depends": depends})
    assert main(["wheel", str(kernel), "--version", "1.0.0", "-o", str(tmp_path / "dist")]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "sub-exception" not in err and "rebuild the variant" not in err
    assert 'fix metadata.json key "python-depends"' in err
    assert f"{bad!r} is invalid" in err
    assert not (tmp_path / "dist").exists() or not any((tmp_path / "dist").iterdir())


def test_one_bad_variant_means_no_wheel_at_all(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = make_kernel(tmp_path)
    make_variant(kernel)
    other = make_variant(kernel, "torch299-cxx11-cpu-x86_64-linux")  # sorts after the good one
    (other / "metadata.json").write_text("{")
    assert main(["wheel", str(kernel), "-o", str(tmp_path / "dist")]) != 0
    assert "unreadable" in capsys.readouterr().err
    assert not (tmp_path / "dist").exists() or not any((tmp_path / "dist").iterdir())


def test_out_dir_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = make_kernel(tmp_path)
    make_variant(kernel)
    (tmp_path / "dist").write_text("")
    assert main(["wheel", str(kernel), "-o", str(tmp_path / "dist")]) == 2
    assert "--out-dir" in capsys.readouterr().err


def test_a_stray_folder_in_build_is_named_as_such(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = make_kernel(tmp_path)
    make_variant(kernel)
    (kernel / "build" / "junk").mkdir()
    assert main(["wheel", str(kernel), "-o", str(tmp_path / "dist")]) != 0
    err = " ".join(capsys.readouterr().err.split())
    assert f"{kernel / 'build' / 'junk'}: not a built variant (no metadata.json); remove the folder" in err, err
    assert not (tmp_path / "dist").exists() or not any((tmp_path / "dist").iterdir())
