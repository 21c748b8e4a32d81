"""rms_norm against a plain-torch float64 reference, on CPU always and on CUDA where a GPU is present."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
import torch

from pybuild import testing

KERNEL_DIR = Path(__file__).resolve().parent.parent


def reference(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Plain torch in float64, rounded once to x's dtype."""
    xd = x.double()
    return (xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * weight.double()).to(x.dtype)


DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# fp32 sums over up to 16384 squares, then one rounding to the dtype.
TOL = {
    torch.float32: {"atol": 1e-5, "rtol": 2e-5},
    torch.float16: {"atol": 2e-3, "rtol": 2e-3},
    torch.bfloat16: {"atol": 2e-2, "rtol": 1.6e-2},
}
# Hidden sizes across the CUDA paths (WIDE below has more): warp tiles (a power of two of up to 32 packs of 16 bytes:
# 8..256 in 16-bit dtypes, 4..128 in fp32), warp groups of 1..32 threads (other rows of <= 64
# packs: 96, fp32 256), one block per row with 2 packs per thread (<= 2048 packs) or 4 (<= 4096:
# 16392 in bf16), the two-pass path (odd sizes, unaligned views; fp32 rows over 16384).
HIDDEN = (1, 7, 8, 64, 96, 100, 128, 256, 1000, 1024, 1032, 4096, 5120, 8192, 16384, 16392)
ROWS = (1, 37)
DEVICES = testing.devices()


@pytest.fixture(scope="module")
def kernel():
    return testing.load_built_kernel(KERNEL_DIR)


def randn(shape, dtype, device, seed: int, scale: float = 1.0, shift: float = 0.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g) * scale + shift).to(dtype).to(device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("hidden", HIDDEN)
@pytest.mark.parametrize("form", ("out", "new"))
def test_matches_reference(kernel, hidden, rows, dtype, device, form):
    seed = zlib.crc32(repr((hidden, rows, str(dtype))).encode())
    x = randn((rows, hidden), dtype, device, seed, scale=2.0)
    w = randn((hidden,), dtype, device, seed + 1, scale=0.5, shift=1.0)
    if form == "out":
        out = torch.full_like(x, float("nan"))  # sentinel: every element must be written
        got = kernel.rms_norm(x, w, eps=1e-6, out=out)
        assert got is out
    else:
        # the op that allocates its output (the plain call's path); on CUDA the caching allocator
        # hands back the NaN-filled block freed here, so an unwritten element shows
        torch.full_like(x, float("nan"))
        got = kernel.rms_norm(x, w, eps=1e-6)
        assert got.shape == x.shape and got.dtype == x.dtype and got.is_contiguous()
        # the op itself, not a fallback the wrapper might have taken
        torch.testing.assert_close(kernel.ops.rms_norm_alloc(x, w, 1e-6), got, rtol=0, atol=0)
    assert not torch.isnan(got).any(), "some outputs were not written"
    torch.testing.assert_close(got.cpu(), reference(x.cpu(), w.cpu(), 1e-6), **TOL[dtype])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(0, 64), (2, 3, 4, 256), (5, 1, 1000)], ids=str)
