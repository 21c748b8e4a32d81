"""build.toml editions: every key of upstream's edition 5, its pre-edition v4 and v3, the farm's own
format; the refusals upstream makes, as one line each; and `migrate` round trips."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pybuild.__main__ import main
from pybuild.errors import ManifestError
from pybuild.manifest import load_manifest, parse_manifest
from pybuild.manifest.migrate import migrate_text
from pybuild.variants import parse_variant_name

FILES = (
    "torch-ext/torch_binding.cpp",
    "torch-ext/torch_binding.h",
    "csrc/k.cu",
    "csrc/k_cpu.cpp",
    "csrc/k.h",
    "csrc/k_rocm.cu",
    "csrc/k_xpu.cpp",
    "csrc/k.mm",
    "torch-ext/demo/__init__.py",
    "torch-ext/demo/data.json",
)

KDEPS = (
    'kernel-depends = [{ repo-id = "example/helper", version = 1 }, '
    '{ repo-id = "example/other", revision = "abc123" }]\n'
)
V5 = """\
# A kernel in upstream's current edition, with every key it takes.
[general]
name = "demo"
version = 2
edition = 5
license = "MIT"
upstream = "https://github.com/example/demo.git"
source = "https://github.com/example/demo-kernel.git"
backends = ["cpu", "cuda", "metal", "rocm", "xpu"]
python-depends = ["einops"]
kernel-depends = [{ repo-id = "example/helper", version = 1 }, { repo-id = "example/other", revision = "abc123" }]

[general.hub]
repo-id = "example/demo"
branch = "main"

[general.cuda]
minver = "12.8"
maxver = "13.0"
python-depends = ["nvidia-cutlass-dsl"]

[general.xpu]
python-depends = []

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]
include = ["csrc"]
minver = "2.11"
maxver = "2.14"
pyext = ["py", "json"]
cxx-flags = ["-DFROM_TORCH"]

[kernel.k]  # the CUDA kernel
backend = "cuda"
depends = ["torch"]
src = ["csrc/k.cu", "csrc/k.h"]
include = ["csrc"]
cuda-capabilities = ["8.0", "9.0"]
cuda-flags = ["-DCUDA_ONLY"]
cuda-minver = "12.8"
cxx-flags = ["-DCXX"]

[kernel.k_cpu]
backend = "cpu"
depends = ["torch"]
src = ["csrc/k_cpu.cpp"]
cxx-flags = ["-DCPU_ONLY"]

[kernel.k_rocm]
backend = "rocm"
depends = ["torch"]
src = ["csrc/k_rocm.cu"]
rocm-archs = ["gfx942"]
hip-flags = ["-DHIP_ONLY"]

[kernel.k_xpu]
backend = "xpu"
depends = ["torch", "sycl_tla"]
src = ["csrc/k_xpu.cpp"]
sycl-flags = ["-DSYCL_ONLY"]

