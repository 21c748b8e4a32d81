"""Pinned C++ dependencies (`depends = ["cutlass_3_6"]`): the pins, and where a build finds each
header tree: a local override, the cache, the package index's wheel, a verified download; refused
with both hashes when it differs, and one line when nothing can provide it.

The download path is served by a loopback HTTP server from the CUTLASS header archives in
``../shared/deps/cutlass`` where they are present; small archives made here stand in otherwise."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from pybuild.deps import MIRROR_VAR, Pin, deps_dir, pins, resolve, tree_digest
from pybuild.deps.pins import IndexWheel
from pybuild.errors import ToolchainError

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "deps" / "cutlass"
UPSTREAM_DEPENDS_NAMES = {"cutlass_2_10", "cutlass_3_5", "cutlass_3_6", "cutlass_3_8", "cutlass_3_9"}
UPSTREAM_DEPENDS_NAMES |= {"cutlass_4_0", "cutlass_4_4", "cutlass_4_5", "sycl_tla", "metal-cpp"}

HEADERS = {"include/tiny/tiny.h": b"#pragma once\nint tiny();\n", "tools/util/include/tiny/util.h": b"#pragma once\n"}


def _tar(path: Path, prefix: str, files: dict[str, bytes], extra: dict[str, bytes] | None = None) -> Path:
    with tarfile.open(path, "w:gz") as t:
        for rel, data in {**files, **(extra or {})}.items():
            info = tarfile.TarInfo(f"{prefix}/{rel}")
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return path


def _digest(files: dict[str, bytes]) -> str:
    lines = sorted((rel, hashlib.sha256(data).hexdigest()) for rel, data in files.items())
    return hashlib.sha256("".join(f"{d}  {p}\n" for p, d in lines).encode()).hexdigest()


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache of this test's own; no index, no mirror, no override unless the test sets one."""
    monkeypatch.setenv("PYBUILD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    monkeypatch.delenv(MIRROR_VAR, raising=False)
    for name in list(os.environ):
        if name.startswith("PYBUILD_DEP_"):
            monkeypatch.delenv(name)


@pytest.fixture
def tiny(tmp_path: Path) -> Pin:
    """A pin of a two-header tree whose archive lies in ``tmp_path/mirror`` (URL: a closed loopback port)."""
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    _tar(mirror / "tiny-1.0.0.tar.gz", "tiny-1.0.0", HEADERS, {"README.md": b"not a header\n"})
    return Pin(
        name="tiny_1_0",
        project="Tiny",
        version="1.0.0",
        backend="cuda",
        url="http://127.0.0.1:9/tiny-1.0.0.tar.gz",
        archive="tiny-1.0.0.tar.gz",
        prefix="tiny-1.0.0",
        include=("include", "tools/util/include"),
        tree_sha256=_digest(HEADERS),
        nix_hash=None,
    )


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server of ``tmp_path/served``: its base URL and the paths it was asked for."""
    served = tmp_path / "served"
    served.mkdir()
    asked: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(served), **kwargs)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            asked.append(self.path)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", asked
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_every_upstream_name_is_pinned_with_its_exact_version() -> None:
    table = pins()
    assert set(table) == UPSTREAM_DEPENDS_NAMES
    versions = {n: p.version for n, p in table.items() if n.startswith("cutlass_")}
    assert versions == {
        "cutlass_2_10": "2.10.0",
        "cutlass_3_5": "3.5.1",
        "cutlass_3_6": "3.6.0",
        "cutlass_3_8": "3.8.0",
        "cutlass_3_9": "3.9.2",
        "cutlass_4_0": "4.0.0",
        "cutlass_4_4": "4.4.2",
        "cutlass_4_5": "4.5.2",
    }
    for name, pin in table.items():
        assert pin.url.startswith("https://") and pin.nix_hash and pin.nix_hash.startswith("sha256-")
        if name.startswith("cutlass_"):
            assert pin.url.endswith(f"/v{pin.version}.tar.gz") and re.fullmatch(r"[0-9a-f]{64}", pin.tree_sha256 or "")
            assert pin.env_var == "PYBUILD_DEP_" + name.upper()
    assert {p.index.requirement for p in table.values() if p.index} == {
        f"nvidia-cutlass=={v}" for v in ("3.5.1", "3.6.0", "3.8.0")
    }


def test_the_manifest_knows_every_pinned_name() -> None:
    from pybuild.manifest.editions.base import UPSTREAM_DEPENDS

    assert set(pins()) == set(UPSTREAM_DEPENDS) - {"torch"}


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"no CUTLASS test archives at {SHARED}")
@pytest.mark.parametrize("name", sorted(n for n in UPSTREAM_DEPENDS_NAMES if n.startswith("cutlass_")))
def test_each_cutlass_pin_matches_its_tag(name: str, tmp_path: Path) -> None:
    """The pinned tree hash is the hash of the tag's header folders (archives made from the tag)."""
    pin = pins()[name]
    files = {}
    with tarfile.open(SHARED / pin.archive) as t:
        for m in t.getmembers():
            rel = m.name.split("/", 1)[1] if "/" in m.name else ""
            if m.isfile() and rel.startswith(("include/", "tools/util/include/")):
                files[rel] = t.extractfile(m).read()  # type: ignore[union-attr]
    assert _digest(files) == pin.tree_sha256


def test_verified_download_then_cache_hit(tiny: Pin, server: tuple[str, list[str]], tmp_path: Path) -> None:
    base, asked = server
    _tar(tmp_path / "served" / "tiny-1.0.0.tar.gz", "tiny-1.0.0", HEADERS, {"README.md": b"x\n"})
    pin = replace(tiny, url=f"{base}/tiny-1.0.0.tar.gz")
    said: list[str] = []
    got = resolve(pin, said.append)
    assert got.root == deps_dir() / "tiny_1_0-1.0.0" and got.tree_sha256 == pin.tree_sha256
    assert (got.root / "include/tiny/tiny.h").read_bytes() == HEADERS["include/tiny/tiny.h"]
    assert not (got.root / "README.md").exists()  # header folders only
    assert got.include_dirs == (got.root / "include", got.root / "tools/util/include")
    assert asked == ["/tiny-1.0.0.tar.gz"] and any("fetching Tiny 1.0.0" in s for s in said)
    again = resolve(pin)
    assert again.root == got.root and asked == ["/tiny-1.0.0.tar.gz"]  # the cache: nothing fetched
    assert "cache" in again.source


def test_mirror_folder_or_url_replaces_the_pinned_url(
    tiny: Pin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MIRROR_VAR, str(tmp_path / "mirror"))
    assert resolve(tiny).tree_sha256 == tiny.tree_sha256


def test_a_download_that_differs_from_the_pin_is_refused_with_both_hashes(
    tiny: Pin, server: tuple[str, list[str]], tmp_path: Path
) -> None:
    base, _ = server
    evil = {**HEADERS, "include/tiny/tiny.h": b"#pragma once\nint tiny(); // changed\n"}
    _tar(tmp_path / "served" / "tiny-1.0.0.tar.gz", "tiny-1.0.0", evil)
    pin = replace(tiny, url=f"{base}/tiny-1.0.0.tar.gz")
    with pytest.raises(ToolchainError) as info:
        resolve(pin)
    msg = str(info.value)
    assert _digest(evil) in msg and pin.tree_sha256 in msg and "refusing" in msg and "\n" not in msg  # type: ignore[operator]
    assert not (deps_dir() / "tiny_1_0-1.0.0").exists()
    assert [p.name for p in deps_dir().iterdir() if not p.name.endswith(".lock")] == []  # no staging left


def test_offline_with_nothing_cached_is_one_line_naming_the_fix(tiny: Pin) -> None:
    with pytest.raises(ToolchainError) as info:
        resolve(tiny)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith("tiny_1_0 (Tiny 1.0.0) is not in ")
    assert "PYBUILD_DEP_TINY_1_0" in msg and MIRROR_VAR in msg and "tiny-1.0.0.tar.gz" in msg


def test_a_local_folder_overrides_everything(tiny: Pin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = tmp_path / "my-tiny"
    for rel, data in {**HEADERS, "include/tiny/extra.h": b"// patched\n"}.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_bytes(data)
    monkeypatch.setenv("PYBUILD_DEP_TINY_1_0", str(tree))
    said: list[str] = []
    got = resolve(tiny, said.append)
    assert got.root == tree and got.tree_sha256 == tree_digest(tree, tiny.include) != tiny.tree_sha256
    assert any("differs from Tiny 1.0.0 as pinned" in s for s in said)
    assert not deps_dir().exists()  # used in place, nothing copied


def test_a_local_archive_is_verified_and_cached(tiny: Pin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYBUILD_DEP_TINY_1_0", str(tmp_path / "mirror" / "tiny-1.0.0.tar.gz"))
    assert resolve(tiny).root == deps_dir() / "tiny_1_0-1.0.0"
    monkeypatch.setenv("PYBUILD_DEP_TINY_1_0", str(tmp_path / "nowhere"))
    with pytest.raises(ToolchainError, match=r"PYBUILD_DEP_TINY_1_0=.*nowhere: no such folder or archive"):
        resolve(tiny)


def _headers_wheel(links: Path, files: dict[str, bytes]) -> Path:
    """A find-links folder holding tiny-headers 1.0.0, a wheel with ``files`` under
    ``tiny_library/source/`` (as nvidia-cutlass holds CUTLASS's headers)."""
    links.mkdir()
    with zipfile.ZipFile(links / "tiny_headers-1.0.0-py3-none-any.whl", "w") as z:
        for rel, data in files.items():
            z.writestr(f"tiny_library/source/{rel}", data)
        info = "tiny_headers-1.0.0.dist-info"
        z.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: tiny-headers\nVersion: 1.0.0\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    return links


def test_the_index_wheel_is_used_where_the_index_serves_the_version(
    tiny: Pin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pip itself downloads the wheel (from a find-links folder standing in for the index)."""
    monkeypatch.setenv("PIP_FIND_LINKS", str(_headers_wheel(tmp_path / "links", HEADERS)))
    pin = replace(tiny, index=IndexWheel("tiny-headers==1.0.0", "tiny_library/source"))
    said: list[str] = []
    got = resolve(pin, said.append)
    assert got.source == "the package index" and got.tree_sha256 == pin.tree_sha256
    assert said == ["fetching Tiny 1.0.0 (tiny_1_0) from the package index"]


def test_a_wheel_that_differs_falls_through_to_the_download(
    tiny: Pin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = {"include/tiny/tiny.h": b"other\n"}
    monkeypatch.setenv("PIP_FIND_LINKS", str(_headers_wheel(tmp_path / "links", other)))
    monkeypatch.setenv(MIRROR_VAR, str(tmp_path / "mirror"))
    pin = replace(tiny, index=IndexWheel("tiny-headers==1.0.0", "tiny_library/source"))
    got = resolve(pin)
    assert got.source.startswith("file://") and got.tree_sha256 == pin.tree_sha256


def test_a_member_outside_the_tree_is_never_written(tiny: Pin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    with tarfile.open(bad / "tiny-1.0.0.tar.gz", "w:gz") as t:
        for rel, data in HEADERS.items():
            info = tarfile.TarInfo(f"tiny-1.0.0/{rel}")
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        for name in ("tiny-1.0.0/include/../../outside.h", "/tmp/outside.h", "tiny-1.0.0/../outside.h"):
            info = tarfile.TarInfo(name)
            info.size = 1
            t.addfile(info, io.BytesIO(b"x"))
    monkeypatch.setenv(MIRROR_VAR, str(bad))
    got = resolve(tiny)  # the escaping members are no part of the header tree: the tree still verifies
    assert got.tree_sha256 == tiny.tree_sha256
    assert not list(tmp_path.rglob("outside.h"))


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_a_link_in_the_header_tree_refuses_the_archive(
    kind: str, tiny: Pin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    if kind == "tar":
        with tarfile.open(bad / "tiny-1.0.0.tar.gz", "w:gz") as t:
            link = tarfile.TarInfo("tiny-1.0.0/include/tiny/passwd")
            link.type = tarfile.SYMTYPE
            link.linkname = "/etc/passwd"
            t.addfile(link)
        monkeypatch.setenv(MIRROR_VAR, str(bad))
        with pytest.raises(ToolchainError, match="is not a regular file; refusing the archive"):
            resolve(tiny)
    else:
        with zipfile.ZipFile(bad / "tiny_headers-1.0.0-py3-none-any.whl", "w") as z:
            info = zipfile.ZipInfo("tiny_library/source/include/tiny/passwd")
            info.external_attr = 0o120777 << 16
            z.writestr(info, "/etc/passwd")
        with pytest.raises(ToolchainError, match="is a link; refusing the archive"):
            resolve_archive = __import__("pybuild.deps.resolve", fromlist=["_install"])._install
            pin = replace(tiny, index=IndexWheel("tiny-headers==1.0.0", "tiny_library/source"))
            resolve_archive(pin, bad / "tiny_headers-1.0.0-py3-none-any.whl", deps_dir() / "t", "test", strict=True)
    assert not (deps_dir() / "tiny_1_0-1.0.0").exists()


def test_relative_paths_become_absolute(tiny: Pin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CMake configures in another folder: the tree it is handed is absolute, whatever was given."""
    tree = tmp_path / "rel" / "tiny"
    for rel, data in HEADERS.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_bytes(data)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYBUILD_DEP_TINY_1_0", "rel/tiny")
    assert resolve(tiny).root == tree
    monkeypatch.delenv("PYBUILD_DEP_TINY_1_0")
    monkeypatch.setenv("PYBUILD_CACHE_DIR", "relcache")
    monkeypatch.setenv(MIRROR_VAR, "mirror")
    got = resolve(tiny)
    assert got.root.is_absolute() and got.root == tmp_path / "relcache" / "deps" / "tiny_1_0-1.0.0"


def test_an_archive_for_a_pin_without_a_tree_hash_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "sycl-tla.tar.gz"
    _tar(archive, "sycl-tla-0.9.2", HEADERS)
    monkeypatch.setenv("PYBUILD_DEP_SYCL_TLA", str(archive))
    with pytest.raises(
        ToolchainError, match=r"^PYBUILD_DEP_SYCL_TLA=.*no pinned tree hash.*unpack it and name the folder$"
    ):
        resolve(pins()["sycl_tla"])


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"no CUTLASS test archives at {SHARED}")
def test_cutlass_3_6_from_a_loopback_mirror_of_the_tag(
    server: tuple[str, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, asked = server
    (tmp_path / "served" / "cutlass-3.6.0.tar.gz").symlink_to(SHARED / "cutlass-3.6.0.tar.gz")
    monkeypatch.setenv(MIRROR_VAR, base)
    got = resolve(pins()["cutlass_3_6"])
    assert asked == ["/cutlass-3.6.0.tar.gz"]  # PIP_NO_INDEX: the index was not reachable
    assert (got.root / "include/cutlass/gemm/device/gemm.h").is_file()
    assert (got.root / "tools/util/include/cutlass/util/device_memory.h").is_file()


def _kernel(tmp_path: Path, backends: list[str], general: str, sections: dict[str, tuple[str, str, str]]) -> Path:
    """A kernel folder ``kk`` of edition 5: ``sections`` maps a section name to (backend, depends, source
    file); ``general`` adds [general] lines. Its sources are empty: nothing here compiles."""
    folder = tmp_path / "kk"
    (folder / "torch-ext" / "kk").mkdir(parents=True)
    (folder / "torch-ext" / "kk" / "__init__.py").write_text("")
    (folder / "torch-ext" / "torch_binding.cpp").write_text("")
    text = f'[general]\nname = "kk"\nversion = 1\nedition = 5\nlicense = "MIT"\nbackends = {json.dumps(backends)}\n'
    text += general + '[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n'
    for name, (backend, depends, src) in sections.items():
        (folder / src).write_text("")
        text += f'[kernel.{name}]\nbackend = "{backend}"\ndepends = {depends}\nsrc = ["{src}"]\n'
    (folder / "build.toml").write_text(text)
    return folder


def test_generated_cmake_adds_the_headers_for_the_backend_of_the_pin(tmp_path: Path) -> None:
    from pybuild.generate import ProjectSpec, render_project
    from pybuild.manifest import load_manifest

    kdir = _kernel(tmp_path, ["cuda"], "", {"k": ("cuda", '["torch", "cutlass_3_6"]', "k.cu")})
    text = render_project(load_manifest(kdir), ProjectSpec(backend="cuda", ops_name="_kk_cuda_0"))["CMakeLists.txt"]
    call = 'pybuild_dependency(PYBUILD_DEP_CUTLASS_3_6 "include;tools/util/include")'
    assert f'if(PYBUILD_BACKEND STREQUAL "cuda")\n  {call}' in text


def test_preflight_resolves_only_the_pins_of_the_variants_backend(tmp_path: Path) -> None:
    from pybuild.manifest import load_manifest
    from pybuild.preflight import variant_pins
    from pybuild.variants import parse_variant_name

    sections = {
        "k": ("cuda", '["torch", "cutlass_3_6"]', "k.cu"),
        "k_xpu": ("xpu", '["torch", "sycl_tla"]', "k_xpu.cpp"),
        "k_cpu": ("cpu", '["torch"]', "k_cpu.cpp"),
    }
    kdir = _kernel(tmp_path, ["cuda", "xpu", "cpu"], "", sections)
    m = load_manifest(kdir)
    cuda = parse_variant_name("torch213-cxx11-cu130-x86_64-linux")
    cpu = parse_variant_name("torch213-cxx11-cpu-x86_64-linux")
    assert [p.name for p in variant_pins(m, cuda)] == ["cutlass_3_6"]
    assert variant_pins(m, cpu) == ()


@pytest.mark.skipif(not shutil.which("nix-instantiate"), reason="needs nix-instantiate")
def test_nix_names_each_pin_as_pybuild_does() -> None:
    expr = (
        f"let lib = import {REPO / 'nix' / 'lib'}; in builtins.attrNames "
        f"(lib.dependencyEnv (x: x) (builtins.attrNames (builtins.fromJSON (builtins.readFile "
        f"{REPO / 'pybuild' / 'deps' / 'dependencies.json'})).dependencies))"
    )
    out = subprocess.run(
        ["nix-instantiate", "--eval", "--strict", "--json", "--expr", expr], capture_output=True, text=True, check=True
    )
    assert sorted(json.loads(out.stdout)) == sorted(p.env_var for p in pins().values())


def test_python_depends_become_the_loaders_packages(tmp_path: Path) -> None:
    """`python-depends` names map to pip packages through the loader's own table; `pybuild test` adds
    them to the variant's environment beside pytest and the loader."""
    pytest.importorskip("kernels")
    from pybuild.cli.test import _test_packages
    from pybuild.deps.python import python_requirements
    from pybuild.manifest import load_manifest
    from pybuild.variants import parse_variant_name

    assert python_requirements(["einops", "tvm-ffi"], "cpu") == ("einops", "apache-tvm-ffi")
    assert python_requirements(["nvidia-cutlass-dsl"], "cuda") == ("nvidia-cutlass-dsl",)
    general = 'python-depends = ["einops", "tvm-ffi"]\n'
    kdir = _kernel(tmp_path, ["cpu"], general, {"k": ("cpu", '["torch"]', "k.cpp")})
    packages = _test_packages([load_manifest(kdir)], parse_variant_name("torch213-cxx11-cpu-x86_64-linux"))
    assert packages[0] == "pytest" and packages[1].startswith("kernels==") and packages[2].startswith("kernels-data")
    assert packages[3:] == ("einops", "apache-tvm-ffi")
