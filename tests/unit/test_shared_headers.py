"""The farm's shared kernel headers (pybuild/include/kernel_farm/): one source, no copies in kernels.

Kernels include them as ``<kernel_farm/...>``; every generated CMake project has their folder on its
include path, and a change to one of them rebuilds what was built with the old one.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from pybuild import generate
from pybuild.generate import INCLUDE, ProjectSpec, render_project
from pybuild.manifest import load_manifest

REPO = Path(__file__).resolve().parents[2]
HEADERS = sorted(p for p in (INCLUDE / "kernel_farm").iterdir() if p.is_file())
KERNEL_SOURCES = sorted(p for p in (REPO / "kernels").glob("*/csrc/*") if p.is_file())
FARM_INCLUDE = re.compile(r'#include\s*[<"](kernel_farm/[^>"]+)[>"]')
RUN = 6  # lines in a row that make a copy


def code_lines(text: str) -> list[str]:
    """The lines that carry code: no blank, comment-only or lone-brace lines, white space folded."""
    lines = (" ".join(line.split()) for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("//") and line not in ("{", "}", "};")]


def copied_runs(source: str, header: str) -> list[str]:
    """The first line of every run of RUN code lines that ``source`` shares with ``header``."""
    runs = {tuple(h[i:i + RUN]) for h in [code_lines(header)] for i in range(len(h) - RUN + 1)}
    src = code_lines(source)
    return [src[i] for i in range(len(src) - RUN + 1) if tuple(src[i:i + RUN]) in runs]


def test_the_shared_headers_exist() -> None:
    assert {p.name for p in HEADERS} >= {"device.cuh", "dtypes.cuh", "memory.cuh", "pdl.cuh", "stage.cuh"}


@pytest.mark.parametrize("header", HEADERS, ids=[p.name for p in HEADERS])
def test_no_kernel_carries_a_copy(header: Path) -> None:
    """Neither the file (under any name) nor a piece of it pasted into a kernel's own sources."""
    text = header.read_text()
    found = {str(p.relative_to(REPO)): runs for p in KERNEL_SOURCES if (runs := copied_runs(p.read_text(), text))}
    assert not found, f"copies of {header.name} (include <kernel_farm/{header.name}> instead): {found}"


def test_the_copy_check_sees_a_pasted_helper() -> None:
    """The check above fails where a kernel pastes a shared helper instead of including it."""
    dtypes = (INCLUDE / "kernel_farm" / "dtypes.cuh").read_text()
    pasted = dtypes[dtypes.index("template <int BYTES>"):dtypes.index("}  // namespace")]
    assert copied_runs("#include <cstdint>\n\nnamespace mine {\n" + pasted + "}\n", dtypes)
    assert not copied_runs("#include <kernel_farm/dtypes.cuh>\n\nusing farm_dtypes::Raw;\n", dtypes)


def test_every_farm_include_of_a_kernel_resolves() -> None:
    used = {(str(p.relative_to(REPO)), m) for p in KERNEL_SOURCES for m in FARM_INCLUDE.findall(p.read_text())}
    assert {m for _, m in used} >= {f"kernel_farm/{h.name}" for h in HEADERS}, used  # none unused
    missing = [(src, m) for src, m in used if not (INCLUDE / m).is_file()]
    assert not missing, missing


@pytest.mark.parametrize("backend", ["cuda", "cpu"])
def test_the_generated_project_has_the_shared_include_folder(backend: str) -> None:
    manifest = load_manifest(REPO / "kernels" / "activation")
    archs = ("9.0",) if backend == "cuda" else ()
    spec = ProjectSpec(backend=backend, ops_name="_activation_test_0123456789", cuda_archs=archs)
    cmake = render_project(manifest, spec)["CMakeLists.txt"]
    assert f'set(PYBUILD_INCLUDE_DIR "{INCLUDE.as_posix()}")' in cmake
    includes = cmake[cmake.index("target_include_directories(${OPS_NAME}"):]
    assert '"${PYBUILD_INCLUDE_DIR}"' in includes[:includes.index(")\n")]


def test_a_changed_shared_header_changes_the_build_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    include = tmp_path / "include"
    shutil.copytree(INCLUDE, include)
    monkeypatch.setattr(generate, "INCLUDE", include)
    before = generate.template_fingerprint()
    pdl = include / "kernel_farm" / "pdl.cuh"
    pdl.write_text(pdl.read_text() + "// changed\n")
    assert generate.template_fingerprint() != before


@pytest.mark.parametrize("change", ["edit", "add"])
def test_a_changed_shared_header_changes_a_compiled_kernels_source_hash(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    """The op namespace and metadata id come from the source hash: other headers, other binaries, another name."""
    from pybuild.digest import source_hash

    include = tmp_path / "include"
    shutil.copytree(INCLUDE, include)
    monkeypatch.setattr(generate, "INCLUDE", include)
    manifests = [load_manifest(REPO / "kernels" / k) for k in ("img2gray", "activation", "rms_norm")]
    before = [source_hash(m) for m in manifests]
    if change == "edit":
        pdl = include / "kernel_farm" / "pdl.cuh"
        pdl.write_text(pdl.read_text() + "// changed\n")
    else:
        (include / "kernel_farm" / "extra.cuh").write_text("#pragma once\n")
    after = [source_hash(m) for m in manifests]
    assert all(a != b for a, b in zip(after, before, strict=True)), (before, after)


def test_a_shared_header_leaves_a_pure_python_kernels_source_hash(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pybuild.digest import source_hash

    include = tmp_path / "include"
    shutil.copytree(INCLUDE, include)
    monkeypatch.setattr(generate, "INCLUDE", include)
    manifest = load_manifest(REPO / "nix" / "tests" / "fixtures" / "noarch-repo")
    assert manifest.noarch
    before = source_hash(manifest)
    (include / "kernel_farm" / "pdl.cuh").write_text("// changed\n")
    assert source_hash(manifest) == before
