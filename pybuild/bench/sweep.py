"""``python -m pybuild bench KERNEL --sweep N --seed S``: N seeded random shapes per op.

A kernel's ``benchmarks/cases.py`` opts in with ``sweep_ops(kernel, device) -> list[SweepOp]``
(``kernel`` may be None in the compile workers: only ``eager`` and ``make`` run there). Each shape
(sweep_shapes.py draws them) is checked against the plain-torch reference, then ours, torch eager,
``torch.compile`` as a user gets it by default (one compiled function for every shape of the op,
so it turns dynamic once sizes vary) and ``torch.compile(..., dynamic=False)`` (a fresh code object
per shape, so each shape is compiled for itself; compile_workers.py compiles them all first) are
timed in interleaved rounds, each round as CUDA-graph replays (timing.time_cuda_graph) and as
plain calls from Python (timing.time_cuda_launch); every figure is the median of the rounds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import UsageError
from .compile_workers import compile_static, warm_compiles
from .environment import builds_of, device_slug, environment
from .runner import configure_dynamo
from .sweep_op import SweepOp
from .sweep_report import summarize
from .sweep_shapes import Distribution, Shape, draw_images, draw_rows, format_shape
from .timing import (
    DEFAULT_L2_BYTES,
    L2_MULTIPLE,
    median_ms,
    round_order,
    time_cuda_graph,
    time_cuda_launch,
    time_cuda_launches,
    time_wall,
    warm_up_cuda,
)

MAX_SETS = 32  # input sets per shape (fewer than the bench's: hundreds of shapes)
SLOW_MS = 0.5  # a call slower than this on the device is a slow one (the host issues any call faster)
ROUND_BUDGET_MS = 8.0  # device time one implementation's graph may take per round (slow peers get fewer sets)
LARGE = 16 << 20  # from here on fewer rounds and replays
THRESHOLDS = {"graph": 0.95, "plain": 1.0}  # ours / best peer in graphs; ours / eager in plain calls


def given_shapes(op: SweepOp, dist: Distribution) -> list[Shape]:
    """The shapes of ``dist.given`` that ``op`` takes: [rows, last] (last a multiple of op.step) in
    each of its dtypes, or the one named; images [H, W] or [N, H, W] of uint8."""
    shapes = []
    for dims, dtype in dist.given:
        if op.kind == "image" and dtype in (None, "uint8"):
            shapes.append(Shape(dims, "uint8", "given", math.prod(dims) * op.bytes_per_pixel))
        elif op.kind == "rows" and op.bytes_of is not None and len(dims) == 2 and dims[1] % op.step == 0:
            for dt in op.dtypes if dtype is None else (dtype,) if dtype in op.dtypes else ():
                shapes.append(Shape(dims, dt, "given", op.bytes_of(dims[0], dims[1], dt)))
    return shapes


def shapes_of(op: SweepOp, dist: Distribution) -> list[Shape]:
    if dist.given:
        return given_shapes(op, dist)
    if op.kind == "image":
        return draw_images(f"{op.kernel}.{op.op}", dist, op.bytes_per_pixel)
    if op.kind == "rows" and op.bytes_of is not None:
        return draw_rows(f"{op.kernel}.{op.op}", dist, op.dtypes, op.bytes_of, op.step)
    raise UsageError(
        f"{op.kernel} {op.op}: sweep kind {op.kind!r} needs bytes_of (rows) or is unknown; "
        "use kind 'rows' with bytes_of, or 'image'"
    )


def sweep_ops_of(module: Any, kernel: Any, device: str) -> list[SweepOp]:
    path = getattr(module, "__file__", None) or getattr(module, "__name__", "the benchmark file")
    if not callable(getattr(module, "sweep_ops", None)):
        raise UsageError(f"{path}: defines no sweep_ops(kernel, device) function; add one to sweep this kernel")
    try:
        ops = list(module.sweep_ops(kernel, device))
    except Exception as e:
        raise UsageError(f"{path}: sweep_ops() failed ({type(e).__name__}: {e}); fix the benchmark file") from e
    if not ops or not all(isinstance(o, SweepOp) for o in ops):
        raise UsageError(f"{path}: sweep_ops() must return a non-empty list of pybuild.bench.SweepOp")
    return ops


def check(op: SweepOp, shape: Shape, ours: Any, ref: Any) -> tuple[bool, str]:
    import torch

    if ours.shape != ref.shape or ours.dtype != ref.dtype:
        return False, f"shape/dtype {tuple(ours.shape)} {ours.dtype} != {tuple(ref.shape)} {ref.dtype}"
    if op.exact:
        ok = torch.equal(ours, ref)
        return ok, "exact" if ok else "MISMATCH"
    atol, rtol = op.tol.get(shape.dtype, (1e-2, 1.6e-2))
    diff = (ours.float() - ref.float()).abs()
    ok = bool((diff <= atol + rtol * ref.float().abs()).all()) and bool(
        torch.isfinite(ours).all() == torch.isfinite(ref).all()
    )
    return ok, f"max |diff| {diff.max().item():.3g}" + ("" if ok else " MISMATCH")


def n_sets(nbytes: int, l2_bytes: int) -> int:
    return max(2, min(MAX_SETS, math.ceil(L2_MULTIPLE * l2_bytes / max(1, nbytes))))


def _time_rounds(
    impls: dict[str, Callable[..., Any]],
    arg_sets: list,
    device: str,
    rounds: int,
    sets_of: dict[str, int],
    reps_of: dict[str, int],
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, str]]:
    """Per implementation: graph ms and plain-call ms of its rounds, and how the graph was timed.
    Each implementation runs on its first ``sets_of[name]`` input sets, ``reps_of[name]`` replays.
    Plain calls of ours and eager (the plain-call ratio) are timed every round, their samples
    interleaved (timing.time_cuda_launches: host noise falls on both alike), the compiled ones
    (information only; Dynamo's guards make them slow on the host) in the first round."""
    import torch

    graph: dict[str, list[float]] = {k: [] for k in impls}
    plain: dict[str, list[float]] = {k: [] for k in impls}
    method = dict.fromkeys(impls, "cuda-graph" if device == "cuda" else "wall-clock")
    paired = [n for n in ("ours", "eager") if n in impls]
    for round_ in range(rounds):
        for name, fn in round_order(list(impls.items()), round_):
            args, reps = arg_sets[: sets_of[name]], reps_of[name]
            if device != "cuda":
                ms = time_wall(fn, args, reps)
                graph[name].append(ms)
                plain[name].append(ms)
                continue
            if method[name] == "cuda-graph":
                try:
                    graph[name].append(time_cuda_graph(fn, args, reps))
                except Exception:  # noqa: BLE001 - not capturable: timed by launches, and said so
                    torch.cuda.synchronize()
                    method[name] = "launch"
            if method[name] == "launch":
                plain[name].append(time_cuda_launch(fn, args, max(3, reps // 4)))
                graph[name].append(plain[name][-1])
            elif name not in paired and round_ == 0:
                plain[name].append(time_cuda_launch(fn, args, max(3, reps // 4)))
        if device == "cuda":
            # ours and eager (the plain-call ratio) every round, their samples interleaved
            both = [(n, impls[n]) for n in paired if method[n] != "launch"]
            if both:
                sets = min(sets_of[n] for n, _ in both)
                reps = max(3, min(reps_of[n] for n, _ in both) // 2)
                for n, ms in time_cuda_launches(round_order(both, round_), arg_sets[:sets], reps).items():
                    plain[n].append(ms)
    return graph, plain, method


def plan_timing(
    names: Sequence[str], sets: int, reps: int, call_ms: dict[str, float], graph_ms: Callable[[str], float]
) -> tuple[dict[str, int], dict[str, int]]:
    """Input sets and replays per implementation. Only one whose calls take over SLOW_MS on the
    device, and whose graph would take more than ROUND_BUDGET_MS a round, gets fewer (3 replays and
    2 sets at least); the others keep them all, so that the graph's own launch stays spread over
    many calls. ``call_ms`` is a call's time as issued from Python (the host's, for small inputs:
    it only picks whom to ask); ``graph_ms(name)`` the device's, asked of those over SLOW_MS."""
    sets_of, reps_of = dict.fromkeys(names, sets), dict.fromkeys(names, reps)
    for name in names:
        if call_ms[name] <= SLOW_MS:
            continue
        ms = graph_ms(name)
        if ms > SLOW_MS and sets * ms * reps > ROUND_BUDGET_MS:
            sets_of[name] = max(2, min(sets, int(ROUND_BUDGET_MS / (ms * reps))))
            reps_of[name] = max(3, min(reps, int(ROUND_BUDGET_MS / (sets_of[name] * ms))))
    return sets_of, reps_of


def _call_ms(impls: dict[str, Callable[..., Any]], args: tuple[Any, ...]) -> dict[str, float]:
    """Each implementation called once (compiling it where it compiles), then three times back to
    back between device events: ms per call. Where the device takes longer than the host to issue
    a call this is the device's time; else (small inputs) it is the host's."""
    import torch

    out = {}
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for name, fn in impls.items():
        fn(*args)
        torch.cuda.synchronize()
        start.record()
        for _ in range(3):
            fn(*args)
        end.record()
        end.synchronize()
        out[name] = start.elapsed_time(end) / 3
    return out


def _graph_ms(fn: Callable[..., Any], arg_sets: list) -> float:
    """A call's device time: a graph of two calls, replayed once after warm-up (launches where the
    call cannot be captured)."""
    import torch

    try:
        return time_cuda_graph(fn, arg_sets[:2], 1)
    except Exception:  # noqa: BLE001 - not capturable: its launches are what it costs
        torch.cuda.synchronize()
        return time_cuda_launch(fn, arg_sets[:2], 1)


def run_shape(
    op: SweepOp, shape: Shape, impls: dict[str, Callable[..., Any]], device: str, l2_bytes: int
) -> dict[str, Any]:
    """Check one shape, then time every implementation; the result entry of the JSON."""
    t0 = time.monotonic()
    first = op.make(shape, 0)
    ok, note = check(op, shape, op.ours(*first), op.eager(*first))
    large = shape.bytes >= LARGE
    rounds = (3 if large else 5) if device == "cuda" else 1
    reps = (10 if large else 20) if device == "cuda" else 3
    sets = n_sets(shape.bytes, l2_bytes) if device == "cuda" else 2
    arg_sets = [first] + [op.make(shape, seed) for seed in range(1, sets)]
    del first
    names = list(impls)
    if device == "cuda":
        # Fewer sets and replays for a slow implementation only (torch eager or the default compile
        # on some shapes: ms per call); the fast ones keep theirs.
        sets_of, reps_of = plan_timing(
            names, sets, reps, _call_ms(impls, arg_sets[0]), lambda name: _graph_ms(impls[name], arg_sets)
        )
    else:
        sets_of, reps_of = dict.fromkeys(names, sets), dict.fromkeys(names, reps)
    graph, plain, method = _time_rounds(impls, arg_sets, device, rounds, sets_of, reps_of)
    arg_sets.clear()  # the inputs go before the cache is emptied
    if device == "cuda":
        import torch

        torch.cuda.empty_cache()
    g = {k: median_ms(v) * 1e3 for k, v in graph.items()}
    p = {k: median_ms(v) * 1e3 for k, v in plain.items()}
    peers = [k for k in g if k != "ours"]
    best = min(peers, key=lambda k: g[k])
    return {
        "kernel": op.kernel,
        "op": op.op,
        "shape": list(shape.dims),
        "label": shape.label,
        "dtype": shape.dtype,
        "form": shape.form,
        "bytes": shape.bytes,
        "correct": ok,
        "check": note,
        "sets": sets_of,
        "rounds": rounds,
        "graph_us": g,
        "plain_us": p,
        "graph_method": method,
        "graph_rounds_us": {k: [x * 1e3 for x in v] for k, v in graph.items()},
        "plain_rounds_us": {k: [x * 1e3 for x in v] for k, v in plain.items()},
        "reps": reps_of,
        "best_peer": best,
        "graph_ratio": g[best] / g["ours"],
        "plain_ratio": p["eager"] / p["ours"],
        "plain_ratio_best": min(p[k] for k in peers) / p["ours"],
        "seconds": round(time.monotonic() - t0, 3),
    }


# --------------------------------------------------------------------------------------------
# The run


def _method(device: str, compile_: bool) -> dict[str, Any]:
    """How the sweep measured, for the JSON."""
    return {
        "device": device,
        "implementations": {
            "ours": "the kernel as a user calls it",
            "eager": "the plain-torch reference in eager mode (also the correctness reference)",
            "compile": "torch.compile(eager): one compiled function for every shape of the op, as a user "
            "gets by default (it turns dynamic once sizes vary)"
            if compile_
            else None,
            "compile-static": "torch.compile(eager, dynamic=False), compiled for each shape" if compile_ else None,
        },
        "graph": f"CUDA graph of one call per input set ({MAX_SETS} sets at most, past {L2_MULTIPLE}x L2 "
        f"where that fits), median of replays / calls; 20 replays per round, 10 from "
        f"{LARGE >> 20} MiB; an implementation whose calls take over {SLOW_MS:g} ms on the device and "
        f"would take more than {ROUND_BUDGET_MS:g} ms a round gets fewer sets and replays (2 and 3 at "
        "least), the others keep theirs (sets and reps per implementation in each result)"
        if device == "cuda"
        else "median wall-clock per call",
        "plain": "calls from Python on the current stream, device events, median; ours and eager every round, "
        "their samples interleaved, the compiled ones in the first"
        if device == "cuda"
        else None,
        "rounds": "5 interleaved rounds (3 from 16 MiB), odd rounds in reverse order; every figure is the median round"
        if device == "cuda"
        else "1",
        "bytes": "inputs read once + outputs written once, per call",
        "graph_ratio": "best peer's graph time / ours (peers: eager, compile, compile-static)",
        "plain_ratio": "eager's plain-call time / ours",
        "thresholds": THRESHOLDS,
    }


def run(
    kernels: Sequence[tuple[str, Any, Any]],
    device: str,
    dist: Distribution,
    compile_: bool,
    workers: int,
    command: str,
    log: Callable[[str], None],
    on_shape: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Sweep ``(name, loaded kernel package, cases module)`` triples; returns the JSON document."""
    import torch

    t_start = time.monotonic()
    plan = [(op, shapes_of(op, dist)) for _, kernel, module in kernels for op in sweep_ops_of(module, kernel, device)]
    if dist.given:
        taken = {(s.dims, s.dtype) for _, shapes in plan for s in shapes}
        untaken = [(d, t) for d, t in dist.given if not any(dims == d and t in (None, dt) for dims, dt in taken)]
        if untaken:
            ops = "; ".join(
                f"{op.kernel} {op.op}: "
                + (
                    "HxW or NxHxW (uint8)"
                    if op.kind == "image"
                    else f"ROWSxLAST{f' (LAST a multiple of {op.step})' if op.step > 1 else ''}, {'/'.join(op.dtypes)}"
                )
                for op, _ in plan
            )
            raise UsageError(
                f"--shapes: no op takes {', '.join(format_shape(d, t) for d, t in untaken)}; the ops take {ops}"
            )
    env = environment(device)
    l2 = (env["device"].get("l2-bytes") or DEFAULT_L2_BYTES) if device == "cuda" else 0
    doc: dict[str, Any] = {
        "schema": 1,
        "kind": "sweep",
        "command": command,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "environment": env,
        "builds": builds_of(kernels),
        "distribution": dist.describe(),
        "method": _method(device, compile_),
        "results": [],
    }
    if device == "cuda":
        configure_dynamo(1 << 16)
        if compile_:
            modules = {name: str(module.__file__) for name, _, module in kernels}
            jobs = [(op, s) for op, shapes in plan for s in shapes]
            doc["compile_warm_up"] = warm_compiles(jobs, modules, workers, log)
        log(f"device {env['device']['name']}; warming up")
        warm_up_cuda(2.0)
    total = sum(len(s) for _, s in plan)
    done = 0
    for op, shapes in plan:
        impls: dict[str, Callable[..., Any]] = {"ours": op.ours, "eager": op.eager}
        if compile_:  # one compiled function for every shape of the op, as a user gets by default
            impls["compile"] = torch.compile(op.eager)
        for shape in shapes:
            done += 1
            if compile_:
                impls["compile-static"] = compile_static(op.eager)
            r = run_shape(op, shape, impls, device, l2)
            doc["results"].append(r)
            log(
                f"[{done}/{total} {time.monotonic() - t_start:.0f} s] {op.op} {shape.dtype} {shape.label} "
                f"({shape.form}, {shape.bytes / 1e6:.3g} MB): "
                f"{'ok' if r['correct'] else 'WRONG'}; graph {r['graph_ratio']:.3f}x {r['best_peer']} "
                f"(ours {r['graph_us']['ours']:.2f} us), plain {r['plain_ratio']:.3f}x eager; {r['seconds']:.1f} s"
            )
            if on_shape is not None and (done % 25 == 0 or done == total):
                doc["summary"] = summarize(doc)
                # a checkpoint says so: a run stopped early leaves this file behind
                doc["partial"] = {"shapes_done": done, "shapes_planned": total}
                on_shape(doc)
    doc.pop("partial", None)
    doc["summary"] = summarize(doc)
    doc["seconds"] = round(time.monotonic() - t_start, 1)
    return doc


def out_name(kernels: Sequence[str], doc: dict[str, Any]) -> str:
    return "sweep-" + "-".join(kernels) + "-" + device_slug(doc).removeprefix("gpu-")
