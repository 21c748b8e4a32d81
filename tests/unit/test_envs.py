"""Per-variant environments: the variant -> packages mapping (pure), pip's find-links mirrored for
uv, the parallel plan, the CLI refusing a variant no index serves. No network, nothing installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from pybuild.__main__ import main
from pybuild.envs import (
    PYPI_TORCH_CUDA,
    EnvPlan,
    HostFacts,
    IndexConfig,
    Refusal,
    index_config,
    nvcc_requirements,
    plan_env,
)
from pybuild.parallel import parallel_plan
from pybuild.variants import parse_variant_name

HOST = HostFacts(
    system="x86_64-linux",
    python="/usr/bin/python3",
    python_tag="cp311",
    nvcc_version="13.0",
    nvcc="/usr/local/cuda-13.0/bin/nvcc",
)
NO_NVCC = HostFacts(system="x86_64-linux", python="/usr/bin/python3", python_tag="cp311", nvcc_version=None, nvcc=None)
PYPI_ONLY = IndexConfig()
LOCAL_CPU = IndexConfig(
    find_links=("/opt/wheels",),
    local_wheels=(
        "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
        "torch-2.13.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
    ),
)
TORCH_INDEX = IndexConfig(torch_index="https://download.pytorch.org/whl/")

# (variant, config, host, requirements, uv args, CUDA the torch must report, nvcc)
PLANS = [
    (
        "torch214-cxx11-cu130-x86_64-linux",
        PYPI_ONLY,
        HOST,
        ("torch==2.14.*", "cmake>=3.22", "ninja"),
        (),
        "13.0",
        "/usr/local/cuda-13.0/bin/nvcc",
    ),
    (
        "torch211-cxx11-cu130-x86_64-linux",
        PYPI_ONLY,
        NO_NVCC,
        ("torch==2.11.*", "cmake>=3.22", "ninja", *nvcc_requirements("13.0")),
        (),
        "13.0",
        None,
    ),
    # CPU: the local CPU wheel of that release, found through pip's find-links
    (
        "torch213-cxx11-cpu-x86_64-linux",
        LOCAL_CPU,
        HOST,
        ("torch==2.13.0+cpu", "cmake>=3.22", "ninja"),
        ("--find-links", "/opt/wheels"),
        None,
        None,
    ),
    # CPU without a reachable CPU wheel: the same release's CUDA wheel, with a toolkit for its CMake config
    (
        "torch214-cxx11-cpu-x86_64-linux",
        LOCAL_CPU,
        HOST,
        ("torch==2.14.*", "cmake>=3.22", "ninja"),
        (),
        "13.0",
        "/usr/local/cuda-13.0/bin/nvcc",
    ),
    # PyTorch's index configured: CUDA 12.6 from its cu126 sub-index, nvcc 12.6 from NVIDIA's wheels
    (
        "torch211-cxx11-cu126-x86_64-linux",
        TORCH_INDEX,
        HOST,
        ("torch==2.11.*", "cmake>=3.22", "ninja", *nvcc_requirements("12.6")),
        ("--extra-index-url", "https://download.pytorch.org/whl/cu126"),
        "12.6",
        None,
    ),
    (
        "torch213-cxx11-cpu-x86_64-linux",
        TORCH_INDEX,
        HOST,
        ("torch==2.13.*", "cmake>=3.22", "ninja"),
        ("--extra-index-url", "https://download.pytorch.org/whl/cpu"),
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "config", "host", "reqs", "uv_args", "cuda", "nvcc"),
    PLANS,
    ids=[f"{p[0]}-{i}" for i, p in enumerate(PLANS)],
)
def test_variant_to_packages(
    name: str,
    config: IndexConfig,
    host: HostFacts,
    reqs: tuple[str, ...],
    uv_args: tuple[str, ...],
    cuda: str | None,
    nvcc: str | None,
) -> None:
    plan = plan_env(parse_variant_name(name), config, host)
    assert isinstance(plan, EnvPlan), plan
    assert (plan.requirements, plan.uv_args, plan.torch_cuda, plan.nvcc) == (reqs, uv_args, cuda, nvcc)
    assert plan.dirname.startswith(f"{name}-")


ROCM_REASON = "ROCm variants are built with Nix (`nix build`); pybuild's environments build cpu and cuda variants only"
# (variant, config, exact fragment of the one-line reason)
REFUSALS = [
    (
        "torch211-cxx11-cu126-x86_64-linux",
        PYPI_ONLY,
        "no reachable index serves it (PyPI serves torch 2.11 only as a CUDA 13.0 build); PyTorch's index does: "
        "PYBUILD_TORCH_INDEX_URL=https://download.pytorch.org/whl (uv --extra-index-url "
        "https://download.pytorch.org/whl/cu126)",
    ),
    ("torch213-cxx11-cu132-x86_64-linux", PYPI_ONLY, "uv --extra-index-url https://download.pytorch.org/whl/cu132"),
    # ROCm and XPU: the same one line whatever the indexes, not a pointer to an index that would not help
    ("torch213-cxx11-rocm71-x86_64-linux", PYPI_ONLY, ROCM_REASON),
    ("torch213-cxx11-rocm71-x86_64-linux", TORCH_INDEX, ROCM_REASON),
    ("torch213-cxx11-xpu20251-x86_64-linux", TORCH_INDEX, "XPU variants are built with Nix (`nix build`)"),
    ("torch213-cxx11-cu130-aarch64-linux", PYPI_ONLY, "builds on an aarch64-linux machine (this one is x86_64-linux)"),
    ("torch299-cxx11-cpu-x86_64-linux", PYPI_ONLY, "PyPI serves no torch 2.99 that pybuild knows of"),
    ("torch-cuda", PYPI_ONLY, "a pure-Python variant needs no environment"),
]


@pytest.mark.parametrize(("name", "config", "fragment"), REFUSALS, ids=[f"{r[0]}-{i}" for i, r in enumerate(REFUSALS)])
def test_variants_no_index_serves_are_refused(name: str, config: IndexConfig, fragment: str) -> None:
    plan = plan_env(parse_variant_name(name), config, HOST)
    assert isinstance(plan, Refusal)
    assert fragment in plan.reason
    assert "\n" not in plan.reason and ("PYBUILD_TORCH_INDEX_URL" not in plan.reason or "Nix" not in plan.reason)


def test_environment_identity_follows_its_contents() -> None:
    v = parse_variant_name("torch214-cxx11-cu130-x86_64-linux")
    a = plan_env(v, PYPI_ONLY, HOST)
    b = plan_env(v, PYPI_ONLY, NO_NVCC)  # nvcc from a wheel: another environment
    assert isinstance(a, EnvPlan) and isinstance(b, EnvPlan)
    assert a.key == plan_env(v, PYPI_ONLY, HOST).key  # type: ignore[union-attr]
    assert a.dirname != b.dirname
    from dataclasses import replace

    other_python = replace(HOST, python_tag="cp312")  # the same interpreter path, upgraded in place
    c = plan_env(v, PYPI_ONLY, other_python)
    assert isinstance(c, EnvPlan) and c.key != a.key
    assert replace(a, source="reworded").key == a.key  # the wording of `source` is not the environment


def test_every_x86_64_variant_of_the_matrix_is_planned_or_refused_with_a_reason() -> None:
    from pybuild.variants import find_variants_file, load_matrix

    matrix = load_matrix(find_variants_file(Path(__file__).parent))
    planned = {v.torch for v in matrix.variants if isinstance(plan_env(v, LOCAL_CPU, HOST), EnvPlan)}
    # PyPI's CUDA build of every torch the matrix lists is known (else its CUDA variants are refused)
    assert {v.torch for v in matrix.variants} <= set(PYPI_TORCH_CUDA)
    assert planned == {v.torch for v in matrix.variants}


def test_pip_find_links_are_mirrored_for_uv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    (wheels / "numpy-2.0.0-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nfind-links = {wheels}\nextra-index-url = file:///elsewhere\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "none"))
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    monkeypatch.delenv("PYBUILD_FIND_LINKS", raising=False)
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    monkeypatch.setenv("PYBUILD_TORCH_INDEX_URL", "")
    config = index_config()
    assert str(wheels) in config.find_links
    assert "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl" in config.local_wheels
    assert not any(w.startswith("numpy") for w in config.local_wheels)
    assert config.torch_index is None
    assert config.pip_indexes == ("file:///elsewhere",)
    # a variant no index serves: the refusal says pip's indexes are not what pybuild reads
    plan = plan_env(parse_variant_name("torch211-cxx11-cu126-x86_64-linux"), config, HOST)
    assert isinstance(plan, Refusal) and "\n" not in plan.reason
    assert "pip's index-url/extra-index-url (file:///elsewhere) are not read" in plan.reason


@pytest.mark.parametrize(
    ("n", "parallel", "cores", "mem", "jobs", "expected"),
    [
        (9, None, 2, 22.0, None, (2, 1)),  # two cores: two variants at once, one compile job each
        (9, None, 16, 7.0, None, (2, 1)),  # memory bounds the compile jobs of all builds: 3 GiB each
        (1, None, 16, 64.0, None, (1, 16)),  # one variant gets every core
        (9, 1, 2, 22.0, None, (1, 2)),  # --parallel 1
        (9, None, 2, 1.0, None, (1, 1)),  # little memory: one compile job
        (9, None, 16, 64.0, 4, (4, 1)),  # --jobs 4 is the total, not per variant
        (2, None, 16, 64.0, 8, (2, 4)),  # ... split among the variants built at once
        (9, 2, 16, 64.0, 8, (2, 4)),  # --parallel 2 --jobs 8
    ],
)
def test_parallel_plan(
    n: int,
    parallel: int | None,
    cores: int,
    mem: float,
    jobs: int | None,
    expected: tuple[int, int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MAX_JOBS", raising=False)
    at_once, per_build = parallel_plan(n, parallel, cores=cores, mem_gib=mem, jobs=jobs)
    assert (at_once, per_build) == expected
    assert at_once * per_build <= (jobs or max(1, min(cores, int(mem // 3))))  # never more than the budget


def test_max_jobs_sets_the_compile_jobs_as_upstream_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from pybuild.errors import UsageError
    from pybuild.jobs import compile_jobs

    monkeypatch.delenv("MAX_JOBS", raising=False)
    assert compile_jobs(cores=16, mem_gib=24.0) == 8  # 24 GiB: 8 jobs of 3 GiB, though 16 cores
    assert compile_jobs(cores=2, mem_gib=24.0) == 2
    assert compile_jobs(cores=16, mem_gib=1.0) == 1
    monkeypatch.setenv("MAX_JOBS", "5")
    assert compile_jobs(cores=2, mem_gib=1.0) == 5
    assert parallel_plan(1, cores=2, mem_gib=1.0) == (1, 5)
    monkeypatch.setenv("MAX_JOBS", "\u00b2")  # a digit to str.isdigit, no number to int()
    with pytest.raises(UsageError, match="expected a number of compile jobs"):
        compile_jobs()
    monkeypatch.setenv("MAX_JOBS", "many")
    with pytest.raises(UsageError, match="MAX_JOBS='many': expected a number of compile jobs of at least 1"):
        compile_jobs()


def test_build_refuses_a_variant_no_index_serves_before_any_work(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PYBUILD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PYBUILD_TORCH_INDEX_URL", raising=False)
    kernel = Path(__file__).resolve().parents[2] / "kernels" / "img2gray"
    rc = main(["build", str(kernel), "--variant", "torch211-cxx11-cu126-x86_64-linux"])
    err = capsys.readouterr().err
    assert rc == 5
    assert "torch211-cxx11-cu126-x86_64-linux: no reachable index serves it" in err
    assert "--extra-index-url https://download.pytorch.org/whl/cu126" in err
    assert not (tmp_path / "cache").exists()  # no environment made
    assert not (kernel / "build" / "torch211-cxx11-cu126-x86_64-linux").exists()


def test_test_command_refuses_the_same_way(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PYBUILD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PYBUILD_TORCH_INDEX_URL", raising=False)
    kernel = Path(__file__).resolve().parents[2] / "kernels" / "img2gray"
    assert main(["test", str(kernel), "--variant", "torch213-cxx11-cu132-x86_64-linux"]) == 5
    assert "whl/cu132" in capsys.readouterr().err
    assert main(["build", str(kernel), "--variant", "torch213-cxx11-cpu-x86_64-linux", "--", "-x"]) == 2
    assert "arguments after `--` are only for `test` (pytest's) and `shell`" in capsys.readouterr().err


STABLE_KERNELS = [
    Path(__file__).resolve().parents[1] / "fixtures" / "edition5-stable-clamp",
    Path(__file__).resolve().parents[3]
    / "shared"
    / "upstream-kernel-builder"
    / "examples"
    / "kernels"
    / "relu-torch-stable-abi",
]


@pytest.mark.parametrize("kernel", STABLE_KERNELS, ids=["fixture", "upstream-relu-torch-stable-abi"])
def test_stable_abi_variants_build_with_a_matrix_torch_of_their_backend(kernel: Path) -> None:
    """Each stable-ABI variant is compiled with the newest torch of the matrix (after its excludes) that
    has its backend version and system and is at least the stable-ABI version; its environment pins it."""
    from pybuild.manifest import load_manifest
    from pybuild.variants import find_variants_file, load_matrix

    if not kernel.is_dir():
        pytest.skip(f"{kernel} not found")
    matrix = load_matrix(find_variants_file(Path(__file__).parent))
    manifest = load_manifest(kernel)
    stable = [v for v in manifest.variants(matrix.variants) if v.stable_abi]
    assert stable
    names = {v.name: v.build_torch for v in stable}
    assert names["torch-stable-abi211-cu130-x86_64-linux"] == "2.14"
    assert names["torch-stable-abi211-cu132-x86_64-linux"] == "2.15"  # the newest torch for CUDA 13.2
    assert names["torch-stable-abi211-cu126-x86_64-linux"] == "2.13"  # no torch 2.14 or 2.15 for CUDA 12.6
    assert names["torch-stable-abi211-cu126-aarch64-linux"] == "2.13"  # torch 2.11 cu126 aarch64 is excluded
    for v in stable:
        offering = [
            m.torch_tuple
            for m in matrix.variants
            if (m.backend, m.backend_version, m.system) == (v.backend, v.backend_version, v.system)
            and m.torch_tuple >= v.torch_tuple
        ]
        assert v.build_torch is not None and tuple(int(x) for x in v.build_torch.split(".")) == max(offering), v
        plan = plan_env(v, TORCH_INDEX, HOST)
        if isinstance(plan, EnvPlan):
            assert plan.requirements[0] == f"torch=={v.build_torch}.*", plan


def test_test_extras_merge_by_project() -> None:
    from pybuild.envs import merge_requirements

    assert merge_requirements(["pytest", "kernels==0.17.2"], ("pytest", "kernels==0.17.3")) == [
        "pytest",
        "kernels==0.17.3",
    ]
    assert merge_requirements(["Kernels==0.17.2"], ["kernels>=0.18"]) == ["kernels>=0.18"]


def test_adding_extras_after_the_loader_changed_keeps_the_torch_pin_and_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The environment had kernels 0.17.2 for tests; this Python now has 0.17.3: one install with the
    plan's torch pin and only the new loader, then the environment is verified again."""
    import dataclasses
    import json

    from pybuild import envs

    monkeypatch.setenv("PYBUILD_CACHE_DIR", str(tmp_path))
    v = parse_variant_name("torch213-cxx11-cpu-x86_64-linux")
    plan = plan_env(v, LOCAL_CPU, HOST)
    assert isinstance(plan, EnvPlan)
    path = envs.envs_dir() / plan.dirname
    (path / "bin").mkdir(parents=True)
    (path / "bin" / "python").write_text("")  # a complete environment has its interpreter
    marker = {"key": plan.key, "plan": dataclasses.asdict(plan), "extra": ["pytest", "kernels==0.17.2"]}
    (path / envs.MARKER).write_text(json.dumps(marker))
    calls: list[object] = []
    monkeypatch.setattr(envs, "_run_uv", lambda args, log, what, env=None: calls.append(("uv", args)))
    monkeypatch.setattr(envs, "_verify", lambda p, pl, var: calls.append(("verify", p)))
    monkeypatch.setattr(envs, "_toolchain", lambda p, pl: None)
    env = envs.ensure_env(plan, v, extra=("pytest", "kernels==0.17.3"))
    ((kind, args), verified) = calls
    assert kind == "uv" and verified == ("verify", path)
    assert args[-2 - len(plan.requirements) :] == [*plan.requirements, "pytest", "kernels==0.17.3"]
    assert "kernels==0.17.2" not in args
    assert env.packages == ("pytest", "kernels==0.17.3")
    assert json.loads((path / envs.MARKER).read_text())["extra"] == ["pytest", "kernels==0.17.3"]


