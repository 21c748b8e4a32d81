"""The declared manifest schema: one kernel type per backend whose fields are the keys, editions
derived from them, a new backend's kernel type taking part without other edits, the lock Nix reads,
and the digest computed as the loader's own library computes it."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import test_editions

from pybuild import backends
from pybuild.backends import BaseBackend, Facts
from pybuild.backends.cpu import CpuKernel
from pybuild.backends.cuda import CudaKernel
from pybuild.backends.metal import MetalKernel
from pybuild.backends.rocm import RocmKernel
from pybuild.backends.xpu import XpuKernel
from pybuild.errors import ManifestError
from pybuild.manifest import load_manifest, parse_manifest
from pybuild.manifest.editions import SCHEMAS, validate
from pybuild.manifest.kernels import kernel_type, kernel_types
from pybuild.manifest.lock import LOCK_FILE, lock_document, main, write_lock
from pybuild.sections.kernel import KernelSpec
from pybuild.sections.keys import key
from pybuild.variants import load_matrix, parse_variant_name

REPO = Path(__file__).resolve().parents[2]


kdir = test_editions.kdir  # the folder with the files V5 names
V5 = test_editions.V5  # the edition-5 manifest with every key


def test_each_section_is_the_type_of_its_backend(kdir: Path) -> None:
    m = parse_manifest(V5, kdir / "build.toml")
    by = {k.name: k for k in m.kernels}
    assert [type(by[n]) for n in ("k", "k_cpu", "k_rocm", "k_xpu", "k_metal")] == [
        CudaKernel,
        CpuKernel,
        RocmKernel,
        XpuKernel,
        MetalKernel,
    ]
    assert not hasattr(by["k_cpu"], "cuda_capabilities") and not hasattr(by["k"], "rocm_archs")
    assert by["k_rocm"].rocm_archs == ("gfx942",)  # type: ignore[attr-defined]
    assert kernel_type("xpu") is XpuKernel


def test_flags_carry_their_language(kdir: Path) -> None:
    by = {k.name: k for k in parse_manifest(V5, kdir / "build.toml").kernels}
    assert by["k"].compile_options == (("CXX,OBJCXX", ("-DCXX",)), ("CUDA", ("-DCUDA_ONLY",)))
    assert by["k_rocm"].compile_options == (("HIP", ("-DHIP_ONLY",)),)
    assert by["k_xpu"].compile_options == (("CXX", ("-DSYCL_ONLY",)),)


def test_cuda_minver_applies_to_cuda_variants_only(kdir: Path) -> None:
    cuda = next(k for k in parse_manifest(V5, kdir / "build.toml").kernels if isinstance(k, CudaKernel))
    assert cuda.cuda_minver == (12, 8)
    assert not cuda.applies_to(parse_variant_name("torch212-cxx11-cu126-x86_64-linux"))
    assert cuda.applies_to(parse_variant_name("torch212-cxx11-cu130-x86_64-linux"))


@pytest.mark.parametrize("edition", [5, 4, 3])
def test_a_key_of_another_backend_names_that_backend(kdir: Path, edition: int) -> None:
    data = {
        "general": {"name": "demo", "version": 1, "license": "MIT", "backends": ["cpu"], "edition": 5},
        "torch": {"src": ["torch-ext/torch_binding.cpp"]},
        "kernel": {"k": {"backend": "cpu", "depends": [], "src": ["csrc/k_cpu.cpp"], "rocm-archs": ["gfx942"]}},
    }
    if edition != 5:
        del data["general"]["edition"]
    assert validate(data, edition) == ('unknown key `rocm-archs` in [kernel.k]; it only applies to backend "rocm"')


def test_the_farm_format_refuses_a_key_of_another_backend(kdir: Path) -> None:
    text = (
        '[general]\nname = "demo"\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n'
        '[kernel.k]\nbackend = "cpu"\nsrc = ["csrc/k_cpu.cpp"]\ncuda-flags = ["-O3"]\n'
    )
    with pytest.raises(
        ManifestError,
        match=r'`cuda-flags` in \[kernel.k\] only applies to backend "cuda" '
        r"\(this one is 'cpu'\)$",
    ):
        parse_manifest(text, kdir / "build.toml")


def test_kernel_tables_are_derived_from_the_types() -> None:
    for edition, schema in SCHEMAS.items():
        tables = schema.kernels()
        assert set(tables) == set(kernel_types()), edition
        if edition != "farm":
            for backend, t in kernel_types().items():
                declared = {f.metadata["toml"] for f in dataclasses.fields(t) if "toml" in f.metadata}
                assert set(tables[backend].keys) == {"backend", *declared}, (edition, backend)


@dataclasses.dataclass(frozen=True)
class _NpuKernel(KernelSpec):
    backend = "npu"  # type: ignore[misc]
    npu_flags: tuple[str, ...] = key("npu-flags", "str_list", language="CXX")


class _Npu(BaseBackend):
    kernel_type = _NpuKernel


@pytest.fixture
def npu() -> Iterator[None]:
    facts = Facts("npu", "NPU", True, False, "npuk", 0, "linux", "npuk", None)
    backends.register(_Npu(facts))
    try:
        yield
    finally:
        backends.unregister("npu")


@pytest.mark.usefixtures("npu")
def test_a_new_backends_kernel_type_is_part_of_every_edition(kdir: Path) -> None:
    """A backend declares its type in its own module; the schema, the did-you-mean and the conversion follow."""
    assert kernel_type("npu") is _NpuKernel
    data = {
        "general": {"name": "demo", "version": 1, "license": "MIT", "backends": ["cpu"], "edition": 5},
        "torch": {"src": ["torch-ext/torch_binding.cpp"]},
        "kernel": {"n": {"backend": "npu", "depends": [], "src": ["csrc/k_cpu.cpp"], "npu-flags": ["-x"]}},
    }
    assert validate(data, 5) is None
    data["kernel"]["n"]["npu-flag"] = ["-y"]
    assert validate(data, 5) == "unknown key `npu-flag` in [kernel.n]; did you mean `npu-flags`?"
    data["kernel"]["n"] = {"backend": "cpu", "depends": [], "src": ["csrc/k_cpu.cpp"], "npu-flags": ["-x"]}
    assert validate(data, 5) == 'unknown key `npu-flags` in [kernel.n]; it only applies to backend "npu"'


def test_lock_holds_what_pybuild_computes() -> None:
    kernel = REPO / "kernels" / "img2gray"
    matrix = load_matrix(REPO / "variants.json")
    manifest = load_manifest(kernel)
    doc = lock_document(manifest, matrix)
    committed = json.loads((kernel / LOCK_FILE).read_text())
    assert doc == committed
    assert [v["name"] for v in doc["variants"]] == [v.name for v in manifest.variants(matrix.variants)]
    assert all(v["from"] in matrix.names() for v in doc["variants"])


def test_lock_is_rewritten_when_build_toml_changes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = tmp_path / "img2gray"
    shutil.copytree(REPO / "kernels" / "img2gray", kernel, ignore=shutil.ignore_patterns("build", ".pybuild"))
    variants = str(REPO / "variants.json")
    assert main(["--check", "--variants", variants, str(kernel)]) == 0
    text = (kernel / "build.toml").read_text()
    (kernel / "build.toml").write_text(text.replace('backends = ["cuda", "cpu"]', 'backends = ["cpu"]', 1))
    assert main(["--check", "--variants", variants, str(kernel)]) == 1
    assert "stale; run `python -m pybuild lock" in capsys.readouterr().out
    assert main(["--variants", variants, str(kernel)]) == 0
    assert not write_lock(kernel, load_matrix(REPO / "variants.json"), check=True)


def test_lock_of_a_broken_manifest_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "build.toml").write_text('[general]\nnme = "k"\n')
    assert main(["--variants", str(REPO / "variants.json"), str(tmp_path / "k")]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown key `nme` in [general]; did you mean `name`?" in err
    assert not (tmp_path / "k" / LOCK_FILE).exists()


def test_digest_is_the_loaders(tmp_path: Path) -> None:
    """digest.py hashes a variant exactly as kernels-data (the loader's library) does."""
    kernels_data = pytest.importorskip("kernels_data")
    from pybuild.digest import digest_files

    v = tmp_path / "torch212-cxx11-cpu-x86_64-linux"
    (v / "pkg" / "__pycache__").mkdir(parents=True)
    (v / "pkg" / "__init__.py").write_text("x = 1\n")
    (v / "pkg" / "__pycache__" / "a.pyc").write_bytes(b"\0")
    (v / "_ops.abi3.so").write_bytes(bytes(range(256)) * 9)
    (v / "metadata.json").write_text("{}")
    theirs = kernels_data.Digest.hash_variant(kernels_data.DigestAlgorithm.SHA256, str(v)).files
    assert digest_files(v) == dict(theirs) and len(theirs) == 2


def test_reference_documents_every_key() -> None:
    """The generated reference has a row for every key of the current edition and every kernel key."""
    from pybuild.manifest.reference import render

    text = render()
    schema = SCHEMAS[5]
    for table in (schema.general, *schema.general.tables.values(), *schema.frameworks.values()):
        for k in table.keys:
            assert k in ("cuda_capabilities", "rocm_archs") or f"| `{k}` |" in text, k
    for t in kernel_types().values():
        for f in dataclasses.fields(t):
            if "toml" in f.metadata:
                assert f"| `{f.metadata['toml']}` |" in text and f.metadata["doc"] in text, f.name
    assert '### backend = "rocm"' in text and "### pre-edition format v3" in text


def test_committed_locks_are_fresh() -> None:
    """What `nix build` reads on a clean checkout is what pybuild computes from build.toml and variants.json."""
    farm = REPO / "nix" / "tests" / "fixtures" / "farm"
    for folder, matrix in ((REPO / "kernels", REPO / "variants.json"), (farm / "kernels", farm / "variants.json")):
        for d in sorted(p.parent for p in folder.glob("*/build.toml")):
            assert not write_lock(d, load_matrix(matrix), check=True), (
                f"{d / LOCK_FILE} is stale; run python -m pybuild lock"
            )
    for d in ("noarch-repo", "kernel-repo"):
        assert not write_lock(REPO / "nix" / "tests" / "fixtures" / d, load_matrix(REPO / "variants.json"), check=True)


def test_each_backend_names_its_kernel_type() -> None:
    """A backend's manifest keys are its kernel type's fields, declared once."""
    from pybuild import backends

    compiled = {b.facts.name: b for b in backends.all_backends() if b.facts.compiled}
    assert set(compiled) == set(kernel_types())
    assert compiled["cuda"].kernel_type is CudaKernel
    assert compiled["cuda"].manifest_keys == ("cuda-capabilities", "cuda-flags", "cuda-minver")
    assert compiled["rocm"].manifest_keys == ("rocm-archs", "hip-flags")
    assert compiled["xpu"].manifest_keys == ("sycl-flags",) and compiled["cpu"].manifest_keys == ()
    assert backends.get("neuron").kernel_type is None


def test_committed_reference_is_the_schema() -> None:
    """docs/manifest-reference.md is what `python -m pybuild.manifest.reference` writes from the schema."""
    result = subprocess.run(
        [sys.executable, "-m", "pybuild.manifest.reference"], capture_output=True, text=True, cwd=REPO, check=True
    )
    committed = (REPO / "docs" / "manifest-reference.md").read_text()
    assert result.stdout == committed, "run `python -m pybuild.manifest.reference > docs/manifest-reference.md`"


def _reference_row(page: str, section: str, key: str) -> str:
    body = page.split(f"\n## [{section}]\n", 1)[1].split("\n## ", 1)[0]
    return next(line for line in body.splitlines() if line.startswith(f"| `{key}` |"))


def test_reference_gives_each_key_its_own_example() -> None:
    """CUDA bounds show a CUDA version, not torch's; `edition` shows the one edition read."""
    from pybuild.manifest.reference import render

    page = render()
    for bound in ("minver", "maxver"):
        value = _reference_row(page, "general.cuda", bound).split(" | ")[1]
        assert '"12.8"' in value or '"13.0"' in value, value
        assert '"2.11"' in _reference_row(page, "torch", bound).split(" | ")[1]
    cuda_minver = next(line for line in page.splitlines() if line.startswith("| `cuda-minver` |"))
    assert '"12.8"' in cuda_minver.split(" | ")[1]
    assert _reference_row(page, "general", "edition").split(" | ")[1] == "`5`"


def test_reference_says_how_the_farm_format_differs() -> None:
    from pybuild.manifest.reference import render

    farm = render().split("### the farm's pre-edition format\n", 1)[1].split("\n### ", 1)[0]
    assert "`backends` is optional" in farm
    assert "one key set" in farm


def test_cuda_bounds_of_the_wrong_kind_show_a_cuda_version(kdir: Path) -> None:
    text = V5.replace('maxver = "13.0"\n', "maxver = 13\n", 1)
    with pytest.raises(
        ManifestError,
        match=r'`maxver` in \[general\.cuda\] must be a "major\.minor" version string '
        r'like "13\.0"',
    ):
        parse_manifest(text, kdir / "build.toml")
