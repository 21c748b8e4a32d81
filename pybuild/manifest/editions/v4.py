"""Upstream's pre-edition format v4: v3 plus `source`, `[torch-noarch]`, `[torch] cxx-flags` and one
`stable-abi` version; `version` and `license` required, exactly one framework table."""

from __future__ import annotations

from ..kernels import kernel_tables
from ..schema import Kind, Table
from .base import HUB, Schema, framework_tables, general_cuda

_PYDEPS: dict[str, Kind] = {"python-depends": "str_list"}

SCHEMA = Schema(
    edition=4,
    label="pre-edition format v4",
    general=Table(
        {
            "name": "str",
            "version": "int",
            "license": "str",
            "upstream": "git_url",
            "backends": "str_list",
            "python-depends": "str_list",
            "source": "git_url",
        },
        required=("name", "version", "license", "backends"),
        tables={"hub": HUB, "cuda": general_cuda(_PYDEPS), "neuron": Table(dict(_PYDEPS)), "xpu": Table(dict(_PYDEPS))},
    ),
    frameworks=framework_tables(4),
    kernels=lambda: kernel_tables(depends_required=True),
)
