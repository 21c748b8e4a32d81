"""Manifests that kernel-builder accepts and the farm once refused, each in the shape of the
kernels-community manifest that uses it: accepted, with a warning where the result is doubtful."""

from __future__ import annotations

from pathlib import Path

import pytest

from pybuild import backends
from pybuild.__main__ import main
from pybuild.errors import ManifestError
from pybuild.generate import ProjectSpec, render_project
from pybuild.manifest import load_manifest
from pybuild.variants import load_matrix, parse_variant_name

REPO = Path(__file__).resolve().parents[2]

BINDING = """\
[torch]
src = [
  "torch-ext/torch_binding.cpp",
  "torch-ext/torch_binding.h",
]
"""

# msa, flash-attn4, vllm-moe: `version = 0` (v4, no edition)
VERSION_ZERO = (
    """\
[general]
name = "msa"
backends = ["cuda"]
license = "other"
version = 0

[general.cuda]
minver = "12.8"

"""
    + BINDING
    + """
[kernel.msa]
backend = "cuda"
cuda-capabilities = ["10.0"]
depends = ["torch"]
src = ["csrc/msa.cu"]
"""
)

# nvfp4-gemm: edition 5, [torch.stable-abi] cuda = "2.9"
STABLE_ABI_29 = (
    """\
[general]
backends = ["cuda"]
edition = 5
license = "Apache-2.0"
name = "nvfp4-gemm"
version = 1

[general.cuda]
minver = "12.8"

"""
    + BINDING
    + """
[torch.stable-abi]
cuda = "2.9"

[kernel.nvfp4_gemm]
backend = "cuda"
cuda-capabilities = ["10.0a", "12.0a"]
depends = ["torch"]
src = ["csrc/nvfp4.cu"]
"""
)

# aiter-flash-attn-ck: .hip sources (and headers) in a ROCm section, with hip-flags
HIP = (
    """\
[general]
name = "aiter-flash-attn-ck"
license = "MIT"
version = 1
backends = ["rocm"]

"""
    + BINDING
    + """
[kernel.aiter_flash_attn_ck]
backend = "rocm"
rocm-archs = ["gfx942", "gfx950"]
depends = ["torch"]
hip-flags = ["-DENABLE_CK=1"]
src = [
    "aiter/cpp_itfs/mha_fwd.hip",
    "aiter/include/attention.h",
]
"""
)

# sage-attention: a CUDA section whose src lists only headers, beside one that compiles
HEADERS_ONLY = (
    """\
[general]
name = "sage-attention"
version = 2
license = "Apache-2.0"
backends = ["cuda"]

"""
    + BINDING
    + """
[kernel._qattn]
backend = "cuda"
cuda-capabilities = ["8.0", "8.9", "9.0a"]
cuda-flags = ["-O3"]
depends = ["torch"]
include = ["sage_attention"]
src = [
    "sage_attention/math.cuh",
    "sage_attention/dispatch_utils.h",
]

[kernel._fused]
backend = "cuda"
depends = ["torch"]
src = ["sage_attention/fused.cu"]
"""
)

# megablocks: a capability list with "11.8", which no CUDA toolkit knows, among known ones
CAPABILITY = (
    """\
[general]
name = "megablocks"
version = 1
license = "Apache-2.0"
backends = ["cuda"]

"""
    + BINDING
    + """
[kernel.megablocks]
backend = "cuda"
cuda-capabilities = ["7.0", "8.0", "9.0", "10.0", "10.1", "11.8", "12.0"]
depends = ["torch"]
src = ["csrc/cumsum.h", "csrc/cumsum.cu"]
"""
)


def cmakelists(m) -> str:  # noqa: ANN001
    return render_project(m, ProjectSpec(backend="cuda", ops_name="_ops_x"))["CMakeLists.txt"]


