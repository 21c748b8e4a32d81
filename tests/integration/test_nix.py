"""The Nix layer, offline: the library's own tests, Nix's variant names = pybuild's, the flake's outputs,
and a real `nix build` of img2gray's CPU variant (impure host toolchain) -> collect -> loaded by `kernels`.

nixpkgs cannot be fetched here, so nothing below builds with the default (pinned nixpkgs) toolchain:
those derivations are only named and evaluated up to nixpkgs (see nix/tests/toolchains.nix).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pybuild.digest import INCLUDE
from pybuild.errors import ManifestError, VariantsError
from pybuild.host import host_variants
from pybuild.manifest import load_manifest
from pybuild.manifest.lock import LOCK_FILE, write_lock
from pybuild.variants import expand_matrix, load_matrix
from tests.helpers.venvs import this_python

REPO = Path(__file__).resolve().parents[2]
NIX = shutil.which("nix")
FEATURES = ["--extra-experimental-features", "nix-command flakes"]
SYSTEMS = ("x86_64-linux", "aarch64-linux")

pytestmark = [
    pytest.mark.nix,
    pytest.mark.skipif(NIX is None, reason="needs the nix command (Debian: apt-get install nix-bin; .ci/setup does)"),
]


def run(
    cmd: list[str], cwd: Path = REPO, timeout: int = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


# Measured on the Debian nix-bin 2.8 VMs this runs on: with the sandbox off, Nix SIGKILLs the builder's
# process group as soon as the build log reaches EOF, and now and then that lands before the finished
# builder is reaped ("failed due to signal 9 (Killed)", most often for builds that take milliseconds).
# Finished dependencies stay in the store, so trying again costs only the killed step; on a loaded
# machine four kills in a row were seen once, hence eight tries.
KILLED = "failed due to signal 9 (Killed)"


def nix(*args: str, cwd: Path = REPO, timeout: int = 600, attempts: int = 8, env: dict[str, str] | None = None) -> str:
    for _ in range(attempts):
        proc = run(["nix", *FEATURES, *args], cwd=cwd, timeout=timeout, env=env)
        if proc.returncode == 0 or KILLED not in proc.stderr:
            break
    assert proc.returncode == 0, f"nix {' '.join(args)} failed:\n{proc.stderr[-4000:]}"
    return proc.stdout


def lock(kernel: Path, matrix: Path = REPO / "variants.json") -> Path:
    """Write ``kernel``'s variants.lock.json for ``matrix``, as a kernel author does before `nix build`."""
    write_lock(kernel, load_matrix(matrix))
    return kernel


def nix_eval(expr: str) -> object:
    """Evaluate ``expr`` with ``lib`` = the farm's Nix library; read-only and offline."""
    proc = run(["nix-instantiate", "--eval", "--strict", "--json", "-E", f"let lib = import {REPO}/nix/lib; in {expr}"])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def nix_error(expr: str) -> str:
    proc = run(["nix-instantiate", "--eval", "--strict", "-E", f"let lib = import {REPO}/nix/lib; in {expr}"])
    assert proc.returncode != 0, f"expected an evaluation error, got {proc.stdout}"
    return " ".join(proc.stderr.split())


