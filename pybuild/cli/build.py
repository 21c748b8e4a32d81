"""``python -m pybuild build``: build variants into ``<kernel>/build/<variant>/``, this machine's
variants here, and with --all or --variant the matrix's in per-variant environments."""

from __future__ import annotations

import argparse
import functools
from typing import TYPE_CHECKING

from ..ui import Reporter, error, human_size
from .common import add_kernel_dirs, add_output_flags, add_variants_flag, int_at_least, load_manifests, load_matrix

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..build import BuildOptions, BuildResult
    from ..envs import Refusal
    from ..manifest import Manifest
    from ..parallel import NewTask
    from ..selection import BuildSelection
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
        help="variants built at once, sharing the compile jobs: first those this Python's torch builds, "
        "then those built in environments (default: as many as compile jobs, one per core and per 3 GiB "
        "of free memory; 1: one after another)",
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
        help="parallel compile jobs of all builds at once together, split among them (default: MAX_JOBS, "
        "else one per core and per 3 GiB of free memory)",
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
    p.add_argument(
        "--cache",
        metavar="URL",
        help="the fleet's shared compiler cache, ccache's remote storage: redis://HOST:PORT, "
        "redis+unix:///PATH or http://HOST/PATH (env PYBUILD_SHARED_CACHE does the same); "
        "not used under --sandbox",
    )
    p.add_argument(
        "--cache-read-only",
        action="store_true",
        help="take hits from the shared cache, never write to it: for untrusted builds "
        "(env PYBUILD_SHARED_CACHE_READ_ONLY=1 does the same)",
    )
    add_variants_flag(p)
    add_output_flags(p)


def run(args: argparse.Namespace) -> int:
    from ..backends.cuda_archs import check_cuda_archs
    from ..build import BuildOptions
    from ..cache import check_usable, shared_cache
    from ..sandbox import bwrap
    from ..sandbox import default_on as default_sandbox
    from ..selection import check_request, left_to_environments, nothing_to_build, select_builds

    check_request(args.all, args.variant)
    rep = Reporter(quiet=args.quiet, json_mode=args.json)
    matrix = load_matrix(args)
    manifests = load_manifests(args.kernel_dirs, quiet=args.quiet)  # validate all before building
    archs = check_cuda_archs(args.cuda_archs, "--cuda-archs") if args.cuda_archs is not None else None
    sandbox = args.sandbox if args.sandbox is not None else default_sandbox()
    if sandbox:
        bwrap()  # a missing bubblewrap is named before any work
    cache = shared_cache(args.cache, read_only=args.cache_read_only)
    if cache is not None and sandbox:
        rep.warn(f"shared cache {cache.url} not used: a sandboxed build has no network and no ccache")
        cache = None
    if cache is not None:
        check_usable(cache)  # ccache and its protocol, named before any work
    options = BuildOptions(cuda_archs=archs, force=args.force, jobs=args.jobs, sandbox=sandbox, cache=cache)
    selection = select_builds(manifests, matrix, all_variants=args.all, names=args.variant, info=rep.info)
    results, failed = _build_here(args, rep, matrix, manifests, selection, options)
    if not results and not selection.jobs and not selection.refusals:
        raise nothing_to_build(manifests, matrix)
    if selection.jobs and not (failed and not args.keep_going):
        from ..matrix import build_in_envs

        with rep.tasks() as new_task:
            env_results = build_in_envs(
                selection.jobs,
                options,
                new_task,
                rep.info,
                parallel=args.parallel,
                keep_going=args.keep_going,
                on_error=error,
            )
        results += env_results
        failed = failed or next((r.exit_code for r in env_results if r.status == "failed"), 0)
    _summary(rep, results, selection.refusals, selection.env_wanted, args.json)
    if not args.all and not args.variant and not args.quiet and not args.json:
        for name, kernels in left_to_environments(manifests, selection.planned, matrix).items():
            rep.info(
                f"not built by default: {name} of {', '.join(kernels)} (an environment builds it here: "
                f"python -m pybuild build {''.join(d + ' ' for d in args.kernel_dirs)}--variant {name})"
            )
    return int(failed)


def _build_here(
    args: argparse.Namespace,
    rep: Reporter,
    matrix: Matrix,
    manifests: list[Manifest],
    selection: BuildSelection,
    options: BuildOptions,
) -> tuple[list[BuildResult], int]:
    """Build each kernel's host variants that ``selection`` builds here, with this Python, up to
    ``--parallel`` at once (as :func:`pybuild.matrix.build_in_envs` builds the others); the results
    in the selection's order, and the exit code of the first failed build (0: none failed)."""
    from ..build import remove_other_kind_variants
    from ..parallel import FirstErrors, build_at_once

    builds: list[tuple[Manifest, Variant]] = []
    matrix_names = set(matrix.names())
    for manifest in manifests:
        for name in remove_other_kind_variants(manifest):
            kind = "pure Python" if manifest.noarch else "compiled"
            rep.info(
                f"{manifest.name}: removed build/{name}/: the kernel is {kind} now, and the loader would "
                "have picked that old build"
            )
        for variant in selection.host_builds(manifest, rep.info):
            if variant.name not in matrix_names and not variant.noarch:
                rep.info(f"note: {variant.name} is not in {matrix.path.name}; building it for local use")
            builds.append((manifest, variant))
    if not builds:
        return [], 0
    report = FirstErrors(error, every=args.keep_going)
    with rep.tasks() as new_task:
        work = [functools.partial(_build_one, m, v, new_task=new_task, rep=rep, on_error=report) for m, v in builds]
        results = build_at_once(
            work, options, rep.info, parallel=args.parallel, keep_going=args.keep_going, noun="host variant"
        )
    # the first failure's (BuildError 6, ToolchainError 5, ...)
    failed = next((r.exit_code for r in results if r.status == "failed"), 0)
    return results, failed


def _build_one(
    manifest: Manifest,
    variant: Variant,
    options: BuildOptions,
    *,
    new_task: NewTask,
    rep: Reporter,
    on_error: Callable[[str], None],
) -> list[BuildResult]:
    """Build one host variant on a progress line of its own; a failure goes to ``on_error`` and is
    returned as a result."""
    from ..build import build_variant
    from ..parallel import build_with_progress

    return [build_with_progress(build_variant, manifest, variant, options, new_task, rep.info, on_error=on_error)]


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
