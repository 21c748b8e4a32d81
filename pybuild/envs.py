"""Per-variant build environments, made with uv from registry packages, cached by variant.

Each variant of the matrix builds in a virtual environment of its own: the variant's torch (its
torch minor and its CUDA release exactly), CMake, ninja and, for CUDA, the variant's nvcc (the
machine's when its version matches, else NVIDIA's ``nvidia-cuda-nvcc`` wheel of that version).

Planning is pure (:func:`plan_env`: a variant, the indexes and the machine in, the packages to
install or the reason no index serves them out); :func:`ensure_env` makes the environment under
the user cache dir once and afterwards only reads its marker file. uv's own cache holds each
wheel once and links it into every environment that installs it.
"""

from __future__ import annotations

import configparser
import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from packaging.version import Version

from . import backends
from .envplan import (
    BUILD_PACKAGES,
    ENV_SCHEMA,
    MARKER,
    PYPI,
    PYPI_TORCH_CUDA,
    PYTORCH_INDEX,
    EnvPlan,
    HostFacts,
    IndexConfig,
    Refusal,
    env_torch,
    nvcc_requirements,
    plan_env,
)
from .errors import ToolchainError
from .fsutil import cache_root, dir_size, locked, remove_tree, shared_lock, try_locked, try_sole_lock
from .host import (
    Toolchain,
    TorchInfo,
    cuda_toolkit_root,
    find_nvcc,
    host_system,
    nvcc_version,
    torch_build,
    torch_info_at,
)
from .variants import Variant

__all__ = [
    "BUILD_PACKAGES",
    "ENV_SCHEMA",
    "MARKER",
    "PYPI",
    "PYPI_TORCH_CUDA",
    "PYTORCH_INDEX",
    "Env",
    "EnvPlan",
    "HostFacts",
    "IndexConfig",
    "Refusal",
    "cache_root",
    "ensure_env",
    "env_torch",
    "envs_dir",
    "host_facts",
    "index_config",
    "list_envs",
    "merge_requirements",
    "nvcc_requirements",
    "plan_env",
    "test_packages",
    "uv_bin",
]

# ------------------------------------------------------------------------------------------------
# Reading the machine (I/O; the plan itself stays pure)


def _pip_config_find_links(option: str = "find-links") -> list[str]:
    """pip's ``find-links`` (or another list option, e.g. ``extra-index-url``) from its environment
    variable and config files (uv does not read them)."""
    links = os.environ.get("PIP_" + option.upper().replace("-", "_"), "").split()
    home = Path.home()
    xdg = os.environ.get("XDG_CONFIG_HOME", str(home / ".config"))
    files = [
        *(Path(d) / "pip" / "pip.conf" for d in os.environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(":")),
        Path("/etc/pip.conf"),
        home / ".pip" / "pip.conf",
        Path(xdg) / "pip" / "pip.conf",
    ]
    if os.environ.get("PIP_CONFIG_FILE"):
        files.append(Path(os.environ["PIP_CONFIG_FILE"]))
    for f in files:
        parser = configparser.ConfigParser()
        try:
            parser.read(f)
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue
        for section in ("global", "install"):
            links += parser.get(section, option, fallback="").split()
    return list(dict.fromkeys(links))


def index_config() -> IndexConfig:
    """Indexes from the environment: ``PYBUILD_TORCH_INDEX_URL``, ``PYBUILD_FIND_LINKS`` (space-separated)
    and pip's ``find-links``."""
    links = os.environ.get("PYBUILD_FIND_LINKS", "").split() + _pip_config_find_links()
    wheels = []
    for link in links:
        path = Path(urlparse(link).path) if link.startswith("file:") else Path(link)
        if "://" in link and not link.startswith("file:"):
            continue
        if path.is_dir():
            wheels += sorted(p.name for p in path.glob("torch-*.whl"))
    pip_indexes = _pip_config_find_links("index-url") + _pip_config_find_links("extra-index-url")
    return IndexConfig(
        torch_index=os.environ.get("PYBUILD_TORCH_INDEX_URL") or None,
        find_links=tuple(links),
        local_wheels=tuple(wheels),
        pip_indexes=tuple(pip_indexes),
    )