def nix_string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a valid Nix string literal for these ASCII paths


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the flake sees of the repo: its sources without build outputs, as a `path:` flake."""
    dest = tmp_path_factory.mktemp("farm")
    for name in ("flake.nix", "flake.lock", "variants.json"):
        shutil.copy(REPO / name, dest / name)
    ignore = shutil.ignore_patterns("build", ".pybuild", "result*", "__pycache__", "compile_commands.json")
    for name in ("nix", "pybuild", "kernels"):
        shutil.copytree(REPO / name, dest / name, ignore=ignore)
    return dest


# --------------------------------------------------------------------------------------------
# The library's own tests


def test_nix_library_tests_pass() -> None:
    proc = run(["nix-instantiate", "--eval", "--strict", "--json", "nix/tests"])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [], "failing Nix tests (name, expected, result)"


def test_sources_leave_out_build_outputs(tmp_path: Path) -> None:
    """What a variant's derivation depends on: the kernel's sources and pybuild, not their build outputs."""
    kernel = tmp_path / "img2gray"
    shutil.copytree(REPO / "tests" / "fixtures" / "guide-img2gray", kernel)
    for junk in ("build/torch213-cxx11-cpu-x86_64-linux", ".pybuild/x", "result-1", "csrc/__pycache__"):
        (kernel / junk).mkdir(parents=True)
    (kernel / "result").symlink_to(tmp_path)
    lock(kernel)
    proc = run(
        [
            "nix-instantiate",
            "--eval",
            "--strict",
            "--json",
            "--read-write-mode",
            "-E",
            f"let lib = import {REPO}/nix/lib; ls = p: builtins.attrNames (builtins.readDir p); "
            f"src = lib.kernelSource (lib.readKernel {kernel}); in "
            '{ kernel = ls src; csrc = ls (src + "/csrc"); pybuild = ls lib.pybuildSource; '
            'shared = ls (lib.pybuildSource + "/pybuild/include/kernel_farm"); }',
        ]
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "kernel": sorted(
            p.name for p in kernel.iterdir() if p.name not in ("build", ".pybuild", "result", "result-1", LOCK_FILE)
        ),
        "csrc": sorted(p.name for p in (kernel / "csrc").iterdir() if p.name != "__pycache__"),
        "pybuild": ["pybuild"],
        # the shared kernel headers travel with pybuild into every variant's build
        "shared": sorted(p.name for p in (INCLUDE / "kernel_farm").iterdir()),
    }


# --------------------------------------------------------------------------------------------
# One source of truth: Nix names the variants exactly as pybuild does


EXTRA_MATRICES = {
    "darwin-abis-and-exclusions": {
        "torch": [
            {"version": "2.9", "cuda": ["12.6", "12.8"], "cpu": True, "metal": True},
            {"version": "2.10", "cuda": ["12.8"], "rocm": ["6.4", "7.0"], "xpu": ["2025.1"], "cpu": True},
        ],
        "cxx-abi": ["cxx98", "cxx11"],
        "systems": ["aarch64-darwin", "aarch64-linux", "x86_64-linux"],
        "exclude": [
            {"torch": "2.9", "backend": "cuda", "cxx-abi": "cxx98"},
            {"backend": "rocm", "system": "aarch64-linux"},
            {"backend-version": "12.6", "system": "aarch64-linux", "reason": "no wheels"},
        ],
    },
}


def matrix_files(tmp_path: Path) -> list[Path]:
    files = [REPO / "variants.json", REPO / "nix" / "tests" / "fixtures" / "farm" / "variants.json"]
    for name, data in EXTRA_MATRICES.items():
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(json.dumps(data))
    return files


def test_matrix_names_equal_pybuilds(tmp_path: Path) -> None:
    for path in matrix_files(tmp_path):
        nix_names = nix_eval(f"map (v: v.name) (lib.readMatrix {path})")
        assert nix_names == load_matrix(path).names(), path  # same variants, same order
        assert nix_names, path


def kernel_dirs(tmp_path: Path) -> list[Path]:
    """The farm's kernels, and one narrowed by [general] backends and [torch] bounds."""
    dirs = sorted(p.parent for p in (REPO / "kernels").glob("*/build.toml"))
    narrowed = tmp_path / "narrowed"
    shutil.copytree(REPO / "tests" / "fixtures" / "guide-img2gray", narrowed)
    text = (narrowed / "build.toml").read_text()
    text = text.replace("[general]\n", '[general]\nbackends = ["cuda"]\n', 1)
    text = text.replace("[torch]\n", '[torch]\nminver = "2.12"\nmaxver = "2.13"\n', 1)
    (narrowed / "build.toml").write_text(text)
    return [*dirs, narrowed]


def test_kernel_variant_names_equal_pybuilds(tmp_path: Path) -> None:
    matrix = load_matrix(REPO / "variants.json")
    for d in kernel_dirs(tmp_path):
        manifest = load_manifest(d)
        expected = [v.name for v in matrix.variants if manifest.accepts(v)]
        if d.is_relative_to(tmp_path):
            lock(d)
        got = nix_eval(
            f"let k = lib.readKernel {d}; in "
            f"map (v: v.name) (lib.kernelVariants k (lib.readMatrix {REPO}/variants.json))"
        )
        assert sorted(got) == sorted(expected), d
    assert expected and all(v.split("-")[2].startswith("cu") for v in expected), "the narrowed kernel keeps CUDA only"


UPSTREAM = REPO.parent / "shared" / "upstream-kernel-builder" / "examples" / "kernels"


