"""`pybuild bench --sweep`: the seeded shape distribution, a CPU sweep end to end, its JSON and plot."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET

import pytest
import torch

from pybuild.bench import compile_workers, sweep, sweep_report
from pybuild.bench.sweep_shapes import LAST_FORMS, LAST_MAX, Distribution, draw_images, draw_rows, is_prime, shape_last


def rows_bytes(esize: dict[str, int]):
    return lambda rows, last, dtype: 2 * rows * last * esize[dtype]


ESIZE = {"bfloat16": 2, "float16": 2, "float32": 4}


def draw(n: int = 200, seed: int = 0, max_bytes: int = 128 << 20, step: int = 1, op: str = "k.op"):
    return draw_rows(op, Distribution(seed=seed, n=n, max_bytes=max_bytes), tuple(ESIZE), rows_bytes(ESIZE), step)


def test_the_same_seed_draws_the_same_shapes_and_another_seed_others():
    assert draw(seed=3) == draw(seed=3)
    assert draw(seed=3) != draw(seed=4)
    assert draw(op="a.x") != draw(op="a.y")  # each op has its own stream


def test_rows_and_last_dims_cover_their_ranges_and_every_form_and_dtype():
    shapes = draw()
    rows = [s.dims[0] for s in shapes]
    last = [s.dims[1] for s in shapes]
    assert min(rows) == 1 and max(rows) == 1_000_000
    assert min(last) == 2 and max(last) >= 1 << 18 and max(last) <= LAST_MAX
    assert {s.form for s in shapes} >= set(LAST_FORMS) | {"corner"}
    assert (3, 151936) in [s.dims for s in shapes]
    assert any(is_prime(x) and x > 1000 for x in last) and any(x % 2 for x in last)
    assert any(x % 2 == 0 and x % 4 for x in last)  # even, but of no vector width
    counts = {d: sum(s.dtype == d for s in shapes) for d in ESIZE}
    assert min(counts.values()) >= 60, counts
    # Latin hypercube: every decade of the last dimension has shapes
    for decade in range(1, 5):
        assert any(10**decade <= x < 10 ** (decade + 1) for x in last), decade


@pytest.mark.parametrize("max_bytes", [1 << 20, 128 << 20])
def test_no_shape_moves_more_than_the_cap(max_bytes):
    shapes = draw(max_bytes=max_bytes)
    assert all(s.bytes <= max_bytes or s.dims[0] == 1 for s in shapes)
    assert all(s.bytes == rows_bytes(ESIZE)(*s.dims, s.dtype) for s in shapes)
    assert max(s.bytes for s in shapes) > max_bytes // 2  # the cap is reached, not undershot everywhere


def test_a_step_makes_every_last_dim_a_multiple():
    shapes = draw(step=2)
    assert all(s.dims[1] % 2 == 0 for s in shapes)
    assert any((s.dims[1] // 2) % 2 for s in shapes)  # d odd


@pytest.mark.parametrize("form", LAST_FORMS)
def test_last_dim_forms(form):
    for v in (3, 100, 1000, 4097, 150000):
        x = shape_last(v, form, 2, LAST_MAX)
        assert 2 <= x <= LAST_MAX
        ok = {
            "pow2": x & (x - 1) == 0,
            "vec64": x % 64 == 0 and x & (x - 1) != 0,
            "odd": x % 2 == 1,
            "prime": is_prime(x),
            "even-unaligned": x % 4 == 2,
        }[form]
        assert ok, (form, v, x)


def test_images_single_and_batched_with_odd_sides_under_the_cap():
    shapes = draw_images("img.op", Distribution(seed=1, n=200, max_bytes=32 << 20), 4)
    assert all(s.dtype == "uint8" and s.bytes == 4 * math.prod(s.dims) <= 32 << 20 for s in shapes)
    assert any(len(s.dims) == 2 for s in shapes) and any(len(s.dims) == 3 and s.dims[0] > 1 for s in shapes)
    assert any(s.dims[-1] % 2 and s.dims[-2] % 2 for s in shapes)
    assert (1, 1) in [s.dims for s in shapes]


def _op(wrong: bool = False) -> sweep.SweepOp:
    def make(shape, seed):
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(*shape.dims, generator=g, dtype=getattr(torch, shape.dtype)),)

    def eager(x):
        return x * 2

    return sweep.SweepOp(
        kernel="k",
        op="double",
        kind="rows",
        dtypes=("float32",),
        make=make,
        ours=(lambda x: x * 2 + 1) if wrong else (lambda x: x + x),
        eager=eager,
        bytes_of=lambda r, c, d: 2 * r * c * 4,
        tol={"float32": (1e-6, 1e-6)},
    )


class _Module:
    def __init__(self, op):
        self.__file__ = "kernels/k/benchmarks/cases.py"
        self._op = op

    def sweep_ops(self, kernel, device):
        return [self._op]


@pytest.mark.parametrize("wrong", [False, True])
def test_a_cpu_sweep_checks_times_and_summarizes(tmp_path, wrong):
    dist = Distribution(seed=5, n=4, max_bytes=1 << 16)
    doc = sweep.run(
        [("k", None, _Module(_op(wrong)))], "cpu", dist, compile_=False, workers=0, command="test", log=lambda _: None
    )
    assert doc["distribution"]["seed"] == 5 and doc["distribution"]["n_per_op"] == 4
    assert len(doc["results"]) == 4
    r = doc["results"][0]
    assert set(r["graph_us"]) == {"ours", "eager"} and r["graph_ratio"] > 0 and r["plain_ratio"] > 0
    s = doc["summary"]["k double"]
    assert s["shapes"] == 4 and s["correct"] == (0 if wrong else 4)
    assert s["min_graph_ratio"] == min(x["graph_ratio"] for x in doc["results"])
    assert not (wrong and sweep_report.passed(doc))
    written = sweep_report.write(doc, tmp_path, "sweep-k-cpu")
    assert [p.name for p in written] == ["sweep-k-cpu.json", "sweep-k-cpu.svg"]
    back = json.loads(written[0].read_text())
    assert back["summary"] == json.loads(json.dumps(doc["summary"]))
    svg = ET.fromstring(written[1].read_text())  # well-formed
    marks = [e for e in svg.iter() if e.tag.endswith(("circle", "path"))]
    assert len(marks) >= 2 * 4  # every shape in both panels (plus the legend)
    if wrong:
        assert any(e.tag.endswith("path") for e in marks)


def test_given_shapes_are_timed_in_every_dtype_or_the_one_named_and_one_no_op_takes_is_an_error(tmp_path):
    from pybuild.bench.sweep_shapes import parse_shapes
    from pybuild.errors import UsageError

    op = _op()
    op.dtypes = ("float32", "float16")
    given = parse_shapes("3x5, 2x4:float16")
    assert given == (((3, 5), None), ((2, 4), "float16"))
    dist = Distribution(seed=0, n=len(given), given=given)
    doc = sweep.run([("k", None, _Module(op))], "cpu", dist, compile_=False, workers=0, command="t", log=lambda _: None)
    assert [(r["shape"], r["dtype"], r["form"]) for r in doc["results"]] == [
        ([3, 5], "float32", "given"),
        ([3, 5], "float16", "given"),
        ([2, 4], "float16", "given"),
    ]
    assert doc["distribution"]["given_shapes"] == ["3x5", "2x4:float16"]
    assert "; 2 given shapes;" in sweep_report.markdown_table(doc)[-1]  # two given, three timed
    ET.fromstring(sweep_report.svg(doc))  # the plot's header says so too, and stays well-formed
    for spec, missing in [("2x3x4", "2x3x4"), ("3x5:bfloat16", "3x5:bfloat16")]:
        bad = Distribution(seed=0, n=1, given=parse_shapes(spec))
        with pytest.raises(UsageError, match=rf"--shapes: no op takes {missing}; the ops take k double: ROWSxLAST"):
            sweep.run([("k", None, _Module(op))], "cpu", bad, compile_=False, workers=0, command="t", log=print)


def test_a_checkpoint_says_it_is_partial_and_the_finished_run_does_not():
    # A run stopped by a time limit leaves its last checkpoint: the file, its table line and its
    # plot must say how far it got, and a finished run must not carry the mark.
    import copy

    saved = []
    dist = Distribution(seed=5, n=30, max_bytes=1 << 14)
    doc = sweep.run(
        [("k", None, _Module(_op()))],
        "cpu",
        dist,
        compile_=False,
        workers=0,
        command="test",
        log=lambda _: None,
        on_shape=lambda d: saved.append(copy.deepcopy(d)),
    )
    assert [d["partial"] for d in saved] == [
        {"shapes_done": 25, "shapes_planned": 30},
        {"shapes_done": 30, "shapes_planned": 30},
    ]
    assert len(saved[0]["results"]) == 25 and saved[0]["summary"]["k double"]["shapes"] == 25
    assert "partial" not in doc and "seconds" in doc
    assert sweep_report.markdown_table(saved[0])[-1].endswith("; partial: 25 of 30 shapes")
    assert "partial" not in sweep_report.markdown_table(doc)[-1]
    assert "partial: 25 of 30 shapes" in sweep_report.svg(saved[0])


def test_only_a_slow_implementation_gets_fewer_sets_and_replays():
    # A graph of two calls carries the graph's own launch (4-6 us a call): a fast kernel timed
    # that way reads as slow as its launch. Only an implementation slow on the device is cut; one
    # slow only on the host (Dynamo's guards) keeps its sets, and so do the fast ones.
    asked = []

    def graph_ms(name):
        asked.append(name)
        return {"eager": 4.6, "compile": 0.012}[name]

    call_ms = {"ours": 0.004, "eager": 4.6, "compile": 1.1, "compile-static": 0.005}
    sets_of, reps_of = sweep.plan_timing(list(call_ms), 32, 20, call_ms, graph_ms)
    assert sorted(asked) == ["compile", "eager"]  # only those slow as issued from Python
    assert (sets_of["eager"], reps_of["eager"]) == (2, 3)
    for name in ("ours", "compile", "compile-static"):
        assert (sets_of[name], reps_of[name]) == (32, 20), name
    # a peer slow on the device, but whose round fits the budget, keeps everything too
    sets_of, reps_of = sweep.plan_timing(["eager"], 2, 3, {"eager": 0.6}, lambda _: 0.6)
    assert (sets_of, reps_of) == ({"eager": 2}, {"eager": 3})
    assert sweep.ROUND_BUDGET_MS >= 2 * 0.6 * 3


def test_summary_finds_the_minimum_and_counts_below_thresholds():
    def res(ratio, plain, ok=True, label="1x2"):
        return {
            "kernel": "k",
            "op": "o",
            "label": label,
            "dtype": "bfloat16",
            "correct": ok,
            "graph_ratio": ratio,
            "plain_ratio": plain,
            "best_peer": "eager",
            "bytes": 10,
        }

    doc = {
        "method": {"thresholds": sweep.THRESHOLDS},
        "results": [res(1.2, 1.1), res(0.9, 1.3, label="3x151936"), res(1.0, 0.99, ok=False, label="5x7")],
    }
    s = sweep_report.summarize(doc)["k o"]
    assert (s["min_graph_ratio"], s["min_graph_at"]) == (0.9, "bfloat16 3x151936")
    assert (s["min_plain_ratio"], s["min_plain_at"]) == (0.99, "bfloat16 5x7")
    assert s["graph_below"] == 1 and s["plain_below"] == 1 and s["wrong"] == ["bfloat16 5x7"]


def test_the_static_compile_gets_a_code_object_of_its_own():
    def f(x):
        return x + 1

    g = compile_workers.fresh(f)
    assert g.__code__ is not f.__code__ and g(1) == 2


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--sweep", "0"], "argument --sweep: expected a positive integer, got '0'"),
        (["--sweep", "2", "--seed", "-1"], "argument --seed: expected 0 or a positive integer, got '-1'"),
        (["--sweep", "2", "--max-mib", "0"], "argument --max-mib: expected a positive integer"),
        (["--sweep", "2", "--shapes", "4x8"], "--sweep and --shapes: give one"),
        (["--shapes", "4y8"], "--shapes '4y8': '4y8': expected 2 or 3 positive sizes joined by 'x'"),
        (["--shapes", "4x0"], "'4x0': expected 2 or 3 positive sizes"),
        (["--shapes", "4x8:fp16"], "'4x8:fp16': unknown dtype 'fp16'; one of float32, float16, bfloat16, uint8"),
        (["--shapes", " , "], "--shapes ' , ': no shapes"),
    ],
)
def test_bad_sweep_flags_are_one_line_and_exit_2(argv, message):
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "pybuild", "bench", "img2gray", *argv], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_a_benchmark_file_without_sweep_ops_is_one_usage_error():
    from pybuild.errors import UsageError

    class NoSweep:
        __file__ = "kernels/k/benchmarks/cases.py"

    with pytest.raises(UsageError, match=r"kernels/k/benchmarks/cases.py: defines no sweep_ops\(kernel, device\)"):
        sweep.sweep_ops_of(NoSweep(), None, "cpu")