def host_facts() -> HostFacts:
    nvcc = find_nvcc()
    version = None
    if nvcc is not None and nvcc.is_file():
        try:
            version = nvcc_version(nvcc)
            nvcc = cuda_toolkit_root(nvcc) / "bin" / "nvcc"  # the real one, not a wrapper script
        except ToolchainError:
            nvcc = None
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    return HostFacts(
        system=host_system(),
        python=sys.executable,
        python_tag=tag,
        nvcc_version=version,
        nvcc=str(nvcc) if version else None,
    )


def envs_dir() -> Path:
    return cache_root() / "envs"


# ------------------------------------------------------------------------------------------------
# Making an environment


@dataclass(frozen=True)
class Env:
    """A made environment: where it is and the toolchain it gives."""

    path: Path
    plan: EnvPlan
    toolchain: Toolchain
    created: bool  # made by this call (False: found in the cache)
    packages: tuple[str, ...] = field(default=())  # extra packages installed later (e.g. for tests)

    @property
    def python(self) -> str:
        return self.toolchain.python


@functools.lru_cache(maxsize=1)
def uv_bin() -> str:
    """The uv binary: the `uv` package's, else one on PATH. Looked up once, before worker threads start
    (the package's lookup reads sysconfig, whose first use is not thread-safe)."""
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found:
            return found
    raise ToolchainError("`uv` not found; install it (pip install uv): it makes the per-variant environments")


def _run_uv(args: list[str], log: Path, what: str, env: dict[str, str] | None = None) -> None:
    with log.open("a") as f:
        f.write(f"$ uv {' '.join(args)}\n")
        f.flush()
        proc = subprocess.run([uv_bin(), *args], stdout=f, stderr=subprocess.STDOUT, env=env, check=False)
    if proc.returncode != 0:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
        cause = next(
            (ln for ln in reversed(lines) if ln.startswith(("error", "×", "╰", "Because", "hint"))),
            lines[-1] if lines else "",
        )
        raise ToolchainError(f"{what}: uv failed (exit {proc.returncode}): {cause[:300]} (full log: {log})")


def _site_torch(path: Path) -> Path | None:
    found = sorted(path.glob("lib/python3*/site-packages/torch/version.py"))
    return found[0].parent if found else None


def _wheel_nvcc(path: Path) -> Path | None:
    found = sorted(path.glob("lib/python3*/site-packages/nvidia/*/bin/nvcc"))
    return found[0] if found else None


def _link_wheel_cudart(nvcc: Path) -> None:
    """Give the toolkit of a wheel's nvcc the unversioned CUDA runtime a toolkit's development files
    have (``lib/libcudart.so`` -> ``libcudart.so.13``, beside it in the one ``nvidia/cu13`` tree of
    CUDA 13's wheels): the wheels ship only the versioned library, and torch's CMake config finds
    the runtime by that name (FindCUDA's ``CUDA_CUDART_LIBRARY``, CMake's ``CUDA::cudart``), else it
    stops with "Your installed Caffe2 version uses CUDA but I cannot find the CUDA libraries"."""
    lib = nvcc.parent.parent / "lib"
    link = lib / "libcudart.so"
    versioned = sorted(lib.glob("libcudart.so.*"))
    if versioned and not link.exists():
        link.unlink(missing_ok=True)  # a dangling link
        link.symlink_to(versioned[0].name)


def _wheel_cudart_linked(path: Path, plan: EnvPlan) -> bool:
    """Whether the environment's CUDA runtime is linked as :func:`_link_wheel_cudart` does, where its
    nvcc comes from a wheel (environments made before it was are made again)."""
    if not plan.torch_cuda or plan.nvcc:
        return True
    nvcc = _wheel_nvcc(path)
    lib = nvcc.parent.parent / "lib" if nvcc else None
    return lib is None or not any(lib.glob("libcudart.so.*")) or (lib / "libcudart.so").exists()


def _toolchain(path: Path, plan: EnvPlan) -> Toolchain:
    torch_dir = _site_torch(path)
    if torch_dir is None:
        raise ToolchainError(f"{path}: the environment has no torch; remove it and build again")
    nvcc = Path(plan.nvcc) if plan.nvcc else _wheel_nvcc(path)
    env: tuple[tuple[str, str], ...] = ()
    if nvcc is not None and plan.torch_cuda:  # torch's CMake config looks for the toolkit there first
        root = str(nvcc.parent.parent)
        env = (("CUDA_PATH", root), ("CUDA_HOME", root), ("CUDAToolkit_ROOT", root))
    info = torch_info_at(torch_dir)
    return Toolchain(
        python=str(path / "bin" / "python"),
        torch=info,
        compilers=((_toolkit_backend(info), nvcc),) if nvcc is not None else (),
        bin_dirs=(path / "bin",),
        env=env,
    )