@pytest.mark.skipif(not UPSTREAM.is_dir(), reason=f"upstream kernel-builder examples not found at {UPSTREAM}")
def test_upstream_examples_variant_names_equal_pybuilds(tmp_path: Path) -> None:
    """Every edition and framework upstream's examples use: noarch (neuron, tpu), stable ABI, bounds."""
    matrix = load_matrix(REPO / "variants.json")
    seen = set()
    for example in sorted(p.parent for p in UPSTREAM.glob("*/build.toml")):
        d = tmp_path / example.name
        shutil.copytree(example, d)
        try:
            manifest = load_manifest(d)
        except ManifestError:
            continue  # refused (relu-invalid-capability): see test_upstream_examples.py
        lock(d)
        # a stable-ABI variant's name and the matrix torch it is built with
        expected = [[v.name, v.build_torch if v.stable_abi else None] for v in manifest.variants(matrix.variants)]
        got = nix_eval(
            f"map (v: [ v.name (if v.stableAbi or false then v.torch else null) ]) "
            f"(lib.kernelVariants (lib.readKernel {d}) (lib.readMatrix {REPO}/variants.json))"
        )
        assert got == expected, d
        seen.update(n.split("-")[0] + ("-stable" if "stable-abi" in n else "") for n, _ in expected)
    assert {"torch", "torch-stable"} <= seen, seen


def test_noarch_variant_names_equal_pybuilds(tmp_path: Path) -> None:
    kernel = lock(shutil.copytree(REPO / "tests" / "fixtures" / "noarch-softcap", tmp_path / "softcap"))
    expected = [v.name for v in load_manifest(kernel).variants(())]
    got = nix_eval(f"let k = lib.readKernel {kernel}; in assert k.noarch; map (v: v.name) (lib.kernelVariants k [ ])")
    assert got == expected == ["torch-cuda", "torch-cpu"]


@pytest.mark.parametrize(
    "general",
    [
        'name = "softcap"',
        'name = "softcap"\nbackends = []',
        'name = "softcap"\nbackends = ["cuda", "npu"]',
        'name = "softcap"\nbackends = "cuda"',
    ],
)
def test_nix_refuses_what_pybuild_refuses(tmp_path: Path, general: str) -> None:
    """A build.toml pybuild refuses gets no lock, and Nix refuses the kernel (its old lock is stale)."""
    kernel = lock(shutil.copytree(REPO / "tests" / "fixtures" / "noarch-softcap", tmp_path / "softcap"))
    (kernel / "build.toml").write_text(f"[general]\n{general}\n")
    with pytest.raises(ManifestError):  # pybuild refuses it
        lock(kernel)
    message = nix_error(f"(lib.readKernel {kernel}).backends")
    assert (
        "readKernel: softcap/build.toml: variants.lock.json was written from another build.toml or by other "
        f"pybuild rules, or edited since; run `python -m pybuild lock {kernel}`" in message
    )
    (kernel / LOCK_FILE).unlink()
    assert "no variants.lock.json beside it" in nix_error(f"(lib.readKernel {kernel}).backends")


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d.update(name="renamed"),
        lambda d: d["variants"].pop(),
        lambda d: d.update(backends=["cpu"]),
        lambda d: d.pop("content-sha256"),
    ],
    ids=["renamed-kernel", "dropped-variant", "dropped-backend", "no-content-hash"],
)
def test_a_lock_edited_by_hand_is_stale(tmp_path: Path, edit) -> None:
    """Its build.toml, matrix and rules hashes left alone, a lock whose content was edited is refused."""
    kernel = shutil.copytree(REPO / "nix" / "tests" / "fixtures" / "farm" / "kernels" / "img2gray", tmp_path / "k")
    assert nix_eval(f"(lib.readKernel {kernel}).name") == "img2gray"  # the committed lock is fresh
    doc = json.loads((kernel / LOCK_FILE).read_text())
    edit(doc)
    (kernel / LOCK_FILE).write_text(json.dumps(doc, indent=2) + "\n")
    assert "variants.lock.json was written from another build.toml or by other pybuild rules, or edited since" in (
        nix_error(f"(lib.readKernel {kernel}).name")
    )


