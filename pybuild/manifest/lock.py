"""The variants each kernel builds, written for Nix: ``variants.lock.json`` beside ``build.toml``.

The rule of which matrix variants a kernel builds (backends, [torch] and [general.cuda] bounds, the
stable ABI, tvm-ffi) lives in :meth:`Manifest.variant_sources` only. Nix evaluates without Python,
so pybuild writes the rule's result into the kernel folder, and ``nix/lib/kernels.nix`` reads it
instead of computing it again. The file records what decided it, in forms Nix computes as well:

- ``build-toml-json-sha256``: the sha256 of the parsed ``build.toml`` as canonical JSON (keys sorted,
  no spaces, UTF-8), which is Nix's ``builtins.toJSON (builtins.fromTOML …)``: comments and layout
  do not count;
- ``matrix-sha256`` (compiled kernels only): the sha256 of the matrix's variant names, sorted, one a
  line, so a reformatted ``variants.json`` does not count but a new variant does;
- ``rules-sha256``: the sha256 of ``{"backends": <the backends of backends.json>, "rules": RULES_VERSION}`` as
  canonical JSON, so a lock written by other acceptance rules is stale;
- ``content-sha256``: the sha256 of the lock itself without this key, as canonical JSON (Nix:
  ``toJSON (removeAttrs lock [ "content-sha256" ])``), so a lock edited by hand (a renamed kernel,
  dropped variants) whose other hashes were left alone is stale too.

Nix reads a fresh lock as it is; a missing or stale one it computes with this command by
import-from-derivation (``lockedWith``). A test keeps the committed locks fresh.

    python -m pybuild lock [--variants FILE] [--check] [KERNEL_DIR ...]

writes (or, with ``--check``, only compares) the lock of every kernel named, or of every
``kernels/<name>/`` under the working directory.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import backends
from ..errors import PybuildError
from ..variants import Matrix, find_variants_file, load_matrix
from .load import load_manifest, tomllib
from .model import Manifest

LOCK_FILE = "variants.lock.json"
COMMAND = "python -m pybuild lock"
DESCRIPTION = "Write variants.lock.json (the variants each kernel builds, for Nix) beside each kernel's build.toml."


# Bump when the rule of which variants a kernel builds changes (Manifest.variant_sources), and
# `lockRules` in nix/lib/kernels.nix with it: every lock written before is then stale.
RULES_VERSION = 1


def canonical_json(value: Any) -> str:
    """``value`` as Nix's ``builtins.toJSON`` writes it: keys sorted, no spaces, UTF-8 as is, and a
    float as C's ``%g`` (``2.0`` is ``2``; no manifest key takes a float, but a stray one must not
    keep a lock stale forever)."""
    if isinstance(value, float):
        return format(value, "g")
    if isinstance(value, dict):
        return (
            "{"
            + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{canonical_json(v)}" for k, v in sorted(value.items()))
            + "}"
        )
    if isinstance(value, list):
        return "[" + ",".join(canonical_json(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def build_toml_hash(path: Path) -> str:
    """The ``build.toml`` as parsed, not as written (Nix: ``toJSON (fromTOML …)``)."""
    return _sha256(canonical_json(tomllib.loads(path.read_text(encoding="utf-8"))))


def matrix_hash(matrix: Matrix) -> str:
    """The matrix's variant names, sorted, one a line (Nix: the names of ``readMatrix``)."""
    return _sha256("\n".join(sorted(matrix.names())))


def rules_hash() -> str:
    """What decides acceptance besides the two files: the backends' facts and the rules' version."""
    return _sha256(canonical_json({"backends": backends.facts_json()["backends"], "rules": RULES_VERSION}))


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
    doc: dict[str, Any] = {
        "written-by": COMMAND,
        "build-toml-json-sha256": build_toml_hash(manifest.path),
        **({} if manifest.noarch else {"matrix-sha256": matrix_hash(matrix)}),
        "rules-sha256": rules_hash(),
        "name": manifest.name,
        "framework": manifest.framework,
        "backends": list(manifest.backends),
        "variants": variants,
    }
    return {**doc, CONTENT_KEY: content_hash(doc)}


CONTENT_KEY = "content-sha256"


def content_hash(doc: dict[str, Any]) -> str:
    """The lock's own content without its ``content-sha256`` (Nix: ``toJSON (removeAttrs lock [...])``)."""
    return _sha256(canonical_json({k: v for k, v in doc.items() if k != CONTENT_KEY}))


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


def fix_command(kernel_dir: Path, variants: Path | None = None) -> str:
    """The command that writes ``kernel_dir``'s lock (``variants``: a matrix that is not the default)."""
    return f"{COMMAND} {kernel_dir}" + (f" --variants {variants}" if variants is not None else "")


def run_locks(
    kernel_dirs: list[Path],
    variants: Path | None = None,
    check: bool = False,
    report: Callable[[str], None] | None = print,
) -> int:
    """Write (or with ``check`` compare) each kernel's lock, each for ``variants`` or else its own
    nearest ``variants.json``; ``report`` (None: quiet) gets one line a kernel changed and a summary.
    The exit code: 1 if ``check`` found a missing or stale lock, else 0. Bad input raises PybuildError."""
    dirs = _kernel_dirs(kernel_dirs)
    if not dirs:
        raise PybuildError("no kernel folder given and no kernels/<name>/build.toml here; name the kernel folders")
    matrices: dict[Path, Matrix] = {}
    stale = []
    for d in dirs:
        path = variants or find_variants_file(d)
        matrix = matrices.get(path) or matrices.setdefault(path, load_matrix(path))
        if write_lock(d, matrix, check=check):
            stale.append(d)
    say = report or (lambda _line: None)
    for d in stale:  # a stale lock under --check is the error itself: said even when quiet
        if check:
            print(f"{d / LOCK_FILE}: stale; run `{fix_command(d, variants)}`")
        else:
            say(f"{d / LOCK_FILE}: written")
    if not stale:
        say(f"{len(dirs)} lock{'s' if len(dirs) != 1 else ''} up to date")
    return 1 if check and stale else 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "kernel_dirs",
        nargs="*",
        type=Path,
        metavar="KERNEL_DIR",
        help="kernel folders (default: every kernels/<name>/ here)",
    )
    parser.add_argument("--variants", type=Path, metavar="FILE", help="the matrix (default: the nearest variants.json)")
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
