"""``python -m pybuild generate``: write a kernel's CMake project for the edit-compile loop."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..ui import Reporter
from .common import add_kernel_dirs, add_output_flags, backend_choices, load_manifests

if TYPE_CHECKING:
    from ..manifest import Manifest

NAME = "generate"
HELP = "write a kernel's CMake project (dev loop)"
DESCRIPTION = (
    "Write CMakeLists.txt, setup.py, pyproject.toml, cmake/, torch-ext/registration.h and _ops.py from "
    "build.toml, so that `pip install --no-build-isolation -e KERNEL_DIR` builds it."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_kernel_dirs(p)
    p.add_argument(
        "--backend",
        choices=backend_choices(),
        help="backend to generate for (default: the host's CUDA where possible, else CPU)",
    )
    add_output_flags(p, json_flag=False)


def run(args: argparse.Namespace) -> int:
    from ..digest import ops_name, source_hash
    from ..generate import ProjectSpec, checked_project, write_project

    rep = Reporter(quiet=args.quiet)
    manifests = load_manifests(args.kernel_dirs, quiet=args.quiet)  # validate all first
    planned = []
    for manifest in manifests:
        if manifest.noarch:
            rep.info(
                f"{manifest.name}: a pure-Python kernel has no CMake project to generate; edit "
                f"{manifest.root / 'torch-ext' / manifest.python_name} and `python -m pybuild build` it"
            )
            continue
        backend, archs, here = _backend(manifest, args.backend)
        spec = ProjectSpec(
            backend=backend, ops_name=ops_name(manifest, backend, source_hash(manifest)), cuda_archs=archs
        )
        planned.append((manifest, spec, here, checked_project(manifest, spec)))  # all checked before any write
    for manifest, spec, here, files in planned:
        for rel, changed in write_project(manifest, spec, files=files):
            rep.info(f"  {'wrote    ' if changed else 'unchanged'} {manifest.root / rel}")
        done = f"generated the CMake project of {manifest.name} ({spec.backend}, op namespace {spec.ops_name})"
        if here:
            rep.info(f"{done}; next: pip install --no-build-isolation -e {manifest.root}")
        else:
            # `pip install -e` compiles with this Python's torch, which builds none of the kernel's backends
            rep.info(
                f"{done}; this Python's torch builds none of its backends {list(manifest.backends)}, so "
                f"`pip install -e` cannot build it here: `python -m pybuild build {manifest.root}` builds "
                "its variant in an environment, or install a torch (and toolkit) of that backend"
            )
    return 0


def _backend(manifest: Manifest, wanted: str | None) -> tuple[str, tuple[str, ...], bool]:
    """The backend to generate ``manifest``'s project for (``wanted``, else the host's), the device
    architectures it targets, and whether this Python's torch builds it."""
    from .. import backends
    from ..host import host_variants

    host = [v for v in host_variants() if v.backend in manifest.backends]
    if wanted is not None:
        if wanted not in manifest.backends:
            raise UsageError(f"--backend {wanted}: {manifest.path} has kernels for {list(manifest.backends)}")
        return wanted, backends.get(wanted).default_archs(manifest, None), any(v.backend == wanted for v in host)
    if host:
        variant = host[-1]  # CUDA over CPU where both are possible
        archs = backends.get(variant.backend).default_archs(manifest, variant.backend_version)
        return variant.backend, archs, True
    # the project holds every backend's sections (configure with -DPYBUILD_BACKEND=<backend>)
    backend = manifest.backends[0]
    return backend, backends.get(backend).default_archs(manifest, None), False
