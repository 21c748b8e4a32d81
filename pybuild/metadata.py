"""``metadata.json`` of a built variant, in the kebab-case format the ``kernels`` loader reads."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from . import __version__
from .digest import digest_files
from .errors import PybuildError
from .manifest import Manifest

METADATA = "metadata.json"


def git_state(root: Path, files: list[str]) -> dict[str, Any] | None:
    """``{"commit", "dirty"}`` of the git work tree holding ``root``; dirty if any of ``files`` differ."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", *files],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    if len(commit) != 40:
        return None
    return {"commit": commit, "dirty": bool(status)}


def make_metadata(
    manifest: Manifest,
    *,
    ops_name: str,
    backend: str,
    cuda_archs: tuple[str, ...],
    variant_dir: Path,
    extra: dict[str, Any],
) -> dict[str, Any]:
    """The metadata dict for the finished files in ``variant_dir`` (digest computed from them)."""
    backend_info: dict[str, Any] = {"type": backend}
    if backend == "cuda" and cuda_archs:  # for a pure-Python variant, those [torch-noarch] names
        backend_info["archs"] = list(cuda_archs)
    elif backend == "cuda" and manifest.noarch_cuda_capabilities:
        backend_info["archs"] = list(manifest.noarch_cuda_capabilities)
    elif backend == "rocm" and manifest.noarch_rocm_archs:
        backend_info["archs"] = list(manifest.noarch_rocm_archs)
    provenance: dict[str, Any] = {"kernel-builder": {"version": f"pybuild-{__version__}"}}
    builder_git = git_state(Path(__file__).resolve().parent, ["."])
    if builder_git:
        provenance["kernel-builder"]["git"] = builder_git
    kernel_git = git_state(manifest.root, manifest.source_files())
    if kernel_git:
        provenance["kernel"] = kernel_git
    return {
        "name": manifest.name,
        "id": ops_name,
        "version": manifest.version,
        "license": manifest.license,
        "python-depends": list(manifest.python_depends_for(backend)),
        "backend": backend_info,
        "digest": {"algorithm": "sha256", "files": digest_files(variant_dir)},
        "provenance": provenance,
        "pybuild": extra,
    }


def write_metadata(variant_dir: Path, metadata: dict[str, Any]) -> None:
    (variant_dir / METADATA).write_text(json.dumps(metadata, indent=2, sort_keys=False) + "\n")


def read_metadata(variant_dir: Path) -> dict[str, Any]:
    path = variant_dir / METADATA
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise PybuildError(f"{path}: missing; every built variant needs a metadata.json") from None
    except json.JSONDecodeError as e:
        raise PybuildError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
    if not isinstance(data, dict):
        raise PybuildError(f"{path}: must hold a JSON object")
    return data