def test_a_wheel_nvcc_gets_the_unversioned_cuda_runtime_torch_cmake_looks_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CUDA 13's wheels ship lib/libcudart.so.13 only, and torch's CMake config finds the runtime as
    libcudart.so: an environment whose nvcc is a wheel's gets the link when it is made, and one
    without it counts as incomplete (it is made again)."""
    import dataclasses
    import json

    from pybuild import envs
    from pybuild.toolchain import Toolchain, TorchInfo

    monkeypatch.setenv("PYBUILD_CACHE_DIR", str(tmp_path))
    v = parse_variant_name("torch215-cxx11-cu132-x86_64-linux")
    plan = plan_env(v, PYPI_ONLY, HOST)  # the machine's nvcc is 13.0: CUDA 13.2's comes from wheels
    assert isinstance(plan, EnvPlan) and plan.nvcc is None and plan.torch_cuda == "13.2"
    path = envs.envs_dir() / plan.dirname
    toolkit = path / "lib" / "python3.11" / "site-packages" / "nvidia" / "cu13"

    def fake_uv(args: list[str], log: Path, what: str, env: dict[str, str] | None = None) -> None:
        if args[0] == "venv":
            (path / "bin").mkdir(parents=True)
            (path / "bin" / "python").write_text("")
        else:
            for d in ("bin", "lib"):
                (toolkit / d).mkdir(parents=True, exist_ok=True)
            (toolkit / "bin" / "nvcc").write_text("")
            (toolkit / "lib" / "libcudart.so.13").write_text("")

    torch = TorchInfo("2.15.0+cu132", path / "torch", (("cuda", "13.2"),))
    made = Toolchain(str(path / "bin" / "python"), torch, (("cuda", toolkit / "bin" / "nvcc"),))
    monkeypatch.setattr(envs, "_run_uv", fake_uv)
    monkeypatch.setattr(envs, "_verify", lambda p, pl, var: made)
    monkeypatch.setattr(envs, "_toolchain", lambda p, pl: None)
    assert envs.ensure_env(plan, v).created
    link = toolkit / "lib" / "libcudart.so"
    assert link.is_symlink() and str(link.readlink()) == "libcudart.so.13"
    assert envs._read_marker(path, plan) is not None
    link.unlink()  # as an environment made before the link was
    assert envs._read_marker(path, plan) is None
    # the machine's nvcc serves a CUDA 13.0 variant: its toolkit is left as it is
    own = plan_env(parse_variant_name("torch214-cxx11-cu130-x86_64-linux"), PYPI_ONLY, HOST)
    assert isinstance(own, EnvPlan) and own.nvcc
    marker = {"key": own.key, "plan": dataclasses.asdict(own), "extra": []}
    other = envs.envs_dir() / own.dirname
    (other / "bin").mkdir(parents=True)
    (other / "bin" / "python").write_text("")
    (other / envs.MARKER).write_text(json.dumps(marker))
    assert envs._read_marker(other, own) is not None


def test_envs_lists_each_environment_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two environments of one variant are told apart by their key, and no cell is cut with "…"."""
    import json

    from pybuild import envs

    monkeypatch.setenv("PYBUILD_CACHE_DIR", str(tmp_path / "a-rather-long-cache-folder" / "that-goes-on-and-on"))
    v = parse_variant_name("torch213-cxx11-cpu-x86_64-linux")
    keys = []
    for python in ("/usr/bin/python3", "/opt/python3.12/bin/python3"):
        plan = plan_env(v, LOCAL_CPU, HostFacts("x86_64-linux", python, "cp311", None, None))
        assert isinstance(plan, EnvPlan)
        path = envs.envs_dir() / plan.dirname
        path.mkdir(parents=True)
        marker = {"key": plan.key, "plan": {"variant": v.name, "source": plan.source}, "torch": "2.13.0+cpu"}
        (path / envs.MARKER).write_text(json.dumps(marker))
        keys.append(plan.dirname.removeprefix(f"{v.name}-"))
    assert main(["envs"]) == 0
    out = capsys.readouterr().out
    assert "…" not in out and all(k in out for k in keys), out
    assert "2 environments in" in out


