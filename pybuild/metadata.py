"""``metadata.json`` of a built variant, in the kebab-case format the ``kernels`` loader reads."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import __version__, backends, safeload
from .digest import digest_files
from .errors import PybuildError
from .manifest import Manifest

METADATA = "metadata.json"


def git_state(root: Path, files: list[str], *, last_change: bool = False) -> dict[str, Any] | None:
    """``{"commit", "dirty"}`` of the git work tree holding ``root``; dirty if any of ``files`` differ.
    The commit is HEAD, or with ``last_change`` the last commit that changed one of ``files`` (HEAD if
    none did): the commit the files come from, which commits elsewhere in the tree leave alone."""
    head = ["git", "-C", str(root), "rev-parse", "HEAD"]
    last = ["git", "-C", str(root), "log", "-1", "--format=%H", "--", *files]
    try:
        commit = (
            subprocess.run(last if last_change else head, capture_output=True, text=True, check=True).stdout.strip()
            or subprocess.run(head, capture_output=True, text=True, check=True).stdout.strip()
        )
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", *files],
            capture_output=True,
            text=True,
            check=True,
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
    archs: tuple[str, ...],
    variant_dir: Path,
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    """The metadata dict for the finished files in ``variant_dir`` (digest computed from them); ``archs``:
    the device architectures the build targeted (none for a pure-Python variant)."""
    backend_info: dict[str, Any] = {"type": backend}
    declared = backends.get(backend).metadata_archs(manifest, archs)
    if declared:
        backend_info["archs"] = list(declared)
    provenance: dict[str, Any] = {"kernel-builder": {"version": f"pybuild-{__version__}"}}
    builder_git = git_state(Path(__file__).resolve().parent, ["."])
    if builder_git:
        provenance["kernel-builder"]["git"] = builder_git
    kernel_git = git_state(manifest.root, manifest.source_files(), last_change=True)
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
        "pybuild": dict(extra),
    }


def write_metadata(variant_dir: Path, metadata: dict[str, Any]) -> None:
    (variant_dir / METADATA).write_text(json.dumps(metadata, indent=2, sort_keys=False) + "\n")


def read_metadata(variant_dir: Path) -> dict[str, Any]:
    path = variant_dir / METADATA
    try:
        data = safeload.load_json(path)
    except FileNotFoundError:
        raise PybuildError(f"{path}: missing; every built variant needs a metadata.json") from None
    except json.JSONDecodeError as e:
        raise PybuildError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
    except UnicodeDecodeError:
        raise PybuildError(f"{path}: not UTF-8 text; rebuild this variant") from None
    if not isinstance(data, dict):
        raise PybuildError(f"{path}: must hold a JSON object")
    return data
