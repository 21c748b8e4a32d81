"""Content hashes: the source hash that names a build, and the per-file digest in metadata.json."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from kernels_data import Digest, DigestAlgorithm

from . import safeload
from .errors import InputLimitError
from .manifest import Manifest

SOURCE_HASH_LEN = 10
#: Files the ``kernels`` loader leaves out of a variant's digest (besides ``__pycache__``), for a
#: check of hashes known already (publish's plan); :func:`digest_files` leaves to kernels-data.
DIGEST_EXCLUDED = ("metadata.json", "metadata.json.sigstore")


def source_hash(manifest: Manifest, sha256_of: Callable[[str], bytes] | None = None) -> str:
    """sha256 over every source file's path and bytes (hex). Two kernels differ iff this differs.

    A compiled kernel's sources include the farm's shared headers (``<kernel_farm/...>``), which every
    generated project has on its include path: a changed header makes other binaries, so another name.
    A pure-Python kernel compiles nothing; its hash covers its own files only. ``sha256_of(rel)`` gives
    a source file's sha256 digest where it is known already (publish's manifest); else each file is
    read in chunks.
    """
    digest_of = sha256_of or (lambda rel: file_sha256(manifest.root / rel))
    h = hashlib.sha256()
    for rel in manifest.source_files():
        h.update(rel.encode() + b"\0")
        h.update(digest_of(rel))
    if not manifest.noarch:
        for rel, path in shared_headers():
            h.update(f"{SHARED_PREFIX}{rel}".encode() + b"\0")
            h.update(file_sha256(path))
    return h.hexdigest()


#: How a shared header's path enters the source hash (never a kernel's own path: those are relative).
SHARED_PREFIX = "<pybuild>/include/"


#: The farm's shared headers (``<kernel_farm/...>``): every generated project gets a copy, and a
#: compiled kernel's source hash covers them.
INCLUDE = Path(__file__).resolve().parent / "include"


def shared_headers() -> list[tuple[str, Path]]:
    """The farm's shared headers as ``[(path relative to pybuild/include, file)]``, sorted."""
    root = INCLUDE
    return sorted((p.relative_to(root).as_posix(), p) for p in safeload.files(root, follow_links=True) if p.is_file())


def ops_name(manifest: Manifest, backend: str, src_hash: str) -> str:
    """The unique op namespace and metadata ``id``: ``_<name>_<backend>_<short source hash>``."""
    return f"_{manifest.python_name}_{backend}_{src_hash[:SOURCE_HASH_LEN]}"


def file_sha256(path: Path) -> bytes:
    """The sha256 digest of ``path``, read in chunks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.digest()


def digest_files(variant_dir: Path) -> dict[str, str]:
    """``{relpath: base64 sha256}`` for every file of a variant, as the ``kernels`` loader hashes it.

    kernels-data's ``Digest.hash_variant`` (the loader's own code) hashes the files and decides which
    ones the digest leaves out. The tree is walked first with safeload's limits, since the library
    follows symlinks and would block on a FIFO: a link, special file, name that is not UTF-8 or a
    tree too deep is refused naming it. The result lists the files in the walk's (sorted) order.
    """
    ours = [p.relative_to(variant_dir).as_posix() for p in safeload.files(variant_dir)]
    try:
        theirs = Digest.hash_variant(DigestAlgorithm.SHA256, variant_dir).files
    except RuntimeError as e:  # kernels-data's "unexpected failure"; its I/O errors stay OSError
        raise InputLimitError(f"{safeload.shown(variant_dir)}: cannot be hashed ({e})") from e
    return {rel: theirs[rel] for rel in ours if rel in theirs}


def digest_mismatches(variant_dir: Path, expected: dict[str, str]) -> list[str]:
    """Human-readable differences between a variant's files and its recorded digest (empty = match)."""
    actual = digest_files(variant_dir)
    problems = [f"missing file {p}" for p in sorted(set(expected) - set(actual))]
    problems += [f"unexpected file {p}" for p in sorted(set(actual) - set(expected))]
    problems += [f"changed file {p}" for p in sorted(set(expected) & set(actual)) if expected[p] != actual[p]]
    return problems
