"""Does where the output lands (relative to the input) move rms_norm's time at hidden 128?

Times rms_norm launcher variants (benchmarks/explore/duel_variants.cu: the shipped one and those
named by --variants), a device copy and static-shape torch.compile on bf16 524288x128, first as
the bench captures them (outputs from the graph's pool; their addresses printed), then with the
outputs placed at fixed offsets in one buffer (torch.compile cannot be given its output, so only
the launchers and the copy there).

    python3 benchmarks/explore/placement.py [--rounds 5] [--variants frontiers,scattered]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from duel import EPS, build, names, recorded_command, rms_ref  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pybuild.bench import time_cuda_graph  # noqa: E402

ROWS, HIDDEN = 524288, 128
OFFSETS = (0, 256, 4096, 65536, 1 << 20, 3 << 20, 5 << 20, 7 << 20)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--variants", default="frontiers,scattered")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lib = build(Path(tmp))
        all_names = names(lib.duel_rms_name)
        wanted = {f"v{v} {n}": v for v, n in enumerate(all_names)
                  if v == 0 or any(w and w in n for w in args.variants.split(","))}
        stream = lambda: torch.cuda.current_stream().cuda_stream  # noqa: E731
        g = torch.Generator(device="cuda").manual_seed(0)
        sets = [(torch.randn(ROWS, HIDDEN, device="cuda", dtype=torch.bfloat16, generator=g),
                 torch.rand(HIDDEN, device="cuda", dtype=torch.bfloat16, generator=g) + 0.5) for _ in range(2)]
        nbytes = 2 * ROWS * HIDDEN * 2
        seen: dict[str, list[int]] = {}

        def launcher(v: int, name: str):
            def fn(x, w, y=None):
                y = torch.empty_like(x) if y is None else y
                rc = lib.duel_rms(v, 2, y.data_ptr(), x.data_ptr(), w.data_ptr(), ROWS, HIDDEN, EPS, stream())
                assert rc == 0, f"{name}: {rc}"
                seen.setdefault(name, []).append(y.data_ptr())
                return y
            return fn

        impls = {name: launcher(v, name) for name, v in wanted.items()}
        compiled = torch.compile(rms_ref, dynamic=False, fullgraph=True)

        def comp(x, w):
            y = compiled(x, w)
            seen.setdefault("compile", []).append(y.data_ptr())
            return y

        def copy(x, w, y=None):
            y = torch.empty_like(x) if y is None else y
            y.copy_(x)
            seen.setdefault("copy", []).append(y.data_ptr())
            return y

        expect = rms_ref(*sets[0])
        for name, fn in impls.items():
            torch.testing.assert_close(fn(*sets[0]), expect, atol=2e-2, rtol=3.2e-2, msg=name)
        a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
        b = torch.empty_like(a)
        for _ in range(200):
            b.copy_(a)
        del a, b
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        xs = [x.data_ptr() for x, _ in sets]
        print("inputs at", [hex(p) for p in xs])
        doc = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "case": "bf16 524288x128",
               "command": recorded_command("placement.py"), "bench_style": {},
               "offsets": {}}
        everyone = {"compile": comp, "copy": copy, **impls}
        times = {k: [] for k in everyone}
        for _ in range(args.rounds):
            for k, fn in everyone.items():
                seen.pop(k, None)
                times[k].append(time_cuda_graph(fn, sets, 30))
        base = statistics.median(times["compile"])
        for k, ts in times.items():
            med = statistics.median(ts)
            outs = seen[k][-2:]
            doc["bench_style"][k] = {"rounds_ms": ts, "out_minus_in": [o - i for o, i in zip(outs, xs)]}
            print(f"bench-style {k:36} median {med * 1e3:7.2f} us ({nbytes / med / 1e6:5.0f} GB/s, "
                  f"÷compile {base / med:5.3f}) rounds {' '.join(f'{t * 1e3:.2f}' for t in ts)}  "
                  f"out - in {[hex(o - i) for o, i in zip(outs, xs)]}", flush=True)
        half = nbytes // 2
        pool = torch.empty(2 * half + (24 << 20), dtype=torch.uint8, device="cuda")
        base_off = (pool.data_ptr() + (2 << 20) - 1) // (2 << 20) * (2 << 20) - pool.data_ptr()
        for off in OFFSETS:
            outs = []
            for i in range(2):
                start = base_off + off + i * (half + (4 << 20))
                outs.append(pool[start:start + half].view(torch.bfloat16).view(ROWS, HIDDEN))
            row = {}
            for k, fn in {"copy": copy, **impls}.items():
                def at(x, w, fn=fn, outs=outs):
                    fn(x, w, outs[0] if x is sets[0][0] else outs[1])
                row[k] = [time_cuda_graph(at, sets, 30) for _ in range(args.rounds)]
            doc["offsets"][off] = row
            print(f"offset {off:>8}: " + "  ".join(f"{k.split(' ', 1)[-1]} {statistics.median(ts) * 1e3:6.2f}"
                                                  for k, ts in row.items()), flush=True)
        # the mean over placements, per implementation
        for k in ["copy", *impls]:
            meds = [statistics.median(doc["offsets"][o][k]) for o in OFFSETS]
            print(f"over {len(OFFSETS)} placements: {k:36} mean {statistics.mean(meds) * 1e3:6.2f} us, "
                  f"worst {max(meds) * 1e3:6.2f} us")
        if args.out:
            args.out.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
