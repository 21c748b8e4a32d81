"""The build selection policy as a library (``pybuild.selection``): which variants one `build` call
builds, here or in environments, decided without the CLI and without building anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from pybuild import selection
from pybuild.envplan import Refusal
from pybuild.errors import ToolchainError, UsageError
from pybuild.manifest import Manifest, load_manifest
from pybuild.variants import Matrix, Variant, load_matrix, parse_variant_name

REPO = Path(__file__).resolve().parents[2]
CPU = "torch213-cxx11-cpu-x86_64-linux"
CUDA = "torch213-cxx11-cu130-x86_64-linux"


@pytest.fixture
def img2gray() -> Manifest:
    return load_manifest(REPO / "kernels" / "img2gray")  # CUDA and CPU sections


@pytest.fixture
def matrix() -> Matrix:
    return load_matrix(REPO / "variants.json")


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> list[Variant]:
    """This machine builds the CPU variant of torch 2.13 (and nothing else); no environment is planned
    unless a test says how."""
    here = [parse_variant_name(CPU)]
    monkeypatch.setattr(selection, "kernel_host_variants", lambda m: list(here))
    monkeypatch.setattr(selection, "host_variants", lambda: list(here))

    def no_plans(wanted: object) -> None:
        raise AssertionError("no environment should be planned")

    monkeypatch.setattr(selection, "plan_jobs", no_plans)
    return here


@pytest.mark.parametrize(
    ("all_variants", "names", "fragment"),
    [
        (True, [CPU], f"--all and --variant {CPU} exclude each other"),
        (False, ["torch213-cpu"], "--variant torch213-cpu: not a variant name"),
    ],
)
def test_a_request_that_cannot_mean_anything_is_refused(all_variants: bool, names: list[str], fragment: str) -> None:
    with pytest.raises(UsageError, match=fragment):
        selection.check_request(all_variants, names)


def test_a_named_host_variant_is_built_here_only(img2gray: Manifest, matrix: Matrix, host: list[Variant]) -> None:
    chosen = selection.select_builds([img2gray], matrix, names=[CPU], info=print)
    assert chosen.host_names == {CPU} and chosen.env_wanted == [] and chosen.jobs == []
    assert chosen.host_builds(img2gray, print) == host


def test_a_named_variant_this_torch_cannot_build_goes_to_an_environment(
    img2gray: Manifest, matrix: Matrix, host: list[Variant], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selection, "plan_jobs", lambda wanted: ([], [Refusal(CUDA, "no index serves it")]))
    with pytest.raises(ToolchainError, match=f"{CUDA}: no index serves it"):  # --variant: refused before any work
        selection.select_builds([img2gray], matrix, names=[CUDA], info=print)
    # --all lists it as not built instead, and builds no host variant of a compiled kernel here
    chosen = selection.select_builds([img2gray], matrix, all_variants=True, info=print)
    assert chosen.refusals == [Refusal(CUDA, "no index serves it")]
    assert CUDA in [v.name for _, v in chosen.env_wanted] and chosen.host_builds(img2gray, print) == []


def test_a_variant_no_kernel_builds_names_the_closest(img2gray: Manifest, matrix: Matrix, host: list[Variant]) -> None:
    with pytest.raises(UsageError, match=r"--variant torch299-cxx11-cpu-x86_64-linux: not a variant of variants\.json"):
        selection.select_builds([img2gray], matrix, names=["torch299-cxx11-cpu-x86_64-linux"], info=print)


def test_a_kernel_without_a_host_variant_says_why(guide_kernel: Path, host: list[Variant]) -> None:
    guide = load_manifest(guide_kernel)  # the guide's CUDA-only kernel on a machine that builds CPU variants
    chosen = selection.BuildSelection({guide.root: []}, None, [], [], [])
    said: list[str] = []
    assert chosen.host_builds(guide, said.append) == []
    assert said == [f"img2gray: no host variant to build (kernel backends ['cuda'], host [{CPU!r}])"]
    # a kernel plain `build` sends to an environment instead says nothing here
    sent = selection.BuildSelection({guide.root: []}, None, [(guide, parse_variant_name(CUDA))], [], [])
    assert sent.host_builds(guide, said.append) == [] and len(said) == 1