def test_progress_lines_end_with_their_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment's line goes once the environment is made, a variant's once it is built (or failed):
    none stays at "installing ..." or "assembling" for the rest of the run."""
    from types import SimpleNamespace

    from pybuild import matrix
    from pybuild.build import BuildOptions, BuildResult
    from pybuild.errors import BuildError
    from pybuild.ui import TaskLine

    lines: dict[str, list[str]] = {}
    done: list[str] = []

    def new_task(label: str) -> TaskLine:
        lines[label] = []
        return TaskLine(lambda message, fraction: lines[label].append(message), lambda: done.append(label))

    def fake_env(plan, variant, progress, **kw):  # noqa: ANN001, ANN003, ANN202
        progress("installing torch==2.13.*, cmake>=3.22, ninja")
        return SimpleNamespace(
            created=True, toolchain=SimpleNamespace(torch=SimpleNamespace(version="2.13.0")), path="."
        )

    def fake_build(manifest, variant, options, progress, toolchain):  # noqa: ANN001, ANN202
        progress("assembling", None)
        if manifest.name == "bad":
            raise BuildError("broken")
        return BuildResult(manifest.name, variant.name, "built", 1.0, 1, Path("."))

    monkeypatch.setattr(matrix, "ensure_env", fake_env)
    monkeypatch.setattr(matrix, "build_variant", fake_build)
    v = parse_variant_name("torch213-cxx11-cpu-x86_64-linux")
    plan = plan_env(v, LOCAL_CPU, HOST)
    assert isinstance(plan, EnvPlan)
    kernels = (SimpleNamespace(name="good", root=Path("good")), SimpleNamespace(name="bad", root=Path("bad")))
    job = matrix.VariantJob(v, plan, kernels)  # type: ignore[arg-type]
    said: list[str] = []
    errors: list[str] = []
    results = matrix.build_in_envs([job], BuildOptions(), new_task, said.append, on_error=errors.append)
    assert [r.status for r in results] == ["built", "failed"]
    # the failure's one line goes where the caller sends errors (standard error: -q and --json keep it)
    assert len(errors) == 1 and "broken" in errors[0] and "bad" in errors[0]
    assert not any("broken" in line for line in said)
    assert sorted(done) == sorted(lines) == sorted([v.name, f"good {v.name}", f"bad {v.name}"])
