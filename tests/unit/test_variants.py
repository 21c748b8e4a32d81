"""variants.json expansion and variant names, checked against the `kernels` loader's own parser."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pybuild import backends
from pybuild.errors import VariantsError
from pybuild.variants import Variant, expand_matrix, load_matrix, noarch_variant, parse_variant_name

REPO = Path(__file__).resolve().parents[2]

NAMES = [
    (Variant("2.13", "cpu", None, "cxx11", "x86_64-linux"), "torch213-cxx11-cpu-x86_64-linux"),
    (Variant("2.11", "cuda", "13.0", "cxx11", "x86_64-linux"), "torch211-cxx11-cu130-x86_64-linux"),
    (Variant("2.12", "cuda", "12.8", "cxx98", "aarch64-linux"), "torch212-cxx98-cu128-aarch64-linux"),
    (Variant("2.12", "rocm", "7.1", "cxx11", "x86_64-linux"), "torch212-cxx11-rocm71-x86_64-linux"),
    (Variant("2.12", "metal", None, None, "aarch64-darwin"), "torch212-metal-aarch64-darwin"),
]


@pytest.mark.parametrize(("variant", "name"), NAMES, ids=[n for _, n in NAMES])
def test_variant_name_round_trip(variant: Variant, name: str) -> None:
    assert variant.name == name
    assert parse_variant_name(name) == variant


def test_default_matrix_contains_the_buildable_variants() -> None:
    names = load_matrix(REPO / "variants.json").names()
    assert "torch213-cxx11-cpu-x86_64-linux" in names  # this CPU machine
    assert "torch211-cxx11-cu130-x86_64-linux" in names  # the GPU machine
    assert "torch211-cxx11-cu126-aarch64-linux" not in names  # excluded explicitly
    assert not [n for n in names if "rocm" in n and "aarch64" in n]
    assert len(names) == len(set(names))


def _gpu_machines_torch() -> set[tuple[tuple[int, int], str]]:
    """(torch minor, CUDA release) of the torch each committed GPU result ran under."""
    runs = set()
    for path in sorted((REPO / "benchmarks" / "results").glob("gpu-*.json")):
        env = json.loads(path.read_text())["environment"]
        major, minor = env["torch"].split("+")[0].split(".")[:2]
        runs.add(((int(major), int(minor)), env["torch-cuda"]))
    return runs


def test_support_policy_four_newest_minors_and_the_gpu_machines_torch() -> None:
    """docs/variants.md's policy: the four newest torch minors in a row, and an older minor only while
    the GPU machines run it (they have no network, so their torch stays in the matrix)."""
    matrix = load_matrix(REPO / "variants.json")
    minors = sorted({v.torch_tuple for v in matrix.variants})
    newest = minors[-4:]
    assert len(newest) == 4 and [m[1] - newest[0][1] for m in newest] == [0, 1, 2, 3], minors  # in a row
    gpu = _gpu_machines_torch()
    assert gpu, "benchmarks/results has no gpu-*.json to read the GPU machines' torch from"
    assert set(minors[:-4]) <= {m for m, _ in gpu}, f"{minors[:-4]} are older than the newest four and no GPU runs them"
    names = matrix.names()
    for (major, minor), cuda in gpu:
        name = f"torch{major}{minor}-cxx11-cu{cuda.replace('.', '')}-x86_64-linux"
        assert name in names, f"the GPU machines run torch {major}.{minor} + CUDA {cuda}; {name} left the matrix"


def test_every_name_parses_in_the_kernels_loader() -> None:
    """Feed every matrix name to the installed `kernels` package's variant parser; fields must match."""
    kv = pytest.importorskip("kernels.variants")
    for v in load_matrix(REPO / "variants.json").variants:
        parsed = kv.parse_variant(v.name)
        assert parsed.variant_str == v.name
        fw = parsed.framework
        assert (fw.version.major, fw.version.minor) == v.torch_tuple
        assert fw.cxx11_abi == (v.cxx_abi == "cxx11")
        assert f"{parsed.arch.platform}-{parsed.arch.os}" == v.system
        backend = parsed.arch.backend
        assert backend.name == v.backend
        if v.backend_version:
            assert str(backend.version) == v.backend_version


def test_exclusions_and_order() -> None:
    data = {
        "torch": [{"version": "2.13", "cuda": ["13.0", "12.8"], "cpu": True}, {"version": "2.9", "cpu": True}],
        "cxx-abi": ["cxx11"],
        "systems": ["x86_64-linux", "aarch64-linux"],
        "exclude": [{"backend": "cuda", "backend-version": "12.8", "system": "aarch64-linux", "reason": "none"}],
    }
    m = expand_matrix(data)
    assert m.names() == [
        "torch29-cxx11-cpu-aarch64-linux",
        "torch29-cxx11-cpu-x86_64-linux",
        "torch213-cxx11-cu128-x86_64-linux",
        "torch213-cxx11-cu130-aarch64-linux",
        "torch213-cxx11-cu130-x86_64-linux",
        "torch213-cxx11-cpu-aarch64-linux",
        "torch213-cxx11-cpu-x86_64-linux",
    ]
    assert [(v.name, r) for v, r in m.excluded] == [("torch213-cxx11-cu128-aarch64-linux", "none")]


