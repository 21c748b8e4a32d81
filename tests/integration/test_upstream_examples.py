"""Conformance with upstream kernel-builder: its example kernels, unmodified, through this farm.

Every example's build.toml is accepted, or refused in one line where upstream refuses it too. The
examples with a `cpu` backend build here and their own tests/ pass against the build through
LOCAL_KERNELS with CUDA_VISIBLE_DEVICES="" (as upstream's nix-builder/tests/run-tests.sh runs them;
tests parametrised over a CUDA device are deselected there; tvm-ffi examples need apache-tvm-ffi);
every pure-Python example builds a torch-<backend> variant for each backend it lists. On a machine
with a CUDA GPU, the examples with a `cuda` backend build for that GPU and their tests pass on it.

The examples live beside the repository (../shared/upstream-kernel-builder/examples/kernels, or
$PYBUILD_UPSTREAM_EXAMPLES); a clone without them skips this module, saying so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pybuild.errors import ManifestError
from pybuild.manifest import Manifest, load_manifest
from tests.helpers.loader import require_kernels_loader

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = Path(
    os.environ.get("PYBUILD_UPSTREAM_EXAMPLES")
    or REPO.parent / "shared" / "upstream-kernel-builder" / "examples" / "kernels"
)
if not UPSTREAM.is_dir():
    pytest.skip(
        f"upstream kernel-builder examples not found at {UPSTREAM} (set PYBUILD_UPSTREAM_EXAMPLES)",
        allow_module_level=True,
    )
torch = pytest.importorskip("torch")
require_kernels_loader()

EXAMPLES = sorted(p.parent.name for p in UPSTREAM.glob("*/build.toml"))

#: Refused here as upstream refuses it (upstream: "empty set of capabilities / architectures" at build).
REFUSED = {"relu-invalid-capability": "not an AMD GPU target"}
#: The pinned dependencies' archives (CUTLASS), served to builds as a mirror where no network is.
DEPS_MIRROR = REPO.parent / "shared" / "deps" / "cutlass"


def _manifest(name: str) -> Manifest | None:
    try:
        return load_manifest(UPSTREAM / name)
    except ManifestError:
        return None


def _examples(backend: str, noarch: bool | None = None) -> list[str]:
    out = []
    for name in EXAMPLES:
        m = _manifest(name)
        if m is None or backend not in m.backends:
            continue
        if noarch is None or m.noarch == noarch:
            out.append(name)
    return out


@pytest.mark.parametrize("name", EXAMPLES)
def test_manifest_accepted_or_refused_as_upstream(name: str) -> None:
    if name in REFUSED:
        with pytest.raises(ManifestError) as info:
            load_manifest(UPSTREAM / name)
        message = str(info.value)
        assert REFUSED[name] in message and "build.toml" in message and "\n" not in message
        return
    m = load_manifest(UPSTREAM / name)
    assert m.repo_id == f"kernels-test/{name}"  # [general.hub] repo-id, publish's default


def _build(names: list[str], dest: Path, env: dict[str, str] | None = None) -> dict[str, Path]:
    """Copy the examples into ``dest`` and build each with ``python -m pybuild build``; their folders."""
    dirs = {}
    for name in names:
        shutil.copytree(UPSTREAM / name, dest / name, ignore=shutil.ignore_patterns("build", ".pybuild"))
        dirs[name] = dest / name

    def build(d: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pybuild", "build", str(d), "-q"], cwd=REPO, env=env, capture_output=True, text=True
        )

    # one build per example at a time, as many at once as there are cores (each is mostly one compiler)
    with ThreadPoolExecutor(max_workers=max(1, min(len(dirs), (os.cpu_count() or 2) // 2))) as pool:
        procs = dict(zip(dirs, pool.map(build, dirs.values()), strict=True))
    for name, proc in procs.items():
        assert proc.returncode == 0, f"{name}: pybuild build failed:\n{proc.stdout}\n{proc.stderr}"
    return dirs


def _not_here(name: str, backend: str) -> str | None:
    """Why this machine builds no ``backend`` variant of example ``name`` (None if it does)."""
    from pybuild.host import kernel_host_variants, tvm_ffi_version

    m = load_manifest(UPSTREAM / name)
    if any(v.backend == backend for v in kernel_host_variants(m)):
        return None
    if m.framework == "tvm-ffi" and tvm_ffi_version() is None:
        return f"{name}: a [tvm-ffi] kernel, and tvm-ffi is not installed (pip install apache-tvm-ffi)"
    return (
        f"{name}: no {backend} variant for this machine's torch {torch.__version__} "
        f"([torch] minver/maxver {m.torch_minver}/{m.torch_maxver})"
    )


def _run_own_tests(name: str, dirs: dict[str, Path], env: dict[str, str], deselect: str | None = None) -> None:
    """The example's own tests/ against our builds of every example, through LOCAL_KERNELS."""
    tests = dirs[name] / "tests"
    if not tests.is_dir():
        pytest.skip(f"{name} has no tests/ (built only)")
    env = {
        **env,
        "LOCAL_KERNELS": ":".join(f"kernels-test/{n}={d}" for n, d in dirs.items()),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore", str(tests)]
    if deselect:
        cmd += ["-k", deselect]
    proc = subprocess.run(cmd, cwd=dirs[name], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, (
        f"{name}: its own tests failed against our build:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
    )
    assert " passed" in proc.stdout


@pytest.fixture(scope="module")
def cpu_builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    names = [n for n in _examples("cpu") if _not_here(n, "cpu") is None]
    return _build(names, tmp_path_factory.mktemp("upstream-cpu"), env)


@pytest.mark.slow
@pytest.mark.parametrize("name", _examples("cpu"))
def test_cpu_example_builds_and_its_tests_pass(name: str, cpu_builds: dict[str, Path]) -> None:
    if name not in cpu_builds:
        pytest.skip(_not_here(name, "cpu") or "")
    m = load_manifest(cpu_builds[name])
    built = sorted(p.name for p in (cpu_builds[name] / "build").iterdir())
    assert any(
        v.endswith("-cpu-x86_64-linux") or v.endswith("-cpu-aarch64-linux") or v == "torch-cpu" for v in built
    ), built
    if m.stable_abi_for("cpu"):
        assert all(v.startswith("torch-stable-abi") for v in built), built
    if m.framework == "tvm-ffi":
        assert all(v.startswith("tvm-ffi") for v in built), built
    # tests parametrised over a CUDA device need one; the rest run on the CPU
    _run_own_tests(name, cpu_builds, {**os.environ, "CUDA_VISIBLE_DEVICES": ""}, deselect="not cuda")


@pytest.mark.parametrize("name", [n for n in EXAMPLES if (m := _manifest(n)) is not None and m.noarch])
def test_noarch_example_builds_every_backend(name: str, tmp_path: Path) -> None:
    dirs = _build([name], tmp_path)
    m = load_manifest(dirs[name])
    built = sorted(p.name for p in (dirs[name] / "build").iterdir())
    assert (
        built
        == sorted(v.name for v in m.variants(()))
        == sorted(f"torch-{'npu' if b == 'cann' else b}" for b in m.backends)
    )


def _gpu_reason() -> str | None:
    if not torch.cuda.is_available():
        return "needs a CUDA GPU"
    if not torch.version.cuda or shutil.which("nvcc") is None and not os.environ.get("CUDA_HOME"):
        return "needs a CUDA build of torch and nvcc"
    return None


@pytest.fixture(scope="module")
def gpu_builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    major, minor = torch.cuda.get_device_capability()
    env = {**os.environ, "PYBUILD_CUDA_ARCHS": os.environ.get("PYBUILD_CUDA_ARCHS", f"{major}.{minor}")}
    if "PYBUILD_DEPS_MIRROR" not in env and DEPS_MIRROR.is_dir():
        env["PYBUILD_DEPS_MIRROR"] = str(DEPS_MIRROR)
    names = [n for n in _examples("cuda") if _not_here(n, "cuda") is None]
    return _build(names, tmp_path_factory.mktemp("upstream-gpu"), env)


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(_gpu_reason() is not None, reason=_gpu_reason() or "")
@pytest.mark.parametrize("name", _examples("cuda"))
def test_cuda_example_builds_and_its_tests_pass_on_the_gpu(name: str, request: pytest.FixtureRequest) -> None:
    why = _not_here(name, "cuda")
    if why:
        pytest.skip(why)
    dirs = request.getfixturevalue("gpu_builds")
    built = sorted(p.name for p in (dirs[name] / "build").iterdir())
    assert any("-cu" in v or v == "torch-cuda" for v in built), built
    _run_own_tests(name, dirs, dict(os.environ))