[kernel.k_metal]
backend = "metal"
depends = ["torch", "metal-cpp"]
src = ["csrc/k.mm"]
"""


@pytest.fixture
def kdir(tmp_path: Path) -> Path:
    d = tmp_path / "demo"
    for rel in FILES:
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text("{}\n" if rel.endswith(".json") else "// x\n")
    return d


def parse(kdir: Path, text: str):  # noqa: ANN201
    return parse_manifest(text, kdir / "build.toml")


def test_edition5_every_key(kdir: Path) -> None:
    m = parse(kdir, V5)
    assert (m.edition, m.framework, m.version, m.license) == (5, "torch", 2, "MIT")
    assert m.backends == ("cuda", "rocm", "cpu", "metal", "xpu")
    assert (m.repo_id, m.hub_branch) == ("example/demo", "main")
    assert m.upstream and m.source
    assert m.kernel_depends == (("example/helper", 1), ("example/other", "abc123"))
    assert m.toolkit_bounds == (("cuda", ((12, 8), (13, 0))),)
    assert m.python_depends_for("cuda") == ("einops", "nvidia-cutlass-dsl")
    assert m.python_depends_for("cpu") == ("einops",)
    assert m.torch_cxx_flags == ("-DFROM_TORCH",) and m.torch_pyext == ("py", "json")
    by = {k.name: k for k in m.kernels}
    assert by["k"].cuda_minver == (12, 8) and by["k"].cuda_flags == ("-DCUDA_ONLY",)
    assert by["k_rocm"].hip_flags == ("-DHIP_ONLY",) and by["k_xpu"].sycl_flags == ("-DSYCL_ONLY",)
    assert by["k"].compiled_src == ("csrc/k.cu",)  # headers in src are not compiled
    # [general.cuda] bounds the CUDA variants; [torch] bounds the torch versions
    assert not m.accepts(parse_variant_name("torch212-cxx11-cu126-x86_64-linux"))
    assert m.accepts(parse_variant_name("torch212-cxx11-cu130-x86_64-linux"))
    assert not m.accepts(parse_variant_name("torch210-cxx11-cpu-x86_64-linux"))
    # each section builds into its own backend's variants only
    cpu = parse_variant_name("torch213-cxx11-cpu-x86_64-linux")
    assert [k.name for k in m.kernels_for(cpu)] == ["k_cpu"]
    assert "data.json" in m.package_files()  # pyext ships extra data files


def test_edition5_stable_abi_and_variant_names(kdir: Path) -> None:
    text = V5.replace(
        'cxx-flags = ["-DFROM_TORCH"]\n',
        'cxx-flags = ["-DFROM_TORCH"]\n\n[torch.stable-abi]\ncpu = "2.11"\ncuda = "2.11"\nneuron = "2.12"\n',
    )
    m = parse(kdir, text)
    assert m.stable_abi == (("cpu", (2, 11)), ("cuda", (2, 11)))  # entries for unlisted backends are ignored
    matrix = [
        parse_variant_name(n)
        for n in (
            "torch212-cxx11-cpu-x86_64-linux",
            "torch213-cxx11-cpu-x86_64-linux",
            "torch213-cxx11-cu130-x86_64-linux",
            "torch213-cxx11-rocm71-x86_64-linux",
        )
    ]
    assert [v.name for v in m.variants(matrix)] == [
        "torch-stable-abi211-cpu-x86_64-linux",
        "torch-stable-abi211-cu130-x86_64-linux",
        "torch213-cxx11-rocm71-x86_64-linux",
    ]


def test_edition4_reads_without_edition_and_stable_abi_as_one_version(kdir: Path) -> None:
    text = (
        V5.replace("edition = 5\n", "")
        .replace(KDEPS, "")
        .replace("[general.xpu]\npython-depends = []\n", "")
        .replace('cxx-flags = ["-DFROM_TORCH"]', 'cxx-flags = ["-DFROM_TORCH"]\nstable-abi = "2.11"')
    )
    m = parse(kdir, text)
    assert m.edition == 4 and m.stable_abi_for("cuda") == (2, 11) and m.stable_abi_for("rocm") == (2, 11)


def test_edition3_noarch_is_the_absence_of_a_framework(kdir: Path) -> None:
    m = parse(kdir, '[general]\nname = "demo"\nlicense = "MIT"\nbackends = ["cuda", "neuron", "tpu"]\n')
    assert (m.edition, m.noarch, m.version, m.license) == (3, True, 1, "MIT")
    assert [v.name for v in m.variants(())] == ["torch-cuda", "torch-neuron", "torch-tpu"]


def test_edition5_noarch_with_empty_kernel_table_and_metadata_archs(kdir: Path) -> None:
    m = parse(
        kdir,
        '[general]\nname = "demo"\nversion = 1\nedition = 5\nlicense = "MIT"\nbackends = ["cuda", "cann"]\n'
        '[torch-noarch]\ncuda-capabilities = ["9.0"]\npyext = ["py", "json"]\n[kernel]\n',
    )
    assert m.noarch and m.noarch_archs("cuda") == ("9.0",)
    assert [v.name for v in m.variants(())] == ["torch-cuda", "torch-npu"]  # the loader's name for cann


@pytest.mark.parametrize("caps,archs", [("cuda_capabilities", "rocm_archs"), ("cuda-capabilities", "rocm-archs")])
def test_torch_noarch_takes_upstreams_underscore_keys_and_the_dashed_ones(kdir: Path, caps: str, archs: str) -> None:
    head = '[general]\nname = "demo"\nversion = 1\nedition = 5\nlicense = "MIT"\nbackends = ["cuda", "rocm"]\n'
    m = parse(kdir, head + f'[torch-noarch]\n{caps} = ["9.0"]\n{archs} = ["gfx942"]\n')
    assert (m.noarch_archs("cuda"), m.noarch_archs("rocm")) == (("9.0",), ("gfx942",))
    with pytest.raises(ManifestError, match="both `cuda_capabilities` and `cuda-capabilities` in \\[torch-noarch\\]"):
        parse(kdir, head + '[torch-noarch]\ncuda_capabilities = ["9.0"]\ncuda-capabilities = ["9.0"]\n')


def test_edition3_without_a_license_is_refused_as_upstream_refuses_it(kdir: Path) -> None:
    with pytest.raises(ManifestError, match=r"missing `license` in \[general\], which kernel-builder's v3 format"):
        parse(kdir, '[general]\nname = "demo"\nbackends = ["cuda", "neuron"]\n')
    with pytest.raises(ManifestError, match=r"missing `license` in \[general\], which kernel-builder's v3 format"):
        parse(kdir, '[general]\nname = "demo"\nbackends = ["cuda"]\n[general.cuda]\nminver = "12.8"\n')
    # the same keys are also the farm's own format, whose license defaults to Apache-2.0 (publish warns)
    m = parse(kdir, '[general]\nname = "demo"\nbackends = ["cuda"]\n')
    assert (m.edition, m.license, m.license_set) == ("farm", "Apache-2.0", False)


@pytest.mark.parametrize("bad", ["true", "-1", "1.5"])
def test_kernel_depends_version_is_a_whole_number_from_zero(kdir: Path, bad: str) -> None:
    with pytest.raises(ManifestError, match=r"`kernel-depends` in \[general\] must be a list of tables"):
        parse(
            kdir,
            V5.replace(
                '{ repo-id = "example/helper", version = 1 }', f'{{ repo-id = "example/helper", version = {bad} }}'
            ),
        )
    assert parse(kdir, V5.replace('"example/helper", version = 1', '"example/helper", version = 0')).kernel_depends[
        0
    ] == ("example/helper", 0)


def test_error_examples_fit_the_key(kdir: Path) -> None:
    with pytest.raises(ManifestError, match=r'`cuda-minver` in \[kernel.k\] must be "major.minor" like "12.8"'):
        parse(kdir, V5.replace('cuda-minver = "12.8"', 'cuda-minver = "12"'))
    with pytest.raises(ManifestError, match=r'`minver` in \[general.cuda\] must be "major.minor" like "12.8"'):
        parse(kdir, V5.replace('minver = "12.8"\nmaxver = "13.0"', 'minver = "12"\nmaxver = "13.0"'))
    with pytest.raises(
        ManifestError,
        match=r"is empty, which leaves nothing to build; list at least one, e.g. "
        r'backends = \["cuda", "cpu"\]$',
    ):  # required from v3 on: no "drop the key"
        parse(kdir, V5.replace('backends = ["cpu", "cuda", "metal", "rocm", "xpu"]', "backends = []"))


FARM_FORMAT = """\
[general]
name = "img2gray"
universal = false
version = 1
license = "Apache-2.0"

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]

