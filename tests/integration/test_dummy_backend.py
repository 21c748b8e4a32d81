"""A backend added from one module and one data entry (``tests/helpers/dummy_backend.py`` and its
facts, ``dummy_backend.json``), and nowhere else, reaches every place a backend shows: the matrix
(`pybuild variants`), variant names, the CLI's `--backend` choices, the generated CMake project (its
fragment), a kernel built with its stub compiler and loaded, and the Nix library (its facts, and
Nix's variant names equal to pybuild's)."""

from __future__ import annotations

import inspect
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pybuild import backends
from pybuild.__main__ import main
from pybuild.backends import BaseBackend
from pybuild.errors import VariantsError
from pybuild.generate import ProjectSpec, render_project
from pybuild.manifest import load_manifest
from pybuild.variants import expand_matrix, parse_variant_name
from tests.helpers import dummy_backend
from tests.helpers.fakebuild import make_kernel
from tests.helpers.procs import run_py

REPO = Path(__file__).resolve().parents[2]

MATRIX = {
    "torch": [{"version": "2.13", "cpu": True, "dummy": ["1.2", "2.0"]}],
    "cxx-abi": ["cxx11"],
    "systems": ["x86_64-linux", "aarch64-darwin"],
}
NAMES = ["torch213-cxx11-dmy12-x86_64-linux", "torch213-cxx11-dmy20-x86_64-linux"]


@pytest.fixture
def dummy() -> Iterator[BaseBackend]:
    backend = dummy_backend.register()
    try:
        yield backend
    finally:
        dummy_backend.unregister()


@pytest.fixture
def dummy_kernel(tmp_path: Path) -> Path:
    """A kernel of backend "dummy" only (`backends = ["dummy"]`, one `[kernel.*]` of it), beside a matrix
    that lists it."""
    (tmp_path / "variants.json").write_text(json.dumps(MATRIX))
    root = make_kernel(tmp_path)
    toml = root / "build.toml"
    text = toml.read_text().replace("version = 1\n", 'version = 1\nlicense = "Apache-2.0"\nbackends = ["dummy"]\n', 1)
    toml.write_text(text.replace('backend = "cpu"', 'backend = "dummy"'))
    return root


