"""`python -m pybuild collect`: a Nix result/ into kernels/<name>/build/, verified first, atomic per variant.

The result trees here are made by hand the way the Nix build leaves them (read-only files, variant
folders or kernel/variant folders), so no Nix is needed.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from pybuild.__main__ import main
from pybuild.collect import collect
from pybuild.digest import digest_files
from pybuild.errors import CollectError
from pybuild.manifest import load_manifest
from pybuild.metadata import make_metadata, write_metadata

VARIANT = "torch213-cxx11-cpu-x86_64-linux"
OTHER = "torch212-cxx11-cpu-x86_64-linux"


def tree(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def make_variant(dest: Path, kernel_dir: Path, variant: str = VARIANT, payload: bytes = b"\x7fELF build 1") -> Path:
    """A finished variant folder as pybuild writes it (package, extension, metadata.json with digest)."""
    manifest = load_manifest(kernel_dir)
    ops = f"_{manifest.python_name}_cpu_0123456789"
    pkg = dest / variant / manifest.python_name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from ._ops import ops\n")
    (pkg / "_ops.py").write_text(f"ops = None  # {ops}\n")
    (pkg / f"{ops}.abi3.so").write_bytes(payload)
    meta = make_metadata(
        manifest, ops_name=ops, backend="cpu", archs=(), variant_dir=dest / variant, extra={"variant": variant}
    )
    write_metadata(dest / variant, meta)
    return dest / variant


def read_only(path: Path) -> None:
    """Like the Nix store: files r--r--r--, folders r-xr-xr-x."""
    for p in sorted(path.rglob("*"), reverse=True):
        p.chmod(0o555 if p.is_dir() else 0o444)
    path.chmod(0o555)


@pytest.fixture
def farm(tmp_path: Path, guide_kernel: Path) -> Path:
    root = tmp_path / "farm"
    (root / "kernels").mkdir(parents=True)
    shutil.move(str(guide_kernel), root / "kernels" / "img2gray")
    return root


@pytest.fixture
def result(tmp_path: Path, farm: Path) -> Path:
    out = tmp_path / "result"
    make_variant(out, farm / "kernels" / "img2gray")
    return out


@pytest.fixture(autouse=True)
def _writable_again(tmp_path: Path):  # noqa: ANN202
    yield
    for p in tmp_path.rglob("*"):  # let pytest clean up the read-only trees
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | stat.S_IWUSR)


def test_added_then_unchanged_then_updated(farm: Path, result: Path, tmp_path: Path) -> None:
    read_only(result)
    final = farm / "kernels" / "img2gray" / "build" / VARIANT
    [first] = collect(result, farm)
    assert (first.kernel, first.variant, first.status, first.path) == ("img2gray", VARIANT, "added", final)
    assert tree(final) == tree(result / VARIANT)
    assert all(os.stat(p).st_mode & stat.S_IWUSR for p in [final, *final.rglob("*")]), "copies must be writable"

    assert [c.status for c in collect(result, farm)] == ["unchanged"]

    newer = tmp_path / "newer"
    make_variant(newer, farm / "kernels" / "img2gray", payload=b"\x7fELF build 2")
    assert [c.status for c in collect(newer, farm)] == ["updated"]
    assert tree(final) == tree(newer / VARIANT)
    from pybuild.staging import leftovers

    assert leftovers(farm / "kernels" / "img2gray") == [], "no staging left behind"


def test_nested_result_of_several_kernels(farm: Path, tmp_path: Path) -> None:
    """`nix build` of the default package with several kernels: result/<kernel>/<variant>/."""
    out = tmp_path / "result"
    make_variant(out / "img2gray", farm / "kernels" / "img2gray", VARIANT)
    make_variant(out / "img2gray", farm / "kernels" / "img2gray", OTHER)
    got = collect(out, farm)
    assert [(c.variant, c.status) for c in got] == [(OTHER, "added"), (VARIANT, "added")]


def test_store_links_are_followed(farm: Path, tmp_path: Path) -> None:
    """The joined package links result/<variant> to each variant's own store path."""
    store = tmp_path / "store"
    make_variant(store, farm / "kernels" / "img2gray")
    out = tmp_path / "result"
    out.mkdir()
    (out / VARIANT).symlink_to(store / VARIANT)
    [c] = collect(out, farm)
    assert c.status == "added" and not (c.path).is_symlink()
    assert tree(c.path) == tree(store / VARIANT)


def _delete(rel: str) -> Callable[[Path], None]:
    return lambda v: (v / rel).unlink()


def _append(rel: str) -> Callable[[Path], None]:
    return lambda v: (v / rel).write_bytes((v / rel).read_bytes() + b"corrupt")


