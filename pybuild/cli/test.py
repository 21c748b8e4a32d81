"""``python -m pybuild test``: build a variant if needed and run the kernel's tests against it, in
that variant's own environment (its torch, made with uv and cached)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import PybuildError, UsageError
from ..ui import Reporter, error
from .common import add_kernel_dirs, add_output_flags, add_variants_flag, load_manifests, load_matrix

if TYPE_CHECKING:
    from ..build import BuildResult
    from ..envs import Env
    from ..matrix import VariantJob
    from ..variants import Variant

NAME = "test"
HELP = "run a kernel's tests against a variant, in that variant's environment"
DESCRIPTION = (
    "Build the variant if needed (in its own environment: its torch, made with uv and cached), then run "
    "the kernel's tests/ with that environment's Python and torch, loading the built variant through the "
    "`kernels` loader. Arguments after `--` go to pytest."
)

#: The folder holding the ``pybuild`` package, put on the tests' PYTHONPATH.
_PYBUILD_PARENT = Path(__file__).resolve().parents[2]


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_kernel_dirs(p)
    p.add_argument(
        "--variant",
        action="append",
        required=True,
        metavar="NAME",
        help="the variant to test, e.g. torch214-cxx11-cpu-x86_64-linux (repeatable)",
    )
    p.add_argument("--no-build", action="store_true", help="test what build/<variant>/ holds; build nothing")
    p.add_argument(
        "--torch",
        action="append",
        metavar="X.Y",
        help="for a torch-stable-abi variant: run its tests "
        "under this torch release instead, in that release's environment (repeatable)",
    )
    add_variants_flag(p)
    add_output_flags(p, json_flag=False)


def run(args: argparse.Namespace) -> int:
    """Build (if needed) and test each kernel's variant in that variant's own environment."""
    from ..build import BuildOptions
    from ..envs import ensure_env, test_packages
    from ..errors import ToolchainError
    from ..matrix import build_in_envs, plan_jobs, refusal_error
    from ..variants import parse_variant_name

    rep = Reporter(quiet=args.quiet)
    matrix = load_matrix(args)
    manifests = [m for m in load_manifests(args.kernel_dirs, quiet=args.quiet) if not m.noarch]
    if not manifests:
        raise UsageError("test: no compiled kernel named (a pure-Python kernel's tests run with plain pytest)")
    variants = [parse_variant_name(n) for n in dict.fromkeys(args.variant)]
    wanted = []
    for v in variants:
        kernels = [m for m in manifests if v in m.variants(matrix.variants) or m.accepts(v)]
        if not kernels:
            raise UsageError(f"--variant {v.name}: not a variant of {', '.join(m.name for m in manifests)}")
        wanted += [(m, next((k for k in m.variants(matrix.variants) if k == v), v)) for m in kernels]
    jobs, refusals = plan_jobs(wanted)  # every variant planned before anything is made
    if refusals:
        raise refusal_error(refusals)
    failed = 0
    for job in jobs:
        env = ensure_env(job.plan, job.variant, progress=_progress(rep, job.variant), extra=test_packages())
        runners = [env]
        if args.torch:  # a stable-ABI variant under later torch releases, each in that release's environment
            runners = [_runner_env(job.variant, t, rep) for t in dict.fromkeys(args.torch)]
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
        failed = _run_tests(job, runners, args.pytest_args, rep) or failed
    return failed


def _run_tests(job: VariantJob, runners: list[Env], pytest_args: list[str], rep: Reporter) -> int:
    """Run each kernel's tests/ against ``job``'s built variant under each runner's Python; 1 if any failed."""
    import subprocess

    failed = 0
    for manifest in job.manifests:
        tests = manifest.root / "tests"
        if not tests.is_dir():
            rep.info(f"{manifest.name} {job.variant.name}: no tests/ folder; nothing to run")
            continue
        for runner in runners:
            info = runner.toolchain.torch
            build = "CUDA " + info.cuda if info.cuda else "CPU"
            rep.info(
                f"testing {manifest.name} {job.variant.name} under torch {info.version} ({build} build) "
                f"in {runner.path}"
            )
            environ = {
                **os.environ,
                "PYBUILD_TEST_VARIANT": job.variant.name,
                "PYTHONPATH": os.pathsep.join(filter(None, [str(_PYBUILD_PARENT), os.environ.get("PYTHONPATH")])),
            }
            if manifest.repo_id:  # tests written as upstream's, get_kernel(repo-id): LOCAL_KERNELS names
                # the variant folder itself, so the loader loads exactly this variant
                variant_dir = (manifest.root / "build" / job.variant.name).resolve()
                environ["LOCAL_KERNELS"] = f"{manifest.repo_id}={variant_dir}"
            cmd = [runner.python, "-m", "pytest", str(tests), "-p", "no:cacheprovider", *pytest_args]
            rc = subprocess.run(cmd, env=environ, cwd=manifest.root, check=False).returncode
            if rc != 0:
                error(f"{manifest.name} {job.variant.name}: tests failed under torch {info.version} (pytest exit {rc})")
                failed = 1
    return failed


def _runner_env(variant: Variant, torch: str, rep: Reporter) -> Env:
    """The environment of torch ``torch`` for testing the stable-ABI ``variant`` (same backend and system)."""
    from ..envs import Refusal, ensure_env, host_facts, index_config, plan_env, test_packages
    from ..errors import ToolchainError
    from ..variants import Variant

    if not variant.stable_abi:
        raise UsageError(
            f"--torch: {variant.name} is built for one torch only; --torch is for torch-stable-abi variants"
        )
    if tuple(int(x) for x in torch.split(".")) < variant.torch_tuple:
        raise UsageError(f"--torch {torch}: {variant.name} needs torch {variant.torch} or later")
    runner = Variant(torch, variant.backend, variant.backend_version, "cxx11", variant.system)
    plan = plan_env(runner, index_config(), host_facts())
    if isinstance(plan, Refusal):
        raise ToolchainError(f"--torch {torch}: {plan.variant}: {plan.reason}")
    return ensure_env(plan, runner, progress=_progress(rep, runner), extra=test_packages())


def _progress(rep: Reporter, variant: Variant) -> Callable[[str], None]:
    """Progress of making ``variant``'s environment, as indented lines naming it."""
    return lambda msg: rep.info(f"  {variant.name}: {msg}")


def _build_failed(result: BuildResult) -> PybuildError:
    from ..errors import BuildError

    return BuildError(f"{result.kernel} {result.variant}: {result.message}")
