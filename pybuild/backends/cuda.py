"""CUDA: NVIDIA GPUs through nvcc, with a CUDA build of torch."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from packaging.version import Version

from ..errors import ManifestError, ToolchainError
from ..sections.kernel import KernelSpec, Target
from ..sections.keys import key
from ..sections.reader import Reader
from ..toolchain import Toolchain, TorchInfo
from .base import BaseBackend, ManifestView, VariantView
from .cuda_archs import (
    CUDA_CAPABILITIES,
    DEFAULT_CUDA_CAPABILITIES,
    KNOWN_CUDA,
    PYPI_TORCH_CUDA,
    check_cuda_archs,
    unknown_cuda_capability,
)


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
    major, minor = Version(version).release[:2]
    return f"{major}.{minor}"


def torch_arch_list(archs: tuple[str, ...]) -> str:
    """``TORCH_CUDA_ARCH_LIST`` for ``archs``: machine code for each, plus PTX of the newest plain
    one so that newer GPUs can JIT it ("8.0;9.0" -> "8.0;9.0+PTX")."""
    plain = [a for a in archs if not a.endswith(("a", "f"))]
    return ";".join(f"{a}+PTX" if plain and a == plain[-1] else a for a in archs)


def declared_archs(archs: tuple[str, ...]) -> tuple[str, ...]:
    """The archs metadata.json declares, in the loader's notation (``9.0+PTX`` for the PTX one)."""
    return tuple(torch_arch_list(archs).split(";")) if archs else ()


@dataclass(frozen=True)
class CudaKernel(KernelSpec):
    """A ``[kernel.*]`` section of backend "cuda": its capabilities, nvcc flags and oldest toolkit."""

    backend: ClassVar[str] = "cuda"
    noarch_archs_key: ClassVar[str | None] = "cuda_capabilities"
    cuda_capabilities: tuple[str, ...] = key(
        "cuda-capabilities",
        "str_list",
        farm=True,
        doc='compute capabilities to build, e.g. ["8.0", "9.0a"] (default: 8.0 8.6 8.9 9.0 10.0 12.0, '
        "each toolkit keeping those it knows)",
    )
    cuda_flags: tuple[str, ...] = key("cuda-flags", "str_list", farm=True, language="CUDA", doc="flags for nvcc")
    #: compiled only into CUDA variants of at least this toolkit
    cuda_minver: tuple[int, int] | None = key(
        "cuda-minver", "version", default=None, example="12.8", doc="compiled only with CUDA toolkits from this one on"
    )

    def applies_to(self, variant: Target) -> bool:
        """Its backend only, and only CUDA toolkits from `cuda-minver` on."""
        if variant.backend != self.backend:
            return False
        if self.cuda_minver and variant.backend_version:
            return Version(variant.backend_version).release >= self.cuda_minver
        return True

    @property
    def cmake_condition(self) -> str | None:
        if not self.cuda_minver:
            return None
        return f'CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL "{self.cuda_minver[0]}.{self.cuda_minver[1]}"'

    @property
    def scope_note(self) -> str:
        return f" (CUDA {self.cuda_minver[0]}.{self.cuda_minver[1]} and later)" if self.cuda_minver else ""

    @property
    def section_archs(self) -> tuple[str, ...]:
        return tuple(c for c in self.cuda_capabilities if c not in self.unknown_capabilities)

    @property
    def unknown_capabilities(self) -> tuple[str, ...]:
        """The capabilities it names that no supported CUDA toolkit knows: dropped from every build, as
        upstream intersects a section's list with each toolkit's."""
        return tuple(c for c in self.cuda_capabilities if unknown_cuda_capability(c))

    def doubts(self, path: Path) -> tuple[str, ...]:
        if not self.unknown_capabilities:
            return ()
        names = ", ".join(repr(c) for c in self.unknown_capabilities)
        return (
            f"{path}: `cuda-capabilities` in [kernel.{self.name}] has {names}, which no supported CUDA "
            "toolkit knows; left out of every build (as kernel-builder intersects the list with each "
            "toolkit's), the others are built",
        )

    @classmethod
    def check_noarch_archs(cls, reader: Reader, archs: tuple[str, ...]) -> None:
        for c in archs:
            hint = unknown_cuda_capability(c)
            if hint:
                reader.fail(
                    f"`cuda-capabilities` in [{reader.section}] has {c!r}, which no supported CUDA toolkit "
                    f"knows; {hint}"
                )

    def check(self, reader: Reader) -> None:
        unknown = self.unknown_capabilities
        if unknown and len(unknown) == len(self.cuda_capabilities):  # upstream: "empty set of capabilities"
            reader.fail(
                f"`cuda-capabilities` in [{reader.section}] has {unknown[0]!r}, which no supported CUDA toolkit "
                f"knows, and no capability a toolkit knows: that leaves an empty set of capabilities; "
                f"{unknown_cuda_capability(unknown[0])}"
            )