BAD = [
    ({"torch": [], "cxx-abi": ["cxx11"], "systems": ["x86_64-linux"]}, "torch: must be a non-empty list"),
    (
        {"torch": [{"version": "213", "cpu": True}], "cxx-abi": ["cxx11"], "systems": ["x86_64-linux"]},
        'torch[0].version: must be "major.minor"',
    ),
    (
        {"torch": [{"version": "2.13", "cuda": "13.0"}], "cxx-abi": ["cxx11"], "systems": ["x86_64-linux"]},
        "torch[0].cuda: must be a list of strings",
    ),
    (
        {"torch": [{"version": "2.13", "cdua": ["13.0"]}], "cxx-abi": ["cxx11"], "systems": ["x86_64-linux"]},
        "unknown key(s) ['cdua']",
    ),
    (
        {"torch": [{"version": "2.13", "cpu": True}], "cxx-abi": ["cxx11"], "systems": ["x86_64-windows"]},
        "systems: invalid entry 'x86_64-windows'",
    ),
    (
        {
            "torch": [{"version": "2.13", "cpu": True}],
            "cxx-abi": ["cxx11"],
            "systems": ["x86_64-linux"],
            "exclude": [{"sytem": "x"}],
        },
        "exclude[0]: must be an object with keys",
    ),
]


@pytest.mark.parametrize(("data", "fragment"), BAD, ids=[b[1][:30] for b in BAD])
def test_matrix_errors(data: dict, fragment: str) -> None:
    with pytest.raises(VariantsError) as info:
        expand_matrix(data, Path("variants.json"))
    assert fragment in str(info.value)


def test_invalid_json_names_line(tmp_path: Path) -> None:
    p = tmp_path / "variants.json"
    p.write_text('{"torch": [\n  {"version": "2.13",}\n]}')
    with pytest.raises(VariantsError, match=r"variants.json:2:\d+: invalid JSON"):
        load_matrix(p)


def test_bad_variant_name() -> None:
    with pytest.raises(VariantsError, match="does not parse"):
        parse_variant_name("torch213-cpu-x86_64")


def test_variants_json_is_documented() -> None:
    data = json.loads((REPO / "variants.json").read_text())
    page = (REPO / "docs" / "variants.md").read_text()
    for key in ("cxx-abi", "systems", "exclude"):
        assert key in data
    undocumented = [key for key in data if not re.search(rf"^\| `{key}(\[\][.\w]*)?`", page, re.M)]
    undocumented += [
        f"torch[].{key}"
        for entry in data["torch"]
        for key in entry
        if key not in backends.names() and f"`.{key}`" not in page and f"`torch[].{key}`" not in page
    ]
    if "| `torch[].<backend>` |" not in page:  # one row for every backend's key: a new one needs no other
        undocumented += sorted({f"torch[].{k}" for entry in data["torch"] for k in entry if k in backends.names()})
    assert undocumented == [], f"docs/variants.md's key table lacks {undocumented}"


_BASE = {"torch": [{"version": "2.13", "cpu": True}], "cxx-abi": ["cxx11"], "systems": ["x86_64-linux"]}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"exclude": [{"reason": "oops"}]}, "has only a reason"),
        ({"exclude": [{"torch": 2.13}]}, "values must be strings"),
        ({"cxx-abi": []}, "cxx-abi: is empty"),
        ({"systems": []}, "systems: is empty"),
        ({"schema": 99}, "reads schema 1"),
        ({"exclude": [{"backend": "cpuu"}]}, r"exclude\[0\]: matches no variant \(\{\"backend\":\"cpuu\"\}\)"),
        ({"exclude": [{"backend": "cpu", "reason": "r"}, {"torch": "2.12"}]}, r"exclude\[1\]: matches no variant"),
        ({"exclude": [{"backend": "cpu"}]}, "top level: expands to no variant"),
        ({"torch": [{"version": "2.13"}]}, "top level: expands to no variant"),
        ({"torch": [{"version": "2.13", "metal": True}]}, "top level: expands to no variant"),  # metal: darwin only
    ],
)
def test_matrix_mistakes_that_would_silently_drop_variants(change: dict, message: str) -> None:
    with pytest.raises(VariantsError, match=message):
        expand_matrix({**_BASE, **change})


def test_unreadable_variants_file(tmp_path: Path) -> None:
    bad = tmp_path / "variants.json"
    bad.write_bytes(b"\xff\xfe{}")
    with pytest.raises(VariantsError, match="not UTF-8"):
        load_matrix(bad)
    with pytest.raises(VariantsError, match="is a folder"):
        load_matrix(tmp_path)


@pytest.mark.parametrize("backend", ["cpu", "cuda", "rocm", "metal", "xpu"])
def test_noarch_variant_names(backend: str) -> None:
    from kernels.variants import NoarchVariant, parse_variant

    v = parse_variant_name(f"torch-{backend}")
    assert v == noarch_variant(backend) and v.noarch and v.name == f"torch-{backend}"
    assert v.torch is None and v.system is None
    loader = parse_variant(v.name)  # the loader reads it as a noarch variant of the same backend
    assert isinstance(loader, NoarchVariant) and loader.arch.backend_name == backend
    with pytest.raises(ValueError, match="noarch variant"):
        v.torch_tuple  # noqa: B018


def test_legacy_universal_name_does_not_parse() -> None:
    with pytest.raises(VariantsError, match="'torch-cuda'"):
        parse_variant_name("torch-universal")