def _toolkit_backend(info: TorchInfo) -> str:
    """The backend whose toolkit an environment's nvcc is: the one whose toolkit its torch reports
    (a CPU variant built on a CUDA wheel compiles with that wheel's toolkit too)."""
    return next((b.name for b in backends.all_backends() if b.toolkit_version(info)), "")


def _nvcc(tc: Toolchain) -> Path | None:
    return tc.compiler(_toolkit_backend(tc.torch))


def _read_marker(path: Path, plan: EnvPlan) -> dict | None:
    """The marker of the complete environment ``path`` of ``plan``; None where there is none, it is of
    another plan or shape, or the environment lost its interpreter (half removed): then it is made again."""
    data = _marker(path)
    if data is None or data.get("key") != plan.key or not (path / "bin" / "python").exists():
        return None
    if not _wheel_cudart_linked(path, plan):
        return None
    return data


def _marker(path: Path) -> dict | None:
    """``path``'s marker if it has the shape this pybuild writes (else None: the environment counts
    as incomplete, never as a traceback)."""
    try:
        data = json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("key"), str):
        return None
    plan = data.get("plan")
    extra = data.get("extra", [])
    if not isinstance(plan, dict) or not all(isinstance(plan.get(k), str) for k in ("variant", "source")):
        return None
    if not isinstance(extra, list) or not all(isinstance(x, str) for x in extra):
        return None
    return data


def _verify(path: Path, plan: EnvPlan, variant: Variant) -> Toolchain:
    """The environment holds exactly the variant's torch (minor and CUDA release), or it is refused."""
    tc = _toolchain(path, plan)
    info = tc.torch
    toolkit = next((t for b in backends.all_backends() if (t := b.toolkit_version(info))), "")
    toolkit_minor = ".".join(map(str, Version(toolkit).release[:2])) if toolkit else None
    if info.major_minor != env_torch(variant) or toolkit_minor != plan.torch_cuda:
        got = f"torch {info.version} ({torch_build(info)})"
        want = f"torch {env_torch(variant)}" + (f" (CUDA {plan.torch_cuda})" if plan.torch_cuda else " (CPU)")
        raise ToolchainError(f"{variant.name}: {plan.source} gave {got}, not {want}; refusing to build against it")
    if plan.torch_cuda:
        nvcc = _nvcc(tc)
        if nvcc is None:
            raise ToolchainError(f"{variant.name}: no nvcc in {path} after installing {plan.requirements}")
        version = nvcc_version(nvcc)
        if version != plan.torch_cuda:
            raise ToolchainError(f"{variant.name}: nvcc {nvcc} is CUDA {version}, not {plan.torch_cuda}")
    return tc


def ensure_env(
    plan: EnvPlan, variant: Variant, progress: Callable[[str], None] = lambda _: None, extra: tuple[str, ...] = ()
) -> Env:
    """The environment of ``plan``: from the cache when it is complete, else made now (under a lock,
    so parallel builds of one variant make it once). ``extra`` packages are added to it."""
    root = envs_dir()
    path = root / plan.dirname
    marker = _read_marker(path, plan)
    if marker is not None and set(extra) <= set(marker.get("extra", [])):
        return Env(path, plan, _toolchain(path, plan), created=False, packages=tuple(marker.get("extra", [])))
    root.mkdir(parents=True, exist_ok=True)
    log = root / f"{plan.dirname}.log"
    with locked(root / f"{plan.dirname}.lock"):
        found = _read_marker(path, plan)
        created = found is None
        marker = _make_env(path, plan, variant, log, progress) if found is None else found
        _add_packages(path, plan, variant, log, progress, marker, extra)
        (path / MARKER).write_text(json.dumps(marker, indent=1))  # last: the environment is complete
    return Env(path, plan, _toolchain(path, plan), created=created, packages=tuple(marker["extra"]))


