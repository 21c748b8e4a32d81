"""Check and time chosen shapes the way ``python -m pybuild bench --sweep`` does (ours, torch eager
and the static ``torch.compile``; the default compile is left out), for quick kernel iterations.

    python3 benchmarks/sweep_picked.py SHAPES.json [activation|rms_norm ...]

SHAPES.json is a list of [op, [rows, last], dtype]; the kernels must be built (pybuild build).
Prints one line per shape and a summary; the sweep's result entries go to $OUT/quick.json
(OUT defaults to /tmp).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, os.getcwd())
from pybuild.bench import Shape, load_cases_module, sweep  # noqa: E402
from pybuild.bench.compile_workers import compile_static, warm_compiles  # noqa: E402
from pybuild.bench.runner import configure_dynamo  # noqa: E402
from pybuild.bench.timing import warm_up_cuda  # noqa: E402
from pybuild.testing import load_built_kernel  # noqa: E402


def main() -> None:
    picked = json.load(open(sys.argv[1]))
    only = sys.argv[2:] or None
    root = Path.cwd()
    ops = {}
    for name in ("activation", "rms_norm"):
        if only and name not in only:
            continue
        kernel = load_built_kernel(root / "kernels" / name, build=False)
        module = load_cases_module(root / "kernels" / name)
        for op in sweep.sweep_ops_of(module, kernel, "cuda"):
            ops[op.op] = (op, module)
    todo = []
    for opname, dims, dtype in picked:
        if opname in ops:
            op, module = ops[opname]
            todo.append((op, Shape(tuple(dims), dtype, "picked", op.bytes_of(dims[0], dims[1], dtype)), module))
    modules = {m.__name__.split("_pybuild_bench_")[-1]: str(m.__file__) for _, _, m in todo}
    configure_dynamo(1 << 16)
    print(warm_compiles([(o, s) for o, s, _ in todo], modules, 12, print))
    warm_up_cuda(1.0)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    out = []
    for op, shape, _ in todo:
        impls = {"ours": op.ours, "eager": op.eager, "compile-static": compile_static(op.eager)}
        r = sweep.run_shape(op, shape, impls, "cuda", l2)
        out.append(r)
        g = r["graph_us"]
        print(f"{op.op[:10]:11}{shape.dtype[:5]:6}{shape.label:16} {'ok' if r['correct'] else 'WRONG'} "
              f"g={r['graph_ratio']:.3f} p={r['plain_ratio']:.3f} ours={g['ours']:.2f} "
              f"cs={g['compile-static']:.2f} eag={g['eager']:.2f}", flush=True)
    json.dump(out, open(os.path.join(os.environ.get("OUT", "/tmp"), "quick.json"), "w"))
    bad = [r for r in out if r["graph_ratio"] < 0.95 or r["plain_ratio"] < 1 or not r["correct"]]
    print("SUMMARY", len(out), "shapes,", len(bad), "below")
    for r in bad:
        print("  BELOW", r["op"], r["dtype"], r["label"], round(r["graph_ratio"], 3), round(r["plain_ratio"], 3),
              r["correct"])


if __name__ == "__main__":
    main()
