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
        backend, archs = _backend(manifest, args.backend, rep)
        spec = ProjectSpec(
            backend=backend, ops_name=ops_name(manifest, backend, source_hash(manifest)), cuda_archs=archs
        )
        planned.append((manifest, spec, checked_project(manifest, spec)))  # every kernel checked before any write
    for manifest, spec, files in planned:
        for rel, changed in write_project(manifest, spec, files=files):
            rep.info(f"  {'wrote    ' if changed else 'unchanged'} {manifest.root / rel}")
        rep.info(
            f"generated the CMake project of {manifest.name} ({spec.backend}, op namespace {spec.ops_name}); "
            f"next: pip install --no-build-isolation -e {manifest.root}"
        )
    return 0


def _backend(manifest: Manifest, wanted: str | None, rep: Reporter) -> tuple[str, tuple[str, ...]]:
    """The backend to generate ``manifest``'s project for (``wanted``, else the host's) and the device
    architectures it targets."""
    from .. import backends
    from ..host import host_variants

    if wanted is not None:
        if wanted not in manifest.backends:
            raise UsageError(f"--backend {wanted}: {manifest.path} has kernels for {list(manifest.backends)}")
        return wanted, backends.get(wanted).default_archs(manifest, None)
    host = [v for v in host_variants() if v.backend in manifest.backends]
    if host:
        variant = host[-1]  # CUDA over CPU where both are possible
        return variant.backend, backends.get(variant.backend).default_archs(manifest, variant.backend_version)
    # the project holds every backend's sections; `build` says what this machine can build
    backend = manifest.backends[0]
    archs = backends.get(backend).default_archs(manifest, None)
    rep.info(
        f"{manifest.name}: this machine builds none of its backends {list(manifest.backends)}; "
        f"the project defaults to {backend} (configure with -DPYBUILD_BACKEND=<backend>)"
    )
    return backend, archs
