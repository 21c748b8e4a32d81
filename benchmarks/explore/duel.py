"""Launcher variants of activation, img2gray and rms_norm against torch.compile, in one process, same tensors.

Builds benchmarks/explore/duel_variants.cu into a shared library (nvcc), then for each case times
the static-shape torch.compile baseline and every variant that supports the shape, in ROUNDS
interleaved rounds, odd ones in reverse order (pybuild.bench's CUDA-graph timing: inputs rotated
past 3x L2, median of replays), and prints per implementation the best and the median round and
the ratio to compile. Needs a CUDA torch and nvcc; no kernel build.

    python3 benchmarks/explore/duel.py [--rounds 5] [--out results.json]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pybuild.bench import n_sets, round_order, time_cuda_graph, warm_up_cuda  # noqa: E402

DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
ACTS = {"silu": 0, "gelu": 1}
EPS = 1e-6

ACT_CASES = [
    ("silu", torch.bfloat16, 128, 4096),
    ("silu", torch.bfloat16, 1024, 4096),
    ("gelu", torch.bfloat16, 128, 4096),
    ("gelu", torch.bfloat16, 1024, 4096),
    ("silu", torch.bfloat16, 4096, 8192),
    ("gelu", torch.bfloat16, 4096, 8192),
    ("silu", torch.float32, 4096, 8192),
    ("silu", torch.float32, 8192, 14336),
    ("silu", torch.bfloat16, 8192, 14336),
    ("gelu", torch.bfloat16, 8192, 14336),
    ("silu", torch.float32, 128, 4096),
    ("silu", torch.float32, 1024, 4096),
    ("silu", torch.float16, 128, 4096),
    ("silu", torch.float16, 1024, 4096),
    ("silu", torch.float16, 4096, 8192),
    ("silu", torch.float16, 8192, 14336),
]
IMG_CASES = [(1080, 1920), (2160, 3840), (4320, 7680), (8640, 15360)]
RMS_CASES = [
    (torch.bfloat16, 64, 4096),
    (torch.float32, 512, 4096),
    (torch.bfloat16, 4096, 4096),
    (torch.bfloat16, 524288, 128),
    (torch.float32, 262144, 128),
    (torch.bfloat16, 131072, 512),
    (torch.float32, 32768, 4096),
    (torch.float16, 32768, 4096),
    (torch.bfloat16, 8192, 8192),
    (torch.bfloat16, 65536, 1024),
    (torch.bfloat16, 16384, 4096),
    (torch.bfloat16, 4096, 16384),
]


def build(out_dir: Path) -> ctypes.CDLL:
    so = out_dir / "duel.so"
    src = ROOT / "benchmarks" / "explore" / "duel_variants.cu"
    t0 = time.monotonic()
    subprocess.run(["nvcc", "-O3", "-std=c++17", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", str(src), "-o",
                    str(so)], check=True)
    print(f"built {so.name} in {time.monotonic() - t0:.0f} s", flush=True)
    lib = ctypes.CDLL(str(so))
    lib.duel_act_name.restype = ctypes.c_char_p
    lib.duel_rms_name.restype = ctypes.c_char_p
    lib.duel_img_name.restype = ctypes.c_char_p
    lib.duel_img.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
    lib.duel_act.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                             ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    lib.duel_rms.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                             ctypes.c_int64, ctypes.c_int64, ctypes.c_float, ctypes.c_void_p]
    return lib


def recorded_command(script: str) -> str:
    """``python3 benchmarks/explore/<script> ARGS`` as run, shell-quoted, with absolute paths given
    as ``$OUT/<name>`` (the results record no machine paths)."""
    argv = [a if not a.startswith("/") else "$OUT/" + Path(a).name for a in sys.argv[1:]]
    return " ".join(a if a.startswith("$OUT/") else shlex.quote(a)
                    for a in ["python3", f"benchmarks/explore/{script}", *argv])


def write_results(out: Path | None, script: str, results: list, **extra) -> None:
    """Write ``results`` to ``out`` (if given) as JSON with the device, torch version and the
    command as run (recorded_command)."""
    if out is None:
        return
    doc = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, **extra,
           "command": recorded_command(script), "results": results}
    out.write_text(json.dumps(doc, indent=1) + "\n")


def names(fn) -> list[str]:
    out = []
    while (n := fn(len(out))) is not None:
        out.append(n.decode())
    return out


def act_ref(op: str):
    f = F.silu if op == "silu" else F.gelu

    def ref(x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1] // 2
        return f(x[..., :d]) * x[..., d:]

    return ref


def img_ref(x: torch.Tensor) -> torch.Tensor:
    """The skeleton's rounding rule: (21 R + 72 G + 7 B + 50) // 100, in int32."""
    w = torch.tensor([21, 72, 7], dtype=torch.int32, device=x.device)
    return ((x.to(torch.int32) * w).sum(-1) + 50).div(100, rounding_mode="floor").to(torch.uint8)


