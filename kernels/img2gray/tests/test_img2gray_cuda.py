"""img2gray on CUDA: byte-identical to the CPU kernel and to the integer rounding rule, on every
path of the CUDA kernel (16-pixel groups, the scalar tail, unaligned views)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from pybuild.testing import check_each_time, compile_cuda, load_built_kernel, register_spills

KERNEL_DIR = Path(__file__).resolve().parent.parent

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def reference(image: torch.Tensor) -> torch.Tensor:
    """gray = (21 R + 72 G + 7 B + 50) // 100 in integers (the farm's rounding of 0.21 R + 0.72 G + 0.07 B)."""
    rgb = image.to(torch.int32)
    return ((21 * rgb[..., 0] + 72 * rgb[..., 1] + 7 * rgb[..., 2] + 50) // 100).to(torch.uint8)


# Widths around the 16-pixel group (tails of 0..15 pixels), odd sizes, batches (N x H x W x 3),
# and the benchmark sizes.
SHAPES = [
    (1, 1, 3),
    (1, 15, 3),
    (1, 16, 3),
    (1, 17, 3),
    (3, 5, 3),
    (37, 53, 3),
    (7, 1, 3),
    (255, 257, 3),
    (4, 33, 17, 3),
    (2, 3, 64, 64, 3),
    (8, 1080, 1920, 3),
    (4320, 7680, 3),
    (0, 5, 3),
]


@pytest.fixture(scope="module")
def img2gray():
    return load_built_kernel(KERNEL_DIR)


def rand_image(shape, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=g)


def gray_twice(img2gray, image: torch.Tensor) -> torch.Tensor:
    """Convert into outputs pre-filled with 0x00 and with 0xFF: both agree only if every pixel is written."""
    outs = []
    for sentinel in (0x00, 0xFF):
        out = torch.full(image.shape[:-1], sentinel, dtype=torch.uint8, device=image.device)
        assert img2gray.img2gray(image, out=out) is out
        outs.append(out)
    assert torch.equal(outs[0], outs[1]), "some pixels were not written"
    return outs[0]


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_cuda_matches_cpu_and_reference_byte_for_byte(img2gray, shape):
    image = rand_image(shape, seed=sum(shape))
    got = gray_twice(img2gray, image.cuda()).cpu()
    assert torch.equal(got, img2gray.img2gray(image)), "CUDA and CPU kernels differ"
    assert torch.equal(got, reference(image))


@pytest.mark.gpu
@needs_gpu
def test_every_rgb_value(img2gray):
    """All 2^24 colours, as one 4096 x 4096 image: the CUDA kernel implements the rounding rule exactly."""
    v = torch.arange(1 << 24, dtype=torch.int32, device="cuda")
    image = torch.stack([v >> 16, (v >> 8) & 255, v & 255], dim=-1).to(torch.uint8).view(4096, 4096, 3)
    got = gray_twice(img2gray, image)
    assert torch.equal(got, reference(image))
    assert torch.equal(got.cpu(), img2gray.img2gray(image.cpu()))


@pytest.mark.gpu
@needs_gpu
def test_non_contiguous_views(img2gray):
    big = rand_image((2, 300, 200, 3), seed=1).cuda()
    views = {
        "strided": big[:, ::2, ::3],
        "transposed": big.transpose(1, 2),
        "cropped": big[1, 5:280, 7:193],
        "channels-first permuted": rand_image((3, 64, 48), seed=2).cuda().permute(1, 2, 0),
    }
    for name, view in views.items():
        got = gray_twice(img2gray, view)
        assert torch.equal(got, reference(view)), name
        assert torch.equal(got.cpu(), img2gray.img2gray(view.cpu())), name


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("offset", [1, 3, 5, 16])
def test_unaligned_storage_offsets(img2gray, offset):
    """Contiguous views at storage offsets that break 16-byte alignment take the scalar kernel."""
    h, w = 61, 67
    flat = rand_image((h * w * 3 + offset,), seed=offset).cuda()
    image = flat[offset:].view(h, w, 3)
    assert image.is_contiguous()
    got = gray_twice(img2gray, image)
    assert torch.equal(got, reference(image))
    out = torch.zeros(h * w + offset, dtype=torch.uint8, device="cuda")[offset:].view(h, w)
    assert torch.equal(img2gray.img2gray(image, out=out), reference(image))


@pytest.mark.gpu
@needs_gpu
def test_runs_on_the_current_stream_and_device(img2gray):
    image = rand_image((512, 512, 3), seed=3).cuda()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        got = img2gray.img2gray(image)
    torch.cuda.current_stream().wait_stream(stream)
    assert torch.equal(got, reference(image))


@pytest.mark.gpu
@needs_gpu
def test_cuda_graph_capture(img2gray):
    image = rand_image((1080, 1920, 3), seed=4).cuda()
    out = torch.empty(1080, 1920, dtype=torch.uint8, device="cuda")
    img2gray.img2gray(image, out=out)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        img2gray.img2gray(image, out=out)
    out.zero_()
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, reference(image))


