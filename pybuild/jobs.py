"""How many compile jobs a build runs at once: ``MAX_JOBS`` where set (as torch's cpp_extension and
upstream kernel-builder read it), else one per core this process may use and per :data:`GIB_PER_JOB`
of available memory, so that a large CUDA kernel (CUTLASS templates in nvcc's front end) does not
exhaust a small machine."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from .errors import UsageError

#: Memory one compile job may take at its peak (nvcc on a CUDA file with torch's headers).
GIB_PER_JOB = 3


def mem_available_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 2**20
    except (OSError, ValueError, IndexError):
        return None
    return None


def usable_cores() -> int | None:
    """The cores this process may run on (its affinity mask: what ``taskset`` or a container's cpuset
    left it), else the machine's count where the system has no affinity call."""
    if hasattr(os, "sched_getaffinity"):
        with contextlib.suppress(OSError):
            return len(os.sched_getaffinity(0))
    return os.cpu_count()


def max_jobs_env() -> int | None:
    """``MAX_JOBS`` as a positive number, None where unset; anything else is one line naming it."""
    raw = os.environ.get("MAX_JOBS", "").strip()
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
        raise UsageError(f"MAX_JOBS={raw!r}: expected a number of compile jobs of at least 1, e.g. MAX_JOBS=4")
    return int(raw)


def compile_jobs(cores: int | None = None, mem_gib: float | None = None, *, read_memory: bool = True) -> int:
    """``MAX_JOBS``, else at most one job per core and per :data:`GIB_PER_JOB` of available memory."""
    env = max_jobs_env()
    if env is not None:
        return env
    cores = cores or usable_cores() or 1
    if mem_gib is None and read_memory:
        mem_gib = mem_available_gib()
    by_mem = int(mem_gib // GIB_PER_JOB) if mem_gib is not None else cores
    return max(1, min(cores, by_mem))