def _edit_metadata(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def edit(v: Path) -> None:
        meta = json.loads((v / "metadata.json").read_text())
        change(meta)
        (v / "metadata.json").write_text(json.dumps(meta))

    return edit


def _other_kernel(v: Path) -> None:
    """A well-formed variant of a kernel this farm does not have."""
    (v / "img2gray").rename(v / "relu")
    _edit_metadata(lambda m: m.update(name="relu", digest={"algorithm": "sha256", "files": digest_files(v)}))(v)


def _rename(to: str) -> Callable[[Path], None]:
    return lambda v: v.rename(v.parent / to)


BROKEN = [
    ("partial-missing-file", _delete("img2gray/_ops.py"), "missing file img2gray/_ops.py"),
    ("corrupt-file", _append("img2gray/__init__.py"), "changed file img2gray/__init__.py"),
    ("stray-file", lambda v: (v / "img2gray" / "stray.py").write_text("x"), "unexpected file img2gray/stray.py"),
    ("no-metadata", _delete("metadata.json"), "metadata.json is missing"),
    ("metadata-not-json", lambda v: (v / "metadata.json").write_text("{"), "invalid JSON"),
    ("no-digest", _edit_metadata(lambda m: m.pop("digest")), "metadata.json has no digest"),
    ("unknown-kernel", _other_kernel, "kernel 'relu' is not a kernel of"),
    ("renamed-folder", _rename("torch211-cxx11-cpu-x86_64-linux"), f"built as '{VARIANT}'; the folder was renamed"),
    ("not-a-variant-name", _rename("torch213-cpu-linux"), "does not parse"),
]


@pytest.mark.parametrize(("label", "breakage", "fragment"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_result_is_refused_and_build_untouched(
    farm: Path,
    result: Path,
    tmp_path: Path,
    label: str,
    breakage: Callable[[Path], None],
    fragment: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    previous = tmp_path / "previous"
    make_variant(previous, farm / "kernels" / "img2gray", payload=b"\x7fELF older build")
    collect(previous, farm)
    build = farm / "kernels" / "img2gray" / "build"
    before = tree(build)
    make_variant(result, farm / "kernels" / "img2gray", OTHER)  # a good variant beside the broken one
    breakage(result / VARIANT)
    read_only(result)

    assert main(["collect", str(result), "--farm", str(farm)]) == CollectError.exit_code
    err = capsys.readouterr().err
    assert fragment in " ".join(err.split()), err
    assert "nothing was collected" in " ".join(err.split())
    assert "Traceback" not in err
    assert tree(build) == before, "a refused result must leave build/ exactly as it was"


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda p: None, "not found or not a folder"),
        (lambda p: p.mkdir(), "holds no variant folders"),
        (lambda p: (p.mkdir(), (p / "notes.txt").write_text("x")), "unexpected file"),
    ],
    ids=["missing", "empty", "stray-file"],
)
def test_not_a_result(
    farm: Path, tmp_path: Path, make: Callable[[Path], object], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "result"
    make(path)
    assert main(["collect", str(path), "--farm", str(farm)]) == CollectError.exit_code
    assert fragment in capsys.readouterr().err


def test_cli_json_summary(farm: Path, result: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["collect", str(result), "--farm", str(farm), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["kernel"], r["variant"], r["status"]) for r in rows] == [("img2gray", VARIANT, "added")]


def test_broken_build_toml_of_the_kernel_is_named(farm: Path, result: Path, capsys: pytest.CaptureFixture[str]) -> None:
    toml = farm / "kernels" / "img2gray" / "build.toml"
    toml.write_text(toml.read_text().replace('backend = "cuda"', 'backend = "cuda"\ncuda-capabilites = ["9.0"]'))
    assert main(["collect", str(result), "--farm", str(farm)]) == CollectError.exit_code
    err = " ".join(capsys.readouterr().err.split())
    assert "kernel 'img2gray' cannot be placed" in err and "unknown key `cuda-capabilites`" in err, err
    assert str(toml) in err and "not a kernel of" not in err
    assert not (farm / "kernels" / "img2gray" / "build").exists()


def test_unknown_kernel_lists_unreadable_manifests(
    farm: Path, result: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(farm / "kernels" / "img2gray", farm / "kernels" / "relu_v2")
    (farm / "kernels" / "relu_v2" / "build.toml").write_text("[general\n")
    _other_kernel(result / VARIANT)
    assert main(["collect", str(result), "--farm", str(farm)]) == CollectError.exit_code
    err = " ".join(capsys.readouterr().err.split())
    assert "kernel 'relu' is not a kernel of" in err and "unreadable: kernels/relu_v2/build.toml" in err, err


def test_two_kernel_folders_with_one_name_place_nothing(
    farm: Path, result: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(farm / "kernels" / "img2gray", farm / "kernels" / "img2gray_copy")
    assert main(["collect", str(result), "--farm", str(farm)]) == CollectError.exit_code
    err = " ".join(capsys.readouterr().err.split())
    assert "both name the kernel 'img2gray'" in err and "img2gray_copy/build.toml" in err, err
    assert not (farm / "kernels" / "img2gray" / "build").exists()
    assert not (farm / "kernels" / "img2gray_copy" / "build").exists()


def test_a_failed_copy_names_the_file_and_the_cause(farm: Path, result: Path, monkeypatch) -> None:
    """shutil.copytree reports (source, destination, why) per file: the message shows `source: why`."""
    import pybuild.collect

    def failing_copy(source: Path, dest: Path) -> None:
        raise shutil.Error([(str(source / "x.so"), str(dest / "x.so"), "[Errno 5] Input/output error")])

    monkeypatch.setattr(pybuild.collect, "_copy_writable", failing_copy)
    with pytest.raises(CollectError) as e:
        collect(result, farm)
    assert f"{result / VARIANT / 'x.so'}: [Errno 5] Input/output error" in str(e.value), e.value
    assert "('" not in str(e.value)
