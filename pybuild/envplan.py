"""Planning a variant's build environment: which packages, from which index, and which nvcc. Pure:
a variant, the indexes and the machine's facts in, an :class:`EnvPlan` or a :class:`Refusal` out
(:mod:`pybuild.envs` reads the machine and makes the environment)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from . import backends
from .backends.cuda_archs import PYPI_TORCH_CUDA as PYPI_TORCH_CUDA
from .variants import Variant

#: PyTorch's own index: one sub-index per backend (``/cu126``, ``/cpu``, ``/rocm7.1``, ``/xpu``).
PYTORCH_INDEX = "https://download.pytorch.org/whl"
PYPI = "https://pypi.org/simple"
#: Always in an environment: the build tools (pybuild's CMake floor is 3.22).
BUILD_PACKAGES = ("cmake>=3.22", "ninja")
MARKER = "pybuild-env.json"
ENV_SCHEMA = 1


@dataclass(frozen=True)
class IndexConfig:
    """Where packages come from: PyPI (uv's default index), PyTorch's index if configured
    (``PYBUILD_TORCH_INDEX_URL``), and flat wheel folders (pip's ``find-links``, mirrored for uv)."""

    torch_index: str | None = None
    find_links: tuple[str, ...] = ()
    local_wheels: tuple[str, ...] = ()  # file names of the torch wheels found in local find-links folders
    #: pip's index-url and extra-index-url: not passed to uv (an extra index would take precedence for
    #: every package it has, torch included), so a refusal names them
    pip_indexes: tuple[str, ...] = ()


@dataclass(frozen=True)
class HostFacts:
    system: str  # "x86_64-linux"
    python: str  # the interpreter environments are made with
    python_tag: str  # "cp311"
    nvcc_version: str | None  # the machine's nvcc, "13.0"
    nvcc: str | None


@dataclass(frozen=True)
class EnvPlan:
    """What one variant's environment holds and where it comes from."""

    variant: str
    requirements: tuple[str, ...]
    uv_args: tuple[str, ...]  # index options for `uv pip install`
    torch_cuda: str | None  # the CUDA release the installed torch must report (None: a CPU build)
    nvcc: str | None  # the machine's nvcc (path) when it serves the variant; None: from a wheel or not needed
    python: str
    source: str  # one line: where torch comes from (for people; not part of the key)
    python_tag: str = ""  # "cp311": the Python the environment is made for

    @property
    def key(self) -> str:
        """The environment's identity: what it installs, from where (requirements and index options),
        the toolkit and the Python (path and version); not the wording of ``source``."""
        data = {**asdict(self), "schema": ENV_SCHEMA}
        del data["source"]
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()

    @property
    def dirname(self) -> str:
        return f"{self.variant}-{self.key[:10]}"


@dataclass(frozen=True)
class Refusal:
    """A variant no reachable index serves (or this machine cannot build), and the one-line why."""

    variant: str
    reason: str


def _torch_subindex(variant: Variant) -> str:
    """PyTorch's sub-index of ``variant``'s torch: its backend's wheel tag (``cu126``, ``rocm7.1``, ``cpu``)."""
    return backends.get(variant.backend).wheel_tag(variant.backend_version) or variant.backend


def _env_refusal(variant: Variant) -> str | None:
    """Why no environment builds ``variant``'s backend (None: one does)."""
    backend = backends.get(variant.backend)
    if backend.env_buildable:
        return None
    if backend.facts.os == "linux":  # Nix builds every Linux backend
        served = " and ".join(sorted(b.name for b in backends.all_backends() if b.env_buildable))
        return (
            f"{backend.facts.label} variants are built with Nix (`nix build`); pybuild's environments build "
            f"{served} variants only"
        )
    return f"the {variant.backend} backend is not built in environments on Linux"


def _local_torch_wheel(variant: Variant, config: IndexConfig, python_tag: str) -> str | None:
    """A torch wheel of the variant's backend (its wheel tag) and minor for this Python in a local
    find-links folder."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    arch = (variant.system or "").split("-")[0]
    own_tag = backends.get(variant.backend).wheel_tag(variant.backend_version)
    for name in config.local_wheels:
        try:
            dist, version, _, tags = parse_wheel_filename(name)
        except InvalidWheelFilename:
            continue
        if dist != "torch" or version.local != own_tag or f"{version.major}.{version.minor}" != env_torch(variant):
            continue
        if any(t.interpreter == python_tag and t.platform.endswith(arch) for t in tags):
            return str(version)
    return None


def nvcc_requirements(cuda: str) -> tuple[str, ...]:
    """NVIDIA's wheels that make a working nvcc of CUDA ``cuda`` ("12.6", "13.2"), pinned to it."""
    if cuda.startswith("12."):
        return (
            f"nvidia-cuda-nvcc-cu12=={cuda}.*",
            f"nvidia-cuda-runtime-cu12=={cuda}.*",
            f"nvidia-cuda-cccl-cu12=={cuda}.*",
        )
    return tuple(
        f"{p}=={cuda}.*"
        for p in ("nvidia-cuda-nvcc", "nvidia-cuda-crt", "nvidia-nvvm", "nvidia-cuda-runtime", "nvidia-cuda-cccl")
    )


def env_torch(variant: Variant) -> str | None:
    """The torch release ``variant``'s environment holds: its own, or for a stable-ABI variant the
    matrix torch it is built with."""
    return variant.build_torch or variant.torch


def plan_env(variant: Variant, config: IndexConfig, host: HostFacts) -> EnvPlan | Refusal:
    """The packages of ``variant``'s environment, or why none can be made here. Pure."""
    name = variant.name
    if variant.noarch:
        return Refusal(name, "a pure-Python variant needs no environment; `python -m pybuild build` assembles it")
    if variant.system != host.system:
        return Refusal(
            name,
            f"builds on an {variant.system} machine (this one is {host.system}); "
            "or `nix build` with a remote builder of that system",
        )
    if (why := _env_refusal(variant)) is not None:
        return Refusal(name, why)
    source = _torch_source(variant, config, host)
    if isinstance(source, Refusal):
        return source
    requirements, uv_args, torch_cuda, where = source
    nvcc: str | None = None
    if torch_cuda:  # a CUDA variant, or a CPU one on a CUDA wheel: torch's CMake config needs the toolkit
        if host.nvcc and host.nvcc_version == torch_cuda:
            nvcc = host.nvcc
        else:
            requirements += nvcc_requirements(torch_cuda)
    return EnvPlan(name, tuple(requirements), tuple(uv_args), torch_cuda, nvcc, host.python, where, host.python_tag)


def _torch_source(
    variant: Variant, config: IndexConfig, host: HostFacts
) -> tuple[list[str], list[str], str | None, str] | Refusal:
    """Where ``variant``'s torch comes from: ``(requirements, uv index options, the torch's CUDA release
    or None, one line for people)``, or why no reachable index serves it."""
    torch = env_torch(variant)
    name = variant.name
    backend = backends.get(variant.backend)
    torch_req = f"torch=={torch}.*"
    # PyPI's torch wheels on Linux are one backend's build (CUDA's): which, and its toolkit
    pypi = next(((b, t) for b in backends.all_backends() if (t := b.pypi_torch_toolkit(torch or ""))), None)
    pypi_build = f"{pypi[0].facts.label} {pypi[1]} build" if pypi else ""
    own_toolkit = backend.wheel_toolkit(variant.backend_version)
    index_hint = f"{PYTORCH_INDEX}/{_torch_subindex(variant)}"
    requirements = [torch_req, *BUILD_PACKAGES]
    uv_args: list[str] = []
    torch_cuda: str | None = None
    if pypi and (pypi[0].name, pypi[1]) == (variant.backend, variant.backend_version):
        source = f"PyPI (torch {torch}'s {pypi_build})"
        torch_cuda = pypi[1]
    elif config.torch_index:
        uv_args += ["--extra-index-url", f"{config.torch_index.rstrip('/')}/{_torch_subindex(variant)}"]
        source = f"{uv_args[-1]}"
        torch_cuda = own_toolkit
    elif own_toolkit is None and (local := _local_torch_wheel(variant, config, host.python_tag)):
        # a wheel of the backend's own tag that needs no toolkit beside it (CPU's)
        requirements[0] = f"torch=={local}"
        uv_args += [a for link in config.find_links for a in ("--find-links", link)]
        source = f"the local {backend.facts.label} wheel torch {local} (find-links)"
    elif backend.builds_with_any_torch and pypi:
        # No wheel of its own reachable: compile against the same release's PyPI wheel. Such a
        # variant uses only the API every build has; `pybuild test` loads it under that torch.
        source = f"PyPI (torch {torch}'s {pypi_build}: no {backend.facts.label} wheel of it is reachable)"
        torch_cuda = pypi[1]
    else:
        served = (
            f"PyPI serves torch {torch} only as a {pypi_build}"
            if pypi
            else f"PyPI serves no torch {torch} that pybuild knows of"
        )
        pip = (
            f"; pip's index-url/extra-index-url ({' '.join(config.pip_indexes)}) are not read: "
            "PYBUILD_TORCH_INDEX_URL takes an index laid out as PyTorch's (one sub-index per backend)"
            if config.pip_indexes
            else ""
        )
        return Refusal(
            name,
            f"no reachable index serves it ({served}); PyTorch's index does: "
            f"PYBUILD_TORCH_INDEX_URL={PYTORCH_INDEX} (uv --extra-index-url {index_hint}){pip}",
        )
    return requirements, uv_args, torch_cuda, source
