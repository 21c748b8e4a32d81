"""Benchmark a kernel against torch eager, ``torch.compile`` and a device copy, in one run.

A kernel's cases live beside the farm, in ``benchmarks/<python_name>.py``: a module with
``cases(kernel, device, quick) -> list[Case]`` (``kernel`` is the loaded package). This module
times them and writes JSON and a plot.

Timing on CUDA: every case gets enough input sets that together they exceed 3x the L2 cache, so
each call reads from device memory; one CUDA graph holds one call per set (so host-side launch
costs stay out), and a round's time is the median over replays (device events) divided by the
calls in the graph. Every implementation is timed in ROUNDS interleaved rounds, odd rounds in
reverse order (so no implementation always runs right after the same one), and reports the median
round (the first round of a case ran 7-15% faster on an H200 for
whichever implementation came first, so the best round would favour the order); the spread of the
rounds is kept, and a
target missed by less than that spread is reported as a tie, not as met. Every graph is captured
from an emptied allocator cache, so where an implementation's outputs land does not change from
round to round (on an H200, repeated captures put them at the same addresses). Each implementation
is also timed as plain stream launches ("launch"), which adds whatever the host needs per call.
Bandwidth = bytes a call must move (inputs read once, outputs written once) / time. Copy
baselines: ``dst.copy_(src)`` moving the same bytes as one call, and one large (1 GiB) copy. On CPU
the same cases run with wall-clock medians.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from .errors import UsageError

SCHEMA = 2
L2_MULTIPLE = 3  # input sets together exceed this many L2 caches
MAX_SETS = 4096
LARGE_COPY_BYTES = 1 << 30
DEFAULT_L2_BYTES = 64 << 20  # when the device does not report its L2 size
ROUNDS = 5  # interleaved timing rounds per case on CUDA; each implementation reports its median round


@dataclass(frozen=True)
class Target:
    """``ours / baseline >= ratio`` (``strict``: ``>``); baseline is eager, compile, copy_same or copy_large."""

    baseline: str
    ratio: float
    strict: bool = False

    def describe(self) -> str:
        return f"ours {'>' if self.strict else '>='} {self.ratio:g} x {self.baseline}"


@dataclass
class Case:
    """One benchmarked call. ``make(seed)`` returns fresh arguments for ``ours``/``eager``."""

    kernel: str
    op: str
    label: str  # shape, e.g. "1080x1920"
    dtype: str
    bytes: int  # fewest bytes one call moves: inputs read once + outputs written once
    make: Callable[[int], tuple[Any, ...]]
    ours: Callable[..., Any]
    eager: Callable[..., Any]
    targets: tuple[Target, ...] = ()
    # Other torch formulations to time too, eager as "<name>" and compiled as "<name>-compile".
    extra: dict[str, Callable[..., Any]] = field(default_factory=dict)
    # Other callables timed as given under their own names (e.g. a differently compiled baseline).
    extra_timed: dict[str, Callable[..., Any]] = field(default_factory=dict)
    exact: bool = False  # outputs must equal eager's exactly (else allclose with atol/rtol)
    atol: float = 1e-2
    rtol: float = 1.6e-2
    panel: str = ""  # plot panel; default "<kernel> <op> <dtype>"


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


@dataclass
class CaseResult:
    kernel: str
    op: str
    label: str
    dtype: str
    bytes: int
    panel: str
    check: str
    timings: dict[str, Timing] = field(default_factory=dict)
    target_specs: list[Target] = field(default_factory=list)
    ratios: dict[str, float] = field(default_factory=dict)
    targets: list[dict[str, Any]] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Timing


def _median_ms(samples: Sequence[float]) -> float:
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


def time_cuda_graph(fn: Callable[..., Any], arg_sets: Sequence[tuple[Any, ...]], reps: int, *, pool: Any = None,
                    release: bool = True, out_ptrs: list[int] | None = None) -> float:
    """Median ms per call: one graph with one call per arg set, replayed ``reps`` times.

    ``pool`` captures into a shared graph memory pool, ``release=False`` keeps the allocator's cache
    afterwards, and ``out_ptrs`` receives the outputs' addresses (for benchmarks/explore/)."""
    import torch

    for args in arg_sets:  # warm-up outside the graph (compiles, allocates, loads modules)
        fn(*args)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    keep = []
    with torch.cuda.graph(graph, pool=pool):
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
    if out_ptrs is not None:
        out_ptrs.extend(k.data_ptr() for k in keep)
    del graph, keep
    # Hand the graph's memory back to the driver: the next capture (another implementation, or the
    # next round) then starts from the same allocator state, and its outputs land where these did.
    torch.cuda.synchronize()
    if release:
        torch.cuda.empty_cache()
    return _median_ms(samples)


