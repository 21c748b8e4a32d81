"""Which CUDA code a build embeds, and how metadata.json declares it to the loader."""

from __future__ import annotations

import pytest

from pybuild.backends.cuda import declared_archs, torch_arch_list

CASES = [
    (("9.0",), "9.0+PTX", ("9.0+PTX",)),
    (("8.0", "9.0", "12.0"), "8.0;9.0;12.0+PTX", ("8.0", "9.0", "12.0+PTX")),
    (("8.0", "9.0a"), "8.0+PTX;9.0a", ("8.0+PTX", "9.0a")),  # arch-specific code has no portable PTX
    (("10.0f",), "10.0f", ("10.0f",)),
    ((), "", ()),
]


@pytest.mark.parametrize(("archs", "torch_list", "declared"), CASES, ids=[str(c[0]) for c in CASES])
def test_ptx_of_the_newest_plain_capability(archs: tuple[str, ...], torch_list: str, declared: tuple[str, ...]) -> None:
    assert torch_arch_list(archs) == torch_list
    assert declared_archs(archs) == declared


def test_loader_reads_the_declared_archs() -> None:
    """kernels' own arch check: 9.0+PTX runs on 9.0 and newer; plain 9.0 only on 9.x."""
    archs = pytest.importorskip("kernels.archs")
    assert archs._supports_cuda_capability(list(declared_archs(("8.0", "9.0"))), (12, 0))
    assert not archs._supports_cuda_capability(["8.0", "9.0"], (12, 0))
    assert not archs._supports_cuda_capability(list(declared_archs(("8.0", "9.0"))), (7, 5))
