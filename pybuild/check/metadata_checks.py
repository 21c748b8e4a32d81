"""The ``metadata`` and ``digest`` checks: metadata.json as the loader reads it, the files against its
digest, the signature beside it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from kernels_data import Digest, DigestValidationError, Metadata

from .. import safeload
from ..digest import digest_mismatches
from ..errors import PybuildError, VariantsError
from ..manifest import NAME_RULE, is_kernel_name, loader_python_depends
from ..metadata import METADATA
from ..variants import parse_variant_name
from .results import BuiltVariant, CheckResult


def _loader_metadata(path: Path) -> tuple[Any | None, str | None]:
    """Parse metadata.json with the ``kernels`` loader's own parser (``kernels-data``, the library the
    loader parses and verifies with): (parsed, None), or (None, error)."""
    try:
        return Metadata.read_from_file(path), None
    except (OSError, ValueError) as e:
        return None, str(e)


def check_metadata(v: BuiltVariant) -> CheckResult:
    path = v.path / METADATA
    if not os.path.lexists(path):
        return CheckResult(v.name, "metadata", "fail", f"{path} is missing; the loader refuses a variant without it")
    try:
        data = safeload.load_json(path)
    except json.JSONDecodeError as e:
        return CheckResult(v.name, "metadata", "fail", f"{path}: invalid JSON: {e}")
    except UnicodeDecodeError:
        return CheckResult(v.name, "metadata", "fail", f"{path}: not UTF-8 text; rebuild this variant")
    except PybuildError as e:  # too large, too deep, duplicate keys, a FIFO
        return CheckResult(v.name, "metadata", "fail", str(e))
    except OSError as e:
        return CheckResult(v.name, "metadata", "fail", f"{path}: cannot be read ({e.strerror})")
    if not isinstance(data, dict):
        return CheckResult(v.name, "metadata", "fail", f"{path}: must hold a JSON object")
    v.metadata = data
    _, problems = _metadata_problems(v, data, path)
    if problems:
        return CheckResult(v.name, "metadata", "fail", "; ".join(problems))
    return CheckResult(
        v.name, "metadata", "pass", f"{data['name']} id {data['id']} v{data['version']} (kernels loader's parser)"
    )


def _metadata_problems(v: BuiltVariant, data: dict[str, Any], path: Path) -> tuple[Any | None, list[str]]:
    """The loader's parse of metadata.json (None where it rejects it) and what is wrong with it."""
    problems: list[str] = []
    parsed, loader_error = _loader_metadata(path)
    if loader_error:
        problems.append(f"the kernels loader rejects it: {loader_error}")
    for key, kind in (("name", str), ("id", str), ("version", int), ("backend", dict)):
        if not isinstance(data.get(key), kind):
            problems.append(
                f"`{key}` must be {'an integer' if kind is int else 'a ' + kind.__name__}, found {data.get(key)!r}"
            )
    name = data.get("name")
    if isinstance(name, str) and not is_kernel_name(name):
        problems.append(f"`name` {name!r} does not match the loader's name rule: {NAME_RULE}")
    if isinstance(name, str):
        v.kernel = name
    try:
        v.variant = parse_variant_name(v.name)
    except VariantsError as e:
        problems.append(str(e))
    try:
        from kernels.variants import parse_variant as loader_parse_variant
    except ImportError:
        loader_parse_variant = None
    if loader_parse_variant is not None:
        try:
            loader_parse_variant(v.name)
        except ValueError as e:
            problems.append(f"the kernels loader cannot parse the variant name: {e}")
    backend = data.get("backend")
    if v.variant is not None and isinstance(backend, dict) and backend.get("type") != v.variant.backend:
        problems.append(f"backend.type is {backend.get('type')!r} but the variant name says {v.variant.backend!r}")
    if isinstance(name, str):
        pkg = name.replace("-", "_")
        if not (v.path / "__init__.py").is_file() and not (v.path / pkg / "__init__.py").is_file():
            problems.append(f"no {pkg}/__init__.py (nor a flat __init__.py): the loader finds no module")
    depends = data.get("python-depends", [])
    if not isinstance(depends, list) or not all(isinstance(d, str) for d in depends):
        problems.append(f"`python-depends` must be a list of package names, found {depends!r}")
        depends = []
    unknown = _unknown_python_depends(depends, v.variant.backend if v.variant else "")
    if unknown:
        problems.append(
            f"python-depends {unknown} are not in the kernels loader's allow-list "
            "(kernels/python_depends.json); the loader refuses the kernel"
        )
    return parsed, problems