def rms_ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.rms_norm(x, (x.shape[-1],), w, EPS)


def duel(label: str, bytes_: int, arg_sets: list, impls: dict, ref, rounds: int, tol: tuple[float, float]) -> dict:
    expect = ref(*arg_sets[0])
    shipped = impls["v0 shipped"](*arg_sets[0])
    checks = {}
    for name, fn in list(impls.items()):
        try:
            got = fn(*arg_sets[0])
        except ValueError:
            del impls[name]
            continue
        torch.cuda.synchronize()
        ok = torch.allclose(got.float(), expect.float(), atol=tol[0], rtol=tol[1])
        checks[name] = ("ok" if ok else "MISMATCH") + (" =shipped" if torch.equal(got, shipped) else "")
    times: dict[str, list[float]] = {name: [] for name in impls}
    for r in range(rounds):
        for name, fn in round_order(list(impls.items()), r):  # odd rounds in reverse order
            times[name].append(time_cuda_graph(fn, arg_sets, 30))
    base = min(times["compile"])
    print(f"\n{label}  ({bytes_ / 1e6:.1f} MB/call, {len(arg_sets)} sets)  compile best {bytes_ / base / 1e6:.0f} GB/s")
    rows = {}
    for name, ts in sorted(times.items(), key=lambda kv: min(kv[1])):
        best, med = min(ts), statistics.median(ts)
        rows[name] = {"best_ms": best, "median_ms": med, "rounds_ms": ts, "gbps": bytes_ / best / 1e6,
                      "vs_compile_best": base / best, "vs_compile_median": statistics.median(times["compile"]) / med,
                      "check": checks.get(name, "")}
        print(f"  {name:34} {bytes_ / best / 1e6:7.0f} GB/s  best {best * 1e3:8.2f} µs  median {med * 1e3:8.2f} µs  "
              f"÷compile {base / best:5.3f} (median {rows[name]['vs_compile_median']:5.3f})  {checks.get(name, '')}",
              flush=True)
    return {"label": label, "bytes": bytes_, "sets": len(arg_sets), "impls": rows}


def variants(names: list[str], launch) -> dict:
    """One callable per variant of the library: ``launch(v, *inputs) -> (out, rc)``; an unsupported
    shape raises ValueError (the duel drops that variant), any other error RuntimeError."""
    impls = {}
    for v, name in enumerate(names):
        def fn(*inputs, v=v):
            out, rc = launch(v, *inputs)
            if rc == -2:
                raise ValueError("unsupported")
            if rc != 0:
                raise RuntimeError(f"variant {v}: error {rc}")
            return out
        impls[f"v{v} {name}"] = fn
    return impls