def test_lock_hashes_are_computed_alike_by_nix_and_pybuild(tmp_path: Path) -> None:
    """What a lock records of its build.toml, matrix and rules, Nix computes the same way."""
    from pybuild.manifest import lock as pylock

    nix_text = (REPO / "nix" / "lib" / "kernels.nix").read_text()
    assert f"lockRules = {pylock.RULES_VERSION};" in nix_text
    tomls = [*(REPO / "kernels").glob("*/build.toml"), *UPSTREAM.glob("*/build.toml")]
    odd = tmp_path / "odd"
    odd.mkdir()  # what canonical JSON must agree on: escapes, non-ASCII, nesting, numbers, booleans
    (odd / "build.toml").write_text(
        '# c\n[general]\nname = "odd"\nx = "tab\\t quote\\" \\\\ é \\u0001 ✓"\n'
        'n = [1, -2, true, 2.0, 0.1, 1e20, 3.5e-7]\n[a.b]\nk = { z = 1, a = "" }\n'
    )
    dirs = sorted({t.parent for t in tomls} | {odd})
    got = nix_eval("[ " + " ".join(f"(lib.buildTomlHash {d})" for d in dirs) + " ]")
    assert got == [pylock.build_toml_hash(d / "build.toml") for d in dirs]
    matrices = matrix_files(tmp_path)
    got = nix_eval("[ " + " ".join(f"(lib.matrixHash {m})" for m in matrices) + " ]")
    assert got == [pylock.matrix_hash(load_matrix(m)) for m in matrices]
    assert nix_eval("lib.lockRulesHash") == pylock.rules_hash()
    locks = sorted(REPO.glob("kernels/*/variants.lock.json")) + sorted(
        REPO.glob("nix/tests/fixtures/**/variants.lock.json")
    )
    got = nix_eval(
        "[ " + " ".join(f'(builtins.fromJSON (builtins.readFile {p}))."content-sha256"' for p in locks) + " ]"
    )
    assert got == [pylock.content_hash(json.loads(p.read_text())) for p in locks]


def ifd_eval(expr: str, builds: int) -> object:
    """``nix_eval`` where a kernel without a fresh lock gets one from the host toolchain's
    ``computeLock`` (import-from-derivation: builds, so with ``nix eval``, as the calling user).
    ``builds``: how many it builds, each of which the KILLED race may hit once or more."""
    python = nix_string(this_python())
    toolchain = f"lib.hostToolchainImpure {{ variants = [ ]; python = {python}; }}"
    full = f"let lib = import {REPO}/nix/lib; compute = ({toolchain}).computeLock; in {expr}"
    return json.loads(nix("eval", "--impure", *BUILD_AS_ME, "--json", "--expr", full, attempts=8 + 6 * builds))


@pytest.mark.skipif(not UPSTREAM.is_dir(), reason=f"upstream kernel-builder examples not found at {UPSTREAM}")
def test_upstream_examples_without_a_lock_evaluate_as_with_one(tmp_path: Path) -> None:
    """An upstream kernel copied as it is (no lock): Nix computes the lock and gets the variants it
    gets from a committed one; a lock written for another matrix is recomputed the same way. A few
    examples of each kind (each lock is a build, and builds here race KILLED): plain, [torch]
    bounds, stable ABI, tvm-ffi, noarch; test_upstream_examples_variant_names_equal_pybuilds has
    them all for committed locks."""
    variants = REPO / "variants.json"
    kinds = ("relu", "relu-torch-bounds", "relu-torch-stable-abi", "relu-tvm-ffi", "relu-triton")
    examples = [UPSTREAM / name for name in kinds]
    bare, locked = [], []
    for example in examples:
        bare.append(shutil.copytree(example, tmp_path / "bare" / example.name))
        locked.append(lock(shutil.copytree(example, tmp_path / "locked" / example.name)))
    stale = lock(
        shutil.copytree(examples[0], tmp_path / "stale"), REPO / "nix" / "tests" / "fixtures" / "farm" / "variants.json"
    )

    def names(d: Path) -> str:
        return (
            f"(map (v: v.name) (let k = lib.lockedWith {{ variants = {variants}; inherit compute; }} "
            f"(lib.readKernel {d}); in lib.kernelVariants k (lib.readMatrix {variants})))"
        )

    dirs = [*bare, stale]
    got = ifd_eval("[ " + " ".join(names(d) for d in dirs) + " ]", builds=len(dirs))
    assert isinstance(got, list)
    want = nix_eval("[ " + " ".join(names(d).replace("inherit compute; ", "") for d in [*locked, locked[0]]) + " ]")
    assert got == want and len(got) == len(dirs) and all(got), [d.name for d in dirs]
    assert not (tmp_path / "bare" / examples[0].name / LOCK_FILE).exists()  # computed in the store
    # as a kernel repository's flake evaluates it
    toolchain = (
        f'lib.hostToolchainImpure {{ variants = [ "torch213-cxx11-cpu-x86_64-linux" ]; '
        f"python = {nix_string(this_python())}; }}"
    )
    relu = [d for d in bare if d.name == "relu"]
    assert relu, "upstream's relu example"
    outputs = (
        f"builtins.attrNames (lib.genFlakeOutputs {{ path = {relu[0]}; toolchain = {toolchain}; }})"
        ".packages.x86_64-linux"
    )
    packages = ifd_eval(outputs, builds=1)
    assert isinstance(packages, list)
    assert packages == nix_eval(outputs.replace(str(relu[0]), str(tmp_path / "locked" / "relu")))
    assert "relu-torch213-cxx11-cpu-x86_64-linux" in packages, packages


