"""Several builds at once, within the machine's cores and memory: the one scheduler of ``build``,
for the variants this Python's torch builds (``pybuild.cli.build``) and for those built in their
own environments (:mod:`pybuild.matrix`) alike.

Up to :func:`parallel_plan` builds run at once, each in a thread of its own with its own progress
line, and the compile jobs of all of them together are one budget (``--jobs``, else
:func:`pybuild.jobs.compile_jobs`), split among the builds running at once. Results come back in the
order the builds were given, whichever finished first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from .build import BuildOptions, BuildResult, Progress
from .errors import PybuildError
from .jobs import compile_jobs, mem_available_gib
from .manifest import Manifest
from .ui import TaskLine
from .variants import Variant

NewTask = Callable[[str], TaskLine]
Notify = Callable[[str], None]
#: One unit of work: given the options (with its share of the compile jobs), its builds' results.
Work = Callable[[BuildOptions], list[BuildResult]]
#: ``build_variant`` with a toolchain (or this Python's) bound: (manifest, variant, options, progress).
BuildFn = Callable[[Manifest, Variant, BuildOptions, Progress], BuildResult]


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


def build_at_once(
    work: Sequence[Work],
    options: BuildOptions,
    notify: Notify,
    *,
    parallel: int | None = None,
    keep_going: bool = True,
    noun: str = "variant",
) -> list[BuildResult]:
    """Run every unit of ``work``, up to :func:`parallel_plan` of them at once, each with its share of
    the compile jobs; their results in ``work``'s order. Without ``keep_going``, once a unit has a
    failed result no unit that has not started yet starts (those running finish); with one at a time
    that is the serial loop that stops at the first failure."""
    if not work:
        return []
    at_once, per_build = parallel_plan(len(work), parallel, mem_gib=mem_available_gib(), jobs=options.jobs)
    options = replace(options, jobs=per_build)
    if at_once > 1:
        nouns = noun if len(work) == 1 else f"{noun}s"
        notify(f"building {len(work)} {nouns}, {at_once} at a time, {per_build} compile job(s) each")
    stop = threading.Event()

    def run(unit: Work) -> list[BuildResult]:
        if stop.is_set():
            return []
        results = unit(options)
        if not keep_going and any(r.status == "failed" for r in results):
            stop.set()
        return results

    with ThreadPoolExecutor(max_workers=at_once) as pool:
        futures = [pool.submit(run, unit) for unit in work]
        return [r for f in futures for r in f.result()]


class FirstErrors:
    """An ``on_error`` for builds run at once: passes every failure's one line to ``say`` with
    ``every`` (``--keep-going``), else only the first one's. Without it, :func:`build_at_once` starts
    no build after a failure, but builds already running may fail too, often on the same bad input (a
    kernel file every variant reads): the run still says one thing, and the results list each failed
    build."""

    def __init__(self, say: Notify, every: bool) -> None:
        self.say = say
        self.every = every
        self.said = False
        self.lock = threading.Lock()

    def __call__(self, message: str) -> None:
        with self.lock:
            if self.said and not self.every:
                return
            self.said = True
        self.say(message)


def failed_result(manifest: Manifest, variant_name: str, seconds: float, e: PybuildError) -> BuildResult:
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


def build_with_progress(
    build: BuildFn,
    manifest: Manifest,
    variant: Variant,
    options: BuildOptions,
    new_task: NewTask,
    notify: Notify,
    on_error: Notify,
    under: str = "",
) -> BuildResult:
    """Build one variant of one kernel with ``build``, on a progress line of its own (made at the first
    progress, taken away when the build is over); the outcome is one line: ``notify``'s for a build or
    an up-to-date one (``under`` names the toolchain, if anything), ``on_error``'s for a failure, which
    is returned as a failed result."""
    label = f"{manifest.name} {variant.name}"
    start = time.monotonic()
    line: TaskLine | None = None

    def progress(message: str, fraction: float | None) -> None:
        nonlocal line
        line = line or new_task(label)
        line(message, fraction)

    try:
        result = build(manifest, variant, options, progress)
    except PybuildError as e:
        _finish(line)
        on_error(f"{label}: {e}")
        return failed_result(manifest, variant.name, time.monotonic() - start, e)
    _finish(line)
    if result.status == "up to date":
        notify(f"{label}: up to date ({result.seconds:.2f} s)")
    else:
        notify(f"{label}: built in {result.seconds:.1f} s{under} -> {result.path}")
    return result


def _finish(line: TaskLine | None) -> None:
    """Take a finished build's progress line away (its result is printed as a line of its own)."""
    if line is not None:
        line.done()
