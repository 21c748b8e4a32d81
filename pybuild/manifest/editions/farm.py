"""The farm's own pre-edition format: `universal`, backends taken from the `[kernel.*]` sections
(`backends` optional), the farm's `depends` names (`cutlass`, `cub`), one key set for every kernel
section, and a license that defaults to Apache-2.0."""

from __future__ import annotations

from ..kernels import kernel_tables
from ..schema import Table
from .base import HUB, KNOWN_DEPENDS, Schema

SCHEMA = Schema(
    edition="farm",
    label="the farm's pre-edition format",
    general=Table(
        {
            "name": "str",
            "universal": "bool",
            "version": "int",
            "license": "str",
            "backends": "str_list",
            "python-depends": "str_list",
        },
        required=("name",),
        tables={"hub": HUB},
    ),
    frameworks={
        "torch": Table(
            {"src": "str_list", "include": "str_list", "minver": "version", "maxver": "version", "pyext": "str_list"}
        )
    },
    kernels=lambda: kernel_tables(depends_required=False, farm=True),
    depends=KNOWN_DEPENDS,
    compiled_backends_only=True,
    backends_optional=True,
    pyext_only_torch_is_noarch=True,
    one_framework=False,
)
