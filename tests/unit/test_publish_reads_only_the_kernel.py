"""`publish` uploads only the kernel's own files: nothing reached through a symlink, at any depth, in any
published folder (tests/, csrc/, torch-ext/, build/), and nothing that is not a regular file. The dry run
lists exactly what the upload would send, with sizes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pybuild.__main__ import main
from pybuild.errors import PublishError, PybuildError
from pybuild.manifest import load_manifest
from pybuild.publish import select_files
from tests.helpers.fakebuild import one_variant_matrix

REPO = "org/tinyk"
SECRET = "id_rsa"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the kernel holding a secret (an ~/.ssh stand-in)."""
    d = tmp_path / "home" / ".ssh"
    d.mkdir(parents=True)
    (d / SECRET).write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    return d


def _link_top(kernel: Path, outside: Path, folder: str) -> Path:
    """``kernel/<folder>`` replaced by a symlink to a copy of it plus the secret, outside the kernel."""
    import shutil

    target = outside.parent / f"{folder}-elsewhere"
    if (kernel / folder).exists():
        shutil.copytree(kernel / folder, target, symlinks=True)
        shutil.rmtree(kernel / folder)
    else:
        target.mkdir()
    (target / SECRET).write_text((outside / SECRET).read_text())
    (kernel / folder).symlink_to(target)
    return kernel / folder


@pytest.mark.parametrize("folder", ["tests", "csrc", "torch-ext", "build"])
def test_a_published_folder_that_is_a_symlink_is_refused_by_name(kernel: Path, outside: Path, folder: str) -> None:
    link = _link_top(kernel, outside, folder)
    with pytest.raises(PybuildError) as err:  # build.toml's own sources through the link: refused on reading it
        select_files(load_manifest(kernel))
    msg = str(err.value)
    assert (str(link) in msg or f"'{folder}/" in msg) and "symlink" in msg and "copy" in msg, msg


@pytest.mark.parametrize("where", ["tests/data/deeper", "csrc/vendor", "torch-ext/tinyk/assets", "build/extra"])
def test_a_symlinked_folder_at_any_depth_is_refused(kernel: Path, outside: Path, where: str) -> None:
    link = kernel / where
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    with pytest.raises(PublishError, match="symlink") as err:
        select_files(load_manifest(kernel))
    assert str(link) in str(err.value)


def test_a_symlinked_file_deep_in_tests_is_refused(kernel: Path, outside: Path) -> None:
    (kernel / "tests" / "a" / "b").mkdir(parents=True)
    link = kernel / "tests" / "a" / "b" / "key.txt"
    link.symlink_to(outside / SECRET)
    with pytest.raises(PublishError, match="symlink") as err:
        select_files(load_manifest(kernel))
    assert str(link) in str(err.value)


def test_a_fifo_in_a_published_folder_is_refused_not_read(kernel: Path) -> None:
    (kernel / "tests").mkdir()
    os.mkfifo(kernel / "tests" / "pipe")
    with pytest.raises(PublishError, match="not a regular file"):
        select_files(load_manifest(kernel))


def test_the_dry_run_refuses_the_link_and_lists_no_secret(
    kernel: Path, outside: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _link_top(kernel, outside, "tests")
    variants = one_variant_matrix(tmp_path / "variants.json")
    argv = ["publish", str(kernel), "--repo-id", REPO, "--version", "1.0.0", "--dry-run", "--variants", str(variants)]
    assert main(argv) == 9
    captured = capsys.readouterr()
    assert SECRET not in captured.out
    err = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert len(err) == 1 and "symlink" in err[0] and "Traceback" not in captured.err


def test_the_dry_run_lists_exactly_the_files_and_sizes_a_release_holds(
    kernel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (kernel / "tests").mkdir()
    (kernel / "tests" / "test_tinyk.py").write_text("def test(): pass\n")
    variants = one_variant_matrix(tmp_path / "variants.json")
    argv = [
        "publish",
        str(kernel),
        "--repo-id",
        REPO,
        "--version",
        "1.0.0",
        "--dry-run",
        "--json",
        "--variants",
        str(variants),
    ]
    assert main(argv) == 0
    listed = {f["path"]: f["size"] for f in json.loads(capsys.readouterr().out)["files"]}
    expected = {rel: p.stat().st_size for rel, p in select_files(load_manifest(kernel))}
    assert {k: v for k, v in listed.items() if k != "README.md"} == expected
    assert "tests/test_tinyk.py" in listed and listed["tests/test_tinyk.py"] == len("def test(): pass\n")


def test_publish_never_enters_staging_folders_or_excluded_parts(kernel: Path) -> None:
    """A concurrent build's staging folder (or __pycache__) may hold anything, or vanish while publish
    lists the files: publish never opens it (a name that is not UTF-8 inside proves it)."""
    for folder in (kernel / "build" / ".staging.torch-cpu.1234.abcd1234", kernel / "torch-ext" / "__pycache__"):
        (folder / "sub").mkdir(parents=True)
        (folder / "sub" / os.fsdecode(b"bad-\xff-name")).write_bytes(b"")
    paths = [rel for rel, _ in select_files(load_manifest(kernel))]
    assert paths and not any(".staging." in p or "__pycache__" in p for p in paths)


def test_a_symlinked_folder_in_an_include_folder_is_refused_not_left_out(kernel: Path, outside: Path) -> None:
    """An include folder outside csrc/ is uploaded for rebuilds: a symlinked folder in it is refused by
    name (it was silently left out: the release could not rebuild, or the link would be followed)."""
    toml = kernel / "build.toml"
    toml.write_text(
        toml.read_text().replace('src = ["csrc/tinyk_cpu.cpp"]', 'src = ["csrc/tinyk_cpu.cpp"]\ninclude = ["include"]')
    )
    (kernel / "include").mkdir()
    (kernel / "include" / "real.h").write_text("#pragma once\n")
    (kernel / "include" / "ext").symlink_to(outside)
    with pytest.raises(PublishError, match=r"include/ext"):
        select_files(load_manifest(kernel))
