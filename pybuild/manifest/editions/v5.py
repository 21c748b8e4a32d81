"""Edition 5, the current one: `edition = 5` in [general], `kernel-depends`, a `stable-abi` per
backend, per-backend [general.<backend>] tables (tpu included)."""

from __future__ import annotations

from ...sections.keys import Kind
from ..kernels import kernel_tables
from ..schema import Table
from .base import HUB, PYDEPS, UPSTREAM_GENERAL, Schema, framework_tables, general_cuda

_KDEPS: dict[str, Kind] = {"kernel-depends": "kernel_deps"}

SCHEMA = Schema(
    edition=5,
    label="edition 5",
    general=Table(
        {
            **UPSTREAM_GENERAL,
            "source": "git_url",
            "edition": "int",
            **_KDEPS,
        },
        required=("name", "version", "edition", "license", "backends"),
        examples={"edition": "5"},
        tables={
            "hub": HUB,
            "cuda": general_cuda({**PYDEPS, **_KDEPS}),
            "neuron": Table({**PYDEPS, **_KDEPS}),
            "tpu": Table(dict(PYDEPS)),
            "xpu": Table({**PYDEPS, **_KDEPS}),
        },
    ),
    frameworks=framework_tables(5),
    kernels=lambda: kernel_tables(depends_required=True),
)
