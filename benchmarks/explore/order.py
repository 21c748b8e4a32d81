"""Does the order of the timing rounds, or where an implementation's outputs land, move the bench's numbers?

For the named bench cases (kernels built with pybuild, as `pybuild bench` loads them), times ours,
torch eager and static-shape torch.compile the bench's way (pybuild.bench.time_cuda_graph: one
graph per implementation, captured from an emptied allocator cache) under three schedules of
ROUNDS rounds each:
  - forward: every round in the same order (ours, eager, compile);
  - alternate: odd rounds reversed;
  - pooled: forward, but every graph of the case is captured into one shared memory pool that is
    not emptied between implementations;
and prints, per round and implementation, the time and where the outputs landed (output address
minus the first input's address, and the output's offset in its 2 MiB page). A fourth schedule,
"after", times each implementation right after torch eager and right after torch.compile (both
captured and released the bench's way), which is what the first three showed to matter.
--variants adds launcher variants of benchmarks/explore/duel_variants.cu (activation, img2gray,
rms_norm), each allocating its output as the shipped op does.

    python3 benchmarks/explore/order.py [--rounds 6] [--match "silu_and_mul 4096x8192 bfloat16,..."]
        [--schedules forward,alternate,pooled,after] [--variants "plain,evict-last"] [--out F]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pybuild.bench import _compile, load_cases_module, n_sets, round_order, time_cuda_graph, warm_up_cuda  # noqa: E402
from pybuild.testing import load_built_kernel  # noqa: E402
from duel import write_results  # noqa: E402

KERNELS = {"activation": "activation", "img2gray": "img2gray", "rms_norm": "rms_norm"}
DEFAULT_MATCH = ("silu_and_mul 4096x8192 bfloat16,silu_and_mul 1024x4096 float16,silu_and_mul 1024x4096 float32,"
                 "img2gray 4320x7680 uint8,rms_norm 524288x128 bfloat16")
PAGE = 2 << 20


def time_graph(fn, arg_sets, reps: int, pool=None, empty: bool = True) -> tuple[float, list[int]]:
    """pybuild.bench.time_cuda_graph, plus the outputs' addresses; ``pool`` shares a graph memory pool."""
    ptrs: list[int] = []
    ms = time_cuda_graph(fn, arg_sets, reps, pool=pool, release=empty, out_ptrs=ptrs)
    return ms, ptrs