[kernel.img2gray]
backend = "cuda"
depends = ["torch"]
src = ["csrc/img2gray.cu"]

[kernel.img2gray_cpu]
backend = "cpu"
depends = ["torch"]
src = ["csrc/img2gray_cpu.cpp"]
"""


def test_the_farms_own_format_keeps_working(tmp_path: Path) -> None:
    kernel = Path(__file__).resolve().parents[2] / "kernels" / "img2gray"
    for sub in ("csrc", "torch-ext"):
        shutil.copytree(kernel / sub, tmp_path / sub, ignore=shutil.ignore_patterns("*.so", "_ops.py", "__pycache__"))
    (tmp_path / "build.toml").write_text(FARM_FORMAT)
    m = load_manifest(tmp_path)
    assert m.edition == "farm" and m.backends == ("cuda", "cpu")


def test_the_farms_kernels_are_in_the_current_edition(capsys: pytest.CaptureFixture[str]) -> None:
    """`migrate --check`, as docs/manifest.md has CI run it, passes on the farm's own kernels."""
    kernels = sorted(str(p.parent) for p in (Path(__file__).resolve().parents[2] / "kernels").glob("*/build.toml"))
    assert len(kernels) >= 3
    assert main(["migrate", "--check", *kernels]) == 0, capsys.readouterr().err