def time_cuda_launch(fn: Callable[..., Any], arg_sets: Sequence[tuple[Any, ...]], reps: int) -> float:
    """Median ms per call issued from Python on the current stream (host overhead included)."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for i in range(reps + 2):
        torch.cuda.synchronize()
        start.record()
        for args in arg_sets:
            fn(*args)
        end.record()
        end.synchronize()
        if i >= 2:
            samples.append(start.elapsed_time(end) / len(arg_sets))
    return _median_ms(samples)


def time_wall(fn: Callable[..., Any], arg_sets: Sequence[tuple[Any, ...]], reps: int) -> float:
    samples = []
    for i in range(reps + 1):
        for args in arg_sets:
            t0 = time.perf_counter()
            fn(*args)
            if i >= 1:
                samples.append((time.perf_counter() - t0) * 1e3)
    return _median_ms(samples)


# --------------------------------------------------------------------------------------------
# Environment


def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def environment(device: str) -> dict[str, Any]:
    import torch

    env: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch-cuda": torch.version.cuda,
        "platform": platform.platform(),
    }
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    nvcc = _run(["nvcc", "--version"]).splitlines()
    env["nvcc"] = nvcc[-1] if nvcc else None
    if device == "cuda":
        p = torch.cuda.get_device_properties(0)
        env["device"] = {
            "name": p.name,
            "capability": f"{p.major}.{p.minor}",
            "sms": p.multi_processor_count,
            "l2-bytes": getattr(p, "L2_cache_size", 0),
            "memory-bytes": p.total_memory,
        }
        env["driver"] = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]) or None
    else:
        env["device"] = {"name": platform.processor() or platform.machine(), "threads": torch.get_num_threads()}
    root = Path(__file__).resolve().parent.parent
    commit = _run(["git", "-C", str(root), "rev-parse", "HEAD"])
    if os.environ.get("PYBUILD_SOURCE_COMMIT"):  # a copy of the tree shipped elsewhere: its caller knows best
        env["git"] = os.environ["PYBUILD_SOURCE_COMMIT"]
    elif len(commit) == 40:
        dirty = bool(_run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"]))
        env["git"] = commit + ("-dirty" if dirty else "")
    else:
        env["git"] = None
    return env


# --------------------------------------------------------------------------------------------
# Running cases


def load_cases_module(farm_root: Path, python_name: str) -> ModuleType:
    path = farm_root / "benchmarks" / f"{python_name}.py"
    if not path.is_file():
        msg = f"{path}: no benchmarks for kernel {python_name}; add it with a cases(kernel, device, quick) function"
        raise UsageError(msg)
    spec = importlib.util.spec_from_file_location(f"_pybuild_bench_{python_name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the benchmark file is the kernel author's code: name it and the error
        where = f" line {e.lineno}" if isinstance(e, SyntaxError) and e.lineno else ""
        raise UsageError(f"{path}{where}: cannot be loaded ({type(e).__name__}: {e}); fix the benchmark file") from None
    if not callable(getattr(module, "cases", None)):
        raise UsageError(f"{path}: defines no cases(kernel, device, quick) function; add one that returns the cases")
    return module


def _cases_of(module: ModuleType, kernel: Any, device: str, quick: bool) -> list[Case]:
    """``module.cases(...)``, checked: the benchmark file is the kernel author's code, so its failure
    names the file and the error instead of surfacing as a traceback from the bench loop."""
    path = getattr(module, "__file__", module.__name__)
    try:
        cases = list(module.cases(kernel, device, quick))
    except Exception as e:
        raise UsageError(f"{path}: cases() failed ({type(e).__name__}: {e}); fix the benchmark file") from e
    bad = [c for c in cases if not isinstance(c, Case)]
    if bad:
        raise UsageError(f"{path}: cases() must return pybuild.bench.Case objects; got {bad[0]!r}")
    return cases


def _check(case: Case, ours: Any, ref: Any) -> str:
    import torch

    if case.exact:
        return "exact" if torch.equal(ours, ref) else "MISMATCH"
    diff = (ours.float() - ref.float()).abs()
    bad = ~(diff <= case.atol + case.rtol * ref.float().abs())
    return f"max |diff| {diff.max().item():.3g}" + (" MISMATCH" if bad.any() else "")


def _compile(fn: Callable[..., Any]) -> Callable[..., Any]:
    import torch

    return torch.compile(fn, dynamic=False, fullgraph=True)


def run_case(case: Case, device: str, l2_bytes: int, compile_: bool, reps: int,
             copy_large: Timing | None, log: Callable[[str], None]) -> CaseResult:
    import torch

    sets = n_sets(device, case.bytes, l2_bytes)
    arg_sets = [case.make(seed) for seed in range(sets)]
    result = CaseResult(case.kernel, case.op, case.label, case.dtype, case.bytes,
                        case.panel or f"{case.kernel} {case.op} {case.dtype}", check="")
    impls: dict[str, Callable[..., Any]] = {"ours": case.ours, "eager": case.eager}
    if compile_:
        impls["compile"] = _compile(case.eager)
    for name, fn in case.extra.items():
        impls[name] = fn
        if compile_:
            impls[f"{name}-compile"] = _compile(fn)
    if compile_:
        impls.update(case.extra_timed)
    result.target_specs = list(case.targets) if device == "cuda" else []  # the targets are GPU targets
    result.check = _check(case, case.ours(*arg_sets[0]), case.eager(*arg_sets[0]))

    rounds: dict[str, tuple[list[float], str, int]] = {}

    def record(name: str, ms: float, method: str, n: int) -> None:
        times, _, _ = rounds.setdefault(name, ([], method, n))
        times.append(ms)
        rounds[name] = (times, method, n)

    # On CUDA every implementation is timed in ROUNDS interleaved rounds and reports its median: a
    # passing clock or memory-placement hiccup then hits no implementation alone. Odd rounds run
    # the implementations in reverse order.
    for round_ in range(ROUNDS if device == "cuda" else 1):
        for name, fn in round_order(list(impls.items()), round_):
            if device != "cuda":
                record(name, time_wall(fn, arg_sets, reps), "wall-clock", sets)
                continue
            try:
                record(name, time_cuda_graph(fn, arg_sets, reps), "cuda-graph", sets)
            except Exception as e:  # noqa: BLE001 - an implementation that cannot be captured is timed by launches
                log(f"  {case.op} {case.label}: {name} not capturable in a CUDA graph ({type(e).__name__}); "
                    "timing stream launches")
                torch.cuda.synchronize()
                record(name, time_cuda_launch(fn, arg_sets, reps), "launch", sets)
            if round_ == 0:
                record(f"{name}-launch", time_cuda_launch(fn, arg_sets, max(3, reps // 4)), "launch", sets)
    del arg_sets
    # A copy moving the same bytes as one call (bytes // 2 read + bytes // 2 written).
    half = max(1, case.bytes // 2)
    copy_sets = [(torch.empty(half, dtype=torch.uint8, device=device).random_(),
                  torch.empty(half, dtype=torch.uint8, device=device)) for _ in range(sets)]
    for _ in range(ROUNDS if device == "cuda" else 1):
        ms, method = time_copy(device, copy_sets, reps)
        record("copy_same", ms, method, sets)
    del copy_sets
    if device == "cuda":
        torch.cuda.empty_cache()
    for name, (times, method, n) in rounds.items():
        ms = _median_ms(times)
        result.timings[name] = Timing(ms=ms, gbps=case.bytes / (ms * 1e-3) / 1e9, method=method, sets=n,
                                      rounds_ms=list(times))
    finalize(result, copy_large)
    return result


def finalize(result: CaseResult, copy_large: Timing | None) -> None:
    """Ratios of ours to every baseline, and the targets with their verdicts, against ``copy_large``.

    Verdicts: "met"; "tie" when missed by less than the round-to-round spread of ours or of the
    baseline in this run (the two cannot be told apart); "beyond copy" when missed by more and the
    target asks for more GB/s than any copy reached in this run; else "missed".
    """
    if copy_large is not None:
        result.timings["copy_large"] = copy_large
    timings = result.timings
    ours = timings["ours"]
    result.ratios = {name: ours.gbps / t.gbps for name, t in timings.items()
                     if name != "ours" and not name.endswith("-launch")}
    copy_best = max((timings[n].gbps for n in ("copy_large", "copy_same") if n in timings), default=None)
    result.targets = []
    for target in result.target_specs:
        ratio = result.ratios.get(target.baseline)
        met = ratio is not None and (ratio > target.ratio if target.strict else ratio >= target.ratio)
        entry: dict[str, Any] = {"target": target.describe(), "baseline": target.baseline, "ratio": ratio,
                                 "threshold": target.ratio, "met": met}
        if ratio is None:
            entry["verdict"] = "missed"
        else:
            base = timings[target.baseline]
            spread = max(ours.spread(), base.spread())
            needed = target.ratio * base.gbps
            entry["spread"] = spread
            entry["needed_gbps"] = needed
            if met:
                entry["verdict"] = "met"
            elif ratio >= target.ratio * (1.0 - spread):
                entry["verdict"] = "tie"
            elif copy_best is not None and target.baseline not in ("copy_large", "copy_same") and needed > copy_best:
                entry["verdict"] = "beyond copy"
            else:
                entry["verdict"] = "missed"
        result.targets.append(entry)


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


def measure_large_copy(device: str, reps: int, warm_up_s: float = 0.0) -> Timing:
    """One large copy (``dst.copy_(src)``, 1 GiB on CUDA); ``warm_up_s`` of copies first."""
    import torch

    n = LARGE_COPY_BYTES if device == "cuda" else LARGE_COPY_BYTES // 8
    sets = [(torch.empty(n, dtype=torch.uint8, device=device).random_(), torch.empty(n, dtype=torch.uint8, device=device))
            for _ in range(2)]
    if device == "cuda" and warm_up_s > 0:
        warm_up_cuda(warm_up_s, sets)
    ms, method = time_copy(device, sets, reps)
    moved = 2 * n
    del sets
    return Timing(ms=ms, gbps=moved / (ms * 1e-3) / 1e9, method=method, sets=2, rounds_ms=[ms])


def run(kernels: Sequence[tuple[str, ModuleType, ModuleType]], device: str, quick: bool, compile_: bool,
        command: str, log: Callable[[str], None],
        on_case: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Benchmark ``(name, loaded kernel package, cases module)`` triples; returns the JSON document.

    ``on_case`` gets the document so far after every case (to save partial results)."""
    import torch

    if device == "cuda":  # one static compile per shape, never a silent fallback to eager
        for knob in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                     "accumulated_recompile_limit"):
            if hasattr(torch._dynamo.config, knob):
                setattr(torch._dynamo.config, knob, 4096)
    env = environment(device)
    l2 = (env["device"].get("l2-bytes") or DEFAULT_L2_BYTES) if device == "cuda" else 0
    reps = 10 if quick else 30
    log(f"device {env['device']['name']}; torch {env['torch']}; warming up and measuring the large copy")
    copy_first = measure_large_copy(device, reps, warm_up_s=2.0)
    copy_large = copy_first
    log(f"large copy: {copy_large.gbps:.0f} GB/s")
    results: list[CaseResult] = []
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "command": command,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "environment": env,
        "method": {
            "device": device,
            "timing": f"CUDA graph of one call per input set, median of replays (device events) / calls; "
                      f"median of {ROUNDS} interleaved rounds, odd rounds in reverse order"
                      if device == "cuda" else "median wall-clock per call",
            "verdicts": "met; tie (missed by less than the round-to-round spread of ours or the baseline); "
                        "beyond copy (missed by more, and asks for more GB/s than any copy reached in the run); "
                        "missed",
            "launch-timing": "stream launches from Python, device events, median" if device == "cuda" else None,
            "input-sets": f"enough to exceed {L2_MULTIPLE}x L2 together (min 2)" if device == "cuda" else "2",
            "repetitions": reps,
            "bytes": "inputs read once + outputs written once, per call",
            "copy_same": "dst.copy_(src) moving the same bytes as one call; the faster of graph replays and "
                         "stream launches",
            "copy_large": f"dst.copy_(src) of {copy_large_bytes(device)} bytes (read + written counted), after a "
                          "2 s warm-up and again after all cases; the better run",
            "compile": "torch.compile(eager, dynamic=False, fullgraph=True), default mode" if compile_ else None,
        },
        "copy_large": asdict(copy_large),
        "copy_large_runs": [asdict(copy_first)],
        "results": [],
    }
    for name, kernel, module in kernels:
        cases = _cases_of(module, kernel, device, quick)
        for case in cases:
            t0 = time.monotonic()
            r = run_case(case, device, l2, compile_, reps, copy_large, log)
            results.append(r)
            parts = [f"{k} {v.gbps:.0f}" for k, v in r.timings.items() if not k.endswith("-launch")]
            missed = [f"{t['target']} ({t['verdict']})" for t in r.targets if not t["met"]]
            log(f"{name} {case.op} {case.label} {case.dtype}: GB/s " + ", ".join(parts)
                + f"; {r.check}; {time.monotonic() - t0:.1f} s" + (f"; NOT MET {missed}" if missed else ""))
            doc["results"] = [_result_dict(x) for x in results]
            if on_case is not None:
                on_case(doc)
    # The large copy again, after everything: the ceiling is the better of the two runs.
    copy_last = measure_large_copy(device, reps)
    doc["copy_large_runs"].append(asdict(copy_last))
    copy_large = max(copy_first, copy_last, key=lambda t: t.gbps)
    log(f"large copy again: {copy_last.gbps:.0f} GB/s; ratios use {copy_large.gbps:.0f} GB/s")
    doc["copy_large"] = asdict(copy_large)
    for r in results:
        finalize(r, copy_large)
    doc["results"] = [_result_dict(x) for x in results]
    return doc