def make(tmp_path: Path, text: str) -> Path:
    """A kernel folder with ``text`` as build.toml and every file it names (plus the package)."""
    import tomllib

    data = tomllib.loads(text)
    name = data["general"]["name"]
    d = tmp_path / name
    files = [*data["torch"]["src"], f"torch-ext/{name.replace('-', '_')}/__init__.py"]
    for k in data.get("kernel", {}).values():
        files += k["src"]
        for inc in k.get("include", ()):
            (d / inc).mkdir(parents=True, exist_ok=True)
    for rel in files:
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text("// x\n")
    (d / "build.toml").write_text(text)
    return d


def test_version_zero_is_accepted_as_branch_v0(tmp_path: Path) -> None:
    m = load_manifest(make(tmp_path, VERSION_ZERO))
    assert m.version == 0 and m.edition == 4 and not m.warnings


def test_a_negative_version_is_still_refused(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"`version` in \[general\] must be a whole number from 0.*found -1"):
        load_manifest(make(tmp_path, VERSION_ZERO.replace("version = 0", "version = -1")))


def test_stable_abi_29_is_read_as_upstream_reads_it_with_a_warning(tmp_path: Path) -> None:
    m = load_manifest(make(tmp_path, STABLE_ABI_29))
    assert m.stable_abi == (("cuda", (2, 9)),)
    names = [v.name for v in m.variants(load_matrix(REPO / "variants.json").variants)]
    assert "torch-stable-abi29-cu130-x86_64-linux" in names
    assert all(n.startswith("torch-stable-abi29-") for n in names)
    assert m.accepts(parse_variant_name("torch-stable-abi29-cu130-x86_64-linux"))
    (warning,) = m.warnings
    assert "`stable-abi` in [torch] asks for torch 2.9 for cuda; accepted as kernel-builder reads it" in warning
    assert "TORCH_TARGET_VERSION=0x0209000000000000" in cmakelists(m)


def test_a_hip_source_in_a_rocm_section_is_compiled(tmp_path: Path) -> None:
    m = load_manifest(make(tmp_path, HIP))
    (k,) = m.kernels
    assert k.compiled_src == ("aiter/cpp_itfs/mha_fwd.hip",)
    assert not m.warnings


def test_a_hip_source_elsewhere_is_still_refused(tmp_path: Path) -> None:
    text = HIP.replace('backend = "rocm"\nrocm-archs = ["gfx942", "gfx950"]', 'backend = "cpu"')
    text = text.replace('hip-flags = ["-DENABLE_CK=1"]\n', "").replace('["rocm"]', '["cpu"]')
    with pytest.raises(ManifestError, match=r"'aiter/cpp_itfs/mha_fwd.hip' is not a C/C\+\+/CUDA source"):
        load_manifest(make(tmp_path, text))


def test_a_section_of_headers_only_is_accepted_with_a_warning(tmp_path: Path) -> None:
    m = load_manifest(make(tmp_path, HEADERS_ONLY))
    by = {k.name: k for k in m.kernels}
    assert by["_qattn"].compiled_src == () and by["_fused"].compiled_src == ("sage_attention/fused.cu",)
    (warning,) = m.warnings
    assert "`src` in [kernel._qattn] lists only headers, so the section compiles nothing" in warning
    cmake = cmakelists(m)
    assert "# [kernel._qattn]" in cmake and "sage_attention/math.cuh" not in cmake


def test_an_unknown_capability_among_known_ones_is_left_out_with_a_warning(tmp_path: Path) -> None:
    m = load_manifest(make(tmp_path, CAPABILITY))
    assert m.kernels[0].cuda_capabilities[-2:] == ("11.8", "12.0")  # as written
    built = backends.get("cuda").default_archs(m, None)
    assert "11.8" not in built and "12.0" in built
    (warning,) = m.warnings
    assert "`cuda-capabilities` in [kernel.megablocks] has '11.8', which no supported CUDA toolkit knows" in warning


