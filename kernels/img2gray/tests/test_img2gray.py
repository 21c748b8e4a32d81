"""img2gray against a plain-torch reference (exact: the rounding rule is integer arithmetic)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from pybuild.testing import assert_raises, load_built_kernel


def reference(image: torch.Tensor) -> torch.Tensor:
    """gray = (21 R + 72 G + 7 B + 50) // 100, the farm's rounding of 0.21 R + 0.72 G + 0.07 B."""
    rgb = image.to(torch.int32)
    return ((21 * rgb[..., 0] + 72 * rgb[..., 1] + 7 * rgb[..., 2] + 50) // 100).to(torch.uint8)


SHAPES = [(1, 1, 3), (2, 3, 3), (37, 53, 3), (481, 263, 3), (4, 17, 31, 3), (2, 1, 5, 7, 3)]
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
SENTINEL = 0xA5


@pytest.fixture(scope="module")
def img2gray():  # noqa: ANN201
    return load_built_kernel(Path(__file__).resolve().parents[1])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_matches_reference(img2gray, shape: tuple[int, ...], device: str) -> None:  # noqa: ANN001
    x = torch.randint(0, 256, shape, dtype=torch.uint8, device=device)
    out = torch.full(shape[:-1], SENTINEL, dtype=torch.uint8, device=device)
    expected = reference(x)
    # Make sure the sentinel cannot pass by accident: every pixel must be written.
    assert img2gray.img2gray(x, out=out) is out
    assert torch.equal(out.cpu(), expected.cpu())


def test_extremes_and_rounding(img2gray) -> None:  # noqa: ANN001
    values = torch.tensor(
        [[[0, 0, 0], [255, 255, 255], [255, 0, 0], [0, 255, 0], [0, 0, 255], [1, 1, 1], [50, 50, 50], [3, 1, 4]]],
        dtype=torch.uint8,
    )
    assert img2gray.img2gray(values).tolist() == [[0, 255, 54, 184, 18, 1, 50, 2]]


@pytest.mark.parametrize("device", DEVICES)
def test_non_contiguous_views(img2gray, device: str) -> None:  # noqa: ANN001
    big = torch.randint(0, 256, (64, 90, 3), dtype=torch.uint8, device=device)
    for view in (big[::2, ::3], big.transpose(0, 1), big[5:40, 7:51]):
        assert not view.is_contiguous() or view.data_ptr() != big.data_ptr()
        assert torch.equal(img2gray.img2gray(view).cpu(), reference(view).cpu())
    planar = torch.randint(0, 256, (3, 20, 30), dtype=torch.uint8, device=device).permute(1, 2, 0)
    assert torch.equal(img2gray.img2gray(planar).cpu(), reference(planar).cpu())


def test_empty_image(img2gray) -> None:  # noqa: ANN001
    assert img2gray.img2gray(torch.empty(0, 5, 3, dtype=torch.uint8)).shape == (0, 5)


# (input, exception type, exact message fragment)
BAD_INPUTS = [
    (torch.zeros(4, 4, 3, dtype=torch.float32), TypeError, "expected a uint8 image, got torch.float32"),
    (torch.zeros(4, 4, 4, dtype=torch.uint8), ValueError, "expected an RGB image of shape [H, W, 3]"),
    (torch.zeros(4, 3, dtype=torch.uint8), ValueError, "got (4, 3)"),
    ([[1, 2, 3]], TypeError, "expected a torch.Tensor, got list"),
]


@pytest.mark.parametrize(("bad", "exc", "fragment"), BAD_INPUTS, ids=[b[2][:30] for b in BAD_INPUTS])
def test_bad_input(img2gray, bad, exc, fragment: str) -> None:  # noqa: ANN001
    assert_raises(exc, fragment, lambda: img2gray.img2gray(bad))


def test_bad_out(img2gray) -> None:  # noqa: ANN001
    x = torch.zeros(4, 5, 3, dtype=torch.uint8)
    with pytest.raises(ValueError, match=r"out must be uint8 of shape \(4, 5\)"):
        img2gray.img2gray(x, out=torch.empty(5, 4, dtype=torch.uint8))


def test_non_contiguous_out(img2gray) -> None:  # noqa: ANN001
    x = torch.zeros(4, 5, 3, dtype=torch.uint8)
    with pytest.raises(ValueError, match="out must be contiguous"):
        img2gray.img2gray(x, out=torch.empty(5, 4, dtype=torch.uint8).t())


def test_op_level_checks_show_values(img2gray) -> None:  # noqa: ANN001
    x = torch.zeros(4, 5, 3, dtype=torch.uint8)
    with pytest.raises(RuntimeError, match=r"expected output of shape \[4, 5\], got \[5, 4\]"):
        img2gray.ops.img2gray(x, torch.empty(5, 4, dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="expected uint8 input, got Float"):
        img2gray.ops.img2gray(x.float(), torch.empty(4, 5, dtype=torch.uint8))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(img2gray, device: str) -> None:  # noqa: ANN001
    x = torch.randint(0, 256, (13, 7, 3), dtype=torch.uint8, device=device)
    out = torch.empty(13, 7, dtype=torch.uint8, device=device)
    torch.library.opcheck(img2gray.ops.img2gray.default, (x, out))


def test_torch_compile_fullgraph(img2gray) -> None:  # noqa: ANN001
    torch._dynamo.reset()
    fn = torch.compile(lambda x: img2gray.img2gray(x).to(torch.int32) * 2, fullgraph=True, backend="eager")
    x = torch.randint(0, 256, (9, 10, 3), dtype=torch.uint8)
    assert torch.equal(fn(x), reference(x).to(torch.int32) * 2)
