"""Upstream's pre-edition format v4: v3 plus `source`, `[torch-noarch]`, `[torch] cxx-flags` and one
`stable-abi` version; `version` and `license` required, exactly one framework table."""

from __future__ import annotations

from ..kernels import kernel_tables
from ..schema import Table
from .base import HUB, PYDEPS, UPSTREAM_GENERAL, Schema, framework_tables, general_cuda

SCHEMA = Schema(
    edition=4,
    label="pre-edition format v4",
    general=Table(
        {**UPSTREAM_GENERAL, "source": "git_url"},
        required=("name", "version", "license", "backends"),
        tables={"hub": HUB, "cuda": general_cuda(PYDEPS), "neuron": Table(dict(PYDEPS)), "xpu": Table(dict(PYDEPS))},
    ),
    frameworks=framework_tables(4),
    kernels=lambda: kernel_tables(depends_required=True),
)
