"""The backend registry: the enum, backends.json and the modules agree; tags round-trip; a clash is
refused with the backend named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pybuild import backends
from pybuild.backends import Backend, BaseBackend, Facts
from pybuild.errors import VariantsError
from pybuild.variants import Variant, expand_matrix, noarch_variant, parse_variant_name

FACTS_FILE = Path(backends.__file__).with_name("backends.json")


def test_enum_data_file_and_registry_agree() -> None:
    entries = json.loads(FACTS_FILE.read_text())["backends"]
    listed = [e["name"] for e in entries]
    assert listed == [b.name for b in backends.all_backends()]
    assert sorted(listed) == sorted(b.value for b in Backend)
    assert backends.names() == tuple(e["name"] for e in entries if e["compiled"])
    assert backends.noarch_names() == (*backends.names(), *(e["name"] for e in entries if not e["compiled"]))
    assert {"cuda", "cpu"} <= set(backends.names()) and "neuron" not in backends.names()


TAGS = [
    ("cuda", "13.0", "cu130"),
    ("cuda", "12.8", "cu128"),
    ("rocm", "7.1", "rocm71"),
    ("xpu", "2025.1", "xpu20251"),
    ("cpu", None, "cpu"),
    ("metal", None, "metal"),
]


@pytest.mark.parametrize(("name", "version", "tag"), TAGS, ids=[t[2] for t in TAGS])
def test_tag_round_trips_through_a_variant_name(name: str, version: str | None, tag: str) -> None:
    system = "aarch64-darwin" if name == "metal" else "x86_64-linux"
    v = Variant("2.13", name, version, None if name == "metal" else "cxx11", system)
    assert backends.get(name).tag(version) == tag
    assert parse_variant_name(v.name) == v


@pytest.mark.parametrize("name", backends.noarch_names())
def test_noarch_names_round_trip(name: str) -> None:
    v = noarch_variant(name)
    assert parse_variant_name(v.name) == v
    assert v.name == ("torch-npu" if name == "cann" else f"torch-{name}")
    assert v.backend_tag == name  # what the card and wheel tags of a pure-Python variant show


CLASHES = [
    ({"name": "cuda"}, "name 'cuda' is cuda's already"),
    ({"tag": "cu"}, "tag 'cu' is cuda's already"),
    ({"noarch_name": "npu"}, "noarch-name 'npu' is cann's already"),
    ({"os": "windows"}, "os must be linux"),
]


@pytest.mark.parametrize(("change", "message"), CLASHES, ids=[m for _, m in CLASHES])
def test_register_refuses_a_clash(change: dict[str, str], message: str) -> None:
    facts = {
        "name": "new",
        "label": "New",
        "compiled": True,
        "versioned": False,
        "tag": "new",
        "tag_digits": 0,
        "os": "linux",
        "noarch_name": "new",
        "wheel_tag": None,
    }
    with pytest.raises(ValueError, match=message):
        backends.register(BaseBackend(Facts(**{**facts, **change})))
    assert "new" not in backends.noarch_names()


def test_builtin_backends_cannot_be_removed() -> None:
    with pytest.raises(ValueError, match="built in"):
        backends.unregister("cuda")


def test_unknown_backend_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="unknown backend 'cuda2'; known: cuda, rocm, cpu"):
        backends.get("cuda2")


def test_only_cuda_has_a_cmake_fragment_today() -> None:
    with_fragment = [b.name for b in backends.all_backends() if any(b.cmake_fragment(s, ()) for s in backends.SECTIONS)]
    assert with_fragment == ["cuda"]
    assert "enable_language(CUDA)" in backends.get("cuda").cmake_fragment("configure", ())


WHEEL_TAGS = [
    ("cuda", "12.8", "cu128"),
    ("rocm", "7.1", "rocm7.1"),
    ("cpu", None, "cpu"),
    ("xpu", "2025.1", "xpu"),
    ("metal", None, None),
]


@pytest.mark.parametrize(("name", "version", "tag"), WHEEL_TAGS, ids=[t[0] for t in WHEEL_TAGS])
def test_wheel_tag_as_pytorch_indexes_spell_it(name: str, version: str | None, tag: str | None) -> None:
    """The same facts give Nix's `wheelTag` (nix/tests/torch-wheels.nix)."""
    assert backends.get(name).wheel_tag(version) == tag


SHORT_TAGS = {
    "name": "zz",
    "label": "Zz",
    "compiled": True,
    "versioned": True,
    "tag": "zz",
    "tag_digits": 3,
    "os": "linux",
    "noarch_name": "zz",
    "wheel_tag": None,
}


class KnowsShortVersions(BaseBackend):
    known_versions = ("1.3",)  # "zz13": two digits where its names carry at least three


class ShortTags(BaseBackend):
    def tag(self, version: str | None) -> str:  # drops a digit that tag_pattern() asks for
        return super().tag(version)[:-1]


@pytest.mark.parametrize("cls", [KnowsShortVersions, ShortTags])
def test_register_refuses_tags_no_name_can_carry(cls: type[BaseBackend]) -> None:
    with pytest.raises(ValueError, match=r"^backend 'zz': Zz 1+\.\d gives the tag 'zz\d+', which variant names cannot"):
        backends.register(cls(Facts(**SHORT_TAGS)))
    assert "zz" not in backends.noarch_names()


def test_matrix_refuses_a_version_whose_name_does_not_parse_back() -> None:
    backend = backends.register(BaseBackend(Facts(**SHORT_TAGS)))
    try:
        matrix = {"torch": [{"version": "2.14", "zz": ["1.3"]}], "cxx-abi": ["cxx11"], "systems": ["x86_64-linux"]}
        with pytest.raises(
            VariantsError,
            match=r"torch\[0\]\.zz: Zz 1\.3 gives the tag 'zz13', which variant "
            r"names cannot carry \(they take `zz\\d\{3,\}`\); list versions of",
        ):
            expand_matrix(matrix)
        matrix["torch"][0]["zz"] = ["13.0"]
        assert [v.name for v in expand_matrix(matrix).variants] == ["torch214-cxx11-zz130-x86_64-linux"]
        assert parse_variant_name("torch214-cxx11-zz130-x86_64-linux").backend_version == "13.0"
    finally:
        backends.unregister(backend.name)
