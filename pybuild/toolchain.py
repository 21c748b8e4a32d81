"""What compiles a variant, as data: the torch a Python has (:class:`TorchInfo`) and the tools around
it (:class:`Toolchain`). :mod:`pybuild.host` detects this machine's; the backends read them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from .errors import ToolchainError


@dataclass(frozen=True)
class TorchInfo:
    version: str  # full version, e.g. "2.13.0+cpu"
    path: Path  # the torch package folder
    #: the toolkit versions its ``version.py`` reports, by their names there (``(("cuda", "13.0"),)``)
    toolkits: tuple[tuple[str, str], ...] = ()

    def toolkit(self, key: str) -> str | None:
        """The version of toolkit ``key`` (a name in torch's ``version.py``) this torch was built with."""
        return dict(self.toolkits).get(key)

    @property
    def major_minor(self) -> str:
        major, minor = Version(self.version).release[:2]
        return f"{major}.{minor}"

    @property
    def cxx_abi(self) -> str:
        """torch >= 2.7 ships only the cxx11 ABI; older builds are asked."""
        if Version(self.version).release >= (2, 7):
            return "cxx11"
        out = subprocess.run(
            [sys.executable, "-c", "import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"],
            capture_output=True,
            text=True,
            check=False,
        )
        return "cxx11" if out.stdout.strip() == "1" else "cxx98"


@dataclass(frozen=True)
class Toolchain:
    """What compiles a variant: a Python with its torch, each backend's device compiler, and where
    CMake and ninja come from. The host's is this Python's (``pybuild.host.host_toolchain``); a
    per-variant environment has its own."""

    python: str
    torch: TorchInfo
    #: backend name -> its device compiler found here (CUDA's nvcc); a backend without one is absent
    compilers: tuple[tuple[str, Path], ...] = ()
    bin_dirs: tuple[Path, ...] = ()  # searched first for cmake and ninja, and put first on PATH
    env: tuple[tuple[str, str], ...] = ()  # set for every tool run (e.g. CUDA_PATH of the toolkit)

    def compiler(self, backend: str) -> Path | None:
        """The device compiler of backend ``backend`` (None: none found)."""
        return dict(self.compilers).get(backend)

    def cmake_and_ninja(self) -> tuple[str, str]:
        for d in self.bin_dirs:
            if (d / "cmake").is_file() and (d / "ninja").is_file():
                return str(d / "cmake"), str(d / "ninja")
        return cmake_and_ninja()

    def environ(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.bin_dirs:
            env["PATH"] = os.pathsep.join([*map(str, self.bin_dirs), env.get("PATH", "")])
        env.update(self.env)
        return env


def cmake_and_ninja() -> tuple[str, str]:
    """CMake and ninja, from PATH or from the pip packages of the same names."""
    cmake = shutil.which("cmake")
    ninja = shutil.which("ninja")
    if cmake is None or ninja is None:
        scripts = Path(sys.executable).parent
        cmake = cmake or (str(scripts / "cmake") if (scripts / "cmake").exists() else None)
        ninja = ninja or (str(scripts / "ninja") if (scripts / "ninja").exists() else None)
    if cmake is None:
        raise ToolchainError("`cmake` not found; install it (apt-get install cmake, or pip install cmake)")
    if ninja is None:
        raise ToolchainError("`ninja` not found; install it (apt-get install ninja-build, or pip install ninja)")
    return cmake, ninja
