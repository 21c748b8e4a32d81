"""``python -m pybuild test``: build a variant if needed and run the kernel's tests against it, with
this Python where its torch is exactly the variant's, else in that variant's own environment (its
torch, made with uv and cached)."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from packaging.version import Version

from ..errors import PybuildError, UsageError
from ..ui import Reporter, error
from .common import add_kernel_dirs, add_output_flags, add_variants_flag, load_manifests, load_matrix

if TYPE_CHECKING:
    from ..build import BuildResult
    from ..envs import Env
    from ..manifest import Manifest
    from ..matrix import VariantJob
    from ..testshell import Runner
    from ..variants import Matrix, Variant

NAME = "test"
HELP = "run a kernel's tests against a variant, in that variant's environment"
DESCRIPTION = (
    "Build the variant if needed, then run the kernel's tests/ against it with the built variant first "
    "on the import path and LOCAL_KERNELS naming it, as kernel-builder's test shell does. This Python "
    "runs them where its torch is exactly the variant's; else the variant's own environment does (its "
    "torch, made with uv and cached). Arguments after `--` go to pytest."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_kernel_dirs(p)
    p.add_argument(
        "--variant",
        action="append",
        required=True,
        metavar="NAME",
        help="the variant to test, e.g. torch214-cxx11-cpu-x86_64-linux (repeatable)",
    )
    add_no_build_flag(p)
    p.add_argument("--ci", action="store_true", help="run only the tests marked kernels_ci, as kernel-builder's CI")
    p.add_argument(
        "--torch",
        action="append",
        type=_torch_release,
        metavar="X.Y",
        help="for a torch-stable-abi variant: run its tests "
        "under this torch release instead, in that release's environment (repeatable)",
    )
    add_variants_flag(p)
    add_output_flags(p, json_flag=False)


def add_no_build_flag(p: argparse.ArgumentParser) -> None:
    """--no-build, shared with `shell`."""
    p.add_argument("--no-build", action="store_true", help="use what build/<variant>/ holds; build nothing")


def run(args: argparse.Namespace) -> int:
    """Build (if needed) and test each kernel's variant, with this Python or the variant's environment."""
    from ..testshell import check_tests

    rep = Reporter(quiet=args.quiet)
    matrix = load_matrix(args)
    manifests = [m for m in load_manifests(args.kernel_dirs, quiet=args.quiet) if not m.noarch]
    if not manifests:
        raise UsageError("test: no compiled kernel named (a pure-Python kernel's tests run with plain pytest)")
    for m in manifests:  # before anything is built: a kernel without tests never passes
        check_tests(m)
    failed = 0
    for manifest, variant, runners in prepare(args, args.variant, manifests, matrix, rep):
        failed = _run_tests(manifest, variant, runners, args, rep) or failed
    return failed


def selected(variant_names: list[str], manifests: list[Manifest], matrix: Matrix) -> list[tuple[Manifest, Variant]]:
    """(kernel, variant) for each named variant and each kernel that builds it; a name no kernel builds is refused."""
    from ..variants import parse_variant_name

    wanted = []
    for v in (parse_variant_name(n) for n in dict.fromkeys(variant_names)):
        kernels = [m for m in manifests if v in m.variants(matrix.variants) or m.accepts(v)]
        if not kernels:
            raise UsageError(f"--variant {v.name}: not a variant of {', '.join(m.name for m in manifests)}")
        wanted += [(m, next((k for k in m.variants(matrix.variants) if k == v), v)) for m in kernels]
    return wanted


def prepare(
    args: argparse.Namespace, variant_names: list[str], manifests: list[Manifest], matrix: Matrix, rep: Reporter
) -> list[tuple[Manifest, Variant, list[Runner]]]:
    """Each (kernel, variant) of ``variant_names``, built unless --no-build (then: checked to be built), with the
    Pythons that run it: this one where its torch is the variant's, else the variant's environment
    (``--torch``: those releases' environments). Every variant is planned before anything is made."""
    from ..matrix import plan_jobs, refusal_error
    from ..testshell import check_built

    wanted = selected(variant_names, manifests, matrix)
    if args.no_build:
        for m, v in wanted:
            check_built(m, v)
    here = [(m, v) for m, v in wanted if not getattr(args, "torch", None) and _runs_here(m, v, args.no_build)]
    jobs, refusals = plan_jobs([w for w in wanted if w not in here])
    if refusals:
        raise refusal_error(refusals)
    out = []
    for m, v in here:
        out.append((m, v, [_here(m, v, args.no_build, rep)]))
    for job in jobs:
        runners = _in_env(job, args, rep)
        out += [(m, job.variant, runners) for m in job.manifests]
    return out


def _runs_here(manifest: Manifest, variant: Variant, no_build: bool) -> bool:
    """Whether this Python's torch is exactly ``variant``'s (a host variant of the kernel; one this
    machine also builds, nvcc included, unless ``no_build``)."""
    from ..errors import ToolchainError
    from ..host import kernel_host_variants

    try:
        return variant in kernel_host_variants(manifest, require_toolchain=not no_build)
    except ToolchainError:  # no torch in this Python
        return False


def _here(manifest: Manifest, variant: Variant, no_build: bool, rep: Reporter) -> Runner:
    """This Python as the runner of ``variant``, built with it unless ``no_build``."""
    import importlib.util
    import sys

    from ..build import build_variant
    from ..errors import ToolchainError
    from ..host import torch_info
    from ..testshell import Runner

    info = torch_info()
    rep.info(
        f"{manifest.name} {variant.name}: this Python's torch {info.version} is the variant's; "
        f"using it ({sys.executable}), no environment made"
    )
    if importlib.util.find_spec("pytest") is None:
        raise ToolchainError(f"pytest is not installed in {sys.executable}; install it (pip install pytest)")
    if not no_build:
        label = f"{manifest.name} {variant.name}"
        with rep.task(label) as update:
            result = build_variant(manifest, variant, progress=update)
        rep.info(f"{label}: {result.status} ({result.seconds:.1f} s)")
    return Runner(sys.executable, info)


def _in_env(job: VariantJob, args: argparse.Namespace, rep: Reporter) -> list[Runner]:
    """The variant's environment (made if needed), the job's kernels built in it unless --no-build;
    the runners: that environment, or with --torch those releases' environments."""
    from ..build import BuildOptions
    from ..envs import ensure_env
    from ..errors import ToolchainError
    from ..matrix import build_in_envs
    from ..testshell import Runner

    env = ensure_env(
        job.plan, job.variant, progress=_progress(rep, job.variant), extra=_test_packages(job.manifests, job.variant)
    )
    if not args.no_build:
        with rep.tasks() as new_task:
            results = build_in_envs([job], BuildOptions(), new_task, rep.info)
        bad = [r for r in results if r.status == "failed"]
        if bad:
            raise (
                ToolchainError(f"{bad[0].kernel} {bad[0].variant}: not built: {bad[0].message}")
                if bad[0].exit_code == 5
                else _build_failed(bad[0])
            )
    torches = getattr(args, "torch", None)
    # a stable-ABI variant under later torch releases (--torch): each in that release's environment
    envs = [_runner_env(job.variant, t, rep, job.manifests) for t in dict.fromkeys(torches)] if torches else [env]
    return [Runner(e.python, e.toolchain.torch, e.path) for e in envs]


def _run_tests(
    manifest: Manifest, variant: Variant, runners: list[Runner], args: argparse.Namespace, rep: Reporter
) -> int:
    """Run the kernel's tests/ against ``variant`` under each runner's Python; 1 if any failed."""
    import subprocess

    from ..envs import env_in_use
    from ..host import torch_build
    from ..testshell import pytest_command, suite_environ

    failed = 0
    for runner in runners:
        info = runner.torch
        build = torch_build(info)
        rep.info(f"testing {manifest.name} {variant.name} under torch {info.version} ({build} build) in {runner.label}")
        cmd = pytest_command(runner, manifest, args.pytest_args, ci=args.ci)
        environ = suite_environ(manifest, variant, os.environ)
        with env_in_use(runner.env) if runner.env is not None else contextlib.nullcontext():
            rc = subprocess.run(cmd, env=environ, cwd=manifest.root.resolve(), check=False).returncode
        if rc == 5:  # pytest: no test collected (a -k, -m or --ci that selects none)
            what = "no test is marked kernels_ci" if args.ci else "pytest collected no test"
            error(f"{manifest.name} {variant.name}: {what} (pytest exit 5); nothing was tested")
            failed = 1
        elif rc != 0:
            error(f"{manifest.name} {variant.name}: tests failed under torch {info.version} (pytest exit {rc})")
            failed = 1
    return failed


def _torch_release(text: str) -> str:
    """``--torch``: a torch release as MAJOR.MINOR."""
    if not re.fullmatch(r"\d+\.\d+", text):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a torch release as MAJOR.MINOR, e.g. 2.13")
    return text


def _runner_env(variant: Variant, torch: str, rep: Reporter, manifests: tuple[Manifest, ...]) -> Env:
    """The environment of torch ``torch`` for testing the stable-ABI ``variant`` (same backend and system)."""
    from ..envs import Refusal, ensure_env, host_facts, index_config, plan_env
    from ..errors import ToolchainError
    from ..variants import Variant

    if not variant.stable_abi:
        raise UsageError(
            f"--torch: {variant.name} is built for one torch only; --torch is for torch-stable-abi variants"
        )
    if Version(torch).release < variant.torch_tuple:
        raise UsageError(f"--torch {torch}: {variant.name} needs torch {variant.torch} or later")
    runner = Variant(torch, variant.backend, variant.backend_version, "cxx11", variant.system)
    plan = plan_env(runner, index_config(), host_facts())
    if isinstance(plan, Refusal):
        raise ToolchainError(f"--torch {torch}: {plan.variant}: {plan.reason}")
    return ensure_env(plan, runner, progress=_progress(rep, runner), extra=_test_packages(manifests, variant))


def _test_packages(manifests: tuple[Manifest, ...] | list[Manifest], variant: Variant) -> tuple[str, ...]:
    """pytest and the loader, and the Python packages the kernels' `python-depends` name for the
    variant's backend (as upstream installs them beside the kernel)."""
    from ..deps.python import python_requirements
    from ..envs import test_packages

    names = [n for m in manifests for n in m.python_depends_for(variant.backend)]
    return (*test_packages(), *python_requirements(list(dict.fromkeys(names)), variant.backend))


def _progress(rep: Reporter, variant: Variant) -> Callable[[str], None]:
    """Progress of making ``variant``'s environment, as indented lines naming it."""
    return lambda msg: rep.info(f"  {variant.name}: {msg}")


def _build_failed(result: BuildResult) -> PybuildError:
    from ..errors import BuildError

    return BuildError(f"{result.kernel} {result.variant}: {result.message}")
