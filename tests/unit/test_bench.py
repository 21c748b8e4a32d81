"""`pybuild bench`: target verdicts from measured timings, and a CPU run of a real case end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from pybuild.bench import (
    Case,
    CaseResult,
    Target,
    Timing,
    cases_path,
    finalize,
    has_cases,
    load_cases_module,
    markdown_table,
    round_order,
    run,
    run_case,
    summary_rows,
)
from pybuild.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
ACTIVATIONS = ("silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul")


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
    r = result(
        (Target("compile", 1.0), Target("copy_large", 0.9)), ours=timing(3000), compile=timing(2900), eager=timing(100)
    )
    finalize(r, timing(4000))
    doc = {"results": [{k: v for k, v in r.__dict__.items() if k != "target_specs"}]}
    doc["results"][0]["timings"] = {k: v.__dict__ for k, v in r.timings.items()}
    row = summary_rows(doc)[0]
    assert row[-1] == "missed: ours >= 0.9 x copy_large"


def case(device: str = "cpu") -> Case:
    def make(seed: int) -> tuple[torch.Tensor]:
        return (torch.randn(256, 256, generator=torch.Generator().manual_seed(seed)),)

    return Case(
        kernel="k",
        op="double",
        label="256x256",
        dtype="float32",
        bytes=2 * 256 * 256 * 4,
        make=make,
        ours=lambda x: x + x,
        eager=lambda x: x * 2,
        targets=(Target("eager", 0.5),),
        exact=True,
    )


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


RESULTS = ROOT / "benchmarks" / "results"
SWEEPS = sorted(p.relative_to(RESULTS).as_posix() for p in (RESULTS / "sweeps").glob("*.json.gz"))


@pytest.mark.parametrize(
    "result",
    [
        "gpu-nvidia-h200.json",
        "gpu-nvidia-h100-80gb-hbm3.json",
        "sweep-rms_norm-nvidia-h200.json",
        "sweep-rms_norm-nvidia-h100-80gb-hbm3.json",
        *SWEEPS,
    ],
)
def test_the_performance_page_tables_are_the_committed_runs(result: str) -> None:
    # docs/performance.md's tables are generated (benchmarks/table.py) from the committed JSON; a
    # new run committed without regenerating them, or a hand-edited figure, fails here.
    from pybuild.bench import sweep_report

    doc = sweep_report.read(RESULTS / result)
    page = (ROOT / "docs" / "performance.md").read_text()
    table = sweep_report.markdown_table if doc.get("kind") == "sweep" else markdown_table
    rendered = "\n".join(table(doc))
    assert rendered in page, f"docs/performance.md differs: python3 benchmarks/table.py benchmarks/results/{result}"


def test_the_committed_results_are_one_run_and_one_sweep_per_gpu_kind_under_1_mb() -> None:
    # benchmarks/results/ keeps what README.md and docs/performance.md cite; earlier runs stay in git
    # (docs/performance.md names the commit). The logs run_gpu.sh writes there are not committed.
    logs = {"gpu-run.log", "build-logs.tar.gz"}
    files = [p for p in RESULTS.iterdir() if p.is_file() and p.name not in logs]
    assert {p.name for p in RESULTS.iterdir() if p.is_dir()} <= {"sweeps"}
    names = sorted(p.name for p in files)
    for kind in ("nvidia-h200", "nvidia-h100-80gb-hbm3"):
        assert f"gpu-{kind}.json" in names and f"gpu-{kind}.png" in names, names
        assert len([n for n in names if n.startswith("sweep-") and n.endswith(f"-{kind}.json")]) == 1, names
    builds = [n for n in names if n.startswith("build-") and n.endswith(".json")]  # bench-build's, small
    assert len(names) - len(builds) == 6, f"one run (JSON and plot) and one sweep per GPU kind: {names}"
    assert all(len(b.split("-")) >= 3 for b in builds), builds  # build-<kernel>-<machine>.json
    size = sum(p.stat().st_size for p in files)
    assert size < 1_000_000, f"benchmarks/results/ holds {size} bytes; keep it under 1 MB"


def test_the_committed_sweeps_are_named_for_their_run_and_kept_reproducibly() -> None:
    # benchmarks/results/sweeps/ keeps the other seeds' sweeps and given-shape checks that
    # docs/performance.md cites, in the form benchmarks/keep_sweep.py writes: named for the run,
    # without the per-round arrays, gzipped without a timestamp (the same run, the same bytes).
    from pybuild.bench import sweep_report

    assert SWEEPS, "no committed sweeps"
    size = 0
    for name in SWEEPS:
        path = RESULTS / name
        size += path.stat().st_size
        doc = sweep_report.read(path)
        assert doc["kind"] == "sweep" and "partial" not in doc, name
        assert Path(name).name == sweep_report.kept_name(doc), f"{name}: its run says {sweep_report.kept_name(doc)}"
        assert path.read_bytes() == sweep_report.kept_bytes(doc), f"{name}: not as benchmarks/keep_sweep.py writes it"
        assert not any("graph_rounds_us" in r for r in doc["results"]), f"{name}: keeps its per-round arrays"
    # three seeds of the three kernels on two GPU kinds come to about 0.9 MB (activation's 85 KB each)
    assert size < 1_000_000, f"benchmarks/results/sweeps/ holds {size} bytes; keep it under 1 MB"


def test_keep_sweep_writes_the_committed_form_and_refuses_a_partial_run(tmp_path: Path) -> None:
    from pybuild.bench import sweep_report

    committed = RESULTS / SWEEPS[-1]
    doc = sweep_report.read(committed)
    for r in doc["results"]:  # as bench --out writes it: with the rounds
        r["graph_rounds_us"] = {k: [v, v] for k, v in r["graph_us"].items()}
        r["plain_rounds_us"] = {k: [v] for k, v in r["plain_us"].items()}
    raw = tmp_path / "sweep.json"
    raw.write_text(json.dumps(doc, indent=1))

    def keep(*paths: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "benchmarks/keep_sweep.py", *map(str, paths), "--to", str(tmp_path / "kept")],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )

    proc = keep(raw)
    assert proc.returncode == 0, proc.stderr
    written = tmp_path / "kept" / committed.name
    assert proc.stdout.strip() == str(written)
    assert written.read_bytes() == committed.read_bytes()
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({**doc, "partial": {"shapes_done": 25, "shapes_planned": 200}}))
    written.unlink()
    proc = keep(raw, partial)
    assert proc.returncode == 2 and "a run that stopped early" in proc.stderr and "Traceback" not in proc.stderr
    assert not written.exists()  # nothing written when any file is refused


def test_the_table_script_prints_the_table_and_refuses_a_wrong_file(tmp_path: Path) -> None:
    result = RESULTS / "gpu-nvidia-h200.json"
    proc = subprocess.run(
        [sys.executable, "benchmarks/table.py", str(result)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == markdown_table(json.loads(result.read_text()))
    (tmp_path / "x.json").write_text("{}")
    proc = subprocess.run(
        [sys.executable, "benchmarks/table.py", str(tmp_path / "x.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2 and "not a readable bench result" in proc.stderr and "Traceback" not in proc.stderr


def test_the_table_script_reads_a_gzipped_sweep_and_refuses_a_broken_one(tmp_path: Path) -> None:
    from pybuild.bench import sweep_report

    result = RESULTS / SWEEPS[0]
    proc = subprocess.run(
        [sys.executable, "benchmarks/table.py", str(result)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == sweep_report.markdown_table(sweep_report.read(result))
    raw = bytearray(result.read_bytes())
    raw[20:40] = bytes(20)  # a valid gzip header over corrupt compressed data
    for name, data in (("broken.json.gz", bytes(raw)), ("plain.json.gz", b"{}")):
        (tmp_path / name).write_bytes(data)
        proc = subprocess.run(
            [sys.executable, "benchmarks/table.py", str(tmp_path / name)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 2 and "not a readable bench result" in proc.stderr, (name, proc.stderr)
        assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "text, message",
    [
        ("def cases(:\n", "line 1: cannot be loaded (SyntaxError"),
        ("X = 1\n", "defines no cases(kernel, device, quick) function"),
        ("raise ImportError('no triton')\n", "cannot be loaded (ImportError: no triton)"),
    ],
)
def test_a_broken_benchmark_file_is_one_usage_error(tmp_path, text: str, message: str) -> None:
    (tmp_path / "k" / "benchmarks").mkdir(parents=True)
    (tmp_path / "k" / "benchmarks" / "cases.py").write_text(text)
    with pytest.raises(UsageError, match=r"k/benchmarks/cases\.py") as info:
        load_cases_module(tmp_path / "k")
    assert message in str(info.value)


@pytest.mark.parametrize(
    "body, message",
    [
        ("return [1]", "cases() must return pybuild.bench.Case objects; got 1"),
        ("return 1 / 0", "cases() failed (ZeroDivisionError: division by zero)"),
    ],
)
def test_a_benchmark_whose_cases_fail_is_one_usage_error(tmp_path, body: str, message: str) -> None:
    (tmp_path / "k" / "benchmarks").mkdir(parents=True)
    (tmp_path / "k" / "benchmarks" / "cases.py").write_text(f"def cases(kernel, device, quick):\n    {body}\n")
    module = load_cases_module(tmp_path / "k")
    with pytest.raises(UsageError, match=r"k/benchmarks/cases\.py: ") as info:
        run([("k", object(), module)], "cpu", quick=True, compile_=False, command="test", log=lambda _: None)
    assert message in str(info.value)


@pytest.mark.parametrize(
    "broken, message",
    [
        ("make", "RuntimeError: make broke"),
        ("ours", "ValueError: ours broke"),
        ("eager", "TypeError: eager broke"),
    ],
)
def test_a_case_whose_code_raises_is_one_usage_error(tmp_path: Path, broken: str, message: str) -> None:
    (tmp_path / "k" / "benchmarks").mkdir(parents=True)
    error = message.split(":")[0]
    (tmp_path / "k" / "benchmarks" / "cases.py").write_text(f"""