def variant_impls(lib, case, wanted: list[str]) -> dict:
    """Launcher variants of duel_variants.cu for ``case`` (names matching ``wanted``), as callables."""
    from duel import ACTS, DTYPES, EPS, names

    stream = lambda: torch.cuda.current_stream().cuda_stream  # noqa: E731
    if case.kernel == "activation":
        act = case.op.removesuffix("_and_mul")
        if act not in ACTS:
            return {}
        all_names = names(lib.duel_act_name)

        def call(v, x):
            d = x.shape[-1] // 2
            y = torch.empty(*x.shape[:-1], d, device=x.device, dtype=x.dtype)
            return y, lib.duel_act(v, ACTS[act], DTYPES[x.dtype], y.data_ptr(), x.data_ptr(), x.numel() // (2 * d), d,
                                   stream())
    elif case.kernel == "img2gray":
        all_names = names(lib.duel_img_name)

        def call(v, x):
            y = torch.empty(x.shape[:-1], device=x.device, dtype=torch.uint8)
            return y, lib.duel_img(v, x.data_ptr(), y.data_ptr(), x.numel() // 3, stream())
    else:
        all_names = names(lib.duel_rms_name)

        def call(v, x, w):
            y = torch.empty_like(x)
            return y, lib.duel_rms(v, DTYPES[x.dtype], y.data_ptr(), x.data_ptr(), w.data_ptr(),
                                   x.numel() // x.shape[-1], x.shape[-1], EPS, stream())
    impls = {}
    for v, name in enumerate(all_names):
        if v == 0 or not any(w and (name == w[1:] if w.startswith("=") else w in name) for w in wanted):
            continue

        def fn(*inputs, v=v, name=name):
            y, rc = call(v, *inputs)
            if rc != 0:
                raise ValueError(f"{name}: {rc}")
            return y
        impls[f"v{v} {name}"] = fn
    return impls


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--match", default=DEFAULT_MATCH, help="comma-separated '<op> <label> <dtype>' of bench cases")
    ap.add_argument("--schedules", default="forward,alternate,pooled")
    ap.add_argument("--variants", default="", help="comma-separated texts: duel variants whose name contains one "
                                                   "(=NAME: exactly NAME)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    wanted = [m.strip() for m in args.match.split(",") if m.strip()]
    lib = None
    if args.variants:
        import tempfile

        from duel import build

        tmp = tempfile.TemporaryDirectory()
        lib = build(Path(tmp.name))
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    warm_up_cuda(2.0)
    torch.cuda.empty_cache()
    results = []
    for name, python_name in KERNELS.items():
        module = load_cases_module(ROOT, python_name)
        kernel = load_built_kernel(ROOT / "kernels" / name)
        for case in module.cases(kernel, "cuda", False):
            key = f"{case.op} {case.label} {case.dtype}"
            if key not in wanted:
                continue
            arg_sets = [case.make(seed) for seed in range(n_sets("cuda", case.bytes, l2))]
            first_in = arg_sets[0][0].data_ptr()
            impls = {"ours": case.ours, "eager": case.eager, "compile": _compile(case.eager)}
            extra = variant_impls(lib, case, args.variants.split(",")) if lib is not None else {}
            expect = case.eager(*arg_sets[0])
            for name, fn in list(extra.items()):
                try:
                    got = fn(*arg_sets[0])
                except ValueError:
                    del extra[name]
                    continue
                if not torch.allclose(got.float(), expect.float(), atol=case.atol, rtol=case.rtol):
                    print(f"  {name}: MISMATCH", flush=True)
            row = {"case": key, "bytes": case.bytes, "sets": len(arg_sets), "schedules": {}}
            print(f"\n{key} ({case.bytes / 1e6:.1f} MB/call, {len(arg_sets)} sets)", flush=True)
            if "after" in args.schedules.split(","):
                timed = {"ours": case.ours, **extra, "compile": impls["compile"]}
                after = {name: {"eager": [], "compile": []} for name in timed}
                for r in range(args.rounds):
                    for name, fn in timed.items():
                        for before in ("eager", "compile"):
                            time_graph(impls[before], arg_sets, args.reps)
                            after[name][before].append(time_graph(fn, arg_sets, args.reps)[0])
                for name, t in after.items():
                    e, c = statistics.median(t["eager"]), statistics.median(t["compile"])
                    print(f"  after     {name:34} after eager {e * 1e3:8.2f} us  after compile {c * 1e3:8.2f} us  "
                          f"rounds {' '.join(f'{x * 1e3:.1f}' for x in t['eager'])} | "
                          f"{' '.join(f'{x * 1e3:.1f}' for x in t['compile'])}", flush=True)
                row["schedules"]["after"] = after
            for schedule in [s for s in args.schedules.split(",") if s in ("forward", "alternate", "pooled")]:
                pool = torch.cuda.graph_pool_handle() if schedule == "pooled" else None
                rounds = []
                for r in range(args.rounds):
                    order = round_order(list(impls), r) if schedule == "alternate" else list(impls)
                    entry = {}
                    for impl in order:
                        ms, ptrs = time_graph(impls[impl], arg_sets, args.reps, pool, empty=pool is None)
                        entry[impl] = {"ms": ms, "out_minus_in": [p - first_in for p in ptrs],
                                       "page_offset": [p % PAGE for p in ptrs]}
                    rounds.append({"order": order, **entry})
                    print(f"  {schedule:9} r{r} " + "  ".join(
                        f"{impl} {entry[impl]['ms'] * 1e3:8.2f} us @{entry[impl]['out_minus_in'][0] / 2**20:+9.1f} MiB"
                        for impl in impls) + f"   ours/compile {entry['compile']['ms'] / entry['ours']['ms']:.3f}",
                        flush=True)
                if pool is not None:
                    torch.cuda.synchronize()
                    torch.cuda.empty_cache()
                med = {impl: statistics.median(r[impl]["ms"] for r in rounds) for impl in impls}
                print(f"  {schedule:9} medians: " + "  ".join(f"{k} {v * 1e3:.2f} us" for k, v in med.items())
                      + f"   compile/ours {med['compile'] / med['ours']:.3f}", flush=True)
                row["schedules"][schedule] = {"rounds": rounds, "median_ms": med}
            results.append(row)
            del arg_sets
            torch.cuda.empty_cache()
    write_results(args.out, "order.py", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