def cases(lib: ctypes.CDLL, only: str | None) -> list[tuple]:
    """(label, bytes per call, dtype, make(generator) -> inputs, reference, variant names, launch)."""
    out = []
    stream = lambda: torch.cuda.current_stream().cuda_stream  # noqa: E731 - the stream being captured
    for op, dtype, rows, d in ACT_CASES if only in (None, "act") else []:
        def make(g, rows=rows, d=d, dtype=dtype):
            return (torch.randn(rows, 2 * d, device="cuda", dtype=dtype, generator=g),)

        def launch(v, x, op=op):
            y = torch.empty(x.shape[0], x.shape[1] // 2, device=x.device, dtype=x.dtype)
            return y, lib.duel_act(v, ACTS[op], DTYPES[x.dtype], y.data_ptr(), x.data_ptr(), x.shape[0],
                                   x.shape[1] // 2, stream())

        esize = torch.empty((), dtype=dtype).element_size()
        out.append((f"{op}_and_mul {str(dtype)[6:]} {rows}x{d}", 3 * rows * d * esize, dtype, make, act_ref(op),
                    names(lib.duel_act_name), launch))
    for h, w in IMG_CASES if only in (None, "img") else []:
        def make(g, h=h, w=w):
            return (torch.randint(0, 256, (h, w, 3), device="cuda", dtype=torch.uint8, generator=g),)

        def launch(v, x):
            y = torch.empty(x.shape[:-1], device=x.device, dtype=torch.uint8)
            return y, lib.duel_img(v, x.data_ptr(), y.data_ptr(), x.numel() // 3, stream())

        out.append((f"img2gray {h}x{w}", 4 * h * w, torch.uint8, make, img_ref, names(lib.duel_img_name), launch))
    for dtype, rows, hidden in RMS_CASES if only in (None, "rms") else []:
        def make(g, rows=rows, hidden=hidden, dtype=dtype):
            return (torch.randn(rows, hidden, device="cuda", dtype=dtype, generator=g),
                    torch.rand(hidden, device="cuda", dtype=dtype, generator=g) + 0.5)

        def launch(v, x, w):
            y = torch.empty_like(x)
            return y, lib.duel_rms(v, DTYPES[x.dtype], y.data_ptr(), x.data_ptr(), w.data_ptr(), x.shape[0],
                                   x.shape[1], EPS, stream())

        esize = torch.empty((), dtype=dtype).element_size()
        out.append((f"rms_norm {str(dtype)[6:]} {rows}x{hidden}", (2 * rows * hidden + hidden) * esize, dtype, make,
                    rms_ref, names(lib.duel_rms_name), launch))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--only", choices=("act", "img", "rms"), default=None)
    ap.add_argument("--match", default="", help="comma-separated texts: only the cases whose label contains one")
    ap.add_argument("--variants", default="",
                    help="comma-separated texts: only the variants whose name contains one (the shipped one always)")
    args = ap.parse_args()
    torch._dynamo.config.cache_size_limit = 4096
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    with tempfile.TemporaryDirectory() as tmp:
        lib = build(Path(tmp))
        results = []
        warm_up_cuda(2.0)
        for label, nbytes, dtype, make, ref, variant_names, launch in cases(lib, args.only):
            if not any(m in label for m in args.match.split(",")):
                continue
            sets = n_sets("cuda", nbytes, l2)
            arg_sets = [make(torch.Generator(device="cuda").manual_seed(seed)) for seed in range(sets)]
            impls = {"compile": torch.compile(ref, dynamic=False, fullgraph=True), **variants(variant_names, launch)}
            if args.variants:
                wanted = args.variants.split(",")
                impls = {k: f for k, f in impls.items()
                         if k in ("compile", "v0 shipped") or any(w in k for w in wanted)}
            tol = {torch.float32: (1e-4, 1e-4), torch.uint8: (0, 0)}.get(dtype, (2e-2, 3.2e-2))
            results.append(duel(label, nbytes, arg_sets, impls, ref, args.rounds, tol))
            del arg_sets
            torch.cuda.empty_cache()
    write_results(args.out, "duel.py", results, rounds=args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
