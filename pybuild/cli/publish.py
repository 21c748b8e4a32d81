"""``python -m pybuild publish``: publish a kernel release to the Hugging Face Hub (branch v<N> + tag)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..ui import Reporter, human_size, printable
from .check import print_check
from .common import add_output_flags, add_variants_flag, int_at_least, load_manifests, load_matrix

if TYPE_CHECKING:
    from ..manifest import Manifest
    from ..publish import ReleasePlan

NAME = "publish"
HELP = "publish a kernel release to the Hugging Face Hub (branch v<N> + tag)"
DESCRIPTION = (
    "Upload the kernel's sources, a generated kernel card and build/ as one commit on branch v<major>, "
    "then tag v<X.Y.Z> on that commit. Safe to re-run; never moves a tag. Token: HF_TOKEN or the saved "
    "login."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("kernel_dir", metavar="KERNEL_DIR", help="the kernel folder to release, e.g. kernels/img2gray")
    p.add_argument(
        "--repo-id",
        metavar="ORG/NAME",
        help="the Hub repo, e.g. my-org/img2gray (default: build.toml's [general.hub] repo-id)",
    )
    p.add_argument(
        "--version",
        required=True,
        metavar="X.Y.Z",
        help="the release's version (not pybuild's); X must equal build.toml's `version`",
    )
    p.add_argument("--dry-run", action="store_true", help="list files, sizes and refs; no network at all")
    p.add_argument(
        "--allow-noncompliant",
        action="store_true",
        help="publish even if `check` fails (said loudly, recorded in the kernel card)",
    )
    p.add_argument(
        "--retries",
        type=int_at_least(0),
        default=4,
        metavar="N",
        help="retries per request on transient errors (HTTP 5xx/429, dropped connections); default 4",
    )
    add_variants_flag(p)
    add_output_flags(p)


def run(args: argparse.Namespace) -> int:
    from ..check import check_kernel
    from ..publish import check_repo_id, kernel_repo_type, make_plan, parse_version

    rep = Reporter(quiet=args.quiet)
    manifest = load_manifests([args.kernel_dir])[0]
    if args.repo_id is None:  # build.toml's [general.hub] repo-id is the default
        if manifest.repo_id is None:
            raise UsageError(
                f"publish: no --repo-id given and {manifest.path} has no [general.hub] repo-id; pass "
                f"--repo-id ORG/{manifest.name} or add it to build.toml"
            )
        args.repo_id = manifest.repo_id
    check_repo_id(args.repo_id)  # argument and client errors before the (slower) check
    parse_version(args.version, manifest)
    repo_type = kernel_repo_type()
    with rep.task(f"checking {manifest.root}") as update:
        update("metadata, digests, ABI, imports", None)
        report = check_kernel(manifest.root, load_matrix(args))
    if not report.ok and not getattr(args, "json", False):
        print_check(rep, report)
    plan = make_plan(
        manifest,
        repo_id=args.repo_id,
        version=args.version,
        report=report,
        allow_noncompliant=args.allow_noncompliant,
        repo_type=repo_type,
    )
    _warnings(manifest, plan, args.quiet)
    if args.dry_run:
        return _dry_run(plan, args.json)
    return _publish(plan, args.retries, rep, args.quiet)


def _warnings(manifest: Manifest, plan: ReleasePlan, quiet: bool) -> None:
    """Say on stderr that no license was chosen (unless quiet), and that the build is not compliant
    (always: loud on purpose)."""
    from ..ui import err_console

    if not manifest.license_set and not quiet:
        err_console.print(
            f"warning: {manifest.path} names no license; publishing under the default "
            f'{manifest.license}. Set `license = "..."` in [general] to choose it.',
            style="yellow",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    if manifest.license_warning and not quiet:
        line = f"warning: {printable(manifest.license_warning)}"
        err_console.print(line, style="yellow", highlight=False, markup=False, soft_wrap=True)
    if plan.noncompliant:  # loud on purpose, even with -q
        err_console.print(
            f"[bold yellow]WARNING: publishing a NON-COMPLIANT build of {plan.kernel} "
            f"(--allow-noncompliant); the kernel card says so:[/]",
            highlight=False,
        )
        for line in plan.noncompliant:
            err_console.print(f"  - {printable(line)}", style="yellow", highlight=False, markup=False)


def _dry_run(plan: ReleasePlan, json_mode: bool) -> int:
    """What publishing would send and where, as a table or JSON; nothing goes over the network."""
    from huggingface_hub import constants

    if json_mode:
        print(
            json.dumps(
                {
                    "repo-id": plan.repo_id,
                    "repo-type": plan.repo_type,
                    "endpoint": constants.ENDPOINT,
                    "branch": plan.branch,
                    "tag": plan.tag,
                    "total-size": plan.total_size,
                    "noncompliant": list(plan.noncompliant),
                    "files": [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in plan.files],
                },
                indent=2,
            )
        )
        return 0
    rows = [(f.path, human_size(f.size), "generated" if f.source is None else "") for f in plan.files]
    Reporter().table(
        f"dry run: {len(plan.files)} files, {human_size(plan.total_size)} for {plan.repo_id} {plan.version}",
        ["path", "size", ""],
        rows,
    )
    url = f"{constants.ENDPOINT}/{'kernels/' if plan.repo_type == 'kernel' else ''}{plan.repo_id}"
    print(f"would write to {url} (repo type {plan.repo_type}; created if missing):")
    print(
        f"  branch {plan.branch}: one commit 'Release {plan.kernel} {plan.version}' with exactly these files "
        f"(created from the default branch if missing)"
    )
    print(f"  tag {plan.tag}: on that commit (refused if it exists with other content)")
    print("nothing was sent (dry run)")
    return 0


def _publish(plan: ReleasePlan, retries: int, rep: Reporter, quiet: bool) -> int:
    """Send the release: one commit on its branch, then its tag; a table of both refs at the end."""
    from ..publish import make_api, publish_plan

    if quiet:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    api = make_api()
    with rep.task(f"publishing {plan.repo_id} {plan.version}") as update:
        result = publish_plan(api, plan, retries=retries, info=rep.info, progress=update)  # PublishError, one line
    rep.table(
        f"{plan.repo_id} {plan.version}: {result.status}",
        ["ref", "commit", ""],
        [
            (f"branch {result.branch}", result.commit, f"get_kernel(..., version={plan.branch[1:]})"),
            (f"tag {result.tag}", result.commit, f'get_kernel(..., revision="{result.tag}")'),
        ],
    )
    rep.info(f"{result.status}: {result.url} ({len(plan.files)} files, {human_size(plan.total_size)})")
    return 0
