"""The variants each kernel builds, written for Nix: ``variants.lock.json`` beside ``build.toml``.

The rule of which matrix variants a kernel builds (backends, [torch] and [general.cuda] bounds, the
stable ABI, tvm-ffi) lives in :meth:`Manifest.variant_sources` only. Nix evaluates without Python,
so pybuild writes the rule's result into the kernel folder, and ``nix/lib/kernels.nix`` reads it
instead of computing it again. The file records the sha256 of the ``build.toml`` and of the
``variants.json`` it was computed from; Nix compares both with the files it evaluates and refuses a
stale lock in one line that names this command. A test keeps the committed locks fresh.

    python -m pybuild lock [--variants FILE] [--check] [KERNEL_DIR ...]

writes (or, with ``--check``, only compares) the lock of every kernel named, or of every
``kernels/<name>/`` under the working directory.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import PybuildError
from ..variants import Matrix, find_variants_file, load_matrix
from .load import load_manifest
from .model import Manifest

LOCK_FILE = "variants.lock.json"
COMMAND = "python -m pybuild lock"
DESCRIPTION = ("Write variants.lock.json (the variants each kernel builds, for Nix) beside each kernel's "
               "build.toml.")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def lock_document(manifest: Manifest, matrix: Matrix) -> dict[str, Any]:
    """What Nix needs of ``manifest`` for ``matrix``: its identity and every variant it builds, each
    with the matrix variant whose toolchain builds it."""
    if manifest.noarch:
        variants = [{"name": v.name, "backend": v.backend} for v in manifest.variants(())]
    else:
        variants = []
        for v, m in manifest.variant_sources(matrix.variants).items():
            entry: dict[str, Any] = {"name": v.name, "backend": v.backend, "from": m.name}
            if v.stable_abi:
                entry["stable-abi-torch"] = v.torch
            if v.tvm_ffi:
                entry["tvm-ffi"] = v.torch
            variants.append(entry)
    return {
        "written-by": COMMAND,
        "build-toml-sha256": _sha256(manifest.path),
        "variants-json-sha256": _sha256(matrix.path),
        "name": manifest.name,
        "framework": manifest.framework,
        "backends": list(manifest.backends),
        "variants": variants,
    }


def lock_text(manifest: Manifest, matrix: Matrix) -> str:
    return json.dumps(lock_document(manifest, matrix), indent=2) + "\n"


def write_lock(kernel_dir: Path, matrix: Matrix, check: bool = False) -> bool:
    """Write ``kernel_dir``'s lock for ``matrix`` (``check``: only compare). True if it was (or would
    be) changed."""
    manifest = load_manifest(kernel_dir)
    path = kernel_dir / LOCK_FILE
    text = lock_text(manifest, matrix)
    old = path.read_text() if path.is_file() else None
    if old == text:
        return False
    if not check:
        tmp = path.with_name(f".{LOCK_FILE}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return True


def _kernel_dirs(given: list[Path]) -> list[Path]:
    if given:
        return given
    return sorted(p.parent for p in Path("kernels").glob("*/build.toml"))


def run_locks(kernel_dirs: list[Path], variants: Path | None = None, check: bool = False) -> int:
    """Write (or with ``check`` compare) each kernel's lock; print one line a kernel changed. The
    exit code: 1 if ``check`` found a missing or stale lock, else 0. Bad input raises PybuildError."""
    dirs = _kernel_dirs(kernel_dirs)
    if not dirs:
        raise PybuildError("no kernel folder given and no kernels/<name>/build.toml here; name the kernel folders")
    matrix = load_matrix(variants or find_variants_file(dirs[0]))
    stale = [d for d in dirs if write_lock(d, matrix, check=check)]
    for d in stale:
        print(f"{d / LOCK_FILE}: {'stale; run ' + COMMAND if check else 'written'}")
    if not stale:
        print(f"{len(dirs)} lock{'s' if len(dirs) != 1 else ''} up to date")
    return 1 if check and stale else 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kernel_dirs", nargs="*", type=Path, metavar="KERNEL_DIR",
                        help="kernel folders (default: every kernels/<name>/ here)")
    parser.add_argument("--variants", type=Path, help="the matrix (default: the nearest variants.json)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a lock is missing or stale")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=DESCRIPTION)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_locks(args.kernel_dirs, args.variants, args.check)
    except PybuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
