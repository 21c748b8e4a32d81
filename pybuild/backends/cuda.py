"""CUDA: NVIDIA GPUs through nvcc, with a CUDA build of torch."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ToolchainError
from .base import BaseBackend

if TYPE_CHECKING:
    from ..host import Toolchain, TorchInfo
    from ..manifest import Manifest
    from ..variants import Variant


def find_nvcc() -> Path | None:
    """The nvcc of $CUDACXX, else of $CUDA_HOME or $CUDA_PATH, else on PATH, else /usr/local/cuda's."""
    for env in ("CUDACXX",):
        if os.environ.get(env):
            return Path(os.environ[env])
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env) and (Path(os.environ[env]) / "bin" / "nvcc").is_file():
            return Path(os.environ[env]) / "bin" / "nvcc"
    found = shutil.which("nvcc")
    if found:
        return Path(found)
    default = Path("/usr/local/cuda/bin/nvcc")
    return default if default.is_file() else None


@functools.cache
def nvcc_version(nvcc: Path) -> str:
    out = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, check=False).stdout
    m = re.search(r"release (\d+\.\d+)", out)
    if not m:
        raise ToolchainError(f"{nvcc}: could not read the CUDA version from `nvcc --version`")
    return m[1]


@functools.cache
def cuda_toolkit_root(nvcc: Path) -> Path:
    """The toolkit folder of ``nvcc`` as nvcc itself reports it (``TOP``), so that a wrapper script
    such as /usr/local/bin/nvcc leads to the real toolkit."""
    out = subprocess.run(
        [str(nvcc), "--dryrun", "-x", "cu", "-c", os.devnull, "-o", os.devnull],
        capture_output=True,
        text=True,
        check=False,
    )
    m = re.search(r"^#\$ TOP=(.+)$", out.stdout + out.stderr, re.M)
    return Path(m[1].strip()).resolve() if m else Path(nvcc).resolve().parent.parent


@functools.cache
def nvcc_capabilities(nvcc: Path) -> frozenset[str]:
    """Capabilities this nvcc can target, as "9.0" strings (from ``nvcc --list-gpu-arch``)."""
    out = subprocess.run([str(nvcc), "--list-gpu-arch"], capture_output=True, text=True, check=False).stdout
    return frozenset(f"{m[1][:-1]}.{m[1][-1]}" for m in re.finditer(r"compute_(\d+)", out))


def major_minor(version: str) -> str:
    """``12.8.1`` -> ``12.8``."""
    major, minor = version.split(".")[:2]
    return f"{major}.{minor}"


def torch_arch_list(archs: tuple[str, ...]) -> str:
    """``TORCH_CUDA_ARCH_LIST`` for ``archs``: machine code for each, plus PTX of the newest plain
    one so that newer GPUs can JIT it ("8.0;9.0" -> "8.0;9.0+PTX")."""
    plain = [a for a in archs if not a.endswith(("a", "f"))]
    return ";".join(f"{a}+PTX" if plain and a == plain[-1] else a for a in archs)


def declared_archs(archs: tuple[str, ...]) -> tuple[str, ...]:
    """The archs metadata.json declares, in the loader's notation (``9.0+PTX`` for the PTX one)."""
    return tuple(torch_arch_list(archs).split(";")) if archs else ()


#: CUDA toolkits torch has published wheels for (a new one: add it here and to manifest.CUDA_CAPABILITIES).
KNOWN_CUDA = ("11.8", "12.1", "12.4", "12.6", "12.8", "12.9", "13.0", "13.2")


class Cuda(BaseBackend):
    known_versions = KNOWN_CUDA
    device_module = "cuda"
    env_buildable = True

    def host_versions(self, info: TorchInfo, *, require_toolchain: bool = True) -> tuple[str | None, ...]:
        if not info.cuda or (require_toolchain and find_nvcc() is None):
            return ()
        return (major_minor(info.cuda),)

    def unbuildable(self, variant: Variant, toolchain: Toolchain) -> str | None:
        if not toolchain.torch.cuda:
            return f"variant {variant.name} needs a CUDA build of torch; torch {toolchain.torch.version} has none"
        if toolchain.nvcc is None:
            return f"variant {variant.name} needs nvcc; install the CUDA toolkit or set CUDA_HOME"
        return None

    def default_archs(self, manifest: Manifest, version: str | None) -> tuple[str, ...]:
        from ..manifest import cuda_capabilities_for

        return manifest.cuda_capabilities() if version is None else cuda_capabilities_for(manifest, version)

    def build_archs(self, manifest: Manifest, variant: Variant, override: tuple[str, ...] | None) -> tuple[str, ...]:
        from ..manifest import check_cuda_archs

        if override:
            return override
        env = os.environ.get("PYBUILD_CUDA_ARCHS")
        if env and env.strip():
            return check_cuda_archs(env, "PYBUILD_CUDA_ARCHS")
        assert variant.backend_version is not None
        return self.default_archs(manifest, variant.backend_version)

    def cmake_args(
        self, manifest: Manifest, variant: Variant, toolchain: Toolchain, archs: tuple[str, ...]
    ) -> list[str]:
        nvcc = toolchain.nvcc
        assert nvcc is not None
        toolkit = nvcc_version(nvcc)
        known = nvcc_capabilities(nvcc)
        unknown = [a for a in archs if known and a.rstrip("af") not in known]
        if unknown:
            msg = (
                f"CUDA capabilities {unknown} are unknown to {nvcc} (CUDA {toolkit}); it knows "
                f"{sorted(known, key=float)}. Fix cuda-capabilities in {manifest.path} or --cuda-archs"
            )
            raise ToolchainError(msg)
        if variant.backend_version and toolkit.split(".")[0] != variant.backend_version.split(".")[0]:
            msg = f"variant {variant.name} needs CUDA {variant.backend_version}, but nvcc is CUDA {toolkit}"
            raise ToolchainError(msg)
        return [f"-DPYBUILD_CUDA_ARCHS={';'.join(archs)}", f"-DCMAKE_CUDA_COMPILER={nvcc}"]

    def build_environ(self, archs: tuple[str, ...]) -> dict[str, str]:
        return {"TORCH_CUDA_ARCH_LIST": torch_arch_list(archs)} if archs else {}

    def key_inputs(self, toolchain: Toolchain) -> dict[str, str | None]:
        nvcc = nvcc_version(toolchain.nvcc) if toolchain.nvcc is not None else None
        return {**super().key_inputs(toolchain), "nvcc": nvcc, "CUDAFLAGS": os.environ.get("CUDAFLAGS", "")}

    def toolkit_version(self, info: TorchInfo) -> str | None:
        return info.cuda

    def metadata_archs(self, manifest: Manifest, archs: tuple[str, ...]) -> tuple[str, ...]:
        return declared_archs(archs) or manifest.noarch_cuda_capabilities

    def unimportable(self, variant: Variant, info: TorchInfo) -> str | None:
        if not info.cuda:
            return f"a CUDA variant; torch {info.version} has no CUDA"
        if variant.backend_version and variant.backend_version.split(".")[0] != info.cuda.split(".")[0]:
            return f"built for CUDA {variant.backend_version}, torch has CUDA {info.cuda}"
        return None
