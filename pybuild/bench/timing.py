"""How a call is timed: CUDA graphs, stream launches, wall clock, and the device copies.

On CUDA a case rotates through enough input sets that together they exceed ``L2_MULTIPLE`` L2
caches (so each call reads from device memory); one CUDA graph holds one call per set, and its
time is the median over replays (device events) divided by the calls in the graph. Every graph is
captured from an emptied allocator cache, so where an implementation's outputs land does not
change from round to round. Plain calls from Python ("launch") add whatever the host needs per call.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

L2_MULTIPLE = 3  # input sets together exceed this many L2 caches
MAX_SETS = 4096
LARGE_COPY_BYTES = 1 << 30
DEFAULT_L2_BYTES = 64 << 20  # when the device does not report its L2 size


@dataclass
class Timing:
    ms: float
    gbps: float
    method: str  # "cuda-graph", "launch", "wall-clock"
    sets: int
    rounds_ms: list[float] = field(default_factory=list)  # every round's time; ms is their median

    def spread(self) -> float:
        """(slowest - fastest round) / median: how far apart the rounds of this measurement were."""
        return (max(self.rounds_ms) - min(self.rounds_ms)) / self.ms if len(self.rounds_ms) > 1 else 0.0


def median_ms(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def n_sets(device: str, bytes_per_call: int, l2_bytes: int) -> int:
    """Input sets to rotate through so that together they exceed L2_MULTIPLE x L2 (at least 2)."""
    if device != "cuda":
        return 2
    return max(2, min(MAX_SETS, math.ceil(L2_MULTIPLE * l2_bytes / max(1, bytes_per_call))))


def round_order(items: list, round_: int) -> list:
    """The order of the implementations in round ``round_``: as given in even rounds, reversed in
    odd ones, so that no implementation always runs right after the same one (a heavy baseline can
    warm or slow the device for whatever follows it)."""
    return list(items) if round_ % 2 == 0 else list(reversed(items))


def time_cuda_graph(fn: Callable[..., Any], arg_sets: Sequence[tuple[Any, ...]], reps: int) -> float:
    """Median ms per call: one graph with one call per arg set, replayed ``reps`` times."""
    import torch

    for args in arg_sets:  # warm-up outside the graph (compiles, allocates, loads modules)
        fn(*args)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    keep = []
    with torch.cuda.graph(graph):
        for args in arg_sets:
            keep.append(fn(*args))  # outputs stay alive: each call writes fresh memory
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for i in range(reps + 3):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        if i >= 3:
            samples.append(start.elapsed_time(end) / len(arg_sets))
    del graph, keep
    # Hand the graph's memory back to the driver: the next capture (another implementation, or the
    # next round) then starts from the same allocator state, and its outputs land where these did.
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return median_ms(samples)


def time_cuda_launch(fn: Callable[..., Any], arg_sets: Sequence[tuple[Any, ...]], reps: int) -> float:
    """Median ms per call issued from Python on the current stream (host overhead included): ``reps``
    samples of one call per arg set, after two warm-up samples."""
    return time_cuda_launches([("fn", fn)], arg_sets, reps)["fn"]


def time_cuda_launches(
    fns: Sequence[tuple[str, Callable[..., Any]]], arg_sets: Sequence[tuple[Any, ...]], reps: int
) -> dict[str, float]:
    """:func:`time_cuda_launch` of several implementations with their samples interleaved (the
    order reversed every other sample, :func:`round_order`), so that a slow spell of the host falls
    on all of them alike: median ms per call of each."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples: dict[str, list[float]] = {name: [] for name, _ in fns}
    for i in range(reps + 2):
        for name, fn in round_order(list(fns), i):
            torch.cuda.synchronize()
            start.record()
            for args in arg_sets:
                fn(*args)
            end.record()
            end.synchronize()
            if i >= 2:
                samples[name].append(start.elapsed_time(end) / len(arg_sets))
    return {name: median_ms(v) for name, v in samples.items()}


def time_wall(fn: Callable[..., Any], arg_sets: Sequence[tuple[Any, ...]], reps: int) -> float:
    """Median wall-clock ms per call (the CPU timing)."""
    samples = []
    for i in range(reps + 1):
        for args in arg_sets:
            t0 = time.perf_counter()
            fn(*args)
            if i >= 1:
                samples.append((time.perf_counter() - t0) * 1e3)
    return median_ms(samples)


def _copy_fn(src: Any, dst: Any) -> Any:
    return dst.copy_(src)


def time_copy(device: str, copy_sets: Sequence[tuple[Any, ...]], reps: int) -> tuple[float, str]:
    """The faster of graph-replayed and stream-launched copies (in a CUDA graph the driver may run a
    copy on a copy engine, measured here near 2.7 TB/s on an H200 against 4.2 TB/s on the SMs)."""
    if device != "cuda":
        return time_wall(_copy_fn, copy_sets, reps), "wall-clock"
    graph = time_cuda_graph(_copy_fn, copy_sets, reps)
    launch = time_cuda_launch(_copy_fn, copy_sets, reps)
    return (graph, "cuda-graph") if graph <= launch else (launch, "launch")


def copy_same(device: str, nbytes: int, sets: int, rounds: int, reps: int) -> list[tuple[float, str]]:
    """``rounds`` timings of a copy moving ``nbytes`` (half read, half written), over ``sets`` pairs."""
    import torch

    half = max(1, nbytes // 2)
    copy_sets = [
        (
            torch.empty(half, dtype=torch.uint8, device=device).random_(),
            torch.empty(half, dtype=torch.uint8, device=device),
        )
        for _ in range(sets)
    ]
    timings = [time_copy(device, copy_sets, reps) for _ in range(rounds)]
    del copy_sets
    if device == "cuda":
        torch.cuda.empty_cache()
    return timings


def warm_up_cuda(seconds: float, sets: Sequence[tuple[Any, Any]] | None = None) -> None:
    """Copy ``(src, dst)`` pairs (by default one pair of 1 GiB) for ``seconds``: an idle GPU runs
    at low clocks for its first milliseconds."""
    import torch

    if sets is None:
        src = torch.empty(LARGE_COPY_BYTES, dtype=torch.uint8, device="cuda")
        sets = [(src, torch.empty_like(src))]
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        for src, dst in sets:
            dst.copy_(src)
        torch.cuda.synchronize()


def copy_large_bytes(device: str) -> int:
    """The size of the large copy: 1 GiB on CUDA, an eighth of that on a CPU."""
    return LARGE_COPY_BYTES if device == "cuda" else LARGE_COPY_BYTES // 8


def measure_large_copy(device: str, reps: int, warm_up_s: float = 0.0) -> Timing:
    """One large copy (``dst.copy_(src)``, 1 GiB on CUDA); ``warm_up_s`` of copies first."""
    import torch

    n = copy_large_bytes(device)
    sets = [
        (torch.empty(n, dtype=torch.uint8, device=device).random_(), torch.empty(n, dtype=torch.uint8, device=device))
        for _ in range(2)
    ]
    if device == "cuda" and warm_up_s > 0:
        warm_up_cuda(warm_up_s, sets)
    ms, method = time_copy(device, sets, reps)
    del sets
    return Timing(ms=ms, gbps=2 * n / (ms * 1e-3) / 1e9, method=method, sets=2, rounds_ms=[ms])
