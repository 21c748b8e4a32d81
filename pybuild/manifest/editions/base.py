"""What an edition declares: its schema (tables, keys, kinds) and the few rules in which editions
differ when converted into the one model (which backends and `depends` names they take, whether a
license is required, how a pure-Python kernel is written)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ...sections.keys import Kind
from ..schema import Table

Edition = Literal[5, 4, 3, "farm"]
CURRENT_EDITION: Literal[5] = 5

#: Upstream's `depends` of a kernel section (its deps.rs), and the farm's own names.
UPSTREAM_DEPENDS = (
    "cutlass_2_10",
    "cutlass_3_5",
    "cutlass_3_6",
    "cutlass_3_8",
    "cutlass_3_9",
    "cutlass_4_0",
    "cutlass_4_4",
    "cutlass_4_5",
    "sycl_tla",
    "metal-cpp",
    "torch",
)
FARM_DEPENDS = ("torch", "cutlass", "cub")
KNOWN_DEPENDS = (*FARM_DEPENDS, *(d for d in UPSTREAM_DEPENDS if d not in FARM_DEPENDS))
#: [torch-noarch] keys upstream spells with underscores (also read with dashes here).
NOARCH_SPELLINGS = ("cuda_capabilities", "rocm_archs")

HUB = Table({"repo-id": "str", "branch": "str"})
PYDEPS: dict[str, Kind] = {"python-depends": "str_list"}
#: The [general] keys every upstream edition (v3 on) takes, in the order messages list them.
UPSTREAM_GENERAL: dict[str, Kind] = {
    "name": "str",
    "version": "int",
    "license": "str",
    "upstream": "git_url",
    "backends": "str_list",
    **PYDEPS,
}


def general_cuda(extra: dict[str, Kind]) -> Table:
    """[general.cuda]: the bounds of the CUDA toolkits (their examples CUDA versions, not torch's), and ``extra``."""
    return Table({"minver": "version", "maxver": "version", **extra}, examples={"minver": "12.8", "maxver": "13.0"})


@dataclass(frozen=True)
class Schema:
    """One edition: its tables, and how its meaning differs from the current edition's."""

    edition: Edition
    label: str
    general: Table
    frameworks: dict[str, Table]
    #: the `[kernel.*]` tables per backend (a function: new backends may register kernel types)
    kernels: Callable[[], dict[str, Table]]
    #: `depends` names a kernel section may use
    depends: tuple[str, ...] = UPSTREAM_DEPENDS
    #: `[general] backends` may name only backends that compile kernels (else: every upstream backend)
    compiled_backends_only: bool = False
    #: `[general] backends` may be left out (then: the backends of the kernel sections)
    backends_optional: bool = False
    #: `[general] license` is required to build (upstream's v3 conversion refuses its absence)
    license_required: bool = False
    #: a [torch] without `src` and without kernel sections is a pure-Python kernel (the pre-edition way)
    pyext_only_torch_is_noarch: bool = False
    #: exactly one framework table (else: at most one of [torch], [tvm-ffi])
    one_framework: bool = True

    @property
    def top(self) -> tuple[str, ...]:
        return ("general", *self.frameworks, "kernel")


def framework_tables(edition: Edition) -> dict[str, Table]:
    """[torch], [tvm-ffi] and (editions 4 and 5) [torch-noarch] as ``edition`` writes them."""
    torch: dict[str, Kind] = {
        "src": "str_list",
        "include": "str_list",
        "minver": "version",
        "maxver": "version",
        "pyext": "str_list",
    }
    tvm: dict[str, Kind] = {"src": "str_list", "include": "str_list", "pyext": "str_list"}
    if edition in (4, 5):
        torch.update({"cxx-flags": "str_list", "stable-abi": "version" if edition == 4 else "version_or_backend_table"})
        tvm["cxx-flags"] = "str_list"
    out = {"torch": Table(torch), "tvm-ffi": Table(tvm, required=("src",))}
    if edition in (4, 5):
        # upstream's TorchNoarch has no kebab-case renaming: it reads `cuda_capabilities`, `rocm_archs`;
        # the farm also takes the dashed spelling of every other table (not both at once)
        out["torch-noarch"] = Table(
            {
                "pyext": "str_list",
                "cuda-capabilities": "str_list",
                "rocm-archs": "str_list",
                "cuda_capabilities": "str_list",
                "rocm_archs": "str_list",
            }
        )
    return out
