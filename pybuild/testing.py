"""Helpers for a kernel's own test-suite (``kernels/<name>/tests/``): build the host variant if
needed, then load it the way the ``kernels`` loader does.

``load_built_kernel`` uses the real ``kernels`` package when it is installed (so the suite also
proves the build loads there) and otherwise imports the variant the same way the loader does
(``build/<variant>/<python_name>/__init__.py`` under the module name ``metadata.id``): machines
without ``kernels`` (a bare GPU host) still run every kernel test.

With ``PYBUILD_TEST_VARIANT=<variant>`` (set by ``python -m pybuild test --variant``, or by hand on
a machine that received built variants) nothing is built: that variant's folder is loaded as built.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from . import backends
from .host import kernel_host_variants
from .manifest import load_manifest


def ensure_built(kernel_dir: Path) -> None:
    """Build the host variants of ``kernel_dir`` (a no-op in well under a second when up to date);
    nothing with ``PYBUILD_TEST_VARIANT`` set, whose variant comes built."""
    if test_variant():
        return
    root = Path(__file__).resolve().parent.parent
    cmd = [sys.executable, "-m", "pybuild", "build", "-q", str(kernel_dir)]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"building {kernel_dir} failed:\n{proc.stdout}\n{proc.stderr}")


def test_variant() -> str | None:
    """The variant named by ``PYBUILD_TEST_VARIANT``, if any."""
    return os.environ.get("PYBUILD_TEST_VARIANT") or None


def torch_mismatch(variant_name: str, torch_version: str) -> str | None:
    """Why ``variant_name`` does not load under torch ``torch_version`` (one line), or None when it
    does: a variant loads under the minor it is built for (the C++ ABI is a minor's), a stable-ABI
    one under that minor and every later one, a pure-Python or tvm-ffi one under any."""
    from packaging.version import Version

    from .variants import parse_variant_name

    variant = parse_variant_name(variant_name)
    if variant.noarch or variant.tvm_ffi:
        return None
    have = Version(torch_version).release[:2]
    if have == variant.torch_tuple or (variant.stable_abi and have > variant.torch_tuple):
        return None
    later = " or later" if variant.stable_abi else ""
    return f"{variant_name} needs torch {variant.torch}{later}, and torch {torch_version} imports here"


def variant_dir_for(kernel_dir: Path, backend: str | None = None) -> Path:
    """The built variant this process would load: the one ``PYBUILD_TEST_VARIANT`` names, else that of
    ``backend``, else the most capable host variant whose device torch sees here (CUDA over CPU)."""
    named = test_variant()
    if named:
        found = kernel_dir / "build" / named
        if not (found / "metadata.json").is_file():
            raise RuntimeError(
                f"PYBUILD_TEST_VARIANT={named}: {found} is not built; build it first "
                f"(python -m pybuild build {kernel_dir} --variant {named})"
            )
        return found
    manifest = load_manifest(kernel_dir)
    variants = kernel_host_variants(manifest)
    if backend is None:
        usable = [backends.get(v.backend) for v in variants if backends.get(v.backend).device_available()]
        devices = [b for b in usable if b.device_module is not None]  # an accelerator over the CPU
        if not usable:
            raise RuntimeError(f"{kernel_dir}: no host variant runs here (host: {[v.name for v in variants]})")
        backend = (devices or usable)[0].name
    for v in variants:
        if v.backend == backend:
            return kernel_dir / "build" / v.name
    raise RuntimeError(f"{kernel_dir}: no host variant with backend {backend} (host: {[v.name for v in variants]})")


def _import_variant(variant_dir: Path) -> ModuleType:
    meta = json.loads((variant_dir / "metadata.json").read_text())
    module_id = meta["id"]
    if module_id in sys.modules:
        return sys.modules[module_id]
    init = variant_dir / meta["name"].replace("-", "_") / "__init__.py"
    spec = importlib.util.spec_from_file_location(module_id, init)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_id] = module
    spec.loader.exec_module(module)
    return module


def load_built_kernel(kernel_dir: Path, backend: str | None = None, build: bool = True) -> ModuleType:
    """Build (if needed) and load ``kernel_dir``'s host variant; CUDA where a GPU is present."""
    kernel_dir = Path(kernel_dir).resolve()
    if build and not test_variant():
        ensure_built(kernel_dir)
    variant_dir = variant_dir_for(kernel_dir, backend)
    try:
        import kernels

        get_local_kernel = kernels.get_local_kernel
    except (ImportError, AttributeError):
        return _import_variant(variant_dir)
    return get_local_kernel(variant_dir)


def run_on_stream_or_graph(fn: Callable[[], Any], *, graph: bool, reps: int) -> Iterator[Any]:
    """Yield ``fn()``'s outputs ``reps`` times: ``fn`` called on the current stream each time, or,
    with ``graph``, captured once in a CUDA graph (whose capture keeps the programmatic
    dependent-launch edges between kernels) and the graph replayed each time."""
    import torch

    if not graph:
        for _ in range(reps):
            yield fn()
        return
    torch.cuda.synchronize()
    cuda_graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(cuda_graph):
        outs = fn()
    for _ in range(reps):
        cuda_graph.replay()
        yield outs


def failed_checks(checks: dict[str, tuple[Any, Any]], atol: float = 0.0, rtol: float = 0.0) -> list[str]:
    """``name: N of M wrong`` for each ``name: (got, expected)`` tensor pair that is not close
    (``torch.isclose`` in float32; exact by default), so one assertion can report every check."""
    import torch

    bad = []
    for name, (got, want) in checks.items():
        close = torch.isclose(got.float(), want.float(), atol=atol, rtol=rtol)
        if not bool(close.all()):
            bad.append(f"{name}: {int((~close).sum())} of {close.numel()} wrong")
    return bad


def check_each_time(
    chain: Callable[[], Any],
    checks: Callable[..., dict[str, tuple[Any, Any]]],
    change: Callable[[], None],
    *,
    graph: bool,
    reps: int = 5,
    atol: float = 0.0,
    rtol: float = 0.0,
) -> None:
    """Run ``chain`` ``reps`` times (see :func:`run_on_stream_or_graph`); each time, every pair of
    ``checks(*outputs)`` must be close (:func:`failed_checks`), then ``change()`` changes the inputs
    in place, so that a stale read of the previous time's output shows the next time."""
    for rep, outs in enumerate(run_on_stream_or_graph(chain, graph=graph, reps=reps)):
        bad = failed_checks(checks(*outs), atol=atol, rtol=rtol)
        assert not bad, f"time {rep + 1}: " + "; ".join(bad)
        change()


def compile_cuda(source: Path, out: Path, arch: str = "sm_90", ptx: bool = False) -> subprocess.CompletedProcess[str]:
    """``nvcc -c source -o out`` (``-ptx`` with ``ptx``) for ``arch`` as a kernel build compiles it (-O3,
    CUDA_KERNEL, the farm's shared headers on the include path), with ptxas statistics on stderr; through
    ccache where installed. Skips the calling test where no nvcc is on PATH."""
    import shutil

    import pytest

    from .digest import INCLUDE

    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc (the CUDA toolkit)")
    cmd = [
        shutil.which("ccache") or "",
        "nvcc",
        "-std=c++17",
        "-O3",
        f"-arch={arch}",
        "-Xptxas",
        "-v",
        "-DCUDA_KERNEL",
        f"-I{INCLUDE}",
        "-ptx" if ptx else "-c",
        str(source),
        "-o",
        str(out),
    ]
    return subprocess.run([c for c in cmd if c], capture_output=True, text=True, check=False)


def register_spills(ptxas_log: str) -> list[str]:
    """The lines of ptxas statistics (``-Xptxas -v``) that report bytes spilled to local memory."""
    return [line for line in ptxas_log.splitlines() if "spill" in line and not line.strip().startswith("0 bytes")]


def devices() -> list[Any]:
    """The devices a kernel test runs on, for ``@pytest.mark.parametrize("device", devices())``: the
    torch device of each backend pybuild builds in its environments, the CPU's first; an accelerator's
    marked ``gpu`` and skipped, with the reason, where torch sees none of its devices here."""
    import pytest

    built = sorted(
        (b for b in backends.all_backends() if b.facts.compiled and b.env_buildable),
        key=lambda b: b.device_module is not None,
    )
    out: list[Any] = []
    for b in built:
        if b.device_module is None:
            out.append(b.torch_device)
        else:
            missing = pytest.mark.skipif(not b.device_available(), reason=f"needs a {b.facts.label} GPU")
            out.append(pytest.param(b.torch_device, marks=[pytest.mark.gpu, missing]))
    return out


def assert_raises(exc: type[BaseException], fragment: str, call: Callable[[], Any]) -> None:
    """``call()`` raises ``exc`` with ``fragment`` in its message."""
    import pytest

    with pytest.raises(exc) as info:
        call()
    assert fragment in str(info.value)


def assert_compiles_without_spills(source: Path, out_dir: Path, arch: str = "sm_90") -> None:
    """``source`` compiles for ``arch`` as a kernel build compiles it, spilling no register (see
    :func:`compile_cuda`: skips the calling test where no nvcc is on PATH)."""
    proc = compile_cuda(source, out_dir / f"{source.stem}.o", arch)
    assert proc.returncode == 0, proc.stderr
    assert not register_spills(proc.stderr), proc.stderr