# (change to V5, exact fragment of the one-line error): what upstream refuses, refused here too
REFUSALS = [
    (lambda t: t.replace("edition = 5", "edition = 6"), "`edition` in [general] is 6; this farm reads edition 5"),
    (
        lambda t: t.replace('license = "MIT"', 'licence = "MIT"'),
        "unknown key `licence` in [general]; did you mean `license`?",
    ),
    (lambda t: t.replace('license = "MIT"\n', ""), "missing `license` in [general]"),
    (
        lambda t: t.replace('backends = ["cpu", "cuda", "metal", "rocm", "xpu"]\n', ""),
        "missing `backends` in [general]",
    ),
    (lambda t: t.replace('"xpu"]\npython', '"xpu", "gpu"]\npython'), "unknown backend 'gpu'"),
    (lambda t: t.replace("[torch]\n", "[torch-noarch]\n[torch]\n"), "more than one framework table"),
    (lambda t: t.replace("[torch]\n", "[torchh]\n"), "unknown key `torchh` in [top level]; did you mean `torch`?"),
    (
        lambda t: t.replace('repo-id = "example/demo"', 'repo_id = "example/demo"'),
        "unknown key `repo_id` in [general.hub]; did you mean `repo-id`?",
    ),
    (
        lambda t: t.replace('minver = "12.8"\nmaxver', 'minver = "12.8"\nmaxverr'),
        "unknown key `maxverr` in [general.cuda]",
    ),
    (
        lambda t: t.replace('cxx-flags = ["-DCPU_ONLY"]', 'cuda-capabilities = ["9.0"]'),
        "unknown key `cuda-capabilities` in [kernel.k_cpu]",
    ),
    (
        lambda t: t.replace('sycl-flags = ["-DSYCL_ONLY"]', 'hip-flags = ["-x"]'),
        "unknown key `hip-flags` in [kernel.k_xpu]",
    ),
    (
        lambda t: t.replace('src = ["csrc/k_cpu.cpp"]', 'src = ["csrc/k_cpu.cpp"]\ndepend = []').replace(
            'depends = ["torch"]\nsrc = ["csrc/k_cpu.cpp"]', 'src = ["csrc/k_cpu.cpp"]'
        ),
        "unknown key `depend` in [kernel.k_cpu]; did you mean `depends`?",
    ),
    (
        lambda t: t.replace('depends = ["torch"]\nsrc = ["csrc/k_cpu.cpp"]', 'src = ["csrc/k_cpu.cpp"]'),
        "missing `depends` in [kernel.k_cpu]",
    ),
    (
        lambda t: t.replace('depends = ["torch", "metal-cpp"]', 'depends = ["torch", "cutlass_9_9"]'),
        "unknown dependency 'cutlass_9_9'",
    ),
    (
        lambda t: t.replace('depends = ["torch", "metal-cpp"]', 'depends = ["torch", "cutlass"]'),
        "names 'cutlass', a name of the farm's own format that upstream's editions refuse",
    ),
    (
        lambda t: t.replace('depends = ["torch", "metal-cpp"]', 'depends = ["torch", "cub"]'),
        "names 'cub', a name of the farm's own format that upstream's editions refuse; drop it",
    ),
    (
        lambda t: t.replace('backend = "metal"', 'backend = "neuron"'),
        "`backend` in [kernel.k_metal] is 'neuron', an unknown backend",
    ),
    (
        lambda t: t.replace('cuda-capabilities = ["8.0", "9.0"]', 'cuda-capabilities = ["99999.0"]'),
        "has '99999.0', which no supported CUDA toolkit knows",
    ),
    (lambda t: t.replace('rocm-archs = ["gfx942"]', 'rocm-archs = ["gfx99999"]'), "'gfx99999', not an AMD GPU target"),
    (lambda t: t.replace("version = 2", 'version = "2"'), "`version` in [general] must be an integer"),
    (
        lambda t: t.replace("[torch]\n", '[torch.stable-abi]\ngpu = "2.11"\n[torch]\n'),
        "unknown backend `gpu` in [torch.stable-abi]",
    ),
    (
        lambda t: t.replace(
            "[torch]\n",
            '[torch-noarch]\n[kernel.x]\nbackend = "cpu"\ndepends = []\nsrc = ["csrc/k_cpu.cpp"]\n[torch_]\n',
        ),
        "unknown key `torch_` in [top level]",
    ),
    (
        lambda t: t.split("[torch]")[0] + "[torch-noarch]\n" + "[kernel.k" + t.split("[kernel.k", 1)[1],
        "[kernel.k] in a pure-Python kernel ([torch-noarch])",
    ),
    (
        lambda t: t.replace('minver = "12.8"\nmaxver = "13.0"', 'minver = "13.0"\nmaxver = "12.8"'),
        "no CUDA toolkit is left",
    ),
    (lambda t: t.replace('repo-id = "example/demo"', 'repo-id = "no-slash"'), 'use "org/name"'),
    (
        lambda t: t.replace("version = 1 }", 'version = 1, revision = "x" }'),
        "`kernel-depends` in [general] must be a list of tables",
    ),
    (
        lambda t: t.replace('upstream = "https://github.com/example/demo.git"', 'upstream = "ftp://example.org/demo"'),
        "`upstream` in [general] must be a git URL",
    ),
]


