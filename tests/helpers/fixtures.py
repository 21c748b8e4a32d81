"""Fixtures shared by the test modules; ``tests/conftest.py`` registers them, so a test takes them by name."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fakebuild import make_kernel, make_variant, one_variant_matrix
from tests.hubfixture import DUMMY_TOKEN, HubServer, use_hub_in_process

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def guide_kernel(tmp_path: Path) -> Path:
    """A copy of the guide's img2gray kernel folder (its build.toml unmodified)."""
    dest = tmp_path / "img2gray"
    shutil.copytree(FIXTURES / "guide-img2gray", dest)
    return dest


@pytest.fixture
def kernel(tmp_path: Path) -> Path:
    """The tiny kernel of ``fakebuild`` with one built variant (this machine's CPU variant)."""
    k = make_kernel(tmp_path)
    make_variant(k)
    return k


@pytest.fixture
def variants_file(tmp_path: Path) -> Path:
    """A variants.json that requires exactly this machine's CPU variant (the one ``kernel`` has built)."""
    return one_variant_matrix(tmp_path / "variants.json")


@pytest.fixture
def hub() -> Iterator[HubServer]:
    """A loopback Hub, empty at the start of each test."""
    with HubServer() as server:
        yield server


@pytest.fixture
def hub_in_process(hub: HubServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> HubServer:
    """``hub``, with this process's huggingface_hub and kernels pointed at it (HF home: tmp_path/hf)."""
    use_hub_in_process(monkeypatch, hub.endpoint, tmp_path / "hf")
    return hub


@pytest.fixture
def api(hub_in_process: HubServer) -> Any:
    """An ``HfApi`` talking to the loopback Hub, which this process's huggingface_hub also uses."""
    from huggingface_hub import HfApi

    return HfApi(endpoint=hub_in_process.endpoint, token=DUMMY_TOKEN)