def test_variants_lists_it(dummy: BaseBackend, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "variants.json").write_text(json.dumps(MATRIX))
    assert main(["variants", "--variants", str(tmp_path / "variants.json"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["torch213-cxx11-cpu-x86_64-linux", *NAMES]  # after the built-in ones
    assert [(r["backend"], r["backend-version"]) for r in rows[1:]] == [("dummy", "1.2"), ("dummy", "2.0")]
    assert main(["variants", "--variants", str(tmp_path / "variants.json"), "-q"]) == 0
    assert capsys.readouterr().out.split() == ["torch213-cxx11-cpu-x86_64-linux", *NAMES]
    v = parse_variant_name(NAMES[0])
    assert (v.backend, v.backend_version, v.backend_tag) == ("dummy", "1.2", "dmy12")


def test_variants_refuses_it_once_gone(tmp_path: Path) -> None:
    """The same matrix without the module: the key is unknown (the test above saw the module at work)."""
    with pytest.raises(VariantsError, match=r"unknown key\(s\) \['dummy'\]"):
        expand_matrix(MATRIX, tmp_path / "variants.json")


def test_cli_offers_it(dummy: BaseBackend, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["generate", "--help"])
    assert "dummy" in capsys.readouterr().out


def test_generate_places_its_fragment(dummy: BaseBackend) -> None:
    manifest = load_manifest(REPO / "kernels" / "img2gray")
    files = render_project(manifest, ProjectSpec(backend="dummy", ops_name="_img2gray_test", cuda_archs=("a1",)))
    assert (
        'if(PYBUILD_BACKEND STREQUAL "dummy")\n  message(STATUS "dummy toolkit for a1")\nendif()\n'
        in files["CMakeLists.txt"]
    )
    assert "function(pybuild_dummy_toolkit)\nendfunction()\n" in files["cmake/pybuild.cmake"]
    other = render_project(manifest, ProjectSpec(backend="cpu", ops_name="_img2gray_test"))
    assert 'message(STATUS "dummy toolkit for ")' in other["CMakeLists.txt"]  # another backend's build: no archs


def test_a_build_toml_names_it(dummy: BaseBackend, dummy_kernel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`backends = ["dummy"]` and a `[kernel.*]` section of it pass check-config, generate and lock."""
    manifest = load_manifest(dummy_kernel)
    assert manifest.backends == ("dummy",)
    assert [k.backend for k in manifest.kernels] == ["dummy"]
    matrix = str(dummy_kernel.parent / "variants.json")
    assert main(["check-config", "--variants", matrix, "--json", str(dummy_kernel)]) == 0
    assert NAMES[0] in capsys.readouterr().out
    assert main(["generate", "--backend", "dummy", "-q", str(dummy_kernel)]) == 0
    assert 'message(STATUS "dummy toolkit for ")' in (dummy_kernel / "CMakeLists.txt").read_text()
    assert main(["lock", "--variants", matrix, "-q", str(dummy_kernel)]) == 0
    lock = json.loads((dummy_kernel / "variants.lock.json").read_text())
    assert NAMES[0] in json.dumps(lock) and NAMES[1] in json.dumps(lock)


def test_edition_5_names_it(dummy: BaseBackend, dummy_kernel: Path) -> None:
    """Upstream's edition 5 takes it where it takes a backend: `backends`, `[kernel.*]`, `[torch.stable-abi]`."""
    toml = dummy_kernel / "build.toml"
    toml.write_text(
        toml.read_text()
        .replace("version = 1\n", "version = 1\nedition = 5\n")
        .replace("[kernel.", '[torch.stable-abi]\ndummy = "2.11"\n\n[kernel.', 1)
    )
    manifest = load_manifest(dummy_kernel)
    assert (manifest.backends, manifest.stable_abi_for("dummy")) == (("dummy",), (2, 11))


@pytest.mark.nix
@pytest.mark.skipif(shutil.which("nix-instantiate") is None, reason="needs nix-instantiate (.ci/setup installs nix)")
def test_nix_reads_its_facts(dummy: BaseBackend, tmp_path: Path) -> None:
    facts = tmp_path / "backends.json"
    facts.write_text(json.dumps(backends.facts_json()))
    matrix = json.dumps(json.dumps(MATRIX))  # a Nix string literal of the JSON text
    expr = (
        f"let lib = (import {REPO}/nix/lib).withBackendFacts (builtins.fromJSON (builtins.readFile {facts})); "
        "in { names = lib.backendNames; "
        'tag = lib.backendTag { backend = "dummy"; backendVersion = "1.2"; }; '
        'wheel = lib.backends.dummy.wheelTag "1.2"; '
        f"variants = map lib.variantName (lib.expandMatrix (builtins.fromJSON {matrix})); }}"
    )
    proc = subprocess.run(
        ["nix-instantiate", "--eval", "--strict", "--json", "-E", expr],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["names"] == [*backends.names()]
    assert out["names"][-1] == "dummy"
    assert (out["tag"], out["wheel"]) == ("dmy12", "dmy12")
    assert out["variants"] == [v.name for v in expand_matrix(MATRIX).variants]


STUB_KERNEL = {
    "build.toml": """\
[general]
name = "stubk"
version = 1
license = "Apache-2.0"
backends = ["dummy"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.add_one]
backend = "dummy"
depends = ["torch"]
src = ["csrc/add_one.cpp"]
dummy-flags = ["-DSTUBK_STEP=1"]
""",
    "csrc/add_one.cpp": """\
#include <torch/all.h>

#ifndef PYBUILD_DUMMY_STUB
#error "compiled without the dummy backend's stub compiler settings (its CMake fragment)"
#endif

// out = x + STUBK_STEP, element by element; STUBK_STEP comes from the section's `dummy-flags`.
void add_one(torch::Tensor const& x, torch::Tensor& out) {
  TORCH_CHECK(x.sizes() == out.sizes(), "add_one: expected out of x's shape ", x.sizes(), ", got ", out.sizes());
  out.copy_(x + STUBK_STEP);
}
""",
    "torch-ext/torch_binding.cpp": """\
#include <torch/all.h>
#include <torch/library.h>

#include "registration.h"

void add_one(torch::Tensor const& x, torch::Tensor& out);

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("add_one(Tensor x, Tensor! out) -> ()");
#if defined(DUMMY_KERNEL)
  ops.impl("add_one", c10::DeviceType::CPU, &add_one);
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
""",
    "torch-ext/stubk/__init__.py": """\
import torch

from ._ops import ops

__all__ = ["add_one"]


def add_one(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    ops.add_one(x, out)
    return out
""",
}

#: `pybuild build` in a fresh interpreter that has the dummy backend's module imported and registered.
BUILD = """
import sys
from tests.helpers import dummy_backend
dummy_backend.register()
from pybuild.__main__ import main
sys.exit(main(["build", "--variants", sys.argv[1], "-q", sys.argv[2]]))
"""

#: The built variant imported as the loader imports it (its package under metadata.json's id), in a
#: fresh interpreter that knows nothing of the dummy backend.
LOAD = """
import importlib.util, json, sys
from pathlib import Path
import torch
variant = Path(sys.argv[1])
meta = json.loads((variant / "metadata.json").read_text())
spec = importlib.util.spec_from_file_location(meta["id"], variant / "stubk" / "__init__.py")
module = importlib.util.module_from_spec(spec)
sys.modules[meta["id"]] = module
spec.loader.exec_module(module)
y = module.add_one(torch.arange(4, dtype=torch.float32))
print(json.dumps({"y": y.tolist(), "backend": meta["backend"], "variant": meta["pybuild"]["variant"]}))
"""


@pytest.mark.slow
def test_it_builds_and_loads_a_kernel(tmp_path: Path) -> None:
    """The stub compiler builds a kernel of backend "dummy" only, which then loads and runs; the CMake
    fragment (PYBUILD_DUMMY_STUB) and the kernel type's own key (`dummy-flags`) both took part."""
    pytest.importorskip("torch")
    from pybuild.host import host_system, torch_info

    info, system = torch_info(), host_system()
    if not system.endswith("-linux"):
        pytest.skip(f"the dummy backend exists on Linux only (this is {system})")
    kernel = tmp_path / "stubk"
    for rel, text in STUB_KERNEL.items():
        (kernel / rel).parent.mkdir(parents=True, exist_ok=True)
        (kernel / rel).write_text(text)
    matrix = tmp_path / "variants.json"
    torch_entry = {"version": info.major_minor, "dummy": [dummy_backend.STUB_TOOLKIT]}
    matrix.write_text(json.dumps({"torch": [torch_entry], "cxx-abi": [info.cxx_abi], "systems": [system]}))
    name = f"torch{info.major_minor.replace('.', '')}-{info.cxx_abi}-dmy12-{system}"
    proc = subprocess.run(
        [sys.executable, "-c", BUILD, str(matrix), str(kernel)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    variant = kernel / "build" / name
    assert sorted(p.name for p in (kernel / "build").iterdir()) == [name]
    out = run_py(LOAD.replace("sys.argv[1]", repr(str(variant))))
    assert out == {"y": [1.0, 2.0, 3.0, 4.0], "backend": {"type": "dummy"}, "variant": name}


def test_the_doc_lists_the_files_this_test_adds() -> None:
    """docs/adding-a-backend.md's table of the files a new backend touches names the dummy backend's
    files, and those two are all the dummy backend is made of."""
    doc = (REPO / "docs" / "adding-a-backend.md").read_text()
    blocks = doc.split("## The files a new backend touches", 1)[1].split("\n\n")
    table = next(b for b in blocks if b.startswith("|"))  # the section's first table
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| file ")]
    named = sorted(f for row in rows for f in re.findall(r"`(tests/helpers/[^`]+)`", row))
    module = Path(dummy_backend.__file__)
    assert named == [str(p.relative_to(REPO)) for p in (module.with_suffix(".json"), module)]
    assert len(rows) == 2
    for part in (dummy_backend.Dummy, dummy_backend.DummyKernel):
        assert Path(inspect.getfile(part)) == module
    assert dummy_backend.FACTS.name == json.loads(module.with_suffix(".json").read_text())["name"]
