"""What ``check`` reports and what it looks at: results, the build folder found, one variant's shared state."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .. import safeload
from ..errors import UsageError
from ..manifest import Manifest, load_manifest
from ..metadata import METADATA
from ..variants import Variant

Status = Literal["pass", "fail", "skip"]

#: The oldest CPython the ``abi3`` extensions must load in (wheel tag ``cp39-abi3``).
PYTHON_ABI = "3.9"
MANYLINUX = "manylinux_2_28"
MACOS = "15.0"
IMPORT_TIMEOUT_S = 180

NOT_MANYLINUX_HINT = (
    "a host build (this machine's glibc is newer) is for development only; build release variants "
    "in a manylinux_2_28 container, or with the Nix toolchain given an old-glibc stdenv overlay "
    "(`nix build .#{kernel} -L`, then `python -m pybuild collect result`; see docs/nix.md)"
)


@dataclass(frozen=True)
class CheckResult:
    """One row of the report: one check of one variant (or of the whole kernel)."""

    variant: str  # a variant name, or "*" for kernel-wide checks
    check: str
    status: Status
    detail: str = ""
    data: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class CheckReport:
    kernel: str
    build_dir: Path
    results: tuple[CheckResult, ...]

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "fail"]

    @property
    def variants(self) -> list[str]:
        return sorted({r.variant for r in self.results if r.variant != "*"})

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "build-dir": str(self.build_dir),
            "ok": self.ok,
            "results": [
                {"variant": r.variant, "check": r.check, "status": r.status, "detail": r.detail, **r.data}
                for r in self.results
            ],
        }


# --------------------------------------------------------------------------------------------
# Locating what to check


@dataclass(frozen=True)
class Target:
    """What ``check`` was pointed at: the build folder, and the kernel's manifest when there is one."""

    build_dir: Path
    manifest: Manifest | None
    variant_dirs: tuple[Path, ...]

    @property
    def kernel(self) -> str:
        if self.manifest is not None:
            return self.manifest.name
        return self.build_dir.parent.name if self.build_dir.name == "build" else self.build_dir.name


def _variant_dirs(build_dir: Path) -> tuple[Path, ...]:
    if not build_dir.is_dir():
        return ()
    return tuple(sorted(p for p in build_dir.iterdir() if p.is_dir() and not p.name.startswith(".")))


def find_target(path: Path) -> Target:
    """Accept a kernel folder (with build.toml), its ``build/`` folder, or one variant folder."""
    if os.path.lexists(path / "build.toml") and not (path / "build.toml").is_dir():  # load_manifest names a FIFO
        return Target(path / "build", load_manifest(path), _variant_dirs(path / "build"))
    if (path / METADATA).is_file():  # a single variant folder
        kernel_root = path.parent.parent
        manifest = load_manifest(kernel_root) if (kernel_root / "build.toml").is_file() else None
        return Target(path.parent, manifest, (path,))
    if path.is_dir() and any((p / METADATA).is_file() for p in _variant_dirs(path)):
        manifest = load_manifest(path.parent) if (path.parent / "build.toml").is_file() else None
        return Target(path, manifest, _variant_dirs(path))
    if path.is_dir() and path.name == "build" and (path.parent / "build.toml").is_file():
        return Target(path, load_manifest(path.parent), ())
    msg = (
        f"{path}: neither a kernel folder (build.toml), a build folder (build/<variant>/metadata.json) "
        "nor a variant folder (metadata.json); pass e.g. kernels/img2gray"
    )
    raise UsageError(msg)


# --------------------------------------------------------------------------------------------
# Per-variant checks


@dataclass
class BuiltVariant:
    """A built variant folder and what the checks of it share (its parsed name, metadata, kernel)."""

    path: Path
    variant: Variant | None = None
    metadata: dict[str, Any] | None = None
    kernel: str = ""

    @property
    def name(self) -> str:
        return self.path.name

    def extensions(self) -> list[Path]:
        return [
            p
            for p in safeload.files(self.path)
            if p.suffix in (".so", ".dylib", ".pyd") and "__pycache__" not in p.parts
        ]
