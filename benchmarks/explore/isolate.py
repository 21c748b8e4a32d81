"""Run one `pybuild bench` case alone, with more rounds, and log where each round's outputs landed.

For cases whose rounds were bimodal inside the full bench run: alone, the allocator state differs
from the one after dozens of earlier cases, so this tells a slow kernel from an unlucky placement.

    python3 benchmarks/explore/isolate.py activation silu_and_mul 4096x8192 bfloat16 [--rounds 9]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pybuild import bench  # noqa: E402
from pybuild.testing import load_built_kernel  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernel", help="kernel folder name under kernels/, e.g. activation")
    ap.add_argument("op")
    ap.add_argument("label", help="shape label as in the bench JSON, e.g. 4096x8192")
    ap.add_argument("dtype", help="e.g. bfloat16")
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    kernel = load_built_kernel(ROOT / "kernels" / args.kernel)
    module = bench.load_cases_module(ROOT, args.kernel)
    found = [c for c in module.cases(kernel, "cuda", False)
             if (c.op, c.label, c.dtype) == (args.op, args.label, args.dtype)]
    if not found:
        print(f"no case {args.op} {args.label} {args.dtype} in benchmarks/{args.kernel}.py", file=sys.stderr)
        return 2
    case = found[0]
    placements: list[tuple[str, str]] = []
    ours = case.ours

    def logged(*inputs):
        out = ours(*inputs)
        if torch.cuda.is_current_stream_capturing():
            placements.append((hex(inputs[0].data_ptr()), hex(out.data_ptr())))
        return out

    case.ours = logged
    bench.ROUNDS = args.rounds
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    result = bench.run_case(case, "cuda", l2, True, 30, None, lambda _: None)
    print(f"{args.kernel} {args.op} {args.label} {args.dtype}, {args.rounds} rounds (µs per call):")
    for name in ("ours", "compile", "copy_same"):
        print(f"  {name:10} {[round(ms * 1e3, 2) for ms in result.timings[name].rounds_ms]}")
    print(f"  ours / compile (medians): {result.ratios['compile']:.3f}")
    print(f"  (input, output) addresses of ours per captured call: {sorted(set(placements))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