def test_leading_shapes(kernel, shape, device):
    x = randn(shape, torch.bfloat16, device, seed=11)
    w = randn(shape[-1:], torch.bfloat16, device, seed=12, shift=1.0)
    got = kernel.rms_norm(x, w, eps=1e-5)
    assert got.shape == x.shape and got.dtype == x.dtype
    torch.testing.assert_close(got.cpu(), reference(x.cpu(), w.cpu(), 1e-5), **TOL[torch.bfloat16])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_non_contiguous_and_unaligned(kernel, dtype, device):
    w = randn((512,), dtype, device, seed=13, shift=1.0)
    views = {
        "strided rows": randn((8, 2, 512), dtype, device, seed=14)[:, 1, :],
        "transposed": randn((512, 8), dtype, device, seed=15).t(),
        "odd storage offset": randn((8 * 512 + 1,), dtype, device, seed=16)[1:].view(8, 512),
    }
    for name, x in views.items():
        got = kernel.rms_norm(x, w)
        torch.testing.assert_close(
            got.cpu(), reference(x.cpu(), w.cpu(), 1e-6), **TOL[dtype], msg=lambda m, name=name: f"{name}: {m}"
        )
    # Weight and output at odd offsets (not 16-byte aligned) take the two-pass path.
    x = randn((8, 512), dtype, device, seed=17)
    w_odd = randn((513,), dtype, device, seed=18, shift=1.0)[1:]
    out = torch.full((8 * 512 + 1,), float("nan"), dtype=dtype, device=device)[1:].view(8, 512)
    got = kernel.rms_norm(x, w_odd, out=out)
    torch.testing.assert_close(got.cpu(), reference(x.cpu(), w_odd.cpu(), 1e-6), **TOL[dtype])
    # x and output at the same odd offset, weight aligned: every row starts off a 16-byte boundary
    # (from 4 MB of x on a GPU: 16-byte packs from each row's first boundary).
    w = randn((4096,), dtype, device, seed=24, shift=1.0)
    x_odd = randn((1024 * 4096 + 1,), dtype, device, seed=25)[1:].view(1024, 4096)
    out = torch.full((1024 * 4096 + 1,), float("nan"), dtype=dtype, device=device)[1:].view(1024, 4096)
    got = kernel.rms_norm(x_odd, w, out=out)
    torch.testing.assert_close(got.cpu(), reference(x_odd.cpu(), w.cpu(), 1e-6), **TOL[dtype])
    # An even width with the weight at an odd offset comes in single elements too: from 6 MiB of
    # 16-bit x on a GPU, read as one flat array of 16-byte packs like odd widths (rows of up to 160
    # elements at any count).
    x = randn((24000, 158), dtype, device, seed=26)
    w_odd = randn((159,), dtype, device, seed=27, shift=1.0)[1:]
    got = kernel.rms_norm(x, w_odd)
    torch.testing.assert_close(got.cpu(), reference(x.cpu(), w_odd.cpu(), 1e-6), **TOL[dtype])


@pytest.mark.parametrize("device", DEVICES)
def test_eps_and_extremes(kernel, device):
    x = torch.zeros(3, 128, device=device)
    w = torch.ones(128, device=device)
    assert torch.equal(kernel.rms_norm(x, w, eps=1e-6), x)  # 0 / sqrt(eps) = 0
    big = randn((4, 4096), torch.float32, device, seed=19, scale=1e4)
    torch.testing.assert_close(
        kernel.rms_norm(big, w.new_ones(4096), eps=0.0).cpu(),
        reference(big.cpu(), torch.ones(4096), 0.0),
        **TOL[torch.float32],
    )


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("hidden", (128, 4096, 16384))
def test_cuda_agrees_with_cpu(kernel, hidden):
    x = randn((300, hidden), torch.float32, "cpu", seed=20)
    w = randn((hidden,), torch.float32, "cpu", seed=21, shift=1.0)
    torch.testing.assert_close(kernel.rms_norm(x.cuda(), w.cuda()).cpu(), kernel.rms_norm(x, w), atol=1e-5, rtol=1e-5)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_many_rows(kernel):
    x = randn((70001, 128), torch.bfloat16, "cuda", seed=22)  # more rows than a 1D grid of 256-row blocks covers twice
    w = randn((128,), torch.bfloat16, "cuda", seed=23, shift=1.0)
    torch.testing.assert_close(kernel.rms_norm(x, w).cpu(), reference(x.cpu(), w.cpu(), 1e-6), **TOL[torch.bfloat16])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("hidden, dtype", [(128, torch.bfloat16), (4096, torch.float32)], ids=str)
