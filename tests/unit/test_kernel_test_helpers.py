"""pybuild.testing's helpers for kernels' test-suites: each passes what it should and fails the rest."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from pybuild import testing


def test_devices_are_cpu_and_a_cuda_case_marked_gpu() -> None:
    cpu, cuda = testing.devices()
    assert cpu == "cpu"
    assert cuda.values == ("cuda",)
    names = [m.name for m in cuda.marks]
    assert "gpu" in names and "skipif" in names
    skip = next(m for m in cuda.marks if m.name == "skipif")
    assert skip.args == (not torch.cuda.is_available(),) and skip.kwargs["reason"] == "needs a CUDA GPU"


def test_assert_raises_wants_the_type_and_the_fragment() -> None:
    def boom() -> None:
        raise ValueError("rms_norm: eps must be a float, got str")

    testing.assert_raises(ValueError, "eps must be a float", boom)
    with pytest.raises(AssertionError):
        testing.assert_raises(ValueError, "another message", boom)
    with pytest.raises(pytest.fail.Exception):
        testing.assert_raises(ValueError, "eps", lambda: None)


def _doubling(stale: bool) -> tuple[Callable[[], tuple[torch.Tensor]], Callable[..., dict], Callable[[], None]]:
    """x doubled into y, inputs changed each time; with ``stale`` the op writes y only the first time."""
    x = torch.arange(6.0)
    y = torch.empty(6)
    calls = []

    def chain() -> tuple[torch.Tensor]:
        if not (stale and calls):
            torch.mul(x, 2, out=y)
        calls.append(1)
        return (y,)

    def checks(out: torch.Tensor) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        return {"y": (out, x * 2)}

    def change() -> None:
        x.neg_()

    return chain, checks, change


def test_check_each_time_passes_a_fresh_result_and_names_a_stale_one() -> None:
    chain, checks, change = _doubling(stale=False)
    testing.check_each_time(chain, checks, change, graph=False)
    chain, checks, change = _doubling(stale=True)
    with pytest.raises(AssertionError, match=r"time 2: y: 5 of 6 wrong"):
        testing.check_each_time(chain, checks, change, graph=False)


def test_ensure_built_builds_nothing_for_a_named_variant(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With PYBUILD_TEST_VARIANT the variant comes built (a machine that received build/): no build runs."""
    missing = tmp_path / "no-such-kernel"
    monkeypatch.delenv("PYBUILD_TEST_VARIANT", raising=False)
    with pytest.raises(RuntimeError, match="no-such-kernel"):
        testing.ensure_built(missing)  # a build is tried, and fails for want of a kernel
    monkeypatch.setenv("PYBUILD_TEST_VARIANT", "torch215-cxx11-cu132-x86_64-linux")
    testing.ensure_built(missing)


@pytest.mark.parametrize(
    "variant, torch_version, fits",
    [
        ("torch215-cxx11-cu132-x86_64-linux", "2.15.0+cu132", True),
        ("torch215-cxx11-cu132-x86_64-linux", "2.15.1", True),  # a patch release: the same ABI
        ("torch215-cxx11-cu132-x86_64-linux", "2.11.0+cu130", False),
        ("torch211-cxx11-cu130-x86_64-linux", "2.15.0+cu132", False),  # C++ ABI: no later minor either
        ("torch-stable-abi211-cu130-x86_64-linux", "2.15.0+cu132", True),  # stable ABI: that minor or later
        ("torch-stable-abi211-cu130-x86_64-linux", "2.10.0", False),
        ("torch-cuda", "2.10.0", True),  # pure Python: any torch
    ],
)
def test_torch_mismatch_says_which_torch_a_variant_loads_under(variant: str, torch_version: str, fits: bool) -> None:
    why = testing.torch_mismatch(variant, torch_version)
    if fits:
        assert why is None
    else:
        assert why is not None and why.startswith(f"{variant} needs torch ") and torch_version in why
