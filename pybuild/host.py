"""What this machine can build: the installed torch, CMake, ninja, ccache, and the variants each
backend detects here (nvcc and the CUDA toolkit: ``pybuild.backends.cuda``).

Detection never imports torch (that takes seconds): it reads the installed distribution's
metadata and ``torch/version.py``, so ``pybuild build`` on an up-to-date tree stays fast.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import platform
import re
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from . import backends
from .backends.cuda import cuda_toolkit_root as cuda_toolkit_root
from .backends.cuda import find_nvcc as find_nvcc
from .backends.cuda import nvcc_capabilities as nvcc_capabilities
from .backends.cuda import nvcc_version as nvcc_version
from .errors import ToolchainError
from .toolchain import Toolchain as Toolchain
from .toolchain import TorchInfo as TorchInfo
from .toolchain import cmake_and_ninja as cmake_and_ninja
from .variants import TVM_FFI_VERSION, Variant

if TYPE_CHECKING:
    from .manifest import Manifest


@functools.lru_cache(maxsize=1)
def torch_info() -> TorchInfo:
    """The installed torch, without importing it."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        msg = "torch is not installed in this Python; install it first (e.g. pip install torch==2.13.0)"
        raise ToolchainError(msg)
    return torch_info_at(Path(spec.origin).parent, importlib.metadata.version("torch"))


def torch_info_at(path: Path, version: str | None = None) -> TorchInfo:
    """The torch package at ``path`` (another environment's), from its ``version.py``."""
    version_py = path / "version.py"
    if version is None:
        m = re.search(r"^__version__(?:: \S+)? = '([^']+)'", version_py.read_text(), re.M)
        if not m:
            raise ToolchainError(f"{version_py}: no __version__; is this a torch package?")
        version = m[1]
    toolkits = []
    if version_py.is_file():
        text = version_py.read_text()
        for key in dict.fromkeys(b.torch_toolkit_key for b in backends.all_backends() if b.torch_toolkit_key):
            m = re.search(rf"^{re.escape(key)}(?:: \S+)? = '([\d.]+)'", text, re.M)
            if m:
                toolkits.append((key, m[1]))
    return TorchInfo(version=version, path=path, toolkits=tuple(toolkits))


def torch_build(info: TorchInfo) -> str:
    """Which build of torch ``info`` is, for messages: its backend's toolkit ("CUDA 13.0"), or "CPU"."""
    for b in backends.all_backends():
        toolkit = b.toolkit_version(info)
        if toolkit:
            return f"{b.facts.label} {toolkit}"
    return "CPU"


def host_toolchain() -> Toolchain:
    """This Python, its torch and the device compilers the backends find on this machine."""
    found = ((b.name, b.find_compiler()) for b in backends.all_backends())
    return Toolchain(python=sys.executable, torch=torch_info(), compilers=tuple((n, c) for n, c in found if c))


def host_system() -> str:
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    system = platform.system().lower()
    return f"{machine}-{system}"


def host_variants(require_nvcc: bool = True) -> list[Variant]:
    """The variants this machine builds, as each backend detects it (CPU always; CUDA when torch has
    CUDA and nvcc is here): those needing no device first, so the last is the most capable."""
    info = torch_info()
    system = host_system()
    abi: str | None = None if system.endswith("-darwin") else info.cxx_abi
    found = [b for b in backends.all_backends() if b.facts.compiled]
    found.sort(key=lambda b: b.device_module is not None)
    return [
        Variant(info.major_minor, b.name, version, abi, system)
        for b in found
        for version in b.host_versions(info, require_toolchain=require_nvcc)
    ]


def tvm_ffi_version() -> str | None:
    """The installed tvm-ffi's major.minor ("0.1"), as the loader compares it; None without tvm-ffi."""
    try:
        version = importlib.metadata.version("apache-tvm-ffi")
    except importlib.metadata.PackageNotFoundError:
        return None
    try:
        major, minor = Version(version).release[:2]
    except (InvalidVersion, ValueError):  # not PEP 440, or no minor part
        return None
    return f"{major}.{minor}"


def kernel_host_variants(manifest: Manifest, require_toolchain: bool = True) -> list[Variant]:
    """The variants of ``manifest`` this machine builds: all noarch ones of a pure-Python kernel (they
    need no toolchain), else the host variants the kernel accepts (``require_toolchain`` False: those
    this Python's torch runs, nvcc or not)."""
    if manifest.noarch:
        return manifest.variants(())
    tvm_ffi = tvm_ffi_version() if manifest.framework == "tvm-ffi" else TVM_FFI_VERSION
    if tvm_ffi is None:
        return []  # a tvm-ffi kernel builds only where tvm-ffi is installed
    out = []
    for host in host_variants(require_nvcc=require_toolchain):
        v = manifest.framed(host, tvm_ffi)
        if v is not None and manifest.accepts(v):
            out.append(v)
    return out


def ccache() -> str | None:
    if os.environ.get("PYBUILD_NO_CCACHE"):
        return None
    return shutil.which("ccache")