@pytest.mark.gpu
@needs_gpu
def test_opcheck_and_compile_on_cuda(img2gray):
    image = rand_image((2, 33, 47, 3), seed=5).cuda()
    torch.library.opcheck(img2gray.ops.img2gray, (image, torch.empty(2, 33, 47, dtype=torch.uint8, device="cuda")))
    torch._dynamo.reset()
    fn = torch.compile(lambda x: img2gray.img2gray(x).float().mean(), fullgraph=True)
    torch.testing.assert_close(fn(image), reference(image).float().mean())


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("graph", [False, True], ids=["stream", "graph"])
def test_back_to_back_launches(img2gray, graph):
    """On sm_90 and later every launch uses programmatic dependent launch: a kernel may be scheduled
    while the one before it on the stream is finishing, and must wait for that one's writes before
    it reads (read after write) or writes (write after read). Each pair below is a large launch
    followed by a small one that starts at once on the large one's last rows, the rows its last
    blocks write (or read): a small call reads the last rows of a large call's output as an image,
    and a small call overwrites the last rows of a large call's image. Every output is checked
    against the rule applied to the input it should have seen; on a stream and in a CUDA graph,
    five times, with the inputs changed between times (so a stale read of the previous time's
    output shows)."""
    h, w, k = 4320, 7680, 16
    image = torch.randint(0, 256, (h, w, 3), dtype=torch.uint8, device="cuda")
    other = torch.randint(0, 256, (h, w, 3), dtype=torch.uint8, device="cuda")
    small = torch.randint(0, 256, (k, 3 * w, 3), dtype=torch.uint8, device="cuda")
    other0 = other.clone()

    def chain():
        g1 = img2gray.img2gray(image)
        g2 = img2gray.img2gray(g1[-k:].view(k, w // 3, 3))  # reads what the last blocks of g1's launch write
        g3 = img2gray.img2gray(other)
        img2gray.img2gray(small, out=other[-k:].view(k, 3 * w))  # overwrites what g3's last blocks read
        return g1, g2, g3

    def checks(g1, g2, g3):
        return {
            "g1": (g1, reference(image)),
            "g2 (read after write)": (g2, reference(g1[-k:].view(k, w // 3, 3))),
            "g3": (g3, reference(other0)),
            "other (write after read)": (other[-k:].view(k, 3 * w), reference(small)),
        }

    def change():
        image.bitwise_not_()
        small.bitwise_not_()
        other0.bitwise_not_()
        other.copy_(other0)

    check_each_time(chain, checks, change, graph=graph)


def test_cuda_source_uses_16_byte_accesses_without_spills(tmp_path):
    """img2gray.cu needs no torch header; its fast path must keep 16-byte loads/stores and no spills."""
    src = KERNEL_DIR / "csrc" / "img2gray.cu"
    proc = compile_cuda(src, tmp_path / "k.ptx", ptx=True)
    assert proc.returncode == 0, proc.stderr
    ptx = (tmp_path / "k.ptx").read_text()
    assert len(re.findall(r"ld\.global(\.\w+)*\.v4\.u32", ptx)) == 3
    assert re.search(r"st\.global(\.\w+)*\.v4\.u32", ptx)
    assert "div.u32" not in ptx.split("vec16_kernel")[1].split(".entry")[0], "division by 100 must be a multiply"
    proc = compile_cuda(src, tmp_path / "k.o")
    assert proc.returncode == 0, proc.stderr
    assert not register_spills(proc.stderr), proc.stderr