def _make_env(path: Path, plan: EnvPlan, variant: Variant, log: Path, progress: Callable[[str], None]) -> dict:
    """A new environment at ``path`` (replacing what a failed or interrupted run left); its marker."""
    shutil.rmtree(path, ignore_errors=True)
    log.write_text(f"environment of {variant.name}: {plan.source}\n")
    progress(f"making its environment ({plan.source})")
    _run_uv(["venv", "--quiet", "--python", plan.python, str(path)], log, f"{variant.name}: uv venv")
    progress(f"installing {', '.join(plan.requirements)}")
    _run_uv(
        ["pip", "install", "--python", str(path / "bin" / "python"), *plan.uv_args, *plan.requirements],
        log,
        f"{variant.name}: installing {' '.join(plan.requirements)}",
    )
    tc = _verify(path, plan, variant)
    if (nvcc := _nvcc(tc)) is not None and plan.torch_cuda and not plan.nvcc:
        _link_wheel_cudart(nvcc)
    return {
        "key": plan.key,
        "plan": asdict(plan),
        "torch": tc.torch.version,
        "toolkits": dict(tc.torch.toolkits),
        "compilers": {name: str(c) for name, c in tc.compilers},
        "extra": [],
    }


def _add_packages(
    path: Path,
    plan: EnvPlan,
    variant: Variant,
    log: Path,
    progress: Callable[[str], None],
    marker: dict,
    extra: tuple[str, ...],
) -> None:
    """Install the ``extra`` packages the environment lacks; records them in ``marker``."""
    have = list(marker.get("extra", []))
    missing = [p for p in extra if p not in have]
    if not missing:
        return
    progress(f"adding {', '.join(missing)}")
    with log.open("a") as f:
        f.write(f"adding {missing}\n")
    merged = merge_requirements(have, extra)
    # the plan's requirements too, so that no extra moves the environment's torch
    _run_uv(
        ["pip", "install", "--python", str(path / "bin" / "python"), *plan.uv_args, *plan.requirements, *merged],
        log,
        f"{variant.name}: installing {' '.join(missing)}",
    )
    _verify(path, plan, variant)
    marker["extra"] = merged


def merge_requirements(have: list[str], extra: tuple[str, ...] | list[str]) -> list[str]:
    """``have`` with ``extra`` added, one requirement per project: an extra replaces the one of the
    same project (``kernels==0.17.3`` replaces ``kernels==0.17.2``), in ``have``'s order."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    merged = {canonicalize_name(Requirement(r).name): r for r in have}
    merged.update({canonicalize_name(Requirement(r).name): r for r in extra})
    return list(merged.values())


def test_packages() -> tuple[str, ...]:
    """What ``pybuild test`` adds to an environment: pytest, the ``kernels`` loader and ``kernels-data``
    (each the version this Python has, so both load alike; kernels-data for :mod:`pybuild.testing`,
    which a kernel's tests may import and which names kernels by its rule)."""
    from importlib.metadata import PackageNotFoundError, version

    def pinned(name: str) -> str:
        try:
            return f"{name}=={version(name)}"
        except PackageNotFoundError:
            return name

    return ("pytest", pinned("kernels"), pinned("kernels-data"))


def list_envs() -> list[tuple[Path, dict, int]]:
    """Every complete environment in the cache: (path, marker, size in bytes)."""
    found = []
    for d in env_folders():
        marker = _marker(d)
        if marker is not None:
            found.append((d, marker, dir_size(d)))
    return found


def env_folders() -> list[Path]:
    """Every environment folder in the cache, complete or not."""
    root = envs_dir()
    return [d for d in sorted(root.iterdir()) if d.is_dir() and not d.is_symlink()] if root.is_dir() else []


def env_in_use(path: Path) -> contextlib.AbstractContextManager[None]:
    """Held (shared) while a run uses the environment ``path``, e.g. `pybuild test` running its
    tests there: :func:`clear_env` leaves it alone meanwhile."""
    return shared_lock(path.parent / f"{path.name}.use")


def clear_env(path: Path) -> bool:
    """Remove the environment ``path`` (complete or not) unless a run is making it now (its lock is
    held) or using it (:func:`env_in_use`): the marker goes first, so a removal cut short leaves an
    environment no run trusts. Returns whether it was removed."""
    root = path.parent
    with try_locked(root / f"{path.name}.lock") as free, try_sole_lock(root / f"{path.name}.use") as unused:
        if not (free and unused):
            return False
        (path / MARKER).unlink(missing_ok=True)
        remove_tree(path)
        (root / f"{path.name}.log").unlink(missing_ok=True)
    return True  # the lock files stay: a run waiting on one must lock the same file as the next one
