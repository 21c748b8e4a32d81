"""The compliance gate: is every built variant of a kernel fit to publish?

For each ``build/<variant>/`` it checks, in order:

``metadata``        metadata.json parses the way the ``kernels`` loader parses it (its own parser,
                    kernels-data), the variant name parses, the package is where the loader looks, the
                    recorded backend matches the name;
``digest``          every file matches the sha256 digest recorded in metadata.json;
``abi3``            no extension references a Python symbol outside the stable ABI (``kernel-abi-check``)
                    or links libpython;
``manylinux_2_28``  glibc/libstdc++ symbol versions fit manylinux_2_28 (``kernel-abi-check``);
                    ``macos`` on darwin;
``rpath``           no RPATH/RUNPATH into the machine that built it;
``sources``         it was built from the kernel's current sources (when metadata.json records them);
``import``          the package imports in a fresh interpreter, exactly as the loader imports it, where
                    this machine can (same torch major.minor and system; CPU, or CUDA with a GPU).

Per kernel, ``variants`` checks that every variant the matrix requires for the kernel's backends is
present. ``check_kernel`` returns a :class:`CheckReport`; the CLI prints it as a table.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from ..build import other_kind_variants
from ..digest import source_hash
from ..errors import InputLimitError, UsageError
from ..manifest import Manifest
from ..metadata import METADATA
from ..variants import Matrix, Variant
from .binary import check_abi3, check_platform, check_rpath, check_runtime
from .importing import check_import, importable_here
from .metadata_checks import SIGNATURE, check_digest, check_metadata, loader_digest_problems, signature_problem
from .results import MACOS, MANYLINUX, PYTHON_ABI, BuiltVariant, CheckReport, CheckResult, Status, Target, find_target

__all__ = [
    "MACOS",
    "MANYLINUX",
    "PYTHON_ABI",
    "SIGNATURE",
    "BuiltVariant",
    "CheckReport",
    "CheckResult",
    "Status",
    "Target",
    "check_abi3",
    "check_coverage",
    "check_digest",
    "check_import",
    "check_kernel",
    "check_metadata",
    "check_platform",
    "check_rpath",
    "check_runtime",
    "check_sources",
    "check_variant",
    "failure_summary",
    "find_target",
    "importable_here",
    "loader_digest_problems",
    "required_variants",
    "select_variant_dirs",
    "signature_problem",
]


def check_sources(path: Path, src_hash: str) -> CheckResult:
    """The variant was built from the kernel's current sources (else its binaries and the published
    sources would disagree)."""
    try:
        built = (json.loads((path / METADATA).read_text()).get("pybuild") or {}).get("source-hash")
    except (OSError, ValueError):
        built = None
    if not built:
        return CheckResult(path.name, "sources", "skip", "metadata.json records no source hash")
    if built != src_hash:
        return CheckResult(
            path.name,
            "sources",
            "fail",
            f"stale: built from sources {built[:10]}, the kernel's sources are now {src_hash[:10]}; "
            "rebuild this variant",
        )
    return CheckResult(path.name, "sources", "pass", f"built from the current sources ({src_hash[:10]})")


VARIANT_CHECKS: tuple[Callable[[BuiltVariant], CheckResult], ...] = (
    check_metadata,
    check_digest,
    check_abi3,
    check_platform,
    check_rpath,
    check_runtime,
    check_import,
)


def check_variant(path: Path, *, run_import: bool = True) -> list[CheckResult]:
    v = BuiltVariant(path)
    results = [check_metadata(v)]
    if v.metadata is None:
        return results
    for fn in VARIANT_CHECKS[1:]:
        if fn is check_import and not run_import:
            results.append(CheckResult(v.name, "import", "skip", "not asked for (--no-import)"))
            continue
        try:
            results.append(fn(v))
        except InputLimitError as e:  # a tree too deep, a FIFO, a file name that is not UTF-8
            results.append(CheckResult(v.name, fn.__name__.removeprefix("check_"), "fail", str(e)))
    return results


# --------------------------------------------------------------------------------------------
# Per-kernel checks


def required_variants(manifest: Manifest, matrix: Matrix) -> list[Variant]:
    """Variants the matrix requires for this kernel's backends and torch bounds (for a pure-Python
    kernel, its ``torch-<backend>`` variants)."""
    return manifest.variants(matrix.variants)


def check_coverage(target: Target, matrix: Matrix) -> CheckResult:
    if target.manifest is None:
        return CheckResult("*", "variants", "skip", "no build.toml beside the build folder: required variants unknown")
    required = [v.name for v in required_variants(target.manifest, matrix)]
    present = {p.name for p in target.variant_dirs}
    missing = [n for n in required if n not in present]
    extra = sorted(present - set(required))
    data = {"required": required, "missing": missing, "extra": extra}
    other = [d.name for d in other_kind_variants(target.manifest)]
    if other:
        kind = "pure Python" if target.manifest.noarch else "compiled"
        return CheckResult(
            "*",
            "variants",
            "fail",
            f"build/ holds {', '.join(other)}, left from before the kernel became {kind}; the "
            "loader would pick it over the current build: `python -m pybuild build` removes it",
            data,
        )
    source = "build.toml" if target.manifest.noarch else matrix.path.name  # noarch: one per listed backend
    note = f"; not in {source}: {', '.join(extra)}" if extra else ""
    if missing:
        return CheckResult(
            "*",
            "variants",
            "fail",
            f"{len(missing)} of {len(required)} variants required by {source} for backends "
            f"{', '.join(target.manifest.backends)} are missing (listed below){note}",
            data,
        )
    return CheckResult("*", "variants", "pass", f"all {len(required)} required variants present{note}", data)


def select_variant_dirs(target: Target, variants: list[str] | None) -> list[Path]:
    """The variant folders to check: all, or the ones named (each must exist)."""
    dirs = list(target.variant_dirs)
    if variants:
        unknown = sorted(set(variants) - {d.name for d in dirs})
        if unknown:
            raise UsageError(
                f"--variant {', '.join(unknown)}: not built under {target.build_dir} "
                f"(built: {', '.join(d.name for d in dirs) or 'none'})"
            )
        dirs = [d for d in dirs if d.name in variants]
    return dirs


def check_kernel(
    path: Path, matrix: Matrix, *, variants: list[str] | None = None, run_import: bool = True
) -> CheckReport:
    """Check every built variant of the kernel at ``path`` (or only ``variants``)."""
    target = find_target(path)
    dirs = select_variant_dirs(target, variants)
    results: list[CheckResult] = []
    if not dirs:
        results.append(
            CheckResult(
                "*", "build", "fail", f"nothing built under {target.build_dir}; run `python -m pybuild build` first"
            )
        )
    src_hash = source_hash(target.manifest) if target.manifest is not None else None
    for d in dirs:
        rows = check_variant(d, run_import=run_import)
        if src_hash is not None and len(rows) > 1:
            rows.insert(-1, check_sources(d, src_hash))
        results += rows
    if not variants:
        results.append(check_coverage(target, matrix))
    return CheckReport(target.kernel, target.build_dir, tuple(results))


def failure_summary(report: CheckReport) -> str:
    """One line naming what failed, for errors and the kernel card."""
    parts = []
    for r in report.failures:
        parts.append(f"{r.check}" + (f" ({r.variant})" if r.variant != "*" else ""))
    return ", ".join(parts)
