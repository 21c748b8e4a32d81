"""Upstream's pre-edition format v3: `[general] backends` required, `[general.cuda]` bounds, no
`source`, no `[torch-noarch]` (a [torch] with only `pyext` is a pure-Python kernel), and a license
that upstream's conversion requires."""

from __future__ import annotations

from ..kernels import kernel_tables
from ..schema import Table
from .base import HUB, PYDEPS, UPSTREAM_GENERAL, Schema, framework_tables, general_cuda

SCHEMA = Schema(
    edition=3,
    label="pre-edition format v3",
    general=Table(
        dict(UPSTREAM_GENERAL),
        required=("name", "backends"),
        tables={"hub": HUB, "cuda": general_cuda(PYDEPS), "neuron": Table(dict(PYDEPS)), "xpu": Table(dict(PYDEPS))},
    ),
    frameworks=framework_tables(3),
    kernels=lambda: kernel_tables(depends_required=True),
    license_required=True,
    pyext_only_torch_is_noarch=True,
    one_framework=False,
)
