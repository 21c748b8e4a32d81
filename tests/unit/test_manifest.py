"""build.toml parsing: the guide's manifest unmodified, the optional keys, and a table of errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pybuild.errors import ManifestError
from pybuild.manifest import load_manifest, parse_manifest
from pybuild.variants import parse_variant_name

GUIDE = """\
[general]
name = "img2gray"
universal = false
[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]
[kernel.img2gray]
backend = "cuda"
depends = ["torch"]
src = ["csrc/img2gray.cu"]
"""


def test_guide_manifest_parses_unmodified(guide_kernel: Path) -> None:
    m = load_manifest(guide_kernel)
    assert m.name == "img2gray"
    assert m.backends == ("cuda",)
    assert m.version == 1 and m.license == "Apache-2.0"
    assert m.kernels[0].src == ("csrc/img2gray.cu",)
    assert m.accepts(parse_variant_name("torch211-cxx11-cu130-x86_64-linux"))
    assert not m.accepts(parse_variant_name("torch213-cxx11-cpu-x86_64-linux"))


def test_optional_keys(guide_kernel: Path) -> None:
    text = (
        GUIDE.replace("universal = false", 'universal = false\nversion = 2\nlicense = "MIT"')
        + """\
include = ["csrc"]
cuda-capabilities = ["8.0", "9.0a"]
cuda-flags = ["-O3"]
cxx-flags = ["-O2"]
[kernel.img2gray_cpu]
backend = "cpu"
depends = ["torch"]
src = ["csrc/cpu.cpp"]
"""
    )
    (guide_kernel / "csrc" / "cpu.cpp").write_text("// cpu\n")
    m = parse_manifest(text, guide_kernel / "build.toml")
    assert (m.version, m.license) == (2, "MIT")
    assert m.backends == ("cuda", "cpu")
    cuda = m.kernels[0]
    assert cuda.include == ("csrc",) and cuda.cuda_capabilities == ("8.0", "9.0a")
    assert cuda.cuda_flags == ("-O3",) and cuda.cxx_flags == ("-O2",)
    assert [k.name for k in m.kernels_for("cpu")] == ["img2gray_cpu"]
    assert [k.name for k in m.kernels_for("cuda")] == ["img2gray"]  # a section builds into its backend only


def test_torch_bounds_narrow_variants(guide_kernel: Path) -> None:
    text = GUIDE.replace("[torch]\n", '[torch]\nminver = "2.12"\n')
    m = parse_manifest(text, guide_kernel / "build.toml")
    assert not m.accepts(parse_variant_name("torch211-cxx11-cu130-x86_64-linux"))
    assert m.accepts(parse_variant_name("torch212-cxx11-cu130-x86_64-linux"))


# (what to change in the guide's manifest, exact fragment of the one-line error)
ERRORS = [
    (
        lambda t: t.replace('depends = ["torch"]', 'depends = ["torch"]\ncuda-capabilites = ["9.0"]'),
        "unknown key `cuda-capabilites` in [kernel.img2gray]; did you mean `cuda-capabilities`?",
    ),
    (
        lambda t: t.replace("universal = false", 'universal = false\nlicence = "MIT"'),
        "unknown key `licence` in [general]; did you mean `license`?",
    ),
    (lambda t: t.replace('name = "img2gray"', 'name = "Img2Gray"'), "`name` in [general] is 'Img2Gray'"),
    (lambda t: t.replace('name = "img2gray"', 'name = "img2gray-"'), "`name` in [general] is 'img2gray-'"),
    (lambda t: t.replace('name = "img2gray"', 'name = "x"'), "`name` in [general] is 'x'; use at least two characters"),
    (lambda t: t.replace('"csrc/img2gray.cu"', '"csrc/missing.cu"'), "source file 'csrc/missing.cu' does not exist"),
    (lambda t: t.replace('"csrc/img2gray.cu"', '"../outside.cu"'), "escapes the kernel folder"),
    (lambda t: t.replace('"csrc/img2gray.cu"', '"/etc/passwd.cu"'), "is absolute"),
    (lambda t: t.replace('"csrc/img2gray.cu"', '"csrc/link.cu"'), "resolves outside the kernel folder"),
    (lambda t: t.replace('backend = "cuda"', 'backend = "cdua"'), "unknown backend; did you mean 'cuda'?"),
    (
        lambda t: t.replace('depends = ["torch"]', 'depends = ["torch"]\ncuda-capabilities = ["9.1"]'),
        "has '9.1', which no supported CUDA toolkit knows",
    ),
    (lambda t: t.replace('src = ["csrc/img2gray.cu"]', "src = []"), "`src` in [kernel.img2gray] is empty"),
    (lambda t: t.split("[kernel.img2gray]")[0], "no [kernel.<name>] section"),
    (
        lambda t: t.split("[kernel.img2gray]")[0].replace("universal = false", 'backends = ["cuda"]'),
        "`src` in [torch] names C++ files, but no [kernel.*] section compiles anything",
    ),
    (lambda t: t.replace("universal = false", "universal = fals"), "TOML syntax error"),
    (lambda t: t.replace("universal = false", 'universal = "no"'), "`universal` in [general] must be true or false"),
    (
        lambda t: t.replace("universal = false", "universal = true"),
        "asks for the legacy torch-universal variant, which this farm does not build; for a pure-Python kernel",
    ),
    (lambda t: t.replace("[general]\n", ""), "unknown key `name` in [top level]"),
    (lambda t: t.replace("universal = false", "version = -1"), "must be a whole number from 0"),
    (lambda t: t.replace("[torch]\n", '[torch]\nminver = "2.13"\nmaxver = "2.12"\n'), "no torch version is left"),
    (
        lambda t: t.replace("[torch]\n", '[torch]\npyext = [".py"]\n'),
        "`pyext` in [torch] has '.py'; list file extensions without the dot",
    ),
    (lambda t: t.replace("[torch]\n", '[torch]\npyext = "py"\n'), "`pyext` in [torch] must be a list"),
    (lambda t: t.replace("[torch]\n", '[torch]\npyext = ["py", "so"]\n'), "built files come from the build"),
    (lambda t: t.replace("[torch]\n", '[torch]\npyext = ["json"]\n'), 'leaves out "py"'),
    (
        lambda t: t.replace('depends = ["torch"]', 'depends = ["torch"]\nrocm-archs = ["gfx942"]'),
        '`rocm-archs` in [kernel.img2gray] only applies to backend "rocm"',
    ),
    (
        lambda t: t.replace(
            'backend = "cuda"\ndepends = ["torch"]', 'backend = "rocm"\ndepends = ["torch"]\nrocm-archs = ["mi300"]'
        ),
        "`rocm-archs` in [kernel.img2gray] has 'mi300', not an AMD GPU target",
    ),
    (
        lambda t: t.replace(
            'backend = "cuda"\ndepends = ["torch"]', 'backend = "rocm"\ndepends = ["torch"]\nrocm-archs = "gfx942"'
        ),
        "`rocm-archs` in [kernel.img2gray] must be a list",
    ),
    (lambda t: t.replace("[kernel.img2gray]", '[kernel."img2gray\\n"]'), "kernel names use letters, digits"),
    (lambda t: t.replace('src = ["csrc/img2gray.cu"]', 'src = ["csrc"]'), "'csrc' is a folder; list the source files"),
    (
        lambda t: t.replace('src = ["csrc/img2gray.cu"]', 'src = ["csrc/img2gray.cu\\u0000"]'),
        "contains a control character",
    ),
    (lambda t: t.replace('name = "img2gray"', 'name = "img2gray\\n"'), "lowercase letters, digits and '-'"),
]


@pytest.mark.parametrize(("change", "fragment"), ERRORS, ids=[e[1][:40] for e in ERRORS])
def test_manifest_errors(guide_kernel: Path, change, fragment: str) -> None:  # noqa: ANN001
    outside = guide_kernel.parent / "outside.cu"
    outside.write_text("// outside\n")
    os.symlink(outside, guide_kernel / "csrc" / "link.cu")
    text = change(GUIDE)
    with pytest.raises(ManifestError) as info:
        parse_manifest(text, guide_kernel / "build.toml")
    message = str(info.value)
    assert fragment in message
    assert str(guide_kernel / "build.toml") in message
    assert "\n" not in message


def test_toml_syntax_error_has_line_and_column(guide_kernel: Path) -> None:
    with pytest.raises(ManifestError, match=r"line 3, column"):
        parse_manifest(GUIDE.replace("universal = false", "universal = fals"), guide_kernel / "build.toml")


def test_missing_build_toml(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="not found; a kernel folder needs a build.toml"):
        load_manifest(tmp_path)


def test_rocm_archs_parse(guide_kernel: Path) -> None:
    text = GUIDE.replace('backend = "cuda"', 'backend = "rocm"').replace(
        'depends = ["torch"]', 'depends = ["torch"]\nrocm-archs = ["gfx90a", "gfx942", "gfx1100", "gfx90a:xnack+"]'
    )
    m = parse_manifest(text, guide_kernel / "build.toml")
    assert m.kernels[0].rocm_archs == ("gfx90a", "gfx942", "gfx1100", "gfx90a:xnack+")
    assert m.backends == ("rocm",)


def test_pyext_picks_the_package_files_that_ship(guide_kernel: Path) -> None:
    pkg = guide_kernel / "torch-ext" / "img2gray"
    (pkg / "sub").mkdir()
    for name in (
        "sub/helpers.py",
        "types.pyi",
        "table.json",
        "notes.txt",
        "_ops.py",
        "_img2gray.abi3.so",
        "__pycache__/x.cpython-312.pyc",
    ):
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text("x\n")
    default = parse_manifest(GUIDE, guide_kernel / "build.toml")
    assert default.torch_pyext == ("py", "pyi")
    assert default.package_files() == ["__init__.py", "sub/helpers.py", "types.pyi"]
    with_json = parse_manifest(
        GUIDE.replace("[torch]\n", '[torch]\npyext = ["py", "json"]\n'), guide_kernel / "build.toml"
    )
    assert with_json.package_files() == ["__init__.py", "sub/helpers.py", "table.json"]
    # the source hash covers exactly the files that ship
    assert "torch-ext/img2gray/table.json" in with_json.source_files()
    assert "torch-ext/img2gray/table.json" not in default.source_files()
    assert "torch-ext/img2gray/notes.txt" not in with_json.source_files()


NOARCH = """\
[general]
name = "img2gray"
backends = ["cpu", "cuda"]
"""


def test_pure_python_kernel_builds_one_noarch_variant_per_backend(guide_kernel: Path) -> None:
    m = parse_manifest(NOARCH, guide_kernel / "build.toml")
    assert m.noarch and m.backends == ("cuda", "cpu")
    matrix_variant = parse_variant_name("torch213-cxx11-cpu-x86_64-linux")
    assert [v.name for v in m.variants([matrix_variant])] == ["torch-cuda", "torch-cpu"]
    assert not m.accepts(matrix_variant)  # a noarch kernel has no per-torch builds
    assert m.accepts(parse_variant_name("torch-cpu")) and not m.accepts(parse_variant_name("torch-rocm"))
    # a compiled kernel, in turn, builds no noarch variant
    compiled = parse_manifest(GUIDE, guide_kernel / "build.toml")
    assert not compiled.noarch and not compiled.accepts(parse_variant_name("torch-cuda"))
    assert compiled.variants([matrix_variant, parse_variant_name("torch-cuda")]) == []  # guide: cuda only


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        ('[torch]\nminver = "2.12"\n', "`minver` in [torch] does not apply to a pure-Python kernel"),
        ('[torch]\ninclude = ["csrc"]\n', "`include` in [torch] names C++ files, but no [kernel.*] section"),
    ],
)
def test_pure_python_kernel_errors(guide_kernel: Path, extra: str, fragment: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse_manifest(NOARCH + extra, guide_kernel / "build.toml")
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_no_sections_and_no_backends_names_both_kinds_of_kernel(guide_kernel: Path) -> None:
    with pytest.raises(ManifestError) as info:
        parse_manifest('[general]\nname = "img2gray"\n', guide_kernel / "build.toml")
    message = str(info.value)
    assert "no [kernel.<name>] section" in message and "for a pure-Python kernel, list its backends" in message
    with pytest.raises(ManifestError, match=r"`backends` in \[general\] is empty, which leaves nothing to build"):
        parse_manifest('[general]\nname = "img2gray"\nbackends = []\n', guide_kernel / "build.toml")


def test_noarch_binding_error_comes_before_the_path_checks(guide_kernel: Path) -> None:
    text = NOARCH + '[torch]\nsrc = ["torch-ext/missing.cpp"]\n'
    with pytest.raises(ManifestError, match="no \\[kernel.\\*\\] section compiles anything"):
        parse_manifest(text, guide_kernel / "build.toml")


def test_python_depends_outside_the_loaders_allow_list(guide_kernel: Path) -> None:
    from pybuild.manifest import loader_python_depends

    if loader_python_depends() is None:
        pytest.skip("the kernels package (its allow-list) is not installed; `check` reports it after the build")
    text = GUIDE.replace("universal = false", 'universal = false\npython-depends = ["definitely-not-allowed"]')
    with pytest.raises(
        ManifestError,
        match="names 'definitely-not-allowed', which the kernels loader refuses for "
        r"backend cuda; allowed: einops",
    ):
        parse_manifest(text, guide_kernel / "build.toml")
    allowed = GUIDE.replace("universal = false", 'universal = false\npython-depends = ["einops"]')
    assert parse_manifest(allowed, guide_kernel / "build.toml").python_depends == ("einops",)


@pytest.mark.parametrize(
    ("torch", "expected"),
    [
        ("2.13", ["torch-stable-abi211-cpu-x86_64-linux"]),
        ("2.11", ["torch-stable-abi211-cpu-x86_64-linux"]),
        ("2.10", []),
    ],
)
def test_this_machine_frames_its_variant_as_the_matrix_does(
    torch: str, expected: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stable-ABI kernel's variant on this machine is the one the matrix frames from the same torch
    (one rule, :meth:`Manifest.framed`): its stable-ABI variant, none where that torch is too old."""
    from pybuild import host
    from pybuild.variants import Variant

    manifest = load_manifest(Path(__file__).resolve().parents[1] / "fixtures" / "edition5-stable-clamp")
    here = Variant(torch, "cpu", None, "cxx11", "x86_64-linux")
    monkeypatch.setattr(host, "host_variants", lambda require_nvcc=True: [here])
    found = host.kernel_host_variants(manifest)
    assert [v.name for v in found] == expected
    assert found == manifest.variants([here])