import torch
from pybuild.bench import Case


def fail(*args):
    raise {error}("{broken} broke\\nsecond line")


def cases(kernel, device, quick):
    parts = dict(make=lambda seed: (torch.ones(4),), ours=lambda x: x + x, eager=lambda x: x * 2)
    parts["{broken}"] = fail
    return [Case(kernel="k", op="double", label="4", dtype="float32", bytes=32, **parts)]
""")
    module = load_cases_module(tmp_path / "k")
    with pytest.raises(UsageError) as info:
        run([("k", object(), module)], "cpu", quick=True, compile_=False, command="test", log=lambda _: None)
    assert str(info.value) == f"{tmp_path / 'k' / 'benchmarks' / 'cases.py'}: case double 4 float32: {message}"


def test_a_kernel_without_cases_is_one_usage_error_naming_the_file_to_add(tmp_path: Path) -> None:
    assert not has_cases(tmp_path / "k")
    with pytest.raises(UsageError, match=r"k/benchmarks/cases\.py: no bench cases for kernel k; add this file"):
        load_cases_module(tmp_path / "k")


@pytest.mark.parametrize("kernel", ["activation", "img2gray", "rms_norm"])
def test_every_kernel_keeps_its_cases_beside_its_tests_and_they_run_on_cpu(kernel: str) -> None:
    # Each kernel's cases file loads, gives Case objects for the CPU and SweepOps for the sweep;
    # the kernel itself is stood in for by the plain-torch reference (no build needed here).
    from pybuild.bench import SweepOp
    from pybuild.bench.cases import cases_of
    from pybuild.bench.sweep import sweep_ops_of

    kernel_dir = ROOT / "kernels" / kernel
    assert cases_path(kernel_dir) == kernel_dir / "benchmarks" / "cases.py" and has_cases(kernel_dir)
    module = load_cases_module(kernel_dir)

    reference = {  # ours = eager, so the check must pass
        "activation": lambda: SimpleNamespace(**{op: module._eager(op) for op in ACTIVATIONS}),
        "img2gray": lambda: SimpleNamespace(img2gray=module.eager),
        "rms_norm": lambda: SimpleNamespace(rms_norm=lambda x, w, eps: module.eager(x, w)),
    }[kernel]()
    cases = cases_of(module, reference, "cpu", quick=True)
    assert cases and all(isinstance(c, Case) and c.kernel == kernel for c in cases)
    ops = sweep_ops_of(module, reference, "cpu")
    assert ops and all(isinstance(o, SweepOp) for o in ops)
    r = run_case(cases[0], "cpu", 0, compile_=False, reps=1, copy_large=None, log=lambda _: None)
    assert "MISMATCH" not in r.check and r.timings["ours"].ms > 0


def test_the_cases_action_writes_the_json_prints_the_table_and_exits_0(tmp_path: Path, capsys) -> None:
    from pybuild.bench import Output, bench_cases
    from pybuild.ui import Reporter

    class Module:
        @staticmethod
        def cases(kernel, device, quick):
            return [case(device)]

    output = Output(out=tmp_path / "out", name="run", strict=True)
    assert (
        bench_cases(
            [("k", None, Module)],
            "cpu",
            quick=True,
            compile_=False,
            command="test",
            output=output,
            rep=Reporter(quiet=True),
        )
        == 0
    )  # targets are GPU targets: none judged, none missed
    doc = json.loads((tmp_path / "out" / "run.json").read_text())
    assert doc["command"] == "test" and doc["results"][0]["check"] == "exact"
    assert "256x256" in capsys.readouterr().out


@pytest.mark.parametrize("wrong", [False, True])
def test_the_sweep_action_exits_1_on_a_wrong_result(tmp_path: Path, wrong: bool) -> None:
    from pybuild.bench import Distribution, Output, SweepOp, bench_sweep
    from pybuild.ui import Reporter

    def make(shape, seed):
        return (torch.randn(*shape.dims, generator=torch.Generator().manual_seed(seed)),)

    op = SweepOp(
        kernel="k",
        op="double",
        kind="rows",
        dtypes=("float32",),
        make=make,
        ours=(lambda x: x * 2 + 1) if wrong else (lambda x: x + x),
        eager=lambda x: x * 2,
        bytes_of=lambda r, c, d: 8 * r * c,
    )

    class Module:
        __file__ = "kernels/k/benchmarks/cases.py"

        @staticmethod
        def sweep_ops(kernel, device):
            return [op]

    output = Output(out=tmp_path, json=True)
    rc = bench_sweep(
        [("k", None, Module)],
        "cpu",
        Distribution(seed=1, n=3, max_bytes=1 << 14),
        compile_=False,
        workers=0,
        command="test",
        output=output,
        rep=Reporter(quiet=True),
    )
    assert rc == (1 if wrong else 0)
    assert [p.suffix for p in sorted(tmp_path.iterdir())] == [".json", ".svg"]  # sweep-k-<cpu>.json and .svg
    assert json.loads(next(tmp_path.glob("sweep-k-*.json")).read_text())["summary"]["k double"]["correct"] == (
        0 if wrong else 3
    )


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_plain_calls_of_several_implementations_interleave_their_samples():
    from pybuild.bench.timing import time_cuda_launches

    calls: list[str] = []
    x = torch.ones(1 << 20, device="cuda")

    def light(t: torch.Tensor) -> torch.Tensor:
        calls.append("light")
        return t + 1

    def heavy(t: torch.Tensor) -> torch.Tensor:
        calls.append("heavy")
        for _ in range(20):
            t = t * 1.0001
        return t

    ms = time_cuda_launches([("light", light), ("heavy", heavy)], [(x,)], 4)
    assert set(ms) == {"light", "heavy"}
    assert 0 < ms["light"] < ms["heavy"]
    # 6 samples each (2 warm-up), one call per sample, the order reversed every other sample
    assert calls == ["light", "heavy", "heavy", "light"] * 3


def test_a_run_of_a_named_variant_records_it_and_is_kept_under_its_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    # A run that loads a variant by name (another torch than the machine's) must not take the name of
    # the machine's own run of that seed: its torch goes into the kept name.
    from pybuild.bench import sweep_report
    from pybuild.bench.environment import device_slug, environment

    monkeypatch.delenv("PYBUILD_TEST_VARIANT", raising=False)
    assert "variant" not in environment("cpu")
    monkeypatch.setenv("PYBUILD_TEST_VARIANT", "torch215-cxx11-cu132-x86_64-linux")
    assert environment("cpu")["variant"] == "torch215-cxx11-cu132-x86_64-linux"
    doc = sweep_report.read(RESULTS / "sweeps" / "sweep-activation-nvidia-h200-torch211-cxx11-cu130-seed2.json.gz")
    assert sweep_report.kept_name(doc) == "sweep-activation-nvidia-h200-torch211-cxx11-cu130-seed2.json.gz"
    del doc["environment"]["variant"]  # the machine's own run of that seed
    assert sweep_report.kept_name(doc) == "sweep-activation-nvidia-h200-seed2.json.gz"
    assert device_slug(doc) == "gpu-nvidia-h200"  # the default name of bench --out
    doc["environment"]["variant"] = "torch211-cxx11-cu126-x86_64-linux"  # another CUDA than the machine's
    assert sweep_report.kept_name(doc) == "sweep-activation-nvidia-h200-torch211-cxx11-cu126-seed2.json.gz"
    assert device_slug(doc) == "gpu-nvidia-h200-torch211-cxx11-cu126"
    doc["environment"]["variant"] = "torch-stable-abi211-cu130-x86_64-linux"  # run under torch 2.11
    kept = "sweep-activation-nvidia-h200-torch-stable-abi211-cu130-torch211-seed2.json.gz"
    assert sweep_report.kept_name(doc) == kept


def test_a_result_names_the_commit_each_loaded_build_came_from(tmp_path: Path) -> None:
    # A build carried to another machine runs in a checkout that may be at another commit: the
    # result records the build's own metadata.json, and the table's footer names the commit the
    # build was made at where it is not the result's source commit.
    from types import ModuleType

    from pybuild.bench import sweep_report
    from pybuild.bench.environment import builds_of

    def package(folder: Path, metadata: str | None) -> ModuleType:
        (folder / "pkg").mkdir(parents=True)
        if metadata is not None:
            (folder / "metadata.json").write_text(metadata)
        module = ModuleType("pkg")
        module.__file__ = str(folder / "pkg" / "__init__.py")
        return module

    made, last = "3b6ee1625d429b512ee2259a7532839627262f61", "c1d4618bbceebedc2cca9146013726abc1423b8a"
    meta = {
        "provenance": {
            "kernel-builder": {"version": "pybuild-0.1.0", "git": {"commit": made, "dirty": False}},
            "kernel": {"commit": last, "dirty": False},
        },
        "pybuild": {"variant": "torch211-cxx11-cu130-x86_64-linux", "source-hash": "ab12"},
    }
    fileless, empty_file = ModuleType("fileless"), ModuleType("empty_file")
    empty_file.__file__ = ""
    kernels = [
        ("rms_norm", package(tmp_path / "built", json.dumps(meta)), None),
        ("bare", package(tmp_path / "bare", None), None),
        ("listed", package(tmp_path / "listed", "[1, 2]"), None),
        ("fileless", fileless, None),
        ("empty_file", empty_file, None),
    ]
    builds = builds_of(kernels)
    assert builds == {
        "rms_norm": {
            "variant": "torch211-cxx11-cu130-x86_64-linux",
            "built-at": made,
            "built-dirty": False,
            "kernel-commit": last,
            "kernel-dirty": False,
            "source-hash": "ab12",
        },
        "bare": None,
        "listed": None,
        "fileless": None,
        "empty_file": None,
    }
    doc = sweep_report.read(RESULTS / "sweeps" / "sweep-activation-nvidia-h200-torch211-cxx11-cu130-seed2.json.gz")
    assert "built at" not in "\n".join(sweep_report.markdown_table(doc))  # a result from before the record
    doc["builds"] = builds
    assert f"; rms_norm built at {made}" in "\n".join(sweep_report.markdown_table(doc))
    doc["environment"]["git"] = made  # made at the source commit the result names: nothing to add
    assert "built at" not in "\n".join(sweep_report.markdown_table(doc))
    builds["rms_norm"]["kernel-dirty"] = True  # the kernel's sources differed from that commit
    assert f"; rms_norm built at {made}-dirty" in "\n".join(sweep_report.markdown_table(doc))