def test_lock_errors_name_the_file_and_the_function(tmp_path: Path) -> None:
    kernel = lock(shutil.copytree(REPO / "tests" / "fixtures" / "noarch-softcap", tmp_path / "softcap"))
    text = (kernel / LOCK_FILE).read_text()
    (kernel / LOCK_FILE).write_text(f"<<<<<<< HEAD\n{text}=======\n{text}>>>>>>> other\n")
    err = nix_error(f"(lib.readKernel {kernel}).name")
    assert f"readKernel: {kernel / LOCK_FILE}: has merge-conflict markers; run `python -m pybuild lock {kernel}`" in err
    compiled = shutil.copytree(
        REPO / "kernels" / "img2gray", tmp_path / "img2gray", ignore=shutil.ignore_patterns("build", ".pybuild")
    )
    other = REPO / "nix" / "tests" / "fixtures" / "farm" / "variants.json"
    err = nix_error(f"(lib.lockedFor {other} (lib.readKernel {compiled})).name")
    assert (
        f"lockedFor: img2gray has a stale variants.lock.json for {other}; run `python -m pybuild lock "
        f"{compiled} --variants {other}`" in err
    )


BAD_MATRICES = [
    ("empty-torch", {"torch": []}, "torch: must be a non-empty list"),
    ("patch-version", {"torch": [{"version": "2.13.0", "cpu": True}]}, 'torch[0].version: must be "major.minor"'),
    ("cuda-not-a-version", {"torch": [{"version": "2.13", "cuda": ["13"]}]}, 'torch[0].cuda: invalid entry "13"'),
    ("cpu-not-bool", {"torch": [{"version": "2.13", "cpu": "yes"}]}, "torch[0].cpu: must be true or false"),
    ("unknown-backend", {"torch": [{"version": "2.13", "cuda12": ["12.8"]}]}, 'torch[0]: unknown key(s) ["cuda12"]'),
    (
        "unknown-top-key",
        {"torch": [{"version": "2.13", "cpu": True}], "sytems": []},
        'top level: unknown key(s) ["sytems"]',
    ),
    (
        "bad-system",
        {"torch": [{"version": "2.13", "cpu": True}], "systems": ["x86_64-windows"]},
        'systems: invalid entry "x86_64-windows"',
    ),
    ("bad-abi", {"torch": [{"version": "2.13", "cpu": True}], "cxx-abi": ["cxx14"]}, 'cxx-abi: invalid entry "cxx14"'),
    (
        "bad-exclude-key",
        {"torch": [{"version": "2.13", "cpu": True}], "exclude": [{"arch": "x86_64"}]},
        "exclude: every entry must be an object with keys from",
    ),
    (
        "twice",
        {"torch": [{"version": "2.13", "cpu": True}, {"version": "2.13", "cuda": ["13.0"]}]},
        'torch: torch "2.13" is listed twice',
    ),
    (
        "exclude-typo",
        {"torch": [{"version": "2.13", "cpu": True}], "exclude": [{"system": "x86_64-linux", "backend": "cpuu"}]},
        'exclude[0]: matches no variant ({"backend":"cpuu","system":"x86_64-linux"})',
    ),
    (
        "nothing-left",
        {"torch": [{"version": "2.13", "cpu": True}], "exclude": [{"backend": "cpu", "reason": "r"}]},
        "top level: expands to no variant",
    ),
    ("no-backend", {"torch": [{"version": "2.13"}]}, "top level: expands to no variant"),
    (
        "cuda-twice",
        {"torch": [{"version": "2.13", "cuda": ["13.0", "12.8", "13.0"]}]},
        'torch[0].cuda: lists "13.0" twice',
    ),
    (
        "system-twice",
        {"torch": [{"version": "2.13", "cpu": True}], "systems": ["x86_64-linux", "x86_64-linux"]},
        'systems: lists "x86_64-linux" twice',
    ),
    (
        "schema-2",
        {"torch": [{"version": "2.13", "cpu": True}], "schema": 2},
        "schema: is 2; this pybuild reads schema 1",
    ),
    ("no-systems", {"torch": [{"version": "2.13", "cpu": True}], "systems": []}, "systems: is empty, which leaves no"),
    ("no-abi", {"torch": [{"version": "2.13", "cpu": True}], "cxx-abi": []}, "cxx-abi: is empty, which leaves no"),
    (
        "reason-only",
        {"torch": [{"version": "2.13", "cpu": True}], "exclude": [{"reason": "r"}]},
        "exclude[0]: has only a reason, so it would exclude every variant",
    ),
    (
        "null-value",
        {"torch": [{"version": "2.13", "cpu": True}], "exclude": [{"backend-version": None}]},
        'exclude[0]: values must be strings like "2.13"; found {"backend-version":null}',
    ),
    (
        "version-before-exclude",
        {"torch": [{"version": "2.x", "cpu": True}], "exclude": [{"backend": "cpuu"}]},
        'torch[0].version: must be "major.minor"',
    ),
]