def _result_dict(r: CaseResult) -> dict[str, Any]:
    d = asdict(r)
    d.pop("target_specs")
    return d


def copy_large_bytes(device: str) -> int:
    return LARGE_COPY_BYTES if device == "cuda" else LARGE_COPY_BYTES // 8


# --------------------------------------------------------------------------------------------
# Output


def summary_rows(doc: dict[str, Any]) -> list[tuple[str, ...]]:
    rows = []
    for r in doc["results"]:
        t = r["timings"]

        def g(name: str) -> str:
            return f"{t[name]['gbps']:.0f}" if name in t else "-"

        ratios = r["ratios"]
        rows.append((
            f"{r['kernel']} {r['op']}", r["label"], r["dtype"], f"{t['ours']['ms'] * 1e3:.1f}", g("ours"), g("eager"),
            g("compile"), g("copy_same"),
            f"{ratios.get('copy_same', 0):.2f}", f"{ratios.get('copy_large', 0):.2f}",
            f"{ratios['compile']:.2f}" if "compile" in ratios else "-",
            " ".join(f"{k.removesuffix('-compile')} {v:.2f}" for k, v in ratios.items()
                     if k.endswith("-compile") and not k.endswith("-launch")) or "-",
            _targets_cell(r["targets"]),
        ))
    return rows


