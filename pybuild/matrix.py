"""Build variants of the matrix beyond this Python's torch: each in its own environment
(:mod:`pybuild.envs`), several variants at once within the machine's cores and memory.

One worker per variant makes (or finds) the variant's environment, then builds every kernel
named for that variant with it. Variants no reachable index serves are not built; they are
reported with the reason, and so is every result, in one summary.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from .build import BuildOptions, BuildResult, build_variant
from .envs import Env, EnvPlan, Refusal, ensure_env, host_facts, index_config, plan_env, uv_bin
from .errors import PybuildError, ToolchainError
from .jobs import compile_jobs, mem_available_gib
from .manifest import Manifest
from .ui import TaskLine
from .variants import Variant


@dataclass(frozen=True)
class VariantJob:
    variant: Variant
    plan: EnvPlan
    manifests: tuple[Manifest, ...]


def parallel_plan(
    n_variants: int,
    parallel: int | None = None,
    cores: int | None = None,
    mem_gib: float | None = None,
    jobs: int | None = None,
) -> tuple[int, int]:
    """(variants built at once, compile jobs per build). The compile jobs of all builds together are
    ``jobs`` (the user's --jobs), else :func:`pybuild.jobs.compile_jobs` (MAX_JOBS, or one per core and
    per ``GIB_PER_JOB`` of available memory); they are split among the variants built at once
    (``parallel`` of them, if given)."""
    if jobs is None:
        jobs = compile_jobs(cores, mem_gib, read_memory=False)
    at_once = max(1, min(parallel or jobs, n_variants))
    return at_once, max(1, jobs // at_once)


def plan_jobs(wanted: Sequence[tuple[Manifest, Variant]]) -> tuple[list[VariantJob], list[Refusal]]:
    """Group (kernel, variant) pairs by variant and plan each variant's environment."""
    config, host = index_config(), host_facts()
    if wanted:
        uv_bin()  # found here, in the main thread, before any worker needs it
    by_variant: dict[Variant, list[Manifest]] = {}
    for manifest, variant in wanted:
        by_variant.setdefault(variant, []).append(manifest)
    jobs, refusals = [], []
    for variant, manifests in by_variant.items():
        plan = plan_env(variant, config, host)
        if isinstance(plan, Refusal):
            refusals.append(plan)
        else:
            jobs.append(VariantJob(variant, plan, tuple(manifests)))
    return jobs, refusals


NewTask = Callable[[str], TaskLine]
Notify = Callable[[str], None]


def _failed(manifest: Manifest, variant_name: str, seconds: float, e: PybuildError) -> BuildResult:
    """The result of a variant whose environment or build failed with ``e``."""
    return BuildResult(
        manifest.name,
        variant_name,
        "failed",
        seconds,
        0,
        manifest.root / "build" / variant_name,
        str(e),
        e.exit_code,
    )


def _job_env(job: VariantJob, new_task: NewTask, notify: Notify) -> Env:
    """The variant's environment, made (with progress) if it does not exist yet."""
    env_update = None
    start = time.monotonic()

    def env_progress(message: str) -> None:
        nonlocal env_update
        env_update = env_update or new_task(f"{job.variant.name}")
        env_update(message, None)

    try:
        env: Env = ensure_env(job.plan, job.variant, progress=env_progress)
    finally:
        if env_update is not None:
            env_update.done()  # made (or failed): the line below, or the error, says so
    if env.created:
        notify(
            f"{job.variant.name}: environment made in {time.monotonic() - start:.0f} s "
            f"(torch {env.toolchain.torch.version}) -> {env.path}"
        )
    return env


def _run_job(
    job: VariantJob, options: BuildOptions, new_task: NewTask, notify: Notify, keep_going: bool
) -> list[BuildResult]:
    results: list[BuildResult] = []
    start = time.monotonic()
    try:
        env = _job_env(job, new_task, notify)
    except PybuildError as e:
        notify(f"error: {job.variant.name}: {e}")
        return [_failed(m, job.variant.name, time.monotonic() - start, e) for m in job.manifests]
    for manifest in job.manifests:
        label = f"{manifest.name} {job.variant.name}"
        t0 = time.monotonic()
        update: TaskLine | None = None

        def progress(message: str, fraction: float | None, label: str = label) -> None:
            nonlocal update
            update = update or new_task(label)
            update(message, fraction)

        try:
            result = build_variant(manifest, job.variant, options, progress=progress, toolchain=env.toolchain)
        except PybuildError as e:
            _finish(update)
            notify(f"error: {label}: {e}")
            results.append(_failed(manifest, job.variant.name, time.monotonic() - t0, e))
            if not keep_going:
                break
            continue
        _finish(update)
        results.append(result)
        if result.status == "up to date":
            notify(f"{label}: up to date ({result.seconds:.2f} s)")
        else:
            notify(
                f"{label}: built in {result.seconds:.1f} s under torch {env.toolchain.torch.version} -> {result.path}"
            )
    return results


def _finish(line: TaskLine | None) -> None:
    """Take a finished build's progress line away (its result is printed as a line of its own)."""
    if line is not None:
        line.done()


def build_in_envs(
    jobs: Sequence[VariantJob],
    options: BuildOptions,
    new_task: NewTask,
    notify: Notify,
    parallel: int | None = None,
    keep_going: bool = True,
) -> list[BuildResult]:
    """Build every job, up to :func:`parallel_plan` variants at once; results in the jobs' order."""
    if not jobs:
        return []
    at_once, per_build = parallel_plan(len(jobs), parallel, mem_gib=mem_available_gib(), jobs=options.jobs)
    options = replace(options, jobs=per_build)
    if at_once > 1:
        noun = "variant" if len(jobs) == 1 else "variants"
        notify(f"building {len(jobs)} {noun}, {at_once} at a time, {options.jobs} compile job(s) each")
    with ThreadPoolExecutor(max_workers=at_once) as pool:
        futures = [pool.submit(_run_job, job, options, new_task, notify, keep_going) for job in jobs]
        return [r for f in futures for r in f.result()]


def refusal_error(refusals: Sequence[Refusal]) -> ToolchainError:
    first = refusals[0]
    more = f" (and {len(refusals) - 1} more variants)" if len(refusals) > 1 else ""
    return ToolchainError(f"{first.variant}: {first.reason}{more}")
