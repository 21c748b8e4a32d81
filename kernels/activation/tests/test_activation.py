"""activation: silu_and_mul, gelu_and_mul (exact and tanh), gelu_tanh_and_mul against a plain-torch
float64 reference, on CPU always and on CUDA where a GPU is present."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from pybuild import testing

KERNEL_DIR = Path(__file__).resolve().parent.parent


def reference(op: str, x: torch.Tensor) -> torch.Tensor:
    """Plain torch in float64, rounded once to x's dtype."""
    d = x.shape[-1] // 2
    gate, up = x[..., :d].double(), x[..., d:].double()
    if op == "silu_and_mul":
        act = F.silu(gate)
    elif op == "gelu_and_mul":
        act = F.gelu(gate)
    else:
        act = F.gelu(gate, approximate="tanh")
    return (act * up).to(x.dtype)


OPS = ("silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul")
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# One rounding of an fp32 result against one rounding of the float64 reference: at most an ulp apart.
TOL = {
    torch.float32: {"atol": 1e-5, "rtol": 1e-5},
    torch.float16: {"atol": 1e-3, "rtol": 2e-3},
    torch.bfloat16: {"atol": 1e-2, "rtol": 1.6e-2},
}
# Leading shapes and 2 d: vector paths (d a multiple of 8), scalar paths (odd d), several blocks,
# partial blocks, empty tensors.
SHAPES = [(1, 2), (3, 16), (7, 258), (4, 3, 128), (2, 2, 2, 1030), (1000, 2 * 1032), (33, 8192), (0, 64), (5, 0)]
DEVICES = testing.devices()


@pytest.fixture(scope="module")
def kernel():
    return testing.load_built_kernel(KERNEL_DIR)