def test_x_of_twice_l2_or_more(kernel, hidden, dtype):
    """x of 2x L2 or more is loaded with an L2 evict-last policy (row groups and block rows alike),
    except on devices with less memory bandwidth per SM than kNarrowMemoryGbpsPerSm, which stream it."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size or (50 << 20)
    rows = 2 * l2 // (hidden * torch.empty((), dtype=dtype).element_size()) + 5
    x = randn((rows, hidden), dtype, "cuda", seed=31)
    w = randn((hidden,), dtype, "cuda", seed=32, shift=1.0)
    torch.testing.assert_close(kernel.rms_norm(x, w), reference(x, w, 1e-6), **TOL[dtype])


def check_back_to_back(kernel, x, v, z, w, *, graph):
    """Four launches, each started while the one before it may still run (PDL): y1 = rms_norm(x);
    y2 = rms_norm of y1's last k rows (k = z's rows; read after write); y3 = rms_norm(v); z's rows
    normalised into v's last k rows (write after read). Every output is checked against the reference
    of the input it should have seen, on a stream or in a CUDA graph, five times, with the inputs
    changed between times (so a stale read of the previous time's output shows)."""
    k = z.shape[0]
    v0 = v.clone()

    def chain():
        y1 = kernel.rms_norm(x, w)
        y2 = kernel.rms_norm(y1[-k:], w, eps=1e-3)  # reads what the last blocks of y1's launch write
        y3 = kernel.rms_norm(v, w)
        kernel.rms_norm(z, w, out=v[-k:])  # overwrites what the last blocks of y3's launch read
        return y1, y2, y3

    def checks(y1, y2, y3):
        return {
            "y1": (y1, reference(x, w, 1e-6)),
            "y2 (read after write)": (y2, reference(y1[-k:], w, 1e-3)),
            "y3": (y3, reference(v0, w, 1e-6)),
            "v (write after read)": (v[-k:], reference(z, w, 1e-6)),
        }

    def change():
        x.neg_()
        z.neg_()
        v0.neg_()
        v.copy_(v0)

    testing.check_each_time(chain, checks, change, graph=graph, **TOL[x.dtype])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("graph", [False, True], ids=["stream", "graph"])
@pytest.mark.parametrize("hidden", (128, 1024, 4096))
def test_cuda_back_to_back_launches(kernel, graph, hidden):
    """On sm_90 and later every launch uses programmatic dependent launch: a kernel may be scheduled
    while the one before it on the stream is finishing, and must wait for that one's writes before
    it reads (read after write) or writes (write after read). Each pair below is a large launch
    followed by a small one that starts at once on the large one's last rows, the rows its last
    blocks write (or read): a small call normalises the last rows of a large call's output, and a
    small call overwrites the last rows of a large call's input. Every output is checked against
    the reference of the input it should have seen (warp tiles, a block per row without and with
    the trigger); on a stream and in a CUDA graph, five times, with the inputs changed between
    times (so a stale read of the previous time's output shows)."""
    dtype = torch.bfloat16
    rows = (64 << 20) // (2 * hidden)  # 64 MB of x: many waves
    k = max(1, (256 << 10) // (2 * hidden))  # 256 KB of rows: one wave
    x = randn((rows, hidden), dtype, "cuda", seed=40)
    v = randn((rows, hidden), dtype, "cuda", seed=41)
    z = randn((k, hidden), dtype, "cuda", seed=42, scale=3.0)
    w = randn((hidden,), dtype, "cuda", seed=43, shift=1.0)
    check_back_to_back(kernel, x, v, z, w, graph=graph)


# Shapes of the paths for rows of any width (CUDA): rows of 2, 4 or 8 bytes several to a 16-byte
# pack (1000x2, 999x4 in 16-bit dtypes, 5x1), rows in units of 8, 4 or 2 bytes where 16 do not
# divide them (odd, prime and even-unaligned widths), rows too few to fill the device shared by a
# cluster of blocks from 48 KB (8x16384 in float32) or, wider still, by two kernels meeting in a
# workspace (1x327680, 3x151936, 7x65544, 8x20000 in float32; 16-bit rows of 4-byte units 16 loads
# a thread, a block's part of 2048 to 4096 units in one pass: 1x301526 and 64x160246; fp32 ones 4:
# 12x500001), narrower ones a block each (8x16384
# and 8x20000 in 16-bit dtypes, 2x3394) unless a block cannot hold them (a cluster: 2x6717, 1x9358);
# rows of more than 4096 16-byte packs, as many as the SMs or more, take a block of 1024 threads a
# row that reads the row twice (300x40000, 600x20000 and 700x16392 in float32, 300x40000 and
# 133x65536 in 16-bit dtypes; 133x65536 in float32: 256 KB rows, the widest it takes on sm_90
# devices of 132 SMs; 300x40000 ends in a partial step). From 6 MiB, odd 16-bit rows of up to 256
# elements are read as one flat array of 16-byte packs (1000000x9, 300000x13, 70000x129, 60000x167
# on devices of up to 133 SMs; 100001x255 ends in a partial pack), rows of 161 to 256
# elements only from 448 rows an SM (on devices of 132 SMs 20000x167 and 40000x255 take the group
# kernel); smaller ones take the group kernel (50000x11, 4000x167), with twice the rows a thread
# where that still fills the device (17000x167, 40000x77, 35000x77, 70000x35), wider ones up to
# 384 elements the group kernel at a warp a row (below), wider still the rows kernel (6000x1471, in
# 16-bit dtypes the shifted one below); rows of
# 4-byte units or elements that fill the device take 16 a thread where the shifted kernel does not
# take them (6000x1471 with y off x's alignment: test_cuda_rows_off_alignment), and those too few to
# fill it even at 8 a thread take 4 (255x431, 3x261, 22x641, and 18x838 in 16-bit dtypes). Rows of 32
# units of 4 bytes or less, enough of them to fill the device, take half the lanes a row (40000x18
# in 16-bit dtypes, 150000x3); rows of more units keep theirs (20000x223 in float32). Rows of 8-byte
# units that would take 2 or 3 blocks of a cluster take one block each where they are rows for
# several waves, but with x and y alike modulo 16 bytes and an aligned weight such rows (16 KB or
# wider, from 4 MB of x) take the shifted kernel below (600x10004 in 16-bit dtypes), so none of
# these shapes reaches that form. From 4 MB of x, rows of odd 16-bit width (344x19373, 9448x479,
# 1200x4097, 200x40001), rows of 4-byte units past 2 KB (2000x613, 6000x1471, 300x20001,
# 1200x4097, 200x40001 in float32, 940x4622 in 16-bit dtypes) and rows of 8-byte units 16 KB or
# wider (940x4622 in float32) are read in 16-byte packs from each row's first 16-byte boundary.
# fp32 rows of 257 to 512 4-byte units, 16 or more an SM, take the group kernel at a warp a row, the
# fewest units a lane that hold the row from 9 to 12, else 16 (9: 3001x269; 10: 5000x301, 30001x301;
# 11: 3001x351; 12: 3001x383; 16: 9448x479 and 3001x511 ending in a partial block, 511 units the
# most), and so do 16-bit rows of 257 to 512 4-byte units, 3 or more an SM, under 4 MB of x (9:
# 3001x550; 11: 2000x654, 2000x702; 16: 1104x822) and odd 16-bit rows of 257 to 384 elements, 8 or
# more an SM, at any size (3001x269, 5000x301, 30001x301, 3001x351, 3001x383);
# 16-bit rows of more than 256 units of up to 1024 elements, 8 or more an SM (odd widths of more than
# 384, and 4-byte units from 4 MB of x), take a warp a row in 16-byte packs from each row's first
# 16-byte boundary, 8 rows a block (9448x479, 3001x511 and 6001x654 ending in a partial block; 3001x1023 and
# 3001x1022 fill a lane's four packs); 16-bit rows of 4-byte units of up to 64 elements take the
# group kernel (300000x38); rows of 1025 to 2048 packs, 16 or more an SM, take 4 packs a thread
# (2400x8200 in 16-bit dtypes, 2400x4104 in float32), and rows of more than 2048 packs, 5 or more an
# SM, read the weight at the store (700x16392 in 16-bit dtypes, 8 packs a thread, 2049 packs;
# 2400x8200 in float32); fewer such rows hold it (600x20000 in 16-bit dtypes, 600x10004 in float32).
# Rows of 65 to 256 units of 4 or 8 bytes take the group kernel at the fewest units a lane that hold
# them, 3 to 8, 1 or 2 rows a thread, most ending in a partial block: fp32 8-byte and 16-bit 4-byte
# units (75 units: 40000x150 at 2 rows a thread, 2000x150 at 1; 103: 30001x206; 155: 236x310 at 1,
# 20001x310 at 2; 183: 3001x366; 223: 20001x446 at 2, 3000x446 at 1; 255: 17001x510 at 2) and 16-bit
# 8-byte units (75: 20001x300, 2000x300; 103: 1000x412; 155: 1500x620, 20001x620; 183: 1000x732;
# 223: 30001x892; 255: 3000x1020).
WIDE = [
    (1000, 2),
    (999, 4),
    (5, 1),
    (64, 3),
    (809, 5),
    (1159, 42),
    (1420, 137),
    (100, 2286),
    (8, 16384),
    (2, 6717),
    (1, 9358),
    (1, 327680),
    (3, 151936),
    (7, 65544),
    (33, 100003),
    (1, 301526),
    (64, 160246),
    (12, 500001),
    (300, 40000),
    (133, 65536),
    (6000, 3),
    (50000, 11),
    (4000, 167),
    (6000, 1471),
    (1200, 4097),
    (200, 40001),
    (40000, 18),
    (150000, 3),
    (20000, 223),
    (60000, 167),
    (1000000, 9),
    (20000, 167),
    (300000, 13),
    (40000, 77),
    (600, 10004),
    (600, 20000),
    (70000, 129),
    (30001, 301),
    (17000, 167),
    (17000, 131),
    (18000, 159),
    (35000, 77),
    (70000, 35),
    (40000, 255),
    (255, 431),
    (3, 261),
    (344, 19373),
    (9448, 479),
    (300, 20001),
    (940, 4622),
    (8, 20000),
    (2, 3394),
    (22, 641),
    (1104, 822),
    (5000, 301),
    (300000, 38),
    (2400, 8200),
    (2400, 4104),
    (3001, 511),
    (700, 16392),
    (40000, 150),
    (236, 310),
    (3001, 366),
    (20001, 446),
    (17001, 510),
    (2000, 654),
    (6001, 654),
    (3001, 1023),
    (3001, 1022),
    (18, 838),
    (30001, 206),
    (20001, 300),
    (1500, 620),
    (30001, 892),
    (2000, 150),
    (2000, 300),
    (3000, 446),
    (20001, 310),
    (20001, 620),
    (3000, 1020),
    (1000, 412),
    (1000, 732),
    (100001, 255),
    (2000, 613),
    (3001, 269),
    (3001, 351),
    (3001, 383),
    (3001, 550),
    (2000, 702),
]

# Rows of up to 64 units of 2, 4 or 8 bytes take rms_norm_group_kernel in compile-time groups of 2 to
# 32 lanes (2: 300001x3; rows of 3 to 5 units and 7, 9, 11, 17, 33, 63 units of 2 bytes in 16-bit
# dtypes, 4 in fp32), 1 or 2 units a lane (2 in a group of 4: 100001x7), 1 to 8 rows a thread (8,
# on devices of 132 SMs: 280001x11 and 70001x33 in 16-bit dtypes; 16-bit rows of 4-byte units from one
# resident wave of such blocks: 300001x26, 300000x38), lanes past the row's end (loads
# predicated off, or clamped for 2-byte units), rows past the end in the last block.
SHORT = [
    (280001, 11),
    (37, 5),
    (5001, 9),
    (70001, 33),
    (20001, 63),
    (3, 3),
    (100003, 3),
    (60001, 6),
    (9, 18),
    (33333, 34),
    (7001, 66),
    (150001, 12),
    (41, 20),
    (12345, 36),
    (4097, 124),
    (2001, 132),
    (99999, 17),
    (3000, 21),
    (300, 33),
    (20000, 7),
    (300001, 3),
    (100001, 7),
    (300001, 26),
]


# Rows of 2, 4 or 8 bytes whose last elements are no whole 16-byte pack (the tiny kernel's tail,
# loaded with the packs), down to a tail alone, and tails held by a thread of a later block.
TAILS = [(1, 1), (3, 1), (7, 1), (1, 2), (5, 2), (3, 4), (65, 4), (4097, 1), (1025, 2), (1025, 4)]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("rows, hidden", WIDE + SHORT + TAILS, ids=str)
def test_cuda_rows_of_any_width(kernel, rows, hidden, dtype):
    """Every output is right, and no row past the output is written."""
    seed = zlib.crc32(repr(("wide", rows, hidden, str(dtype))).encode())
    x = randn((rows, hidden), dtype, "cuda", seed, scale=2.0)
    w = randn((hidden,), dtype, "cuda", seed + 1, scale=0.5, shift=1.0)
    buf = torch.full((rows + 64, hidden), float("nan"), dtype=dtype, device="cuda")
    out = buf[:rows]
    kernel.rms_norm(x, w, eps=1e-6, out=out)
    assert not torch.isnan(out).any(), "some outputs were not written"
    assert torch.isnan(buf[rows:]).all(), "rows past the output were written"
    tol = dict(TOL[dtype])
    if dtype == torch.float32 and hidden > 16384:  # fp32 sums of up to 327680 squares, in another order
        tol = {"atol": 1e-4, "rtol": 1e-4}
    torch.testing.assert_close(out, reference(x, w, 1e-6), **tol)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("hidden", [1, 2, 4, 8], ids=str)
@pytest.mark.parametrize("offset", [0, 8], ids=["one-element", "8-bytes"])
def test_cuda_short_rows_off_alignment(kernel, offset, hidden, dtype):
    """Rows of 1 to 8 elements whose tensors start one element or 8 bytes past a 16-byte boundary
    cannot be read several to a 16-byte pack: they take the group kernel in units of 2, 4 or 8
    bytes, from one unit a row (2 lanes, one idle) up."""
    rows = 5001
    skip = max(1, offset // dtype.itemsize)  # elements before the tensors
    seed = zlib.crc32(repr(("off-alignment", offset, hidden, str(dtype))).encode())
    x = randn((rows * hidden + skip,), dtype, "cuda", seed, scale=2.0)[skip:].view(rows, hidden)
    w = randn((hidden,), dtype, "cuda", seed + 1, scale=0.5, shift=1.0)
    buf = torch.full((rows * hidden + skip + 64,), float("nan"), dtype=dtype, device="cuda")
    out = buf[skip : skip + rows * hidden].view(rows, hidden)
    kernel.rms_norm(x, w, eps=1e-6, out=out)
    assert not torch.isnan(out).any(), "some outputs were not written"
    outside = torch.cat([buf[:skip], buf[skip + rows * hidden :]])
    assert torch.isnan(outside).all(), "elements outside the output were written"
    torch.testing.assert_close(out, reference(x, w, 1e-6), **TOL[dtype])


def check_into_output_one_element_off(kernel, x, w):
    """rms_norm of x [rows, hidden] into an output one element past a 16-byte boundary, inside a
    NaN-filled buffer: every output written and right, nothing outside it written."""
    (rows, hidden), dtype = x.shape, x.dtype
    buf = torch.full((rows * hidden + 1 + 64,), float("nan"), dtype=dtype, device="cuda")
    out = buf[1 : 1 + rows * hidden].view(rows, hidden)
    kernel.rms_norm(x, w, eps=1e-6, out=out)
    assert not torch.isnan(out).any(), "some outputs were not written"
    outside = torch.cat([buf[:1], buf[1 + rows * hidden :]])
    assert torch.isnan(outside).all(), "elements outside the output were written"
    torch.testing.assert_close(out, reference(x, w, 1e-6), **TOL[dtype])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("rows, hidden", [(6000, 1471), (2000, 613)], ids=str)
def test_cuda_rows_off_alignment(kernel, rows, hidden, dtype):
    """Rows whose output starts one element past x's alignment modulo 16 bytes cannot take the
    shifted kernel: they take the rows kernel in units of one element (6000x1471: 16 a thread,
    as many rows as fill the device)."""
    seed = zlib.crc32(repr(("rows-off-alignment", rows, hidden, str(dtype))).encode())
    x = randn((rows, hidden), dtype, "cuda", seed, scale=2.0)
    w = randn((hidden,), dtype, "cuda", seed + 1, scale=0.5, shift=1.0)
    check_into_output_one_element_off(kernel, x, w)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("rows, hidden", [(30001, 301), (3001, 383)], ids=str)
def test_cuda_warp_rows_off_alignment(kernel, rows, hidden, dtype):
    """Odd rows of 257 to 384 elements (4-byte units in fp32) read a warp a row, unit by unit, at
    any alignment: x, the output and the weight one element past a 16-byte boundary."""
    seed = zlib.crc32(repr(("warp-rows-off-alignment", rows, hidden, str(dtype))).encode())
    x = randn((rows * hidden + 1,), dtype, "cuda", seed, scale=2.0)[1:].view(rows, hidden)
    w = randn((hidden + 1,), dtype, "cuda", seed + 1, scale=0.5, shift=1.0)[1:]
    check_into_output_one_element_off(kernel, x, w)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("graph", [False, True], ids=["stream", "graph"])
@pytest.mark.parametrize(
    "rows, hidden",
    [(3, 151936), (8, 16384), (4000, 2), (37, 1001), (1, 327680), (20000, 167), (20001, 11), (300, 40000)],
    ids=str,
)
def test_cuda_back_to_back_rows_of_any_width(kernel, graph, rows, hidden):
    """The paths for rows of any width launch with PDL too: each call below reads what the call
    before it wrote (read after write) or overwrites what it read (write after read), on a stream
    and in a CUDA graph, five times with the inputs changed between times."""
    dtype = torch.bfloat16
    x = randn((rows, hidden), dtype, "cuda", seed=50)
    v = randn((rows, hidden), dtype, "cuda", seed=51)
    z = randn((rows, hidden), dtype, "cuda", seed=52, scale=3.0)
    w = randn((hidden,), dtype, "cuda", seed=53, shift=1.0)
    check_back_to_back(kernel, x, v, z, w, graph=graph)


# (call, exception type, exact message fragment)
ERRORS = [
    (
        lambda k: k.rms_norm(torch.ones(2, 4, dtype=torch.int32), torch.ones(4, dtype=torch.int32)),
        TypeError,
        "rms_norm: expected a float32, float16 or bfloat16 tensor, got torch.int32",
    ),
    (
        lambda k: k.rms_norm(torch.ones(2, 4), torch.ones(4, dtype=torch.float16)),
        TypeError,
        "rms_norm: weight must have x's dtype torch.float32, got torch.float16",
    ),
    (
        lambda k: k.rms_norm(torch.ones(2, 4), torch.ones(5)),
        ValueError,
        "rms_norm: expected weight of shape (4,), got (5,)",
    ),
    (lambda k: k.rms_norm(torch.ones(2, 0), torch.ones(0)), ValueError, "with hidden > 0, got (2, 0)"),
    (lambda k: k.rms_norm(torch.ones(2, 4), torch.ones(4), eps=-1.0), ValueError, "rms_norm: eps must be >= 0"),
    (
        lambda k: k.rms_norm(torch.ones(2, 4), torch.ones(4), out=torch.empty(4, 2)),
        ValueError,
        "rms_norm: out must be torch.float32 of shape (2, 4)",
    ),
    (
        lambda k: k.rms_norm(torch.ones(2, 4), torch.ones(4), out=torch.empty(4, 2).t()),
        ValueError,
        "rms_norm: out must be contiguous",
    ),
    (lambda k: k.rms_norm("x", torch.ones(4)), TypeError, "rms_norm: expected torch.Tensor x and weight, got str"),
    (
        lambda k: k.rms_norm(torch.ones(2, 4), torch.ones(4), eps="1e-6"),
        TypeError,
        "rms_norm: eps must be a float, got str",
    ),
    (
        lambda k: k.rms_norm(torch.ones(2, 4, requires_grad=True), torch.ones(4)),
        RuntimeError,
        "rms_norm: has no backward",
    ),
    (
        lambda k: k.ops.rms_norm_alloc(torch.ones(4, 2).t(), torch.ones(4), 1e-6),
        RuntimeError,
        "rms_norm: input must be contiguous",
    ),
    (
        lambda k: k.ops.rms_norm_alloc(torch.ones(2, 4), torch.ones(4, dtype=torch.float16), 1e-6),
        RuntimeError,
        "rms_norm: expected weight of dtype Float, got Half",
    ),
    (
        lambda k: k.ops.rms_norm(torch.ones(2, 4), torch.ones(3), 1e-6, torch.empty(2, 4)),
        RuntimeError,
        "rms_norm: expected weight of shape [4], got [3]",
    ),
    (
        lambda k: k.ops.rms_norm(torch.ones(2, 4), torch.ones(4), 1e-6, torch.empty(2, 4, dtype=torch.float16)),
        RuntimeError,
        "rms_norm: expected out of dtype Float, got Half",
    ),
]


@pytest.mark.parametrize("fn, exc, fragment", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_errors(kernel, fn, exc, fragment):
    testing.assert_raises(exc, fragment, lambda: fn(kernel))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("hidden", (64, 2048))
def test_opcheck(kernel, hidden, device):
    x = randn((3, 5, hidden), torch.float32, device, seed=24)
    w = randn((hidden,), torch.float32, device, seed=25)
    torch.library.opcheck(kernel.ops.rms_norm, (x, w, 1e-6, torch.empty_like(x)))
    torch.library.opcheck(kernel.ops.rms_norm_alloc, (x, w, 1e-6))


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph(kernel, device):
    torch._dynamo.reset()
    backend = "inductor" if device == "cuda" else "aot_eager"

    def block(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return kernel.rms_norm(x * 2, w, eps=1e-5) + 1

    x = randn((4, 9, 256), torch.float32, device, seed=26)
    w = randn((256,), torch.float32, device, seed=27, shift=1.0)
    got = torch.compile(block, fullgraph=True, backend=backend)(x, w)
    torch.testing.assert_close(got.cpu(), reference(x.cpu() * 2, w.cpu(), 1e-5) + 1, atol=1e-5, rtol=1e-5)


def test_cuda_source_compiles_for_sm90_without_spills(tmp_path):
    """rms_norm.cu includes no torch header, so it compiles here even against a CPU-only torch."""
    testing.assert_compiles_without_spills(KERNEL_DIR / "csrc" / "rms_norm.cu", tmp_path)