@pytest.mark.parametrize(("change", "fragment"), REFUSALS, ids=[r[1][:45] for r in REFUSALS])
def test_refusals(kdir: Path, change, fragment: str) -> None:  # noqa: ANN001
    with pytest.raises(ManifestError) as info:
        parse(kdir, change(V5))
    message = str(info.value)
    assert fragment in message
    assert message.startswith(str(kdir / "build.toml")) and "\n" not in message


def test_a_v4_manifest_gets_its_error_in_v4_terms(kdir: Path) -> None:
    text = (
        V5.replace("edition = 5\n", "")
        .replace(KDEPS, "")
        .replace("[general.xpu]\npython-depends = []\n", "")
        .replace('cuda-flags = ["-DCUDA_ONLY"]', 'cuda-flag = ["-x"]')
    )
    with pytest.raises(ManifestError, match="unknown key `cuda-flag` in \\[kernel.k\\]; did you mean `cuda-flags`"):
        parse(kdir, text)


# ------------------------------------------------------------------------------------------
# migrate


def round_trip(kdir: Path, text: str):  # noqa: ANN201
    path = kdir / "build.toml"
    old = parse_manifest(text, path)
    migration = migrate_text(text, path)
    new = parse_manifest(migration.new, path)
    assert new.edition == 5
    return old, new, migration


