"""How much does where the output lands move each launcher variant's time?

For activation and rms_norm cases, times launcher variants of benchmarks/explore/duel_variants.cu
(the shipped one, v0, and those named by --variants) with their outputs placed at fixed offsets in
one buffer (the same placements for every variant), and static-shape torch.compile, which
allocates its own outputs, captured into one shared graph pool (after a discarded first capture)
so it keeps one placement. The bench's timing otherwise (pybuild.bench.time_cuda_graph's method:
inputs rotated past 3x L2, one graph per implementation, median of replays). Prints per variant the
median, best and worst placement.

    python3 benchmarks/explore/sensitivity.py [--variants "plain,cs"] [--match "silu_and_mul bfloat16 4096x8192"]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from duel import ACTS, DTYPES, EPS, act_ref, build, names, rms_ref, write_results  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pybuild.bench import n_sets, time_cuda_graph, warm_up_cuda  # noqa: E402

MiB = 1 << 20
OFFSETS = (0, 2 * MiB, 6 * MiB, 10 * MiB, 18 * MiB, 34 * MiB, 66 * MiB, 64 * 1024, 1 * MiB + 4096)
CASES = (  # (family, op, dtype, rows, cols): cols = d for activations, hidden for rms_norm
    ("act", "silu", torch.bfloat16, 4096, 8192),
    ("act", "silu", torch.float16, 1024, 4096),
    ("act", "silu", torch.float32, 1024, 4096),
    ("act", "silu", torch.bfloat16, 8192, 14336),
    ("rms", "rms_norm", torch.bfloat16, 524288, 128),
    ("rms", "rms_norm", torch.float32, 262144, 128),
)


def graph_ms(fn, arg_sets, reps: int = 30, pool=None) -> float:
    """pybuild.bench.time_cuda_graph without releasing the allocator's cache (the buffer stays put)."""
    return time_cuda_graph(fn, arg_sets, reps, pool=pool, release=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default="plain",
                    help="comma-separated texts: variants whose name contains one (=NAME: exactly NAME); v0 always")
    ap.add_argument("--match", default="", help="comma-separated texts: only cases whose label contains one")
    ap.add_argument("--rounds", type=int, default=2, help="timings per variant and placement (median taken)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    stream = lambda: torch.cuda.current_stream().cuda_stream  # noqa: E731
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        lib = build(Path(tmp))
        warm_up_cuda(2.0)
        torch.cuda.empty_cache()
        for family, op, dtype, rows, cols in CASES:
            label = f"{'silu_and_mul' if family == 'act' else op} {str(dtype)[6:]} {rows}x{cols}"
            if args.match and not any(m in label for m in args.match.split(",")):
                continue
            esize = torch.empty((), dtype=dtype).element_size()
            g = torch.Generator(device="cuda")
            if family == "act":
                nbytes = 3 * rows * cols * esize
                make = lambda s: (torch.randn(rows, 2 * cols, device="cuda", dtype=dtype,  # noqa: E731
                                              generator=g.manual_seed(s)),)
                out_shape, ref, all_names = (rows, cols), act_ref(op), names(lib.duel_act_name)
            else:
                nbytes = (2 * rows * cols + cols) * esize
                make = lambda s: (torch.randn(rows, cols, device="cuda", dtype=dtype, generator=g.manual_seed(s)),  # noqa: E731
                                  torch.rand(cols, device="cuda", dtype=dtype, generator=g.manual_seed(s + 99)) + 0.5)
                out_shape, ref, all_names = (rows, cols), rms_ref, names(lib.duel_rms_name)
            sets = [make(s) for s in range(n_sets("cuda", nbytes, l2))]
            wanted = {f"v{v} {n}": v for v, n in enumerate(all_names)
                      if v == 0 or any(w and (n == w[1:] if w.startswith("=") else w in n)
                                       for w in args.variants.split(","))}
            out_bytes = rows * cols * esize
            stride = (out_bytes + 2 * MiB - 1) // (2 * MiB) * (2 * MiB) + 4 * MiB
            buf = torch.empty(max(OFFSETS) + len(sets) * stride + 2 * MiB, dtype=torch.uint8, device="cuda")
            base = (buf.data_ptr() + 2 * MiB - 1) // (2 * MiB) * (2 * MiB) - buf.data_ptr()
            expect = ref(*sets[0])

            def launcher(v: int, outs, sets=sets):
                def fn(*inputs):
                    y = outs[next(i for i, s in enumerate(sets) if s[0] is inputs[0])]
                    if family == "act":
                        rc = lib.duel_act(v, ACTS[op], DTYPES[dtype], y.data_ptr(), inputs[0].data_ptr(), rows, cols,
                                          stream())
                    else:
                        rc = lib.duel_rms(v, DTYPES[dtype], y.data_ptr(), inputs[0].data_ptr(), inputs[1].data_ptr(),
                                          rows, cols, EPS, stream())
                    if rc != 0:
                        raise ValueError(f"variant {v}: {rc}")
                    return y
                return fn

            row = {"case": label, "bytes": nbytes, "sets": len(sets), "offsets": list(OFFSETS), "variants": {}}
            print(f"\n{label} ({nbytes / 1e6:.1f} MB/call, {len(sets)} sets)", flush=True)
            compiled = torch.compile(ref, dynamic=False, fullgraph=True)
            pool = torch.cuda.graph_pool_handle()
            graph_ms(compiled, sets, pool=pool)  # the pool's first capture, discarded
            for name, v in list(wanted.items()):
                per_offset = []
                for off in OFFSETS:
                    outs = [buf[base + off + i * stride: base + off + i * stride + out_bytes].view(dtype).view(out_shape)
                            for i in range(len(sets))]
                    fn = launcher(v, outs)
                    try:
                        got = fn(*sets[0])
                    except ValueError:
                        del wanted[name]
                        break
                    tol = (1e-4, 1e-4) if dtype == torch.float32 else (2e-2, 3.2e-2)
                    if not torch.allclose(got.float(), expect.float(), atol=tol[0], rtol=tol[1]):
                        print(f"  {name}: MISMATCH", flush=True)
                    per_offset.append(statistics.median(graph_ms(fn, sets) for _ in range(args.rounds)))
                else:
                    row["variants"][name] = per_offset
                    print(f"  {name:34} median {statistics.median(per_offset) * 1e3:8.2f} us  best "
                          f"{min(per_offset) * 1e3:8.2f}  worst {max(per_offset) * 1e3:8.2f}  all "
                          + " ".join(f"{t * 1e3:.1f}" for t in per_offset), flush=True)
            comp = [graph_ms(compiled, sets, pool=pool) for _ in range(5)]
            row["compile_pooled"] = comp
            print(f"  {'compile (pooled)':34} median {statistics.median(comp) * 1e3:8.2f} us  best "
                  f"{min(comp) * 1e3:8.2f}  worst {max(comp) * 1e3:8.2f}", flush=True)
            results.append(row)
            del sets, buf, compiled
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    write_results(args.out, "sensitivity.py", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
