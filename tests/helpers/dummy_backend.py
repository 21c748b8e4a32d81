"""A backend added from outside pybuild: this one module and its facts (``dummy_backend.json``, one
entry in the shape of ``pybuild/backends/backends.json``), nothing else.

Its "device compiler" is a stub: its CMake fragment hands the kernel's C++ sources to the host's C++
compiler, defining ``PYBUILD_DUMMY_STUB`` so that a source can tell it was built for this backend.
It builds on any host with torch, as toolkit 1.2, and its variants load like CPU ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import jinja2

from pybuild import backends
from pybuild.backends import BaseBackend, Facts, VariantView
from pybuild.sections.kernel import KernelSpec
from pybuild.sections.keys import key
from pybuild.toolchain import Toolchain, TorchInfo

FACTS = Facts.from_json(json.loads(Path(__file__).with_suffix(".json").read_text()))
#: The version of the stub toolkit, on every host.
STUB_TOOLKIT = "1.2"

FRAGMENT = jinja2.Template(
    "{% macro configure(archs) %}\n"
    'if(PYBUILD_BACKEND STREQUAL "dummy")\n'
    "  message(STATUS \"dummy toolkit for {{ archs | join(';') }}\")\n"
    "endif()\n"
    "{% endmacro %}\n"
    "{% macro helpers(archs) %}\n"
    "function(pybuild_dummy_toolkit)\n"
    "endfunction()\n"
    "{% endmacro %}\n"
    "{% macro target(archs) %}\n"
    'if(PYBUILD_BACKEND STREQUAL "dummy")\n'
    "  # the stub device compiler: the host's C++ compiler, told which device it builds for\n"
    "  target_compile_definitions(${OPS_NAME} PRIVATE PYBUILD_DUMMY_STUB=1)\n"
    "endif()\n"
    "{% endmacro %}\n",
    undefined=jinja2.StrictUndefined,
)


@dataclass(frozen=True)
class DummyKernel(KernelSpec):
    """The `[kernel.*]` sections of backend "dummy": the keys every backend takes, and its own flags."""

    backend: ClassVar[str] = "dummy"
    dummy_flags: tuple[str, ...] = key("dummy-flags", "str_list", language="CXX", doc="flags for the stub compiler")


class Dummy(BaseBackend):
    """Builds with the host's C++ compiler as its stub toolkit; its kernels run on the CPU."""

    kernel_type = DummyKernel
    env_buildable = False

    def fragment_template(self) -> jinja2.Template:
        return FRAGMENT

    def host_versions(self, info: TorchInfo, *, require_toolchain: bool = True) -> tuple[str | None, ...]:
        return (STUB_TOOLKIT,)

    def unbuildable(self, variant: VariantView, toolchain: Toolchain) -> str | None:
        if variant.backend_version != STUB_TOOLKIT:
            return f"variant {variant.name} needs dummy toolkit {variant.backend_version}; the stub is {STUB_TOOLKIT}"
        return None

    def unimportable(self, variant: VariantView, info: TorchInfo) -> str | None:
        return None


def register() -> Dummy:
    """Add the dummy backend to the registry (:func:`unregister` takes it out)."""
    backend = Dummy(FACTS)
    backends.register(backend)
    return backend


def unregister() -> None:
    backends.unregister(FACTS.name)
