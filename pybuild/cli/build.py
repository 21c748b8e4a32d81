"""``python -m pybuild build``: build variants into ``<kernel>/build/<variant>/``, this machine's
variants here, and with --all or --variant the matrix's in per-variant environments."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from ..errors import PybuildError, UsageError
from ..ui import Reporter, error, human_size
from .common import add_kernel_dirs, add_output_flags, add_variants_flag, int_at_least, load_manifests, load_matrix

if TYPE_CHECKING:
    from pathlib import Path

    from ..build import BuildOptions, BuildResult
    from ..envs import Refusal
    from ..manifest import Manifest
    from ..matrix import VariantJob
    from ..variants import Matrix, Variant

NAME = "build"
HELP = "build variants into <kernel>/build/<variant>/ (host, or --all in environments)"
DESCRIPTION = (
    "Build every kernel (or the ones named) for this machine's variants: CPU always, CUDA too when torch "
    "has CUDA and nvcc is present; a compiled kernel with neither gets the variants of this torch release "
    "that an environment builds here (e.g. its CUDA variant), and when nothing can be built the command "
    "exits 5 naming the one that builds something. With --all (or --variant NAME), build the matrix's "
    "variants, each in its own cached environment made with uv (see `python -m pybuild envs`)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_kernel_dirs(p)
    p.add_argument(
        "--variant",
        action="append",
        metavar="NAME",
        help="only this variant (repeatable); one this Python's torch does not build is built in its "
        "own environment (torch, nvcc, CMake, ninja from the package index, cached)",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="every variant of the kernel's matrix, each in its own "
        "environment; those no reachable index serves are listed with the reason",
    )
    p.add_argument(
        "--parallel",
        type=int_at_least(1),
        metavar="N",
        help="variants built at once with --all/--variant "
        "(default: as many as compile jobs, one per core and per 3 GiB of free memory)",
    )
    p.add_argument(
        "--cuda-archs",
        metavar="LIST",
        help="override CUDA capabilities for CUDA variants, e.g. 9.0 or 8.0,9.0 (env PYBUILD_CUDA_ARCHS does the same)",
    )
    p.add_argument("--force", action="store_true", help="rebuild even when up to date")
    p.add_argument(
        "-j",
        "--jobs",
        type=int_at_least(1),
        metavar="N",
        help="parallel compile jobs (default: MAX_JOBS, else one per core and per 3 GiB of free memory; "
        "with --all/--variant, the total of all builds at once)",
    )
    p.add_argument("-k", "--keep-going", action="store_true", help="build the other kernels after a failure")
    p.add_argument(
        "--sandbox",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run configure, compile and install under bubblewrap: no network, an empty HOME, no environment "
        "but an allow-list, the kernel read-only, only its work and staging folders writable "
        "(default: on where PYBUILD_SANDBOX=1, as CI sets it for pull requests)",
    )
    add_variants_flag(p)
    add_output_flags(p)


def run(args: argparse.Namespace) -> int:
    from ..backends.cuda_archs import check_cuda_archs
    from ..build import BuildOptions
    from ..host import kernel_host_variants
    from ..sandbox import bwrap
    from ..sandbox import default_on as default_sandbox

    _check_selection(args)
    rep = Reporter(quiet=args.quiet, json_mode=args.json)
    matrix = load_matrix(args)
    manifests = load_manifests(args.kernel_dirs, quiet=args.quiet)  # validate all before building
    archs = check_cuda_archs(args.cuda_archs, "--cuda-archs") if args.cuda_archs is not None else None
    sandbox = args.sandbox if args.sandbox is not None else default_sandbox()
    if sandbox:
        bwrap()  # a missing bubblewrap is named before any work
    options = BuildOptions(cuda_archs=archs, force=args.force, jobs=args.jobs, sandbox=sandbox)
    planned = {m.root: kernel_host_variants(m) for m in manifests}
    # --all and --variant names beyond this Python's torch build in per-variant environments; every
    # name is checked, and every environment planned, before any build starts
    env_wanted, host_names = _env_selection(args, matrix, manifests, planned)
    if not args.all and not args.variant:
        env_wanted = _within_reach(manifests, planned, matrix, rep)
    jobs: list[VariantJob] = []
    refusals: list[Refusal] = []
    if env_wanted:
        from ..matrix import plan_jobs, refusal_error

        jobs, refusals = plan_jobs(env_wanted)
        if refusals and not args.all:
            raise refusal_error(refusals)
    in_envs = {m.root for m, _ in env_wanted}
    results, failed = _build_here(args, rep, matrix, manifests, planned, host_names, options, in_envs)
    if not results and not jobs and not refusals:
        _nothing_to_build(manifests, matrix)
    if jobs and not (failed and not args.keep_going):
        from ..matrix import build_in_envs

        with rep.tasks() as new_task:
            env_results = build_in_envs(
                jobs, options, new_task, rep.info, parallel=args.parallel, keep_going=args.keep_going
            )
        results += env_results
        failed = failed or next((r.exit_code for r in env_results if r.status == "failed"), 0)
    _summary(rep, results, refusals, env_wanted, args.json)
    if not args.all and not args.variant and not args.quiet and not args.json:
        _say_what_else(args.kernel_dirs, manifests, planned, matrix, rep)
    return int(failed)


def _check_selection(args: argparse.Namespace) -> None:
    """--all and --variant together, or a --variant that is no variant name: refused before any work."""
    from ..errors import VariantsError
    from ..variants import parse_variant_name

    if args.all and args.variant:
        raise UsageError(
            f"build: --all and --variant {args.variant[0]} exclude each other: --all builds every "
            "variant of the matrix, --variant only those named; give one"
        )
    for name in args.variant or []:
        try:
            parse_variant_name(name)
        except VariantsError:
            raise UsageError(
                f"--variant {name}: not a variant name; `python -m pybuild variants` lists them "
                "(--kernel DIR: one kernel's)"
            ) from None


def _build_here(
    args: argparse.Namespace,
    rep: Reporter,
    matrix: Matrix,
    manifests: list[Manifest],
    planned: dict[Path, list[Variant]],
    host_names: set[str] | None,
    options: BuildOptions,
    in_envs: set[Path],
) -> tuple[list[BuildResult], int]:
    """Build each kernel's host variants (those in ``host_names``, unless None) with this Python;
    the results, and the exit code of the first failed build (0: none failed). Kernels in ``in_envs``
    are built in environments too (no need to say why there is no host variant)."""
    from ..build import remove_other_kind_variants

    results: list[BuildResult] = []
    failed = 0
    matrix_names = set(matrix.names())
    for manifest in manifests:
        for name in remove_other_kind_variants(manifest):
            kind = "pure Python" if manifest.noarch else "compiled"
            rep.info(
                f"{manifest.name}: removed build/{name}/: the kernel is {kind} now, and the loader would "
                "have picked that old build"
            )
        for variant in _host_selection(manifest, planned[manifest.root], host_names, rep, manifest.root in in_envs):
            if variant.name not in matrix_names and not variant.noarch:
                rep.info(f"note: {variant.name} is not in {matrix.path.name}; building it for local use")
            result = _build_one(manifest, variant, options, rep)
            results.append(result)
            if result.status == "failed":
                failed = failed or result.exit_code  # the first failure's (BuildError 6, ToolchainError 5, ...)
                if not args.keep_going:
                    break
        if failed and not args.keep_going:
            break
    return results, failed


def _build_one(manifest: Manifest, variant: Variant, options: BuildOptions, rep: Reporter) -> BuildResult:
    """Build one host variant with a progress line; a failure is printed and returned as a result."""
    from ..build import BuildResult, build_variant

    label = f"{manifest.name} {variant.name}"
    start = time.monotonic()
    try:
        with rep.task(label) as update:
            result = build_variant(manifest, variant, options, progress=update)
    except PybuildError as e:
        error(f"{label}: {e}")
        return BuildResult(
            manifest.name,
            variant.name,
            "failed",
            time.monotonic() - start,
            0,
            manifest.root / "build" / variant.name,
            str(e),
            e.exit_code,
        )
    if result.status == "up to date":
        rep.info(f"{label}: up to date ({result.seconds:.2f} s)")
    else:
        rep.info(f"{label}: built in {result.seconds:.1f} s -> {result.path}")
    return result


def _host_selection(
    manifest: Manifest, variants: list[Variant], host_names: set[str] | None, rep: Reporter, in_env: bool
) -> list[Variant]:
    """The host variants of ``manifest`` to build here; where there are none, says why (unless
    --variant/--all, or plain build with ``in_env``, sent them to environments)."""
    from ..host import host_variants, tvm_ffi_version

    if host_names is not None:
        return [v for v in variants if v.name in host_names]
    if variants or in_env:
        return variants
    if manifest.framework == "tvm-ffi" and tvm_ffi_version() is None:
        rep.info(
            f"{manifest.name}: no host variant to build (a [tvm-ffi] kernel, and this Python has no "
            "tvm-ffi: pip install 'apache-tvm-ffi>=0.1.9,<0.2')"
        )
        return []
    host = host_variants()
    same_backend = [v for v in host if v.backend in manifest.backends]
    if same_backend:  # the backend is here, the torch version is not: say which bound
        bounds = " and ".join(
            f'{k} = "{b[0]}.{b[1]}"'
            for k, b in (("minver", manifest.torch_minver), ("maxver", manifest.torch_maxver))
            if b
        )
        why = f"this machine's torch {same_backend[0].torch} is outside [torch] {bounds} of {manifest.path}"
    else:
        why = f"kernel backends {list(manifest.backends)}, host {[v.name for v in host]}"
    rep.info(f"{manifest.name}: no host variant to build ({why})")
    return []


def _summary(
    rep: Reporter,
    results: list[BuildResult],
    refusals: list[Refusal],
    env_wanted: list[tuple[Manifest, Variant]],
    json_mode: bool,
) -> None:
    """The variants refused (one line per reason) and the summary table of every build."""
    by_reason: dict[str, list[str]] = {}
    for refusal in refusals:  # one line per reason (e.g. every aarch64 variant on an x86_64 machine)
        by_reason.setdefault(refusal.reason, []).append(refusal.variant)
    for reason, names in by_reason.items():
        rep.info(f"not built: {', '.join(names)}: {reason}")
    refused = {r.variant for r in refusals}
    rows = [
        (r.kernel, r.variant, r.status, f"{r.seconds:.1f} s", human_size(r.size) if r.size else "-") for r in results
    ]
    rows += [(m.name, v.name, "not built (see above)", "-", "-") for m, v in env_wanted if v.name in refused]
    if rows or json_mode:
        rep.table("Build summary", ["kernel", "variant", "status", "time", "size"], rows)


def _within_reach(
    manifests: list[Manifest], planned: dict[Path, list[Variant]], matrix: Matrix, rep: Reporter
) -> list[tuple[Manifest, Variant]]:
    """Plain ``build``: for each compiled kernel without a host variant, the variants of this machine's
    torch that an environment builds here (e.g. the CUDA variant of a CUDA-only kernel where torch is
    a CPU build). Kernels with a host variant keep to it: an environment costs a torch of gigabytes
    and the device compiles, which ``--variant`` and ``--all`` take on when asked."""
    from ..envs import host_facts, index_config
    from ..host import torch_info
    from ..reach import env_variants

    wanted: list[tuple[Manifest, Variant]] = []
    orphans = [m for m in manifests if not m.noarch and not planned[m.root]]
    if not orphans:
        return wanted
    config, host, torch = index_config(), host_facts(), torch_info().major_minor
    for manifest in orphans:
        for variant, plan in env_variants(manifest, matrix.variants, torch, config, host):
            rep.info(
                f"{manifest.name}: this Python's torch builds none of its variants; building {variant.name} "
                f"in its own environment (torch from {plan.source})"
            )
            wanted.append((manifest, variant))
    return wanted


def _say_what_else(
    named: list[str], manifests: list[Manifest], planned: dict[Path, list[Variant]], matrix: Matrix, rep: Reporter
) -> None:
    """After a plain build: the variants of this torch release that an environment would build here
    for kernels that built host variants instead (e.g. their CUDA variant on a CPU torch), with the
    command that builds them."""
    from ..envs import host_facts, index_config
    from ..errors import PybuildError
    from ..host import torch_info
    from ..reach import env_variants

    built = [m for m in manifests if not m.noarch and planned[m.root]]
    if not built:
        return
    try:
        config, host, torch = index_config(), host_facts(), torch_info().major_minor
    except PybuildError:
        return
    kernels_of: dict[str, list[str]] = {}
    for manifest in built:
        here = {v.backend for v in planned[manifest.root]}
        for variant, _ in env_variants(manifest, matrix.variants, torch, config, host):
            if variant.backend not in here:
                kernels_of.setdefault(variant.name, []).append(manifest.name)
    for name, kernels in kernels_of.items():
        rep.info(
            f"not built by default: {name} of {', '.join(kernels)} (an environment builds it here: "
            f"python -m pybuild build {''.join(d + ' ' for d in named)}--variant {name})"
        )


def _nothing_to_build(manifests: list[Manifest], matrix: Matrix) -> None:
    """Nothing built and nothing to build: fail with the one command that builds something here."""
    from ..envs import host_facts, index_config
    from ..errors import ToolchainError
    from ..reach import next_command

    command = next_command(manifests, matrix.variants, index_config(), host_facts())
    raise ToolchainError(
        f"nothing built: no kernel named has a variant this machine builds (see the lines above); try `{command}`"
    )


def _env_selection(
    args: argparse.Namespace, matrix: Matrix, manifests: list[Manifest], planned: dict[Path, list[Variant]]
) -> tuple[list[tuple[Manifest, Variant]], set[str] | None]:
    """The (kernel, variant) pairs to build in per-variant environments, and the host variants to
    build here (None: all of them). A --variant this Python's torch builds stays a host build."""
    from ..variants import parse_variant_name

    if not args.all and not args.variant:
        return [], None
    host_names: set[str] = set()
    wanted: list[tuple[Manifest, Variant]] = []
    if args.all:
        for m in manifests:
            if m.noarch:  # pure Python: assembled here, for every backend
                host_names |= {v.name for v in planned[m.root]}
            else:
                wanted += [(m, v) for v in m.variants(matrix.variants)]
        return wanted, host_names
    offered_host = {v.name for vs in planned.values() for v in vs}
    for name in dict.fromkeys(args.variant):
        if name in offered_host:
            host_names.add(name)
            continue
        variant = parse_variant_name(name)
        kernels = [m for m in manifests if not m.noarch and variant in m.variants(matrix.variants)]
        if not kernels:
            choices = sorted({v.name for m in manifests for v in m.variants(matrix.variants)} | offered_host)
            raise UsageError(_not_a_variant(name, choices, matrix, manifests))
        # the kernel's own variant: a stable-ABI one carries the matrix torch it is built with
        wanted += [(m, next(v for v in m.variants(matrix.variants) if v == variant)) for m in kernels]
    return wanted, host_names


def _not_a_variant(name: str, choices: list[str], matrix: Matrix, manifests: list[Manifest]) -> str:
    """One line for a --variant the kernels named do not build: the closest names, and where all are."""
    import difflib

    close = difflib.get_close_matches(name, choices, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    where = (
        f"`python -m pybuild variants --kernel {manifests[0].root}` lists its {len(choices)}"
        if len(manifests) == 1
        else "`python -m pybuild variants --kernel DIR` lists each kernel's"
    )
    return (
        f"--variant {name}: not a variant of {matrix.path.name} for {', '.join(m.name for m in manifests)}; "
        f"{hint}{where}"
    )