def test_migrate_farm_format_keeps_comments_and_meaning(kdir: Path) -> None:
    text = (
        '# my kernel\n[general]\nname = "demo"\nuniversal = false\nlicense = "MIT"  # chosen\n\n# the binding\n'
        '[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n\n# the CUDA part\n[kernel.k]\nbackend = "cuda"\n'
        'src = ["csrc/k.cu"]\n\n# the CPU part\n[kernel.c]\nbackend = "cpu"\nsrc = ["csrc/k_cpu.cpp"]\n'
    )
    old, new, m = round_trip(kdir, text)
    assert (old.edition, new.backends, new.version) == ("farm", ("cuda", "cpu"), 1)
    assert m.new.startswith("# my kernel\n[general]\n") and 'license = "MIT"  # chosen\n' in m.new
    assert "edition = 5\n\n# the binding\n[torch]\n" in m.new  # new keys above the next table's comment
    assert 'src = ["csrc/k.cu"]\ndepends = ["torch"]\n\n# the CUDA part' not in m.new
    assert (
        '# the CUDA part\n[kernel.k]\nbackend = "cuda"\nsrc = ["csrc/k.cu"]\ndepends = ["torch"]\n\n# the CPU part\n'
        "[kernel.c]\n" in m.new
    )
    assert m.new.endswith('src = ["csrc/k_cpu.cpp"]\ndepends = ["torch"]\n')  # the final newline, once
    assert "universal" not in m.new and "edition = 5" in m.new
    assert [k.src for k in new.kernels] == [k.src for k in old.kernels]
    assert [k.depends for k in new.kernels] == [("torch",), ("torch",)]  # upstream links torch only through depends
    assert "+edition = 5" in m.diff()


def test_migrate_v3_noarch_and_pyext(kdir: Path) -> None:
    text = '[general]\nname = "demo"\nlicense = "MIT"\nbackends = ["cuda", "tpu"]\n'
    old, new, m = round_trip(kdir, text)
    assert old.edition == 3 and new.noarch and "[torch-noarch]" in m.new
    text = (
        '[general]\nname = "demo"\nuniversal = false\nlicense = "MIT"\nbackends = ["cuda"]\n'
        '[torch]\npyext = ["py", "json"]\n'
    )
    old, new, m = round_trip(kdir, text)
    assert old.noarch and new.torch_pyext == ("py", "json") and "[torch]" not in m.new


def test_migrate_v4_and_edition5_is_a_no_op(kdir: Path) -> None:
    text = V5.replace("edition = 5\n", "").replace(KDEPS, "").replace("[general.xpu]\npython-depends = []\n", "")
    old, new, m = round_trip(kdir, text)
    assert old.edition == 4 and m.changed
    assert not migrate_text(V5, kdir / "build.toml").changed


def test_migrate_rewrites_an_inline_general_as_a_table(kdir: Path) -> None:
    text = (
        '# top\ngeneral = { name = "demo", license = "MIT", backends = ["cuda"] }\n\n[torch]\n'
        'src = ["torch-ext/torch_binding.cpp"]\n\n[kernel.k]\nbackend = "cuda"\nsrc = ["csrc/k.cu"]\n'
    )
    old, new, m = round_trip(kdir, text)
    assert old.edition == "farm" and new.backends == ("cuda",) and "[general]\n" in m.new and "# top" in m.new


@pytest.mark.parametrize("dep", ["cutlass", "cub"])
def test_migrate_refuses_a_farm_only_dependency(kdir: Path, dep: str) -> None:
    text = (
        '[general]\nname = "demo"\nlicense = "MIT"\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n'
        f'[kernel.k]\nbackend = "cuda"\ndepends = ["torch", "{dep}"]\nsrc = ["csrc/k.cu"]\n'
    )
    assert parse(kdir, text).kernels[0].depends == ("torch", dep)  # the farm's format keeps its names
    with pytest.raises(
        ManifestError,
        match=f"`depends` in \\[kernel.k\\] names '{dep}', which has no equivalent in edition 5; .*then migrate$",
    ):
        migrate_text(text, kdir / "build.toml")


def test_migrate_keeps_torch_linked_into_the_farms_sections_and_v3_as_it_is(kdir: Path) -> None:
    text = (
        '[general]\nname = "demo"\nlicense = "MIT"\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n'
        '[kernel.k]\nbackend = "cuda"\ndepends = []\nsrc = ["csrc/k.cu"]\n'
    )
    old, new, m = round_trip(kdir, text)
    assert old.edition == "farm" and new.kernels[0].depends == ("torch",)
    text = text.replace('license = "MIT"', 'license = "MIT"\nbackends = ["cuda"]')
    old, new, m = round_trip(kdir, text)  # v3's depends = [] means what edition 5's does: left alone
    assert old.edition == 3 and new.kernels[0].depends == () and "depends = []" in m.new


