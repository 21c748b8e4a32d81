"""Build variants of the matrix beyond this Python's torch: each in its own environment
(:mod:`pybuild.envs`), several variants at once within the machine's cores and memory.

One worker per variant makes (or finds) the variant's environment, then builds every kernel
named for that variant with it. Variants no reachable index serves are not built; they are
reported with the reason, and so is every result, in one summary.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass

from .build import BuildOptions, BuildResult, build_variant
from .envs import Env, EnvPlan, Refusal, ensure_env, host_facts, index_config, plan_env, uv_bin
from .errors import PybuildError, ToolchainError
from .manifest import Manifest
from .parallel import NewTask, Notify, build_at_once, build_with_progress, failed_result
from .variants import Variant


@dataclass(frozen=True)
class VariantJob:
    variant: Variant
    plan: EnvPlan
    manifests: tuple[Manifest, ...]


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
    job: VariantJob, options: BuildOptions, new_task: NewTask, notify: Notify, keep_going: bool, on_error: Notify
) -> list[BuildResult]:
    results: list[BuildResult] = []
    start = time.monotonic()
    try:
        env = _job_env(job, new_task, notify)
    except PybuildError as e:
        on_error(f"{job.variant.name}: {e}")
        return [failed_result(m, job.variant.name, time.monotonic() - start, e) for m in job.manifests]
    build = functools.partial(build_variant, toolchain=env.toolchain)
    for manifest in job.manifests:
        result = build_with_progress(
            build,
            manifest,
            job.variant,
            options,
            new_task,
            notify,
            on_error=on_error,
            under=f" under torch {env.toolchain.torch.version}",
        )
        results.append(result)
        if result.status == "failed" and not keep_going:
            break
    return results


def build_in_envs(
    jobs: Sequence[VariantJob],
    options: BuildOptions,
    new_task: NewTask,
    notify: Notify,
    parallel: int | None = None,
    keep_going: bool = True,
    on_error: Notify | None = None,
) -> list[BuildResult]:
    """Build every job, up to :func:`pybuild.parallel.parallel_plan` variants at once (without
    ``keep_going``, a failure stops the kernels left in its variant, not the other variants); results
    in the jobs' order. A failure's one line goes to ``on_error`` (default: ``notify``, prefixed
    "error: "), which a caller points at standard error so that ``-q`` and ``--json`` keep it."""
    report = on_error or (lambda message: notify(f"error: {message}"))
    work = [
        functools.partial(_run_job, job, new_task=new_task, notify=notify, keep_going=keep_going, on_error=report)
        for job in jobs
    ]
    return build_at_once(work, options, notify, parallel=parallel)


def refusal_error(refusals: Sequence[Refusal]) -> ToolchainError:
    first = refusals[0]
    more = f" (and {len(refusals) - 1} more variants)" if len(refusals) > 1 else ""
    return ToolchainError(f"{first.variant}: {first.reason}{more}")