@pytest.mark.parametrize(("label", "data", "fragment"), BAD_MATRICES, ids=[b[0] for b in BAD_MATRICES])
def test_bad_matrix_is_refused_by_both(tmp_path: Path, label: str, data: dict, fragment: str) -> None:
    full = {"cxx-abi": ["cxx11"], "systems": ["x86_64-linux"], **data}
    with pytest.raises(VariantsError):
        expand_matrix(full)
    path = tmp_path / "variants.json"
    path.write_text(json.dumps(full))
    err = nix_error(f"lib.readMatrix {path}")
    assert f"expandMatrix: variants.json {fragment}" in err, err


def test_flake_errors_name_the_fix(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    err = nix_error(
        f"(lib.genFlakeOutputs {{ path = {tmp_path}/empty; toolchain = lib.hostToolchainImpure "
        "{ variants = [ ]; }; }).packages"
    )
    assert "genFlakeOutputs: no build.toml at" in err and "path = ./.;" in err
    kernel = tmp_path / "k"
    kernel.mkdir()
    (kernel / "build.toml").write_text('[general]\nname = "k"\n[torch]\nminver = "2.12.1"\n')
    err = nix_error(f"(lib.readKernel {kernel}).name")
    fix = f"run `python -m pybuild lock {kernel}`"
    assert f"readKernel: k/build.toml: no variants.lock.json beside it; {fix}" in err


def test_torch_wheels_cover_the_matrix() -> None:
    """nix/update-torch-wheels.py --list: one official wheel per variant, named by the Nix library."""
    proc = run([sys.executable, "nix/update-torch-wheels.py", "--list"])
    assert proc.returncode == 0, proc.stderr
    rows = [line.split("\t") for line in proc.stdout.splitlines()]
    assert [variant for variant, _ in rows] == load_matrix(REPO / "variants.json").names()
    urls = [url for _, url in rows]
    assert len(set(urls)) == len(urls) and all(u.startswith("https://download.pytorch.org/whl/") for u in urls)
    assert "https://download.pytorch.org/whl/cpu/torch-2.13.0%2Bcpu-cp313-cp313-manylinux_2_28_x86_64.whl" in urls


# --------------------------------------------------------------------------------------------
# The flake: outputs listed offline, named like pybuild's variants


def expected_outputs(farm: Path) -> dict[str, dict[str, set[str]]]:
    matrix = load_matrix(farm / "variants.json")
    manifests = [load_manifest(p.parent) for p in sorted((farm / "kernels").glob("*/build.toml"))]
    out: dict[str, dict[str, set[str]]] = {}
    for system in SYSTEMS:
        packages: set[str] = set()
        shells: set[str] = set()
        for m in manifests:
            accepted = [v for v in matrix.variants if m.accepts(v)]
            if not accepted:
                continue
            packages |= {m.name, *(f"{m.name}-{v.name}" for v in accepted), *(f"{m.name}-{v.system}" for v in accepted)}
            shells |= {v.name for v in accepted if v.system == system}
        out[system] = {
            "packages": packages | {"default"},
            "devShells": shells | {"default"},
            "checks": {"nix-lib-tests"},
        }
    return out


def test_flake_show_offline_lists_packages_shells_and_checks(farm: Path) -> None:
    shown = json.loads(nix("flake", "show", "--offline", "--json", f"path:{farm}", timeout=120))
    expected = expected_outputs(farm)
    for system in SYSTEMS:
        for output in ("packages", "devShells", "checks"):
            assert set(shown[output][system]) == expected[system][output], (output, system)
    assert shown["packages"]["x86_64-linux"]["img2gray"]["name"] == "img2gray"
    assert "lib" in shown


def test_guide_dev_shell_path_resolves(farm: Path) -> None:
    """`nix develop .#devShells.<variant>` as the guide writes it (building it needs nixpkgs)."""
    variant = next(
        v for v in load_matrix(farm / "variants.json").variants if v.backend == "cuda" and v.system == "x86_64-linux"
    )
    name = nix("eval", "--offline", "--raw", f"path:{farm}#devShells.{variant.name}.name", timeout=120)
    assert name == variant.name


# --------------------------------------------------------------------------------------------
# A real build: the impure host toolchain -> result/ -> collect -> kernels


def host_cpu_variant() -> str:
    try:
        names = [v.name for v in host_variants() if v.backend == "cpu"]
    except Exception as e:  # noqa: BLE001 - no torch: nothing to build with
        pytest.skip(f"no host variant: {e}")
    if not names or names[0] not in load_matrix(REPO / "variants.json").names():
        pytest.skip(f"this machine's CPU variant {names} is not in variants.json")
    return names[0]


def host_tools_path() -> list[str]:
    dirs = [str(Path(sys.executable).parent)]
    for tool in ("cmake", "ninja", "c++", "readelf", "cp", "git"):
        found = shutil.which(tool)
        if found and str(Path(found).parent) not in dirs:
            dirs.append(str(Path(found).parent))
    return dirs


@pytest.fixture(scope="module")
def kernel_repo(farm: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """img2gray as a kernel repository of its own whose flake calls the farm's lib (the guide's layout)."""
    variant = host_cpu_variant()
    repo = tmp_path_factory.mktemp("kernel-repo") / "img2gray"
    shutil.copytree(farm / "kernels" / "img2gray", repo)
    path_list = " ".join(nix_string(d) for d in host_tools_path())
    (repo / "flake.nix").write_text(
        textwrap.dedent(f"""\
        {{
          inputs.farm.url = "path:{farm}";
          outputs = {{ self, farm }}:
            farm.lib.genFlakeOutputs {{
              inherit self;
              path = ./.;
              # IMPURE: this machine's Python, torch, CMake and compilers (nixpkgs is out of reach here).
              toolchain = farm.lib.hostToolchainImpure {{
                variants = [ "{variant}" ];
                python = {nix_string(this_python())};
                path = [ {path_list} ];
              }};
            }};
        }}
        """)
    )
    return repo, variant


# Builds run as the calling user: the host's Python may live in a home the nixbld users cannot read.
BUILD_AS_ME = ["--option", "build-users-group", "", "--option", "sandbox", "false"]


@pytest.mark.slow
def test_nix_build_collect_and_load(kernel_repo: tuple[Path, str], farm: Path, tmp_path: Path) -> None:
    repo, variant = kernel_repo
    out = tmp_path / "result"
    nix("build", "--offline", *BUILD_AS_ME, "-L", f"path:{repo}#img2gray", "--out-link", str(out), timeout=900)
    assert sorted(p.name for p in out.iterdir()) == [variant]
    meta = json.loads((out / variant / "metadata.json").read_text())
    assert meta["name"] == "img2gray" and meta["pybuild"]["variant"] == variant

    collect = run([sys.executable, "-m", "pybuild", "collect", str(out), "--farm", str(farm), "--json"])
    assert collect.returncode == 0, collect.stderr
    assert [(r["variant"], r["status"]) for r in json.loads(collect.stdout)] == [(variant, "added")]
    final = farm / "kernels" / "img2gray" / "build" / variant
    assert (final / "metadata.json").read_bytes() == (out / variant / "metadata.json").read_bytes()

    check = run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        from pathlib import Path
        import torch, kernels
        k = kernels.get_local_kernel(Path({str(farm / "kernels" / "img2gray")!r}))
        rgb = torch.randint(0, 256, (3, 5, 3), dtype=torch.uint8)
        r, g, b = rgb.to(torch.int32).unbind(-1)
        expected = ((21 * r + 72 * g + 7 * b + 50) // 100).to(torch.uint8)
        assert torch.equal(k.img2gray(rgb), expected)
        print(type(k).__name__, k.__name__)
        """),
        ]
    )
    assert check.returncode == 0, check.stderr
    assert meta["id"] in check.stdout, "the loader imports the package under metadata.json's id"

    again = run([sys.executable, "-m", "pybuild", "collect", str(out), "--farm", str(farm), "--json"])
    assert [r["status"] for r in json.loads(again.stdout)] == ["unchanged"]


def test_nix_build_of_a_pure_python_kernel(farm: Path, tmp_path: Path) -> None:
    """A noarch kernel's repository flake: `nix build` assembles torch-cuda and torch-cpu (nothing to
    compile) and the result loads with the real `kernels`."""
    repo = tmp_path / "softcap"
    shutil.copytree(REPO / "tests" / "fixtures" / "noarch-softcap", repo)
    lock(repo)
    path_list = " ".join(nix_string(d) for d in host_tools_path())
    (repo / "flake.nix").write_text(
        textwrap.dedent(f"""\
        {{
          inputs.farm.url = "path:{farm}";
          outputs = {{ self, farm }}:
            farm.lib.genFlakeOutputs {{
              path = ./.;
              toolchain = farm.lib.hostToolchainImpure {{
                variants = [ "{host_cpu_variant()}" ];
                python = {nix_string(this_python())};
                path = [ {path_list} ];
              }};
            }};
        }}
        """)
    )
    out = tmp_path / "result"
    nix("build", "--offline", *BUILD_AS_ME, "-L", f"path:{repo}#softcap", "--out-link", str(out), timeout=600)
    assert sorted(p.name for p in out.iterdir()) == ["torch-cpu", "torch-cuda"]
    for backend in ("cpu", "cuda"):
        meta = json.loads((out / f"torch-{backend}" / "metadata.json").read_text())
        assert meta["backend"] == {"type": backend} and meta["pybuild"]["variant"] == f"torch-{backend}"
    load = run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        from pathlib import Path
        import torch, kernels
        k = kernels.get_local_kernel(Path({str(out)!r}))
        x = torch.randn(4, 6)
        assert torch.allclose(k.softcap(x, 3.0), torch.tanh(x / 3.0) * 3.0)
        print(k.__name__)
        """),
        ],
        cwd=tmp_path,
    )
    assert load.returncode == 0, load.stderr
    assert load.stdout.strip().startswith("_softcap_cpu_")