def call(kernel, op: str, x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return getattr(kernel, op)(x, out=out)


def randn(shape, dtype, device, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float32) * 3).to(dtype).to(device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_matches_reference(kernel, op, dtype, shape, device):
    x = randn(shape, dtype, device, seed=zlib.crc32(repr((op, shape)).encode()))
    out_shape = (*shape[:-1], shape[-1] // 2)
    out = torch.full(out_shape, float("nan"), dtype=dtype, device=device)  # sentinel: every element written
    got = call(kernel, op, x, out)
    assert got is out and got.shape == out_shape and got.dtype == dtype
    assert not torch.isnan(got).any(), "some outputs were not written"
    torch.testing.assert_close(got.cpu(), reference(op, x.cpu()), **TOL[dtype])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_non_contiguous_and_unaligned(kernel, dtype, device):
    base = randn((6, 2, 520), dtype, device, seed=1)
    views = {
        "strided rows": base[:, 0, :],
        "transposed": randn((256, 6), dtype, device, seed=2).t(),
        "odd storage offset": randn((6 * 512 + 1,), dtype, device, seed=3)[1:].view(6, 512),
    }
    for name, x in views.items():
        for op in OPS:
            got = call(kernel, op, x)
            torch.testing.assert_close(
                got.cpu(), reference(op, x.cpu()), **TOL[dtype], msg=lambda m, name=name: f"{name}: {m}"
            )
    # An output at an odd offset (not 16-byte aligned) takes the scalar path.
    x = randn((6, 512), dtype, device, seed=4)
    out = torch.full((6 * 256 + 1,), float("nan"), dtype=dtype, device=device)[1:].view(6, 256)
    got = call(kernel, "silu_and_mul", x, out)
    torch.testing.assert_close(got.cpu(), reference("silu_and_mul", x.cpu()), **TOL[dtype])


def test_gelu_approximate_keyword(kernel):
    x = randn((4, 64), torch.float32, "cpu", seed=5)
    torch.testing.assert_close(kernel.gelu_and_mul(x, approximate="tanh"), kernel.gelu_tanh_and_mul(x))
    torch.testing.assert_close(kernel.gelu_and_mul(x), reference("gelu_and_mul", x), **TOL[torch.float32])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("op", OPS)
def test_cuda_agrees_with_cpu(kernel, op):
    x = randn((64, 2 * 4104), torch.float32, "cpu", seed=6)
    torch.testing.assert_close(call(kernel, op, x.cuda()).cpu(), call(kernel, op, x), atol=1e-5, rtol=1e-5)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cuda_large_inputs(kernel, dtype):
    """Over 2^21 packs of 16 bytes: the exact gelu switches to two packs per thread there (on devices
    with memory bandwidth per SM of kNarrowMemoryGbpsPerSm or more; others run 8-byte packs at every
    size)."""
    x = (torch.randn(2049, 2 * 8192, device="cuda") * 3).to(dtype)
    for op in OPS:
        got = call(kernel, op, x)
        torch.testing.assert_close(got, reference(op, x), **TOL[dtype])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cuda_either_side_of_one_wave(kernel, dtype):
    """Inputs whose 8-byte packs fit one resident wave (SMs x threads per SM) take 8-byte packs, larger
    ones 16-byte packs: the last row that fits and the first that does not, every op."""
    props = torch.cuda.get_device_properties(0)
    resident = props.multi_processor_count * props.max_threads_per_multi_processor
    d = 1024
    packs8_per_row = d * torch.empty((), dtype=dtype).element_size() // 8
    rows = resident // packs8_per_row
    for r in (rows, rows + 1):
        x = torch.randn(r, 2 * d, device="cuda", dtype=dtype)
        for op in OPS:
            torch.testing.assert_close(call(kernel, op, x), reference(op, x), **TOL[dtype])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cuda_odd_widths_either_side_of_one_wave_and_from_64_mb(kernel, dtype):
    """Odd half widths take the direct kernel in 8-byte packs of output while those fit one resident
    wave, 16-byte packs past it, and from 64 MB 16-bit dtypes keep the direct kernel while fp32 takes
    single elements: every op on the last shape that fits a wave, the first that does not, and one
    past 64 MB."""
    props = torch.cuda.get_device_properties(0)
    resident = props.multi_processor_count * props.max_threads_per_multi_processor
    size = torch.empty((), dtype=dtype).element_size()
    d = 1001
    rows = resident * (8 // size) // d
    big = (64 << 20) // (3 * d * size) + 1
    for r in (rows, rows + 1, big):
        x = torch.randn(r, 2 * d, device="cuda", dtype=dtype)
        for op in OPS:
            torch.testing.assert_close(call(kernel, op, x), reference(op, x), **TOL[dtype])
        del x


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("d", [1, 3, 29, 4099])
def test_cuda_odd_widths_within_and_across_rows(kernel, dtype, d):
    """The direct kernel's packs of output lie inside one row or cross rows (one row or many, for d
    under the pack's width); a warp whose packs all lie inside rows loads at fixed offsets, any other
    walks the columns. Past one resident wave (16-byte packs) and within it, every op; a NaN
    sentinel in the output and in a guard after it: every output written, nothing past it."""
    props = torch.cuda.get_device_properties(0)
    resident = props.multi_processor_count * props.max_threads_per_multi_processor
    size = torch.empty((), dtype=dtype).element_size()
    guard = 64
    for rows in (resident * (8 // size) // d // 2 + 1, resident * (16 // size) // d + 3):
        x = torch.randn(rows, 2 * d, device="cuda", dtype=dtype)
        for op in OPS:
            buf = torch.full((rows * d + guard,), float("nan"), device="cuda", dtype=dtype)
            out = buf[: rows * d].view(rows, d)
            got = call(kernel, op, x, out)
            assert not torch.isnan(got).any(), "some outputs were not written"
            assert torch.isnan(buf[rows * d :]).all(), "the kernel wrote past its output"
            torch.testing.assert_close(got, reference(op, x), **TOL[dtype])
        del x


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
def test_cuda_inputs_of_four_l2_or_more(kernel, dtype):
    """Inputs of 4x L2 or more are loaded with an L2 evict-last policy (where 16-byte packs are used):
    every op, checked whole."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size or (50 << 20)
    d = 8192
    row_bytes = 2 * d * torch.empty((), dtype=dtype).element_size()
    rows = 4 * l2 // row_bytes + 3
    x = torch.randn(rows, 2 * d, device="cuda", dtype=dtype)
    for op in OPS:
        got = call(kernel, op, x)
        torch.testing.assert_close(got, reference(op, x), **TOL[dtype])
        del got


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("graph", [False, True], ids=["stream", "graph"])
def test_cuda_back_to_back_launches(kernel, graph):
    """On sm_90 and later every launch uses programmatic dependent launch: a kernel may be scheduled
    while the one before it on the stream is finishing, and must wait for that one's writes before
    it reads (read after write) or writes (write after read). Each pair below is a large launch
    followed by a one-wave launch that starts at once on the large one's last rows, the rows its
    last blocks write (or read): a small op reads the last rows of a large op's output, and a small
    op overwrites the last rows of a large op's input. Every output is checked against the
    reference of the input it should have seen; on a stream and in a CUDA graph, five times, with
    the inputs changed between times (so a stale read of the previous time's output shows)."""
    dtype, rows, d, k = torch.bfloat16, 4096, 8192, 32
    x = torch.randn(rows, 2 * d, device="cuda", dtype=dtype)  # 128 MB: many waves
    v = torch.randn(rows, 2 * d, device="cuda", dtype=dtype)
    z = torch.randn(k, 4 * d, device="cuda", dtype=dtype)
    v0 = v.clone()

    def chain():
        y1 = kernel.silu_and_mul(x)
        y2 = kernel.gelu_and_mul(y1[-k:])  # reads what the last blocks of y1's launch write
        y3 = kernel.silu_and_mul(v)
        kernel.gelu_tanh_and_mul(z, out=v[-k:])  # overwrites what the last blocks of y3's launch read
        return y1, y2, y3

    def checks(y1, y2, y3):
        return {
            "y1": (y1, reference("silu_and_mul", x)),
            "y2 (read after write)": (y2, reference("gelu_and_mul", y1[-k:])),
            "y3": (y3, reference("silu_and_mul", v0)),
            "v (write after read)": (v[-k:], reference("gelu_tanh_and_mul", z)),
        }

    def change():
        x.neg_()
        z.neg_()
        v0.neg_()
        v.copy_(v0)

    testing.check_each_time(chain, checks, change, graph=graph, **TOL[dtype])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_without_pdl(kernel, tmp_path):
    """KERNEL_FARM_PDL=0 launches without the attribute (the path of devices before sm_90), where
    one-wave inputs take streaming 8-byte packs in 128-thread blocks: same results, every op, one
    wave and many."""
    script = tmp_path / "no_pdl.py"
    script.write_text(
        "import torch\n"
        "import torch.nn.functional as F\n"
        "from pybuild.testing import load_built_kernel\n"
        f"k = load_built_kernel({str(KERNEL_DIR)!r}, build=False)\n"
        "for rows in (128, 4096):\n"
        "    x = torch.randn(rows, 2 * 8192, device='cuda', dtype=torch.bfloat16)\n"
        "    g, u = x[:, :8192].double(), x[:, 8192:].double()\n"
        "    for op, f in (('silu_and_mul', F.silu), ('gelu_and_mul', F.gelu),\n"
        "                  ('gelu_tanh_and_mul', lambda t: F.gelu(t, approximate='tanh'))):\n"
        "        torch.testing.assert_close(getattr(k, op)(x), (f(g) * u).to(x.dtype), atol=1e-2, rtol=1.6e-2)\n"
        "print('ok')\n"
    )
    root = KERNEL_DIR.parents[1]
    env = {
        **os.environ,
        "KERNEL_FARM_PDL": "0",
        "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p),
    }
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    lines = run.stdout.strip().splitlines()
    assert run.returncode == 0 and lines and lines[-1] == "ok", run.stdout + run.stderr


# (call, exception type, exact message fragment)
ERRORS = [
    (
        lambda k: k.silu_and_mul(torch.ones(4, 4, dtype=torch.int32)),
        TypeError,
        "silu_and_mul: expected a float32, float16 or bfloat16 tensor, got torch.int32",
    ),
    (lambda k: k.silu_and_mul(torch.ones(4, 4, dtype=torch.float64)), TypeError, "got torch.float64"),
    (lambda k: k.gelu_and_mul(torch.ones(4, 5)), ValueError, "gelu_and_mul: expected input of shape [..., 2 * d]"),
    (lambda k: k.silu_and_mul(torch.tensor(1.0)), ValueError, "(even last dimension), got ()"),
    (
        lambda k: k.silu_and_mul(torch.ones(4, 8), out=torch.empty(4, 8)),
        ValueError,
        "silu_and_mul: out must be torch.float32 of shape (4, 4)",
    ),
    (
        lambda k: k.silu_and_mul(torch.ones(4, 8), out=torch.empty(4, 4, dtype=torch.float16)),
        ValueError,
        "got torch.float16 (4, 4)",
    ),
    (lambda k: k.silu_and_mul(torch.ones(4, 8), out=torch.empty(4, 4).t()), ValueError, "out must be contiguous"),
    (
        lambda k: k.gelu_and_mul(torch.ones(4, 8), approximate="fast"),
        ValueError,
        "gelu_and_mul: approximate must be 'none' or 'tanh', got 'fast'",
    ),
    (lambda k: k.silu_and_mul([1.0, 2.0]), TypeError, "silu_and_mul: expected a torch.Tensor, got list"),
    (lambda k: k.silu_and_mul(torch.ones(4, 8, requires_grad=True)), RuntimeError, "silu_and_mul: has no backward"),
    # The op itself checks too (callers that skip the wrapper).
    (
        lambda k: k.ops.silu_and_mul(torch.ones(4, 8), torch.empty(4, 3)),
        RuntimeError,
        "silu_and_mul: expected out of shape [..., 4] matching input [4, 8], got [4, 3]",
    ),
    (
        lambda k: k.ops.gelu_and_mul(torch.ones(4, 8, dtype=torch.float64), torch.empty(4, 4, dtype=torch.float64)),
        RuntimeError,
        "gelu_and_mul: expected float32, float16 or bfloat16 input, got Double",
    ),
]


@pytest.mark.parametrize("fn, exc, fragment", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_errors(kernel, fn, exc, fragment):
    testing.assert_raises(exc, fragment, lambda: fn(kernel))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_opcheck(kernel, op, device):
    x = randn((3, 5, 32), torch.float32, device, seed=7)
    out = torch.empty(3, 5, 16, device=device)
    torch.library.opcheck(getattr(kernel.ops, op), (x, out))


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph(kernel, device):
    torch._dynamo.reset()
    backend = "inductor" if device == "cuda" else "aot_eager"

    def mlp(x: torch.Tensor) -> torch.Tensor:
        return kernel.silu_and_mul(x) + kernel.gelu_and_mul(x, approximate="tanh") + kernel.gelu_and_mul(x)

    x = randn((2, 7, 64), torch.float32, device, seed=8)
    got = torch.compile(mlp, fullgraph=True, backend=backend)(x)
    want = sum(reference(op, x.cpu()) for op in OPS)
    torch.testing.assert_close(got.cpu(), want, atol=1e-4, rtol=1e-4)


def test_cuda_source_compiles_for_sm90_without_spills(tmp_path):
    """activation.cu includes no torch header, so it compiles here even against a CPU-only torch."""
    testing.assert_compiles_without_spills(KERNEL_DIR / "csrc" / "activation.cu", tmp_path)