def kernel_capabilities(kernels: Sequence[KernelSpec]) -> tuple[str, ...]:
    """The CUDA capabilities the CUDA sections among ``kernels`` name that a supported toolkit knows
    (in order, once each), else the defaults."""
    caps: list[str] = []
    for k in kernels:
        if isinstance(k, CudaKernel):
            caps += [c for c in k.cuda_capabilities if c not in caps and c not in k.unknown_capabilities]
    return tuple(caps) or DEFAULT_CUDA_CAPABILITIES


def cuda_capabilities_for(
    manifest: ManifestView, cuda_version: str, section_path: Path | None = None
) -> tuple[str, ...]:
    """The capabilities to build for one CUDA toolkit: those the kernel names (or the defaults) that
    the toolkit knows, as upstream intersects them. An empty intersection is an error."""
    known = CUDA_CAPABILITIES.get(cuda_version)
    caps = kernel_capabilities(manifest.kernels)
    if known is None:
        return caps
    kept = tuple(c for c in caps if c in known)
    if not kept:
        msg = (
            f"{section_path or manifest.path}: `cuda-capabilities` {list(caps)} leave an empty set of capabilities "
            f"for CUDA {cuda_version} (it knows {', '.join(known)}); add one it knows or narrow the variants "
            "([general.cuda] minver/maxver)"
        )
        raise ManifestError(msg)
    return kept


class Cuda(BaseBackend):
    kernel_type = CudaKernel
    torch_toolkit_key: str | None = "cuda"  # torch.version.cuda
    known_versions = KNOWN_CUDA
    device_module = "cuda"
    env_buildable = True

    def host_versions(self, info: TorchInfo, *, require_toolchain: bool = True) -> tuple[str | None, ...]:
        cuda = self.toolkit_version(info)
        if not cuda or (require_toolchain and find_nvcc() is None):
            return ()
        return (major_minor(cuda),)

    def find_compiler(self) -> Path | None:
        return find_nvcc()

    def unbuildable(self, variant: VariantView, toolchain: Toolchain) -> str | None:
        if not self.toolkit_version(toolchain.torch):
            return f"variant {variant.name} needs a CUDA build of torch; torch {toolchain.torch.version} has none"
        if toolchain.compiler(self.name) is None:
            return f"variant {variant.name} needs nvcc; install the CUDA toolkit or set CUDA_HOME"
        return None

    def default_archs(self, manifest: ManifestView, version: str | None) -> tuple[str, ...]:
        return kernel_capabilities(manifest.kernels) if version is None else cuda_capabilities_for(manifest, version)

    def build_archs(
        self, manifest: ManifestView, variant: VariantView, override: tuple[str, ...] | None
    ) -> tuple[str, ...]:
        if override:
            return override
        env = os.environ.get("PYBUILD_CUDA_ARCHS")
        if env and env.strip():
            return check_cuda_archs(env, "PYBUILD_CUDA_ARCHS")
        assert variant.backend_version is not None
        return self.default_archs(manifest, variant.backend_version)

    def cmake_args(
        self, manifest: ManifestView, variant: VariantView, toolchain: Toolchain, archs: tuple[str, ...]
    ) -> list[str]:
        nvcc = toolchain.compiler(self.name)
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
        if variant.backend_version and Version(toolkit).major != Version(variant.backend_version).major:
            msg = f"variant {variant.name} needs CUDA {variant.backend_version}, but nvcc is CUDA {toolkit}"
            raise ToolchainError(msg)
        return [f"-DPYBUILD_CUDA_ARCHS={';'.join(archs)}", f"-DCMAKE_CUDA_COMPILER={nvcc}"]

    def build_environ(self, archs: tuple[str, ...]) -> dict[str, str]:
        return {"TORCH_CUDA_ARCH_LIST": torch_arch_list(archs)} if archs else {}

    def key_inputs(self, toolchain: Toolchain) -> dict[str, str | None]:
        found = toolchain.compiler(self.name)
        nvcc = nvcc_version(found) if found is not None else None
        return {**super().key_inputs(toolchain), "nvcc": nvcc, "CUDAFLAGS": os.environ.get("CUDAFLAGS", "")}

    def pypi_torch_toolkit(self, torch: str) -> str | None:
        return PYPI_TORCH_CUDA.get(torch)

    def wheel_toolkit(self, version: str | None) -> str | None:
        return version

    def toolkit_version(self, info: TorchInfo) -> str | None:
        return info.toolkit("cuda")

    def metadata_archs(self, manifest: ManifestView, archs: tuple[str, ...]) -> tuple[str, ...]:
        return declared_archs(archs) or manifest.noarch_archs(self.name)

    def unimportable(self, variant: VariantView, info: TorchInfo) -> str | None:
        cuda = self.toolkit_version(info)
        if not cuda:
            return f"a CUDA variant; torch {info.version} has no CUDA"
        if variant.backend_version and Version(variant.backend_version).major != Version(cuda).major:
            return f"built for CUDA {variant.backend_version}, torch has CUDA {cuda}"
        return None
