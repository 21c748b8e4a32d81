"""The sweep's compile workers: every (op, shape) compiled statically in worker processes first.

The static compiles are the slow part of a sweep (one Inductor compile per shape), so on CUDA
worker processes compile every shape before timing, filling Inductor's on-disk caches; the timing
process then finds them there. The workers do not keep autotuning results
(``autotune_local_cache`` off): the timing process tunes each kernel on a quiet device, as a
user's first call would.
"""

from __future__ import annotations

import os
import time
import types
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .sweep_op import SweepOp
    from .sweep_shapes import Shape

_WORKER_OPS: dict[tuple[str, str], SweepOp] = {}


def fresh(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` under a code object of its own: Dynamo keeps its compiled graphs per code object, so a
    static compile of it holds one shape and its guards stay one entry long."""
    code = fn.__code__.replace()
    return types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


def compile_static(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.compile(fn, dynamic=False)`` on a fresh code object: compiled for one shape."""
    import torch

    return torch.compile(fresh(fn), dynamic=False)


def default_workers() -> int:
    return max(1, min(12, (os.cpu_count() or 2) - 2))


def _worker_init(modules: dict[str, str]) -> None:
    import importlib.util

    import torch

    torch._inductor.config.autotune_local_cache = False  # the timing process tunes on a quiet device
    for name, path in modules.items():
        spec = importlib.util.spec_from_file_location(f"_pybuild_sweep_{name}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for op in module.sweep_ops(None, "cuda"):
            _WORKER_OPS[(op.kernel, op.op)] = op


def _worker_compile(key: tuple[str, str], shape: Shape) -> float:
    import torch

    t0 = time.monotonic()
    op = _WORKER_OPS[key]
    args = op.make(shape, 0)
    compile_static(op.eager)(*args)
    torch.cuda.synchronize()
    return time.monotonic() - t0


def warm_compiles(
    jobs: Sequence[tuple[SweepOp, Shape]], modules: dict[str, str], workers: int, log: Callable[[str], None]
) -> dict[str, Any]:
    """Compile every (op, shape) statically in ``workers`` processes, filling the on-disk caches.
    ``modules`` maps each kernel's name to its benchmarks/cases.py, which the workers import."""
    t0 = time.monotonic()
    if workers <= 0 or not jobs:
        return {"workers": 0, "compiles": 0, "seconds": 0.0}
    import multiprocessing

    saved = os.environ.get("TORCHINDUCTOR_COMPILE_THREADS")
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"  # the workers are the parallelism
    failed = 0
    try:
        with ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_init, initargs=(modules,)
        ) as pool:
            futures = [pool.submit(_worker_compile, (op.kernel, op.op), shape) for op, shape in jobs]
            for i, f in enumerate(futures, 1):
                try:
                    f.result()
                except Exception as e:  # noqa: BLE001 - the timing process compiles it again and reports
                    failed += 1
                    log(f"  compile worker: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
                if i % 100 == 0 or i == len(futures):
                    log(f"compiled {i} of {len(futures)} shapes in {time.monotonic() - t0:.0f} s ({workers} workers)")
    finally:
        if saved is None:
            os.environ.pop("TORCHINDUCTOR_COMPILE_THREADS", None)
        else:
            os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = saved
    return {"workers": workers, "compiles": len(jobs), "failed": failed, "seconds": round(time.monotonic() - t0, 1)}