def _unknown_python_depends(names: list[str], backend: str) -> list[str]:
    """Names the installed ``kernels`` loader would refuse (empty where it is not installed)."""
    allow = loader_python_depends()
    if allow is None:
        return []
    general, per_backend = allow
    return [n for n in names if n not in general | per_backend.get(backend, set())]


def check_digest(v: BuiltVariant) -> CheckResult:
    meta = v.metadata or {}
    digest = meta.get("digest")
    if not isinstance(digest, dict) or not isinstance(digest.get("files"), dict):
        return CheckResult(
            v.name, "digest", "fail", "metadata.json has no digest; rebuild with `python -m pybuild build`"
        )
    if str(digest.get("algorithm", "")).lower() != "sha256":
        return CheckResult(v.name, "digest", "fail", f"unsupported digest algorithm {digest.get('algorithm')!r}")
    # pybuild's reading (names each file) and the loader's own verdict (kernels-data).
    try:
        problems = digest_mismatches(v.path, digest["files"]) or loader_digest_problems(v.path)
    except PybuildError as e:  # a tree too deep, a FIFO, a name that is not UTF-8
        return CheckResult(v.name, "digest", "fail", str(e))
    if problems:
        shown = "; ".join(problems[:5]) + (f"; … {len(problems) - 5} more" if len(problems) > 5 else "")
        return CheckResult(
            v.name,
            "digest",
            "fail",
            f"{shown}: the files differ from what was built; rebuild (or re-collect) this variant",
            {"problems": problems},
        )
    signature = signature_problem(v.path)
    if signature:
        return CheckResult(v.name, "digest", "fail", signature)
    signed = "; metadata.json.sigstore covers this metadata.json" if (v.path / SIGNATURE).exists() else ""
    return CheckResult(v.name, "digest", "pass", f"{len(digest['files'])} files match their sha256{signed}")


#: The sigstore bundle the release workflow writes beside each variant's metadata.json, where
#: ``kernels verify-signature`` looks for it.
SIGNATURE = "metadata.json.sigstore"


def signature_problem(variant_dir: Path) -> str | None:
    """What is wrong with ``metadata.json.sigstore`` as far as can be told offline (None: absent or
    fine): it must be a sigstore bundle whose signed message digest is this metadata.json's sha256.
    Whether the signature itself and its signer's identity hold needs the sigstore services (Fulcio's
    roots, Rekor's log): ``kernels verify-signature`` (or ``kernels.verify.verify_variant``) checks that."""
    import base64
    import hashlib

    path = variant_dir / SIGNATURE
    if not os.path.lexists(path):
        return None
    try:
        bundle = safeload.load_json(path)
        raw = safeload.read_bytes(variant_dir / METADATA)
    except (ValueError, OSError, PybuildError) as e:
        return f"{path}: not a readable sigstore bundle ({e}); sign metadata.json again"
    signed = (bundle.get("messageSignature") or {}).get("messageDigest") or {} if isinstance(bundle, dict) else {}
    if signed.get("algorithm") != "SHA2_256" or not isinstance(signed.get("digest"), str):
        return (
            f"{path}: not a sigstore bundle of a signed file (no messageSignature.messageDigest); sign "
            "metadata.json again"
        )
    if signed["digest"] != base64.b64encode(hashlib.sha256(raw).digest()).decode():
        return (
            f"{path}: signs other content than this metadata.json (rebuilt after signing?); the loader would "
            "reject it: sign metadata.json again, or remove the stale bundle"
        )
    return None


def loader_digest_problems(path: Path) -> list[str]:
    """The verdict of ``kernels-data`` (what the loader and ``kernels verify-signature`` use) on every
    file against the digest in metadata.json."""
    try:
        meta = Metadata.read_from_file(path / METADATA)
        if meta.digest is None:
            return ["no digest"]
        meta.digest.validate(Digest.hash_variant(meta.digest.algorithm, path))
    except DigestValidationError as e:
        return [str(x) for x in e.violations]
    except (OSError, ValueError, RuntimeError) as e:
        return [str(e)]
    return []