def test_migrate_refuses_without_a_license(kdir: Path) -> None:
    with pytest.raises(ManifestError, match="edition 5 requires `license` in \\[general\\]"):
        migrate_text('[general]\nname = "demo"\nbackends = ["cuda"]\n', kdir / "build.toml")


def test_migrate_cli_check_then_write(kdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (kdir / "build.toml").write_text('[general]\nname = "demo"\nlicense = "MIT"\nbackends = ["cuda"]\n')
    assert main(["migrate", "--check", str(kdir)]) == 3
    captured = capsys.readouterr()
    assert "+edition = 5" in captured.out and "not in edition 5" in captured.err
    assert "edition" not in (kdir / "build.toml").read_text()  # --check writes nothing
    assert main(["migrate", str(kdir)]) == 0
    assert main(["migrate", "--check", str(kdir)]) == 0
    assert load_manifest(kdir).edition == 5


def test_check_config_cli(kdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (kdir / "build.toml").write_text(V5)
    assert main(["check-config", str(kdir)]) == 0
    assert "ok (edition 5, torch" in capsys.readouterr().err
    (kdir / "build.toml").write_text(V5.replace("edition = 5", "edition = 4"))
    assert main(["check-config", str(kdir)]) == 3
    assert "`edition` in [general] is 4" in capsys.readouterr().err


def test_cuda_capabilities_are_intersected_with_the_toolkit(kdir: Path) -> None:
    from pybuild.backends.cuda import cuda_capabilities_for

    m = parse(kdir, V5.replace('cuda-capabilities = ["8.0", "9.0"]', 'cuda-capabilities = ["5.0", "7.5", "9.0"]'))
    assert cuda_capabilities_for(m, "13.0") == ("7.5", "9.0")  # 5.0 is gone from CUDA 13, as upstream drops it
    assert cuda_capabilities_for(m, "12.6") == ("5.0", "7.5", "9.0")
    m = parse(kdir, V5.replace('cuda-capabilities = ["8.0", "9.0"]', 'cuda-capabilities = ["5.0"]'))
    with pytest.raises(ManifestError, match="empty set of capabilities for CUDA 13.0"):
        cuda_capabilities_for(m, "13.0")


def test_a_pinned_dependency_is_for_its_backends_variants_and_missing_is_one_line(
    kdir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """As upstream, a CUTLASS pin reaches CUDA builds only; where nothing provides it, the build stops
    in one line naming it and the fix (the resolver itself: tests/unit/test_deps.py)."""
    from pybuild.errors import ToolchainError
    from pybuild.preflight import resolve_depends, variant_pins
    from pybuild.variants import parse_variant_name

    text = V5.replace(
        'depends = ["torch"]\nsrc = ["csrc/k_cpu.cpp"]', 'depends = ["torch", "cutlass_3_6"]\nsrc = ["csrc/k_cpu.cpp"]'
    )
    text = text.replace(
        'depends = ["torch"]\nsrc = ["csrc/k.cu", ', 'depends = ["torch", "cutlass_4_0"]\nsrc = ["csrc/k.cu", '
    )
    (kdir / "build.toml").write_text(text.replace('minver = "2.11"\nmaxver = "2.14"\n', ""))
    m = load_manifest(kdir)
    cpu = parse_variant_name("torch213-cxx11-cpu-x86_64-linux")
    cuda = parse_variant_name("torch213-cxx11-cu130-x86_64-linux")
    assert variant_pins(m, cpu) == ()
    assert [p.name for p in variant_pins(m, cuda)] == ["cutlass_4_0"]
    monkeypatch.setenv("PYBUILD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PYBUILD_DEPS_MIRROR", "http://127.0.0.1:9")
    monkeypatch.delenv("PYBUILD_DEP_CUTLASS_4_0", raising=False)
    with pytest.raises(ToolchainError, match=r"^cutlass_4_0 \(CUTLASS 4.0.0\) is not in .*PYBUILD_DEP_CUTLASS_4_0"):
        resolve_depends(m, cuda)
