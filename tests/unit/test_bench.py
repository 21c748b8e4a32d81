"""`pybuild bench`: target verdicts from measured timings, and a CPU run of a real case end to end."""

from __future__ import annotations

import json

import pytest
import torch

from pybuild.bench import Case, CaseResult, Target, Timing, finalize, round_order, run, run_case, summary_rows


def timing(gbps: float, rounds: list[float] | None = None) -> Timing:
    ms = 1.0 / gbps  # 1 MB moved: ms = 1e6 B / (gbps * 1e9 B/s) * 1e3
    return Timing(ms=ms, gbps=gbps, method="cuda-graph", sets=2, rounds_ms=rounds or [ms])


def result(targets: tuple[Target, ...], **timings: Timing) -> CaseResult:
    r = CaseResult("k", "op", "1x1", "float32", 1_000_000, "panel", "exact")
    r.timings.update(timings)
    r.target_specs = list(targets)
    return r


def verdicts(r: CaseResult) -> dict[str, str]:
    return {t["baseline"]: t["verdict"] for t in r.targets}


def test_odd_rounds_run_in_reverse_so_no_implementation_always_follows_the_same_one():
    names = ["ours", "eager", "compile"]
    orders = [round_order(names, r) for r in range(5)]
    assert orders[0] == orders[2] == orders[4] == names and orders[1] == orders[3] == names[::-1]
    sequence = [n for o in orders for n in o]
    before = {n: {sequence[i - 1] for i in range(1, len(sequence)) if sequence[i] == n} for n in names}
    assert all(len(preceding) > 1 for preceding in before.values())
    assert round_order([], 1) == []


def test_met_and_missed():
    r = result((Target("compile", 1.0), Target("copy_large", 0.9)), ours=timing(3000), compile=timing(2900))
    finalize(r, timing(4000))
    assert verdicts(r) == {"compile": "met", "copy_large": "missed"}
    assert r.ratios["copy_large"] == pytest.approx(0.75)
    assert [t["met"] for t in r.targets] == [True, False]


def test_a_miss_inside_the_round_to_round_spread_is_a_tie_not_met():
    # ours 0.5% slower than compile, whose rounds spread over 2%
    ms = 1.0 / 2985
    r = result((Target("compile", 1.0),), ours=timing(2985), compile=timing(3000, [1 / 3000, 1.02 / 3000, 1 / 3000]))
    finalize(r, timing(4000))
    assert verdicts(r) == {"compile": "tie"}
    assert r.targets[0]["met"] is False
    assert r.targets[0]["spread"] == pytest.approx(0.02)
    # the same gap with tight rounds is a miss
    r = result((Target("compile", 1.0),), ours=timing(2985, [ms, ms]), compile=timing(3000))
    finalize(r, timing(4000))
    assert verdicts(r) == {"compile": "missed"}


def test_a_target_above_every_copy_is_beyond_copy():
    r = result((Target("compile", 1.6),), ours=timing(4200), compile=timing(3100), copy_same=timing(4100))
    finalize(r, timing(4230))
    assert verdicts(r) == {"compile": "beyond copy"}
    assert r.targets[0]["needed_gbps"] == pytest.approx(4960)
    # a miss inside the spread stays a tie even when the baseline itself beats the copy
    r = result((Target("compile", 1.0),), ours=timing(4290), compile=timing(4300, [1 / 4300, 1.01 / 4300]))
    finalize(r, timing(4230))
    assert verdicts(r) == {"compile": "tie"}
    # 1.6x a slower baseline is within reach, and met
    r = result((Target("compile", 1.6),), ours=timing(4200), compile=timing(2100))
    finalize(r, timing(4230))
    assert verdicts(r) == {"compile": "met"}


def test_strict_targets_need_more_than_the_ratio():
    r = result((Target("compile", 1.0, strict=True),), ours=timing(3000), compile=timing(3000))
    finalize(r, timing(4000))
    assert r.targets[0]["met"] is False


def test_summary_names_what_was_not_met():
    r = result((Target("compile", 1.0), Target("copy_large", 0.9)), ours=timing(3000), compile=timing(2900),
               eager=timing(100))
    finalize(r, timing(4000))
    doc = {"results": [{k: v for k, v in r.__dict__.items() if k != "target_specs"}]}
    doc["results"][0]["timings"] = {k: v.__dict__ for k, v in r.timings.items()}
    row = summary_rows(doc)[0]
    assert row[-1] == "missed: ours >= 0.9 x copy_large"


def case(device: str = "cpu") -> Case:
    def make(seed: int) -> tuple[torch.Tensor]:
        return (torch.randn(256, 256, generator=torch.Generator().manual_seed(seed)),)

    return Case(kernel="k", op="double", label="256x256", dtype="float32", bytes=2 * 256 * 256 * 4, make=make,
                ours=lambda x: x + x, eager=lambda x: x * 2, targets=(Target("eager", 0.5),), exact=True)


def test_run_case_on_cpu_times_every_implementation_and_checks_outputs():
    r = run_case(case(), "cpu", 0, compile_=False, reps=3, copy_large=timing(10.0), log=lambda _: None)
    assert r.check == "exact"
    assert set(r.timings) == {"ours", "eager", "copy_same", "copy_large"}
    assert all(t.ms > 0 and t.rounds_ms for t in r.timings.values())
    assert r.targets == []  # the targets are GPU targets: not judged on CPU


def test_run_case_reports_a_wrong_output():
    c = case()
    c.ours = lambda x: x + 1
    r = run_case(c, "cpu", 0, compile_=False, reps=1, copy_large=None, log=lambda _: None)
    assert r.check == "MISMATCH"


def test_run_writes_a_json_document(tmp_path):
    class Module:
        @staticmethod
        def cases(kernel, device, quick):
            return [case(device)]

    doc = run([("k", None, Module)], "cpu", quick=True, compile_=False, command="test", log=lambda _: None)
    text = json.dumps(doc)
    back = json.loads(text)
    assert back["schema"] == 2 and back["command"] == "test"
    assert back["results"][0]["timings"]["ours"]["rounds_ms"]
    assert len(back["copy_large_runs"]) == 2


@pytest.mark.parametrize("text, message", [
    ("def cases(:\n", "line 1: cannot be loaded (SyntaxError"),
    ("X = 1\n", "defines no cases(kernel, device, quick) function"),
    ("raise ImportError('no triton')\n", "cannot be loaded (ImportError: no triton)"),
])
def test_a_broken_benchmark_file_is_one_usage_error(tmp_path, text: str, message: str) -> None:
    from pybuild.bench import load_cases_module
    from pybuild.errors import UsageError

    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "k.py").write_text(text)
    with pytest.raises(UsageError, match=r"k\.py") as info:
        load_cases_module(tmp_path, "k")
    assert message in str(info.value)


@pytest.mark.parametrize("body, message", [
    ("return [1]", "cases() must return pybuild.bench.Case objects; got 1"),
    ("return 1 / 0", "cases() failed (ZeroDivisionError: division by zero)"),
])
def test_a_benchmark_whose_cases_fail_is_one_usage_error(tmp_path, body: str, message: str) -> None:
    from pybuild.bench import load_cases_module
    from pybuild.errors import UsageError

    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "k.py").write_text(f"def cases(kernel, device, quick):\n    {body}\n")
    module = load_cases_module(tmp_path, "k")
    with pytest.raises(UsageError, match=r"k\.py: ") as info:
        run([("k", object(), module)], "cpu", quick=True, compile_=False, command="test", log=lambda _: None)
    assert message in str(info.value)
