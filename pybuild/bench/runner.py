"""Run a kernel's bench cases against torch eager, ``torch.compile`` and device copies, in one run.

Every implementation of a case is timed in ``ROUNDS`` interleaved rounds on CUDA, odd rounds in
reverse order (so no implementation always runs right after the same one), and reports its
median round (the first round of a case ran 7-15% faster on an H200 for whichever implementation
came first, so the best round would favour the order); the spread of the rounds is kept, and a
target missed by less than that spread is a tie, not met. Each implementation is also timed as
plain stream launches (``<name>-launch``). Bandwidth = bytes a call must move (inputs read once,
outputs written once) / time. Copy baselines: ``dst.copy_(src)`` moving the same bytes as one
call (``copy_same``), and one large (1 GiB) copy (``copy_large``). On CPU the same cases run with
wall-clock medians.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import UsageError
from .cases import Case, Target, cases_of
from .environment import builds_of, environment
from .timing import (
    DEFAULT_L2_BYTES,
    L2_MULTIPLE,
    Timing,
    copy_large_bytes,
    copy_same,
    measure_large_copy,
    median_ms,
    n_sets,
    round_order,
    time_cuda_graph,
    time_cuda_launch,
    time_wall,
)

SCHEMA = 2
ROUNDS = 5  # interleaved timing rounds per case on CUDA; each implementation reports its median round


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


def implementations(case: Case, compile_: bool) -> dict[str, Callable[..., Any]]:
    """What a case times: ours, eager, its extra formulations, and (``compile_``) their compiles."""
    impls: dict[str, Callable[..., Any]] = {"ours": case.ours, "eager": case.eager}
    if compile_:
        impls["compile"] = _compile(case.eager)
    for name, fn in case.extra.items():
        impls[name] = fn
        if compile_:
            impls[f"{name}-compile"] = _compile(fn)
    if compile_:
        impls.update(case.extra_timed)
    return impls


Rounds = dict[str, tuple[list[float], str, int]]  # name -> (every round's ms, method, input sets)


def _record(rounds: Rounds, name: str, ms: float, method: str, n: int) -> None:
    rounds.setdefault(name, ([], method, n))[0].append(ms)


def _time_impls(
    impls: dict[str, Callable[..., Any]], arg_sets: list, device: str, reps: int, case: Case, log: Callable[[str], None]
) -> Rounds:
    """Every implementation in interleaved rounds (one on a CPU), each round's median kept: a passing
    clock or memory-placement hiccup then hits no implementation alone."""
    import torch

    rounds: Rounds = {}
    sets = len(arg_sets)
    for round_ in range(ROUNDS if device == "cuda" else 1):
        for name, fn in round_order(list(impls.items()), round_):
            if device != "cuda":
                _record(rounds, name, time_wall(fn, arg_sets, reps), "wall-clock", sets)
                continue
            try:
                _record(rounds, name, time_cuda_graph(fn, arg_sets, reps), "cuda-graph", sets)
            except Exception as e:  # noqa: BLE001 - an implementation that cannot be captured is timed by launches
                log(
                    f"  {case.op} {case.label}: {name} not capturable in a CUDA graph ({type(e).__name__}); "
                    "timing stream launches"
                )
                torch.cuda.synchronize()
                _record(rounds, name, time_cuda_launch(fn, arg_sets, reps), "launch", sets)
            if round_ == 0:
                _record(rounds, f"{name}-launch", time_cuda_launch(fn, arg_sets, max(3, reps // 4)), "launch", sets)
    return rounds


def run_case(
    case: Case,
    device: str,
    l2_bytes: int,
    compile_: bool,
    reps: int,
    copy_large: Timing | None,
    log: Callable[[str], None],
) -> CaseResult:
    """Check one case against eager, time every implementation and a same-bytes copy, judge its targets."""
    sets = n_sets(device, case.bytes, l2_bytes)
    arg_sets = [case.make(seed) for seed in range(sets)]
    result = CaseResult(
        case.kernel,
        case.op,
        case.label,
        case.dtype,
        case.bytes,
        case.panel or f"{case.kernel} {case.op} {case.dtype}",
        check="",
    )
    impls = implementations(case, compile_)
    result.target_specs = list(case.targets) if device == "cuda" else []  # the targets are GPU targets
    result.check = _check(case, case.ours(*arg_sets[0]), case.eager(*arg_sets[0]))
    rounds = _time_impls(impls, arg_sets, device, reps, case, log)
    del arg_sets
    for ms, method in copy_same(device, case.bytes, sets, ROUNDS if device == "cuda" else 1, reps):
        _record(rounds, "copy_same", ms, method, sets)
    for name, (times, method, n) in rounds.items():
        ms = median_ms(times)
        result.timings[name] = Timing(
            ms=ms, gbps=case.bytes / (ms * 1e-3) / 1e9, method=method, sets=n, rounds_ms=list(times)
        )
    finalize(result, copy_large)
    return result


def _verdict(
    target: Target, ratio: float | None, timings: dict[str, Timing], copy_best: float | None
) -> dict[str, Any]:
    met = ratio is not None and (ratio > target.ratio if target.strict else ratio >= target.ratio)
    entry: dict[str, Any] = {
        "target": target.describe(),
        "baseline": target.baseline,
        "ratio": ratio,
        "threshold": target.ratio,
        "met": met,
    }
    if ratio is None:
        entry["verdict"] = "missed"
        return entry
    base = timings[target.baseline]
    spread = max(timings["ours"].spread(), base.spread())
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
    return entry


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
    result.ratios = {
        name: ours.gbps / t.gbps for name, t in timings.items() if name != "ours" and not name.endswith("-launch")
    }
    copy_best = max((timings[n].gbps for n in ("copy_large", "copy_same") if n in timings), default=None)
    result.targets = [_verdict(t, result.ratios.get(t.baseline), timings, copy_best) for t in result.target_specs]


def _method(device: str, compile_: bool, reps: int) -> dict[str, Any]:
    """How the run measured, for the JSON."""
    cuda = device == "cuda"
    return {
        "device": device,
        "timing": f"CUDA graph of one call per input set, median of replays (device events) / calls; "
        f"median of {ROUNDS} interleaved rounds, odd rounds in reverse order"
        if cuda
        else "median wall-clock per call",
        "verdicts": "met; tie (missed by less than the round-to-round spread of ours or the baseline); "
        "beyond copy (missed by more, and asks for more GB/s than any copy reached in the run); "
        "missed",
        "launch-timing": "stream launches from Python, device events, median" if cuda else None,
        "input-sets": f"enough to exceed {L2_MULTIPLE}x L2 together (min 2)" if cuda else "2",
        "repetitions": reps,
        "bytes": "inputs read once + outputs written once, per call",
        "copy_same": "dst.copy_(src) moving the same bytes as one call; the faster of graph replays and "
        "stream launches",
        "copy_large": f"dst.copy_(src) of {copy_large_bytes(device)} bytes (read + written counted), after a "
        "2 s warm-up and again after all cases; the better run",
        "compile": "torch.compile(eager, dynamic=False, fullgraph=True), default mode" if compile_ else None,
    }


def configure_dynamo(limit: int) -> None:
    """Compiled functions may recompile ``limit`` times (one static compile per shape), never
    falling back silently to eager."""
    import torch

    for knob in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit", "accumulated_recompile_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, limit)


def _log_case(name: str, case: Case, r: CaseResult, seconds: float, log: Callable[[str], None]) -> None:
    parts = [f"{k} {v.gbps:.0f}" for k, v in r.timings.items() if not k.endswith("-launch")]
    missed = [f"{t['target']} ({t['verdict']})" for t in r.targets if not t["met"]]
    log(
        f"{name} {case.op} {case.label} {case.dtype}: GB/s "
        + ", ".join(parts)
        + f"; {r.check}; {seconds:.1f} s"
        + (f"; NOT MET {missed}" if missed else "")
    )


@contextmanager
def _blamed_on(module: Any, case: Case) -> Iterator[None]:
    """A failure of the benchmark file's code (``make``, ``ours``, ``eager``) inside becomes one
    UsageError naming the file and the case, as ``cases_of`` does for ``cases()``."""
    try:
        yield
    except Exception as e:
        path = getattr(module, "__file__", None) or getattr(module, "__name__", "benchmarks/cases.py")
        message = (str(e).strip().splitlines() or [""])[0]
        raise UsageError(f"{path}: case {case.op} {case.label} {case.dtype}: {type(e).__name__}: {message}") from e


def run(
    kernels: Sequence[tuple[str, Any, Any]],
    device: str,
    quick: bool,
    compile_: bool,
    command: str,
    log: Callable[[str], None],
    on_case: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Benchmark ``(name, loaded kernel package, cases module)`` triples; returns the JSON document.

    ``on_case`` gets the document so far after every case (to save partial results)."""
    if device == "cuda":  # one static compile per shape, never a silent fallback to eager
        configure_dynamo(4096)
    env = environment(device)
    l2 = (env["device"].get("l2-bytes") or DEFAULT_L2_BYTES) if device == "cuda" else 0
    reps = 10 if quick else 30
    log(f"device {env['device']['name']}; torch {env['torch']}; warming up and measuring the large copy")
    copy_first = measure_large_copy(device, reps, warm_up_s=2.0)
    log(f"large copy: {copy_first.gbps:.0f} GB/s")
    results: list[CaseResult] = []
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "command": command,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "environment": env,
        "builds": builds_of(kernels),
        "method": _method(device, compile_, reps),
        "copy_large": asdict(copy_first),
        "copy_large_runs": [asdict(copy_first)],
        "results": [],
    }
    for name, kernel, module in kernels:
        for case in cases_of(module, kernel, device, quick):
            t0 = time.monotonic()
            with _blamed_on(module, case):
                r = run_case(case, device, l2, compile_, reps, copy_first, log)
            results.append(r)
            _log_case(name, case, r, time.monotonic() - t0, log)
            doc["results"] = [result_dict(x) for x in results]
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
    doc["results"] = [result_dict(x) for x in results]
    return doc


def result_dict(r: CaseResult) -> dict[str, Any]:
    d = asdict(r)
    d.pop("target_specs")
    return d