@pytest.mark.slow
def test_dev_shell_has_pybuild(kernel_repo: tuple[Path, str], tmp_path: Path) -> None:
    """Both spellings resolve to the variant's shell, and the shell runs the store's pybuild."""
    repo, variant = kernel_repo
    # `nix develop --command` (Nix 2.8) leaves its nix-shell.* folder behind in TMPDIR: keep it in ours
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    for attr in (variant, f"devShells.{variant}"):
        out = nix(
            "develop",
            "--offline",
            *BUILD_AS_ME,
            f"path:{repo}#{attr}",
            "--command",
            "python3",
            "-c",
            "import pybuild; print(pybuild.__file__)",
            cwd=repo,
            timeout=300,
            env=env,
        )
        assert out.strip().startswith("/nix/store/") and out.strip().endswith("pybuild/__init__.py"), out


def test_design_card_dev_shell_command_resolves(farm: Path, tmp_path: Path) -> None:
    """The literal `nix develop .#devShells.torch27-cxx11-cu126-x86_64-linux` of the design card, for
    the guide's own kernel repository (build.toml unmodified) whose matrix has torch 2.7 + CUDA 12.6."""
    repo = tmp_path / "img2gray"
    shutil.copytree(REPO / "tests" / "fixtures" / "guide-img2gray", repo)
    (repo / "variants.json").write_text(
        json.dumps(
            {
                "torch": [{"version": "2.7", "cuda": ["12.6", "12.8"], "cpu": True}],
                "cxx-abi": ["cxx11"],
                "systems": ["x86_64-linux", "aarch64-linux"],
            }
        )
    )
    lock(repo, repo / "variants.json")
    (repo / "flake.nix").write_text(
        textwrap.dedent(f"""\
        {{
          inputs.farm.url = "path:{farm}";
          outputs = {{ self, farm }}: farm.lib.genFlakeOutputs {{ inherit self; path = ./.; }};
        }}
        """)
    )
    attr = "devShells.torch27-cxx11-cu126-x86_64-linux"
    assert nix("eval", "--offline", "--raw", f"path:{repo}#{attr}.name", timeout=120) == attr.split(".")[1]
    shown = json.loads(nix("flake", "show", "--offline", "--json", f"path:{repo}", timeout=120))
    assert "torch27-cxx11-cu126-x86_64-linux" in shown["devShells"]["x86_64-linux"]
    assert "torch27-cxx11-cpu-x86_64-linux" not in shown["devShells"]["x86_64-linux"]  # the guide's kernel is CUDA-only