def _targets_cell(targets: list[dict[str, Any]]) -> str:
    if not targets:
        return "-"
    if all(t["met"] for t in targets):
        return "yes"
    return ", ".join(f"{t['verdict']}: {t['target']}" for t in targets if not t["met"])


SUMMARY_COLUMNS = ("kernel op", "shape", "dtype", "ours µs", "ours GB/s", "eager", "compile", "copy same",
                   "÷copy same", "÷copy large", "÷compile", "÷other compile", "targets met")


def plot(doc: dict[str, Any], path: Path) -> bool:
    """GB/s per case (ordered by bytes moved), one panel per (kernel, op, dtype). False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    panels: dict[str, list[dict[str, Any]]] = {}
    for r in doc["results"]:
        panels.setdefault(r["panel"], []).append(r)
    n = len(panels)
    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.8 * rows), squeeze=False)
    styles = {"ours": ("C3", "o", "-"), "eager": ("C0", "s", "--"), "compile": ("C2", "^", "--"),
              "copy_same": ("0.4", "x", ":")}
    large = doc["copy_large"]["gbps"]
    for ax, (title, rs) in zip(axes.flat, panels.items()):
        rs = sorted(rs, key=lambda r: r["bytes"])
        xs = list(range(len(rs)))
        for name, (color, marker, ls) in styles.items():
            ys = [r["timings"][name]["gbps"] if name in r["timings"] else float("nan") for r in rs]
            label = "copy (same bytes)" if name == "copy_same" else name
            ax.plot(xs, ys, color=color, marker=marker, linestyle=ls, label=label)
        extra = sorted({k for r in rs for k in r["timings"] if k.endswith("-compile")})
        for i, name in enumerate(extra):
            ys = [r["timings"][name]["gbps"] if name in r["timings"] else float("nan") for r in rs]
            ax.plot(xs, ys, color=f"C{4 + i}", marker="v", linestyle="-.", linewidth=0.9, label=name)
        ax.axhline(large, color="0.2", linewidth=0.8, label="copy (1 GiB)")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("shape (MB moved per call)")
        ax.set_ylabel("GB/s")
        ax.set_ylim(bottom=0)
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{r['label']}\n({r['bytes'] / 1e6:.3g} MB)" for r in rs], rotation=30, fontsize=7)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    for ax in list(axes.flat)[:n]:
        ax.legend(fontsize=7)
    env = doc["environment"]
    fig.suptitle(f"{env['device']['name']} · torch {env['torch']} · {doc['method']['timing']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_outputs(doc: dict[str, Any], out_dir: Path, name: str, with_plot: bool = True) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / f"{name}.json"
    tmp = json_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(json_path)
    written = [json_path]
    png = out_dir / f"{name}.png"
    if with_plot and plot(doc, png):
        written.append(png)
    return written


def device_slug(doc: dict[str, Any]) -> str:
    name = doc["environment"]["device"]["name"] if doc["method"]["device"] == "cuda" else "cpu"
    slug = "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")
    while "--" in slug:
        slug = slug.replace("--", "-")
    return ("gpu-" if doc["method"]["device"] == "cuda" else "") + slug


def resolve_device(requested: str) -> str:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: torch sees no CUDA device here; use --device cpu")
    return requested