def test_only_unknown_capabilities_are_refused_as_upstream_refuses_them(tmp_path: Path) -> None:
    text = CAPABILITY.replace('["7.0", "8.0", "9.0", "10.0", "10.1", "11.8", "12.0"]', '["11.8"]')
    with pytest.raises(ManifestError, match="that leaves an empty set of capabilities"):
        load_manifest(make(tmp_path, text))


def test_check_config_prints_the_warnings_and_succeeds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = make(tmp_path, CAPABILITY)
    assert main(["check-config", str(d)]) == 0
    err = capsys.readouterr().err
    assert "warning:" in err and "'11.8'" in err and ": ok (" in err
    assert main(["check-config", "-q", str(d)]) == 0
    assert capsys.readouterr().err == ""


def test_the_kernel_folder_as_an_include_folder_is_accepted_and_reaches_only_its_headers(tmp_path: Path) -> None:
    """`include = ["."]` (punica-sgmv, sage-attention): upstream puts the kernel folder on the include
    path; here too, and what the build hashes and publish ships of it are its C/C++/CUDA files only,
    never build/, .pybuild/, the generated cmake/, hidden files (.env) or the tests."""
    from pybuild.manifest import load_manifest

    kdir = tmp_path / "inc-root"
    for rel, text in {
        "torch-ext/inc_root/__init__.py": "",
        "torch-ext/torch_binding.cpp": "",
        "bgmv/bgmv.cu": "",
        "flashinfer/vec.cuh": "",
        ".env": "TOKEN=secret\n",
        "build/x/leftover.h": "",
        ".pybuild/y/z.h": "",
        "cmake/include/kernel_farm/pdl.cuh": "",
        "tests/test_it.py": "",
        "README.md": "",
    }.items():
        (kdir / rel).parent.mkdir(parents=True, exist_ok=True)
        (kdir / rel).write_text(text)
    (kdir / "build.toml").write_text(
        '[general]\nname = "inc-root"\nversion = 1\nlicense = "Apache-2.0"\nbackends = ["cuda"]\n'
        '[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n'
        '[kernel.bgmv]\nbackend = "cuda"\ndepends = ["torch"]\ninclude = ["."]\nsrc = ["bgmv/bgmv.cu"]\n'
    )
    (kdir / "result").symlink_to(tmp_path / "nix-store-path-gone")  # what `nix build` leaves, dangling
    (kdir / "compile_commands.json").symlink_to(kdir / ".pybuild" / "y" / "z.h")
    m = load_manifest(kdir)
    assert m.kernels[0].include == (".",)
    assert m.source_files() == [
        "bgmv/bgmv.cu",
        "build.toml",
        "flashinfer/vec.cuh",
        "torch-ext/inc_root/__init__.py",
        "torch-ext/torch_binding.cpp",
    ]
    # any other include folder gives all its files, whatever their names
    (kdir / "csrc").mkdir()
    (kdir / "csrc" / "Core").write_text("// an extensionless header\n")
    text = (kdir / "build.toml").read_text().replace('include = ["."]', 'include = [".", "csrc"]')
    (kdir / "build.toml").write_text(text)
    assert "csrc/Core" in load_manifest(kdir).source_files()


def test_stable_abi_29_as_one_version_in_v4(tmp_path: Path) -> None:
    """flash-attn3 and vllm-flash-attn3: a v4 manifest with `stable-abi = "2.9"` in [torch]."""
    text = (
        STABLE_ABI_29.replace("edition = 5\n", "")
        .replace('[torch.stable-abi]\ncuda = "2.9"\n', "")
        .replace("[torch]\n", '[torch]\nstable-abi = "2.9"\n')
    )
    m = load_manifest(make(tmp_path, text))
    assert (m.edition, m.stable_abi) == (4, (("cuda", (2, 9)),))
    assert len(m.warnings) == 1 and "asks for torch 2.9 for cuda" in m.warnings[0]
