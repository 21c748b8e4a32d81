"""Command line: ``python -m pybuild <command>``. ``main(argv)`` returns the exit code."""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import __version__, safeload
from .errors import ManifestError, PybuildError, UsageError, VariantsError
from .ui import Reporter, error, human_size, out_console

if TYPE_CHECKING:
    from .manifest import Manifest

EPILOG = ("Run `python -m pybuild <command> --help` for a command's options. Exit codes: 0 done, 1 other failure "
          "(e.g. a file system error), 2 command-line argument, 3 build.toml, 4 variants.json, 5 toolchain, "
          "6 compile/link, 7 collect, 8 check, 9 publish, 10 an input beyond pybuild's limits (too deep, too "
          "large, a special file, a file name that is not UTF-8) in a tree a build reads; met in build.toml, "
          "variants.json or by collect, check or publish, such an input exits with their code.")

#: What to do about the file-system errors a command may meet, by errno.
_OS_HINTS = {
    errno.EACCES: "check the permissions of that path (or pass another folder)",
    errno.EPERM: "check the permissions of that path (or pass another folder)",
    errno.EROFS: "that file system is read-only; pass a writable folder",
    errno.ENOSPC: "the disk is full; free some space (e.g. `python -m pybuild clean --build`) and run again",
    errno.EDQUOT: "the disk quota is used up; free some space and run again",
    errno.ENOTDIR: "a file stands where a folder is needed; move it away",
    errno.EISDIR: "a folder stands where a file is needed; move it away",
    errno.ENOENT: "it does not exist; check the path",
    errno.ENAMETOOLONG: "the path is too long; use a shorter folder",
}


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (one line, exit 2) instead of printing usage and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message} (see --help)")


# --------------------------------------------------------------------------------------------
# Shared helpers


def _farm_root() -> Path:
    from .variants import find_variants_file

    return find_variants_file().parent


def _kernel_dirs(args_dirs: Sequence[str]) -> list[Path]:
    """The kernel folders named, or every ``kernels/*`` with a build.toml when none is named."""
    if args_dirs:
        dirs = []
        for d in args_dirs:
            p = Path(d)
            if (p / "build.toml").is_dir():
                raise UsageError(f"{p / 'build.toml'}: is a folder; a kernel's build.toml must be a file")
            if not os.path.lexists(p / "build.toml"):  # a FIFO or a device: load_manifest names it
                raise UsageError(f"{p}: not a kernel folder (no build.toml); pass e.g. kernels/img2gray")
            dirs.append(p)
        return dirs
    root = _farm_root() / "kernels"
    dirs = sorted(p.parent for p in root.glob("*/build.toml"))
    if not dirs:
        raise UsageError(f"no kernels found under {root}; pass a kernel folder")
    return dirs


def _load_manifests(args_dirs: Sequence[str]) -> list[Manifest]:
    """Every named kernel (each folder once), all parsed before any work, with names unique."""
    from .manifest import duplicate_name_message, load_manifest

    seen: dict[Path, Path] = {}
    for d in _kernel_dirs(args_dirs):
        seen.setdefault(d.resolve(), d)
    manifests = [load_manifest(d) for d in seen.values()]
    by_name: dict[str, list[Path]] = {}
    for m in manifests:
        by_name.setdefault(m.name, []).append(m.root)
    for name, dirs in by_name.items():
        if len(dirs) > 1:
            raise UsageError(duplicate_name_message(name, dirs))
    return manifests


def _matrix(args: argparse.Namespace):  # noqa: ANN202
    from .variants import find_variants_file, load_matrix

    path = Path(args.variants) if getattr(args, "variants", None) else find_variants_file()
    return load_matrix(path)


# --------------------------------------------------------------------------------------------
# variants


def cmd_variants(args: argparse.Namespace) -> int:
    from .host import host_variants

    matrix = _matrix(args)
    variants = list(matrix.variants)
    manifest = _load_manifests([args.kernel])[0] if args.kernel else None
    if manifest is not None:
        variants = manifest.variants(variants)
    try:
        host = {v.name for v in host_variants()}
    except PybuildError:
        host = set()
    if args.json:
        out = [
            {
                "name": v.name,
                "torch": v.torch,
                "backend": v.backend,
                "backend-version": v.backend_version,
                "cxx-abi": v.cxx_abi,
                "system": v.system,
                "host": v.noarch or v.name in host,  # every machine builds a noarch variant
            }
            for v in variants
        ]
        print(json.dumps(out, indent=2))
        return 0
    if args.quiet:
        print("\n".join(v.name for v in variants))
        return 0
    noun = "variant" if len(variants) == 1 else "variants"
    title = f"{len(variants)} {noun} from {matrix.path}" + (f" for {manifest.name}" if manifest else "")
    rows = [(v.name, v.torch or "any", v.backend_tag, v.cxx_abi or "-", v.system or "any",
             "◀ host" if v.noarch or v.name in host else "") for v in variants]
    Reporter().table(title, ["variant", "torch", "backend", "abi", "system", ""], rows)
    if manifest is not None and manifest.noarch:
        print("(a pure-Python kernel: every machine builds all of these; each loads with any torch of its backend)")
    elif not host & {v.name for v in variants}:
        print("(this machine's variant is not in the list)" if host else "(no torch installed: host variant unknown)")
    return 0


# --------------------------------------------------------------------------------------------
# generate / clean


def cmd_generate(args: argparse.Namespace) -> int:
    from .digest import ops_name, source_hash
    from .generate import ProjectSpec, checked_project, write_project
    from .host import host_variants
    from .manifest import cuda_capabilities_for

    rep = Reporter(quiet=args.quiet)
    manifests = _load_manifests(args.kernel_dirs)  # validate all first
    planned = []
    for manifest in manifests:
        if manifest.noarch:
            rep.info(f"{manifest.name}: a pure-Python kernel has no CMake project to generate; edit "
                     f"{manifest.root / 'torch-ext' / manifest.python_name} and `python -m pybuild build` it")
            continue
        backend = args.backend
        archs: tuple[str, ...] = ()
        if backend is None:
            host = [v for v in host_variants() if v.backend in manifest.backends]
            if host:
                variant = host[-1]  # CUDA over CPU where both are possible
                backend = variant.backend
                if backend == "cuda" and variant.backend_version:
                    archs = cuda_capabilities_for(manifest, variant.backend_version)
            else:  # the project holds every backend's sections; `build` says what this machine can build
                backend = manifest.backends[0]
                archs = manifest.cuda_capabilities() if backend == "cuda" else ()
                rep.info(f"{manifest.name}: this machine builds none of its backends {list(manifest.backends)}; "
                         f"the project defaults to {backend} (configure with -DPYBUILD_BACKEND=<backend>)")
        else:
            if backend not in manifest.backends:
                raise UsageError(f"--backend {backend}: {manifest.path} has kernels for {list(manifest.backends)}")
            archs = manifest.cuda_capabilities() if backend == "cuda" else ()
        spec = ProjectSpec(backend=backend, ops_name=ops_name(manifest, backend, source_hash(manifest)),
                           cuda_archs=archs)
        planned.append((manifest, spec, checked_project(manifest, spec)))  # every kernel checked before any write
    for manifest, spec, files in planned:
        for rel, changed in write_project(manifest, spec, files=files):
            rep.info(f"  {'wrote    ' if changed else 'unchanged'} {manifest.root / rel}")
        rep.info(f"generated the CMake project of {manifest.name} ({spec.backend}, op namespace {spec.ops_name}); "
                 f"next: pip install --no-build-isolation -e {manifest.root}")
    return 0


def cmd_check_config(args: argparse.Namespace) -> int:
    """Validate build.toml files without building: edition, keys, files, and the variants they give."""
    from .editions import CURRENT_EDITION, edition_label

    rep = Reporter(quiet=args.quiet, json_mode=args.json)
    manifests = _load_manifests(args.kernel_dirs)  # the first broken one raises its one-line error
    matrix = _matrix(args)
    rows = []
    for m in manifests:
        variants = m.variants(matrix.variants)
        note = "" if m.edition == CURRENT_EDITION else \
            f"; `python -m pybuild migrate {m.root}` writes edition {CURRENT_EDITION}"
        rows.append({"kernel": m.name, "path": str(m.path), "edition": m.edition, "framework": m.framework,
                     "backends": list(m.backends), "variants": [v.name for v in variants],
                     "repo-id": m.repo_id})
        built = f"{len(variants)} variant{'' if len(variants) == 1 else 's'}"
        rep.info(f"{m.path}: ok ({edition_label(m.edition)}, {m.framework}, backends {', '.join(m.backends)}; "
                 f"{built}){note}")
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    """Rewrite older-edition build.toml files as the current edition (diff shown; --check for CI)."""
    from .generate import write_atomic
    from .migrate import migrate_text

    rep = Reporter(quiet=args.quiet)
    migrations = []
    for d in _kernel_dirs(args.kernel_dirs):  # every file migrated in memory before any is written
        path = d / "build.toml"
        try:
            text = safeload.read_text(path, ManifestError, limit=1 << 20)  # a FIFO or /dev/zero is refused
        except UnicodeDecodeError:
            raise ManifestError(f"{path}: not valid UTF-8 text") from None
        migrations.append(migrate_text(text, path))
    pending = [m for m in migrations if m.changed]
    for m in migrations:
        if m.changed:
            print(m.diff(), end="")
        else:
            rep.info(f"{m.path}: already edition 5")
    if args.check:
        if pending:
            raise ManifestError(f"{len(pending)} build.toml file(s) not in edition 5: "
                                f"{', '.join(str(m.path) for m in pending)}; run `python -m pybuild migrate` on them")
        return 0
    for m in pending:
        write_atomic(m.path, m.new)
        rep.info(f"{m.path}: migrated to edition 5 (was {m.edition})")
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    import shutil

    from .build import BUILD_DIR, WORK_DIR
    from .generate import clean_project
    from .manifest import load_manifest

    rep = Reporter(quiet=args.quiet)
    # every manifest is read before anything is removed: a broken one stops the command untouched
    manifests = [(d, load_manifest(d)) for d in _kernel_dirs(args.kernel_dirs)]
    for d, manifest in manifests:
        removed = clean_project(manifest)
        for rel in removed:
            rep.info(f"  removed {d / rel}")
        if args.build:
            for extra in (BUILD_DIR, WORK_DIR):
                if (d / extra).is_dir():
                    shutil.rmtree(d / extra)
                    rep.info(f"  removed {d / extra}/")
            if (d / "compile_commands.json").is_file():
                (d / "compile_commands.json").unlink()
                rep.info(f"  removed {d / 'compile_commands.json'}")
        if not removed and not args.build:
            rep.info(f"  {d}: nothing to clean")
    return 0


def cmd_new(args: argparse.Namespace) -> int:
    from .scaffold import check_license, check_name, create_kernel

    rep = Reporter(quiet=args.quiet)
    check_name(args.name)  # before looking for the farm: a bad name is the first thing to hear about
    check_license(args.license)
    if args.dir is not None and not args.dir.strip():
        raise UsageError("new: --dir is empty; give the folder to create, or leave --dir out for kernels/NAME")
    if args.dir is not None:
        dest = Path(args.dir)
    else:
        try:
            dest = _farm_root() / "kernels" / args.name
        except VariantsError:
            raise UsageError(f"new: no farm here (no variants.json at or above {Path.cwd()}); run it from the farm's "
                             "root, or pass --dir to create the kernel elsewhere") from None
    files = create_kernel(dest, args.name, args.license, noarch=args.noarch)
    kind = "a pure-Python (noarch) example op" if args.noarch else "an example op on CPU and CUDA"
    rep.info(f"created {dest}/ with {kind}, {args.name.replace('-', '_')}(x, scale) = x * scale:")
    for rel in files:
        rep.info(f"  {dest / rel}")
    rep.info(f"next: python -m pybuild build {dest} && python -m pytest {dest / 'tests'}")
    return 0


# --------------------------------------------------------------------------------------------
# build


def cmd_build(args: argparse.Namespace) -> int:
    from .build import BuildOptions, BuildResult, build_variant, remove_other_kind_variants
    from .host import host_variants, kernel_host_variants
    from .manifest import check_cuda_archs

    rep = Reporter(quiet=args.quiet, json_mode=args.json)
    matrix = _matrix(args)
    matrix_names = set(matrix.names())
    manifests = _load_manifests(args.kernel_dirs)  # validate all before building
    archs = check_cuda_archs(args.cuda_archs, "--cuda-archs") if args.cuda_archs is not None else None
    options = BuildOptions(cuda_archs=archs, force=args.force, jobs=args.jobs)
    planned = {m.root: kernel_host_variants(m) for m in manifests}
    # --all and --variant names beyond this Python's torch build in per-variant environments; every
    # name is checked, and every environment planned, before any build starts
    env_wanted, host_names = _env_selection(args, matrix, manifests, planned)
    jobs, refusals = [], []
    if env_wanted:
        from .matrix import plan_jobs, refusal_error

        jobs, refusals = plan_jobs(env_wanted)
        if refusals and not args.all:
            raise refusal_error(refusals)
    results: list[BuildResult] = []
    failed = 0  # the exit code of the first failed build
    for manifest in manifests:
        for name in remove_other_kind_variants(manifest):
            kind = "pure Python" if manifest.noarch else "compiled"
            rep.info(f"{manifest.name}: removed build/{name}/: the kernel is {kind} now, and the loader would "
                     "have picked that old build")
        variants = planned[manifest.root]
        if host_names is not None:
            variants = [v for v in variants if v.name in host_names]
            if not variants:
                continue
        if not variants and manifest.framework == "tvm-ffi":
            from .host import tvm_ffi_version

            if tvm_ffi_version() is None:
                rep.info(f"{manifest.name}: no host variant to build (a [tvm-ffi] kernel, and this Python has no "
                         "tvm-ffi: pip install 'apache-tvm-ffi>=0.1.9,<0.2')")
                continue
        if not variants:
            host = host_variants()
            same_backend = [v for v in host if v.backend in manifest.backends]
            if same_backend:  # the backend is here, the torch version is not: say which bound
                bounds = " and ".join(f"{k} = \"{b[0]}.{b[1]}\"" for k, b in
                                      (("minver", manifest.torch_minver), ("maxver", manifest.torch_maxver)) if b)
                why = f"this machine's torch {same_backend[0].torch} is outside [torch] {bounds} of {manifest.path}"
            else:
                why = f"kernel backends {list(manifest.backends)}, host {[v.name for v in host]}"
            rep.info(f"{manifest.name}: no host variant to build ({why})")
            continue
        for variant in variants:
            if variant.name not in matrix_names and not variant.noarch:
                rep.info(f"note: {variant.name} is not in {matrix.path.name}; building it for local use")
            label = f"{manifest.name} {variant.name}"
            start = time.monotonic()
            try:
                with rep.task(label) as update:
                    result = build_variant(manifest, variant, options, progress=update)
            except PybuildError as e:
                failed = failed or e.exit_code  # the first failure's exit code (BuildError 6, ToolchainError 5, ...)
                error(f"{label}: {e}")
                result = BuildResult(manifest.name, variant.name, "failed", time.monotonic() - start, 0,
                                     manifest.root / "build" / variant.name, str(e), e.exit_code)
                results.append(result)
                if not args.keep_going:
                    break
                continue
            results.append(result)
            if result.status == "up to date":
                rep.info(f"{label}: up to date ({result.seconds:.2f} s)")
            else:
                rep.info(f"{label}: built in {result.seconds:.1f} s -> {result.path}")
        if failed and not args.keep_going:
            break
    if jobs and not (failed and not args.keep_going):
        from .matrix import build_in_envs

        with rep.tasks() as new_task:
            env_results = build_in_envs(jobs, options, new_task, rep.info, parallel=args.parallel,
                                        keep_going=args.keep_going)
        results += env_results
        failed = failed or next((r.exit_code for r in env_results if r.status == "failed"), 0)
    by_reason: dict[str, list[str]] = {}
    for refusal in refusals:  # one line per reason (e.g. every aarch64 variant on an x86_64 machine)
        by_reason.setdefault(refusal.reason, []).append(refusal.variant)
    for reason, names in by_reason.items():
        rep.info(f"not built: {', '.join(names)}: {reason}")
    refused = {r.variant for r in refusals}
    rows = [(r.kernel, r.variant, r.status, f"{r.seconds:.1f} s", human_size(r.size) if r.size else "-")
            for r in results]
    rows += [(m.name, v.name, "not built (see above)", "-", "-") for m, v in env_wanted if v.name in refused]
    if rows or args.json:
        rep.table("Build summary", ["kernel", "variant", "status", "time", "size"], rows)
    else:
        rep.info("nothing built: no kernel named has a variant for this machine (see the lines above)")
    return int(failed)


def _env_selection(args: argparse.Namespace, matrix, manifests: list[Manifest],  # noqa: ANN001
                   planned: dict) -> tuple[list, set[str] | None]:
    """The (kernel, variant) pairs to build in per-variant environments, and the host variants to
    build here (None: all of them). A --variant this Python's torch builds stays a host build."""
    from .variants import parse_variant_name

    if not args.all and not args.variant:
        return [], None
    host_names: set[str] = set()
    wanted = []
    if args.all:
        for m in manifests:
            if m.noarch:  # pure Python: assembled here, for every backend
                host_names |= {v.name for v in planned[m.root]}
            else:
                wanted += [(m, v) for v in m.variants(matrix.variants)]
        return wanted, host_names
    offered_host = {v.name for vs in planned.values() for v in vs}
    for name in dict.fromkeys(args.variant):
        if name in offered_host:
            host_names.add(name)
            continue
        variant = parse_variant_name(name)
        kernels = [m for m in manifests if not m.noarch and variant in m.variants(matrix.variants)]
        if not kernels:
            choices = sorted({v.name for m in manifests for v in m.variants(matrix.variants)} | offered_host)
            msg = (f"--variant {name}: not a variant of {matrix.path.name} for "
                   f"{', '.join(m.name for m in manifests)}; choose from {choices}")
            raise UsageError(msg)
        # the kernel's own variant: a stable-ABI one carries the matrix torch it is built with
        wanted += [(m, next(v for v in m.variants(matrix.variants) if v == variant)) for m in kernels]
    return wanted, host_names


# --------------------------------------------------------------------------------------------
# test / envs


def cmd_test(args: argparse.Namespace) -> int:
    """Build (if needed) and test each kernel's variant in that variant's own environment."""
    import subprocess

    from .build import BuildOptions
    from .envs import ensure_env, test_packages
    from .errors import ToolchainError
    from .matrix import build_in_envs, plan_jobs, refusal_error
    from .variants import parse_variant_name

    rep = Reporter(quiet=args.quiet)
    matrix = _matrix(args)
    manifests = [m for m in _load_manifests(args.kernel_dirs) if not m.noarch]
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
        env = ensure_env(job.plan, job.variant, progress=lambda msg, v=job.variant: rep.info(f"  {v.name}: {msg}"),
                         extra=test_packages())
        runners = [env]
        if args.torch:  # a stable-ABI variant under later torch releases, each in that release's environment
            runners = [_runner_env(job.variant, t, rep) for t in dict.fromkeys(args.torch)]
        if not args.no_build:
            with rep.tasks() as new_task:
                results = build_in_envs([job], BuildOptions(), new_task, rep.info)
            bad = [r for r in results if r.status == "failed"]
            if bad:
                raise ToolchainError(f"{bad[0].kernel} {bad[0].variant}: not built: {bad[0].message}") \
                    if bad[0].exit_code == 5 else _build_failed(bad[0])
        for manifest in job.manifests:
            tests = manifest.root / "tests"
            if not tests.is_dir():
                rep.info(f"{manifest.name} {job.variant.name}: no tests/ folder; nothing to run")
                continue
            for runner in runners:
                info = runner.toolchain.torch
                build = "CUDA " + info.cuda if info.cuda else "CPU"
                rep.info(f"testing {manifest.name} {job.variant.name} under torch {info.version} ({build} build) "
                         f"in {runner.path}")
                environ = {**os.environ, "PYBUILD_TEST_VARIANT": job.variant.name,
                           "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent.parent),
                                                                       os.environ.get("PYTHONPATH")]))}
                if manifest.repo_id:  # tests written as upstream's, get_kernel(repo-id): LOCAL_KERNELS names
                    # the variant folder itself, so the loader loads exactly this variant
                    environ["LOCAL_KERNELS"] = f"{manifest.repo_id}={(manifest.root / 'build' / job.variant.name).resolve()}"
                cmd = [runner.python, "-m", "pytest", str(tests), "-p", "no:cacheprovider", *args.pytest_args]
                rc = subprocess.run(cmd, env=environ, cwd=manifest.root, check=False).returncode
                if rc != 0:
                    error(f"{manifest.name} {job.variant.name}: tests failed under torch {info.version} (pytest exit {rc})")
                    failed = failed or 1
    return failed


def _runner_env(variant, torch: str, rep: Reporter):  # noqa: ANN001, ANN202
    """The environment of torch ``torch`` for testing the stable-ABI ``variant`` (same backend and system)."""
    from .envs import Refusal, ensure_env, host_facts, index_config, plan_env, test_packages
    from .errors import ToolchainError
    from .variants import Variant

    if not variant.stable_abi:
        raise UsageError(f"--torch: {variant.name} is built for one torch only; --torch is for torch-stable-abi variants")
    if tuple(int(x) for x in torch.split(".")) < variant.torch_tuple:
        raise UsageError(f"--torch {torch}: {variant.name} needs torch {variant.torch} or later")
    runner = Variant(torch, variant.backend, variant.backend_version, "cxx11", variant.system)
    plan = plan_env(runner, index_config(), host_facts())
    if isinstance(plan, Refusal):
        raise ToolchainError(f"--torch {torch}: {plan.variant}: {plan.reason}")
    return ensure_env(plan, runner, progress=lambda msg: rep.info(f"  {runner.name}: {msg}"), extra=test_packages())


def _build_failed(result) -> PybuildError:  # noqa: ANN001
    from .errors import BuildError

    return BuildError(f"{result.kernel} {result.variant}: {result.message}")


def cmd_envs(args: argparse.Namespace) -> int:
    """List (or remove) the per-variant environments in the cache."""
    import shutil

    from .envs import envs_dir, list_envs

    rep = Reporter(quiet=args.quiet, json_mode=args.json)
    found = list_envs()
    if args.clear:
        for path, _, _ in found:
            shutil.rmtree(path)
            rep.info(f"removed {path}")
        return 0
    rows = [(m["plan"]["variant"], m.get("torch", "?"), m.get("nvcc") or "-", m["plan"]["source"], str(p))
            for p, m, _ in found]
    rep.table(f"{len(rows)} environments in {envs_dir()} (uv's cache links each wheel into them; `du -sh` both "
              "for the disk they take)", ["variant", "torch", "nvcc", "from", "path"], rows)
    return 0


# --------------------------------------------------------------------------------------------
# check / publish / wheel


def _check_rows(report) -> list[tuple[str, str, str, str]]:  # noqa: ANN001
    mark = {"pass": "pass", "fail": "FAIL", "skip": "skip"}
    return [(r.variant, r.check, mark[r.status], r.detail) for r in report.results]


def _print_check(rep: Reporter, report) -> None:  # noqa: ANN001
    rep.table(f"check {report.kernel} ({report.build_dir})", ["variant", "check", "result", "detail"],
              _check_rows(report))
    for r in report.results:
        if r.check == "variants" and r.data.get("missing") and not rep.quiet:
            out_console.print(f"missing variants of {report.kernel} ({len(r.data['missing'])}): "
                              f"{', '.join(r.data['missing'])}", markup=False)


def cmd_check(args: argparse.Namespace) -> int:
    from .check import check_kernel, failure_summary, find_target, select_variant_dirs
    from .errors import CheckError

    rep = Reporter(quiet=args.quiet)
    matrix = _matrix(args)
    paths = [Path(p) for p in args.paths] or _kernel_dirs([])
    for path in paths:  # every argument is valid before any work starts
        select_variant_dirs(find_target(path), args.variant)
    reports = []
    for path in paths:
        with rep.task(f"checking {path}") as update:
            update("metadata, digests, ABI, imports", None)
            reports.append(check_kernel(path, matrix, variants=args.variant, run_import=not args.no_import))
    if args.json:
        print(json.dumps([r.to_json() for r in reports], indent=2))
    else:
        for report in reports:
            _print_check(rep, report)
    failed = [r for r in reports if not r.ok]
    if failed:
        msg = "; ".join(f"{r.kernel}: {len(r.failures)} check(s) failed: {failure_summary(r)}" for r in failed)
        raise CheckError(msg + ("" if args.json else " (see the table above)"))
    rep.info(f"all checks passed for {', '.join(r.kernel for r in reports)}")
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    from .check import check_kernel
    from .errors import PublishError
    from .publish import check_repo_id, hub_error, kernel_repo_type, make_api, make_plan, parse_version, publish_plan
    from .ui import err_console

    rep = Reporter(quiet=args.quiet)
    manifest = _load_manifests([args.kernel_dir])[0]
    if args.repo_id is None:  # build.toml's [general.hub] repo-id is the default
        if manifest.repo_id is None:
            raise UsageError(f"publish: no --repo-id given and {manifest.path} has no [general.hub] repo-id; pass "
                             f"--repo-id ORG/{manifest.name} or add it to build.toml")
        args.repo_id = manifest.repo_id
    check_repo_id(args.repo_id)  # argument and client errors before the (slower) check
    parse_version(args.version, manifest)
    repo_type = kernel_repo_type()
    with rep.task(f"checking {manifest.root}") as update:
        update("metadata, digests, ABI, imports", None)
        report = check_kernel(manifest.root, _matrix(args))
    if not report.ok and not getattr(args, "json", False):
        _print_check(rep, report)
    plan = make_plan(manifest, repo_id=args.repo_id, version=args.version, report=report,
                     allow_noncompliant=args.allow_noncompliant, repo_type=repo_type)
    if not manifest.license_set and not args.quiet:
        err_console.print(f"warning: {manifest.path} names no license; publishing under the default "
                          f"{manifest.license}. Set `license = \"...\"` in [general] to choose it.",
                          style="yellow", highlight=False, markup=False, soft_wrap=True)
    if plan.noncompliant:  # loud on purpose, even with -q
        err_console.print(f"[bold yellow]WARNING: publishing a NON-COMPLIANT build of {plan.kernel} "
                          f"(--allow-noncompliant); the kernel card says so:[/]", highlight=False)
        for line in plan.noncompliant:
            err_console.print(f"  - {line}", style="yellow", highlight=False, markup=False)
    if args.dry_run:
        from huggingface_hub import constants

        if args.json:
            print(json.dumps({"repo-id": plan.repo_id, "repo-type": plan.repo_type, "endpoint": constants.ENDPOINT,
                              "branch": plan.branch, "tag": plan.tag, "total-size": plan.total_size,
                              "noncompliant": list(plan.noncompliant),
                              "files": [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in plan.files]},
                             indent=2))
            return 0
        rows = [(f.path, human_size(f.size), "generated" if f.source is None else "") for f in plan.files]
        Reporter().table(f"dry run: {len(plan.files)} files, {human_size(plan.total_size)} for {plan.repo_id} "
                         f"{plan.version}", ["path", "size", ""], rows)
        url = f"{constants.ENDPOINT}/{'kernels/' if plan.repo_type == 'kernel' else ''}{plan.repo_id}"
        print(f"would write to {url} (repo type {plan.repo_type}; created if missing):")
        print(f"  branch {plan.branch}: one commit 'Release {plan.kernel} {plan.version}' with exactly these files "
              f"(created from the default branch if missing)")
        print(f"  tag {plan.tag}: on that commit (refused if it exists with other content)")
        print("nothing was sent (dry run)")
        return 0
    if args.quiet:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    api = make_api()
    try:
        with rep.task(f"publishing {plan.repo_id} {plan.version}") as update:
            result = publish_plan(api, plan, retries=args.retries, info=rep.info, progress=update)
    except PublishError:
        raise
    except Exception as e:  # noqa: BLE001 (whatever huggingface_hub raised, as one line)
        raise hub_error(e, plan) from e
    rep.table(f"{plan.repo_id} {plan.version}: {result.status}", ["ref", "commit", ""],
              [(f"branch {result.branch}", result.commit, "get_kernel(..., version=%s)" % plan.branch[1:]),
               (f"tag {result.tag}", result.commit, f'get_kernel(..., revision="{result.tag}")')])
    rep.info(f"{result.status}: {result.url} ({len(plan.files)} files, {human_size(plan.total_size)})")
    return 0


def cmd_wheel(args: argparse.Namespace) -> int:
    from .check import MANYLINUX, find_target
    from .wheel import build_wheel, wheel_spec

    rep = Reporter(quiet=args.quiet)
    target = find_target(Path(args.kernel_dir))
    dirs = [d for d in target.variant_dirs if not args.variant or d.name in args.variant]
    if args.variant and len(dirs) != len(set(args.variant)):
        missing = sorted(set(args.variant) - {d.name for d in dirs})
        raise UsageError(f"--variant {', '.join(missing)}: not built under {target.build_dir}")
    if not dirs:
        raise UsageError(f"{target.build_dir}: nothing built; run `python -m pybuild build` first")
    version = args.version or f"{target.manifest.version if target.manifest else 1}.0.0"
    if args.version and target.manifest:
        from .publish import parse_version

        parse_version(args.version, target.manifest)  # the major is build.toml's, as for `publish`
    for d in dirs:  # every variant is checked before the first wheel is written
        wheel_spec(d, version)
    out_dir = Path(args.out_dir)
    _check_writable_dir(out_dir, "--out-dir")
    rows = []
    for d in dirs:
        path = build_wheel(d, version, out_dir)
        rows.append((d.name, str(path), human_size(path.stat().st_size)))
        if f"-{MANYLINUX}_" not in path.name and path.name.endswith(("linux_x86_64.whl", "linux_aarch64.whl")):
            rep.info(f"note: {path.name} is tagged linux_*, not {MANYLINUX}: a host build; PyPI refuses such wheels "
                     "(build the variant with Nix or in a manylinux_2_28 container for a portable one)")
    rep.table(f"{len(rows)} wheel(s) of {target.kernel} {version}", ["variant", "wheel", "size"], rows)
    return 0


# --------------------------------------------------------------------------------------------
# collect


def cmd_collect(args: argparse.Namespace) -> int:
    from .collect import collect

    farm = Path(args.farm) if args.farm else _farm_root()
    rep = Reporter(quiet=args.quiet, json_mode=args.json)
    results = collect(Path(args.result_dir), farm)
    rows = [(c.kernel, c.variant, c.status, str(c.path)) for c in results]
    rep.table(f"Collected {len(rows)} variant(s) from {args.result_dir}", ["kernel", "variant", "status", "path"], rows)
    return 0


# --------------------------------------------------------------------------------------------
# bench


def _check_writable_dir(path: Path, flag: str) -> None:
    """Fail before any work if ``path`` cannot become a folder this process writes into."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {path}: exists and is not a folder; name a folder")
    probe = path
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: {probe} is not writable; pick a folder you can write to")


def cmd_bench(args: argparse.Namespace) -> int:
    from . import bench
    from .errors import BuildError
    from .host import torch_info
    from .manifest import load_manifest
    from .testing import load_built_kernel

    root = _farm_root()
    if args.kernels:
        dirs = []
        for k in args.kernels:
            p = Path(k) if (Path(k) / "build.toml").is_file() else root / "kernels" / k
            if not (p / "build.toml").is_file():  # the kernel's name (rms-norm) for its folder (rms_norm)
                p = root / "kernels" / k.replace("-", "_")
            if not (p / "build.toml").is_file():
                raise UsageError(f"{k}: not a kernel name or folder (no build.toml); pass e.g. img2gray or kernels/img2gray")
            dirs.append(p)
    else:
        dirs = [d for d in _kernel_dirs([]) if bench.has_cases(d)]
    if args.name is not None and (not args.name or "/" in args.name or args.name in (".", "..")):
        raise UsageError(f"--name {args.name!r}: a file name without '/', e.g. gpu-h200")
    if args.out:
        _check_writable_dir(Path(args.out), "--out")
    torch_info()  # torch installed at all: a toolchain error (exit 5) rather than an ImportError
    device = bench.resolve_device(args.device)
    rep = Reporter(quiet=args.quiet, json_mode=args.json)
    cases = [(load_manifest(d), d, bench.load_cases_module(d)) for d in dirs]  # validate before building
    loaded = []
    for manifest, d, module in cases:
        rep.info(f"{manifest.name}: building (if needed) and loading the host variant")
        try:
            kernel = load_built_kernel(d)
        except RuntimeError as e:  # ensure_built's message carries build's own output: keep its error line
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
            cause = next((ln for ln in lines if ln.startswith("error:")), lines[0] if lines else "")
            raise BuildError(f"{d}: building the host variant failed: {cause.removeprefix('error: ')} "
                             f"(python -m pybuild build {d} shows the full log)") from None
        loaded.append((manifest.name, kernel, module))
    compile_ = args.compile if args.compile is not None else device == "cuda"
    command = args.record_command or " ".join(["python", "-m", "pybuild", *sys.argv[1:]])
    output = bench.Output(out=Path(args.out) if args.out else None, name=args.name, json=args.json,
                          quiet=args.quiet, strict=args.strict)
    if args.sweep is not None:
        dist = bench.Distribution(seed=args.seed, n=args.sweep, max_bytes=args.max_mib << 20)
        return bench.bench_sweep(loaded, device, dist, compile_=compile_, workers=args.workers, command=command,
                                 output=output, rep=rep)
    return bench.bench_cases(loaded, device, quick=args.quick, compile_=compile_, command=command, output=output,
                             rep=rep)


# --------------------------------------------------------------------------------------------
# Parser


def _int_at_least(low: int):  # noqa: ANN202 - an argparse `type`
    """An argparse type: an integer >= ``low``, else one line saying what was expected."""
    wanted = "a positive integer" if low == 1 else f"{low} or a positive integer"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}")
        return value

    return parse


def _add_output_flags(p: argparse.ArgumentParser, json_flag: bool = True) -> None:
    p.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks on errors")
    if json_flag:
        p.add_argument("--json", action="store_true", help="print the result as JSON")


def make_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m pybuild",
        description="Kernel build farm: build PyTorch custom-op kernels for every variant, check and publish them.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"pybuild {__version__}",
                        help="print pybuild's version (after `publish` or `wheel`, --version is the release's)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("new", help="start a kernel folder with a working example op and its tests",
                       description="Write kernels/NAME/ (or --dir): build.toml; csrc/ with a CUDA kernel that "
                                   "includes no torch header, its torch-facing launcher and a CPU implementation; "
                                   "torch-ext/ with the op's registration and a Python wrapper (input checks, a fake "
                                   "implementation for torch.compile); and tests/ against plain torch, opcheck and "
                                   "torch.compile. The example op is x * scale; `python -m pybuild build` builds it "
                                   "as it is. Nothing is written if any check fails.")
    p.add_argument("name", metavar="NAME", help="the kernel's name: lowercase letters, digits and '-', e.g. my-op "
                   "(its Python package and op are my_op)")
    p.add_argument("--dir", metavar="DIR", help="the folder to create (default: kernels/NAME in the farm)")
    p.add_argument("--license", default="Apache-2.0", metavar="SPDX", help="build.toml's license (default: Apache-2.0)")
    p.add_argument("--noarch", action="store_true", help="a pure-Python kernel instead (a torch.library.custom_op, "
                   "e.g. for Triton): no compiled code, torch-cuda and torch-cpu variants that load with any torch")
    _add_output_flags(p, json_flag=False)
    p.set_defaults(func=cmd_new)

    p = sub.add_parser("variants", help="list the variant matrix (host variant marked)",
                       description="List the variants of variants.json; the host's own variant is marked.")
    p.add_argument("--kernel", metavar="DIR", help="only the variants this kernel builds for")
    p.add_argument("--variants", metavar="FILE", help="variants.json to read (default: nearest one)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the variant names, one per line")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks on errors")
    p.set_defaults(func=cmd_variants)

    p = sub.add_parser("generate", help="write a kernel's CMake project (dev loop)",
                       description="Write CMakeLists.txt, setup.py, pyproject.toml, cmake/, "
                                   "torch-ext/registration.h and _ops.py from build.toml, so that "
                                   "`pip install --no-build-isolation -e KERNEL_DIR` builds it.")
    p.add_argument("kernel_dirs", nargs="*", metavar="KERNEL_DIR", help="default: every kernel under kernels/")
    p.add_argument("--backend", choices=["cpu", "cuda", "metal", "rocm", "xpu"],
                   help="backend to generate for (default: the host's CUDA where possible, else CPU)")
    _add_output_flags(p, json_flag=False)
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("check-config", help="validate build.toml files without building",
                       description="Parse each kernel's build.toml (every edition this farm reads: upstream's "
                                   "edition 5, its pre-edition v4 and v3, and the farm's own format), check the "
                                   "files it names, and list the variants it gives. Exits non-zero with one line "
                                   "naming the file, key and fix on the first broken one.")
    p.add_argument("kernel_dirs", nargs="*", metavar="KERNEL_DIR", help="default: every kernel under kernels/")
    p.add_argument("--variants", metavar="FILE", help="variants.json to read (default: nearest one)")
    _add_output_flags(p)
    p.set_defaults(func=cmd_check_config)

    p = sub.add_parser("migrate", help="rewrite build.toml files of older editions as edition 5",
                       description="Rewrite each kernel's build.toml in the newest edition (5), keeping comments "
                                   "and layout, and print the diff. The result is checked to mean exactly what "
                                   "the old file meant. With --check nothing is written and the exit code says "
                                   "whether any file needs migrating (for CI).")
    p.add_argument("kernel_dirs", nargs="*", metavar="KERNEL_DIR", help="default: every kernel under kernels/")
    p.add_argument("--check", action="store_true", help="write nothing; fail if a file is not in edition 5")
    _add_output_flags(p, json_flag=False)
    p.set_defaults(func=cmd_migrate)

    p = sub.add_parser("clean", help="remove generated files (and with --build, build outputs)",
                       description="Remove exactly the files `generate` wrote; with --build also the "
                                   "kernel's build/ and .pybuild/ folders.")
    p.add_argument("kernel_dirs", nargs="*", metavar="KERNEL_DIR", help="default: every kernel")
    p.add_argument("--build", action="store_true", help="also remove build/ and .pybuild/")
    _add_output_flags(p, json_flag=False)
    p.set_defaults(func=cmd_clean)

    p = sub.add_parser("build", help="build variants into <kernel>/build/<variant>/ (host, or --all in environments)",
                       description="Build every kernel (or the ones named) for this machine's variants: "
                                   "CPU always, CUDA too when torch has CUDA and nvcc is present. With --all (or "
                                   "--variant NAME), build the matrix's variants, each in its own cached environment "
                                   "made with uv (see `python -m pybuild envs`).")
    p.add_argument("kernel_dirs", nargs="*", metavar="KERNEL_DIR", help="default: every kernel under kernels/")
    p.add_argument("--variant", action="append", metavar="NAME",
                   help="only this variant (repeatable); one this Python's torch does not build is built in its "
                        "own environment (torch, nvcc, CMake, ninja from the package index, cached)")
    p.add_argument("--all", action="store_true", help="every variant of the kernel's matrix, each in its own "
                   "environment; those no reachable index serves are listed with the reason")
    p.add_argument("--parallel", type=_int_at_least(1), metavar="N", help="variants built at once with --all/--variant "
                   "(default: as many as compile jobs, one per core and per 3 GiB of free memory)")
    p.add_argument("--cuda-archs", metavar="LIST", help="override CUDA capabilities for CUDA variants, e.g. 9.0 "
                   "or 8.0,9.0 (env PYBUILD_CUDA_ARCHS does the same)")
    p.add_argument("--force", action="store_true", help="rebuild even when up to date")
    p.add_argument("-j", "--jobs", type=_int_at_least(1), metavar="N", help="parallel compile jobs (default: ninja's; "
                   "with --all/--variant, all builds together: one per core and per 3 GiB of free memory)")
    p.add_argument("-k", "--keep-going", action="store_true", help="build the other kernels after a failure")
    p.add_argument("--variants", metavar="FILE", help="variants.json to read (default: nearest one)")
    _add_output_flags(p)
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("test", help="run a kernel's tests against a variant, in that variant's environment",
                       description="Build the variant if needed (in its own environment: its torch, made with uv "
                                   "and cached), then run the kernel's tests/ with that environment's Python and "
                                   "torch, loading the built variant through the `kernels` loader. Arguments after "
                                   "`--` go to pytest.")
    p.add_argument("kernel_dirs", nargs="*", metavar="KERNEL_DIR", help="default: every kernel under kernels/")
    p.add_argument("--variant", action="append", required=True, metavar="NAME",
                   help="the variant to test, e.g. torch214-cxx11-cpu-x86_64-linux (repeatable)")
    p.add_argument("--no-build", action="store_true", help="test what build/<variant>/ holds; build nothing")
    p.add_argument("--torch", action="append", metavar="X.Y", help="for a torch-stable-abi variant: run its tests "
                   "under this torch release instead, in that release's environment (repeatable)")
    p.add_argument("--variants", metavar="FILE", help="variants.json to read (default: nearest one)")
    _add_output_flags(p, json_flag=False)
    p.set_defaults(func=cmd_test)

    p = sub.add_parser("envs", help="list the per-variant build environments (or --clear them)",
                       description="List the environments `build --all`/`--variant` and `test` made under the user "
                                   "cache dir (PYBUILD_CACHE_DIR, else $XDG_CACHE_HOME/pybuild, else ~/.cache/pybuild).")
    p.add_argument("--clear", action="store_true", help="remove them all (uv's own cache stays)")
    _add_output_flags(p)
    p.set_defaults(func=cmd_envs)

    p = sub.add_parser("check", help="check built variants: metadata, digests, abi3, manylinux, RPATH, import",
                       description="Check every built variant of a kernel before it is published: metadata.json as "
                                   "the kernels loader reads it, digests, abi3 and manylinux_2_28 symbols "
                                   "(kernel-abi-check), RPATH, import in a fresh interpreter, and that every "
                                   "variant the matrix requires is present. Exit 8 when a check fails (other "
                                   "codes, e.g. 5 for a missing tool: python -m pybuild --help).")
    p.add_argument("paths", nargs="*", metavar="PATH", help="a kernel folder, its build/, or one variant folder "
                   "(default: every kernel under kernels/)")
    p.add_argument("--variant", action="append", metavar="NAME", help="only this built variant (repeatable; "
                   "skips the required-variants check)")
    p.add_argument("--no-import", action="store_true", help="skip the import check")
    p.add_argument("--variants", metavar="FILE", help="variants.json to read (default: nearest one)")
    _add_output_flags(p)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("publish", help="publish a kernel release to the Hugging Face Hub (branch v<N> + tag)",
                       description="Upload the kernel's sources, a generated kernel card and build/ as one commit "
                                   "on branch v<major>, then tag v<X.Y.Z> on that commit. Safe to re-run; never "
                                   "moves a tag. Token: HF_TOKEN or the saved login.")
    p.add_argument("kernel_dir", metavar="KERNEL_DIR", help="the kernel folder to release, e.g. kernels/img2gray")
    p.add_argument("--repo-id", metavar="ORG/NAME", help="the Hub repo, e.g. my-org/img2gray (default: build.toml's "
                   "[general.hub] repo-id)")
    p.add_argument("--version", required=True, metavar="X.Y.Z", help="the release's version (not pybuild's); X must "
                   "equal build.toml's `version`")
    p.add_argument("--dry-run", action="store_true", help="list files, sizes and refs; no network at all")
    p.add_argument("--allow-noncompliant", action="store_true",
                   help="publish even if `check` fails (said loudly, recorded in the kernel card)")
    p.add_argument("--retries", type=_int_at_least(0), default=4, metavar="N",
                   help="retries per request on transient errors (HTTP 5xx/429, dropped connections); default 4")
    p.add_argument("--variants", metavar="FILE", help="variants.json to read (default: nearest one)")
    _add_output_flags(p)
    p.set_defaults(func=cmd_publish)

    p = sub.add_parser("wheel", help="one pip wheel per built variant",
                       description="Pack each built variant as a wheel, e.g. "
                                   "img2gray-1.1.2+torch213cpucxx11-cp39-abi3-linux_x86_64.whl, requiring the "
                                   "torch minor it was built for. The platform tag is manylinux_2_28 only if the "
                                   "build fits it. A pure-Python variant (torch-cuda, ...) makes a py3-none-any "
                                   "wheel that accepts any torch.")
    p.add_argument("kernel_dir", metavar="KERNEL_DIR", help="the kernel folder whose build/ to pack "
                   "(e.g. kernels/img2gray), its build/, or one variant folder")
    p.add_argument("--variant", action="append", metavar="NAME", help="only this built variant (repeatable)")
    p.add_argument("--version", metavar="X.Y.Z", help="the wheels' version, not pybuild's (default: <build.toml "
                   "version>.0.0)")
    p.add_argument("-o", "--out-dir", default="dist", metavar="DIR", help="where to write the wheels (default: dist)")
    _add_output_flags(p, json_flag=False)
    p.set_defaults(func=cmd_wheel)

    p = sub.add_parser("collect", help="copy a `nix build` result/ into kernels/<name>/build/ (verified, atomic)",
                       description="Copy every result/<variant>/ (or result/<kernel>/<variant>/) into the kernel's "
                                   "build/<variant>/, the kernel named by each variant's metadata.json. Every digest "
                                   "is verified first and each variant is replaced in one step; a corrupt or partial "
                                   "result changes nothing.")
    p.add_argument("result_dir", metavar="RESULT_DIR", help="what `nix build` left, e.g. result")
    p.add_argument("--farm", metavar="DIR", help="the farm root holding kernels/ (default: the nearest variants.json's folder)")
    _add_output_flags(p)
    p.set_defaults(func=cmd_collect)

    p = sub.add_parser("bench", help="time kernels against torch eager, torch.compile and a device copy",
                       description="Run each kernel's benchmarks/cases.py cases (building the host variant if "
                                   "needed) on CUDA, or on the CPU where no GPU is present, next to torch eager, "
                                   "torch.compile and a copy moving the same bytes; print a table, and with --out "
                                   "write <name>.json and <name>.png.")
    p.add_argument("kernels", nargs="*", metavar="KERNEL", help="kernel name or folder (default: every kernel with "
                                                                  "benchmarks/cases.py)")
    p.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto", help="default: cuda when available")
    p.add_argument("--quick", action="store_true", help="fewer sizes and repetitions")
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                   help="time torch.compile too (default: on CUDA only)")
    p.add_argument("--out", metavar="DIR", help="write the JSON results and the PNG plot there")
    p.add_argument("--name", metavar="NAME", help="file name stem under --out (default: from the device, e.g. gpu-nvidia-h200)")
    p.add_argument("--record-command", metavar="TEXT", help="command to record in the JSON (default: this one)")
    p.add_argument("--strict", action="store_true", help="exit 1 when a performance target is missed (with "
                   "--sweep: when a shape is under 0.95x the best peer in graphs or 1.0x eager in plain calls)")
    p.add_argument("--sweep", type=_int_at_least(1), metavar="N",
                   help="instead of the fixed cases, N seeded random shapes per op (the kernel's "
                        "benchmarks/cases.py sweep_ops): checked, then timed against eager and torch.compile; "
                        "writes sweep-<kernels>-<device>.json and .svg with --out")
    p.add_argument("--seed", type=_int_at_least(0), default=0, help="the sweep's seed (default 0)")
    p.add_argument("--max-mib", type=_int_at_least(1), default=128, metavar="MIB",
                   help="the sweep's cap on bytes one call moves, in MiB (default 128)")
    p.add_argument("--workers", type=_int_at_least(0), metavar="K",
                   help="processes compiling the sweep's shapes before timing (default: CPUs - 2, at most 12)")
    _add_output_flags(p)
    p.set_defaults(func=cmd_bench)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    passed_on = argv[argv.index("--") + 1:] if "--" in argv else []  # `test ... -- PYTEST_ARGS`
    argv = argv[:argv.index("--")] if "--" in argv else argv
    debug = "--debug" in argv
    try:
        args, extra = make_parser().parse_known_args(argv)
        if passed_on and args.command != "test":
            raise UsageError(f"python -m pybuild {args.command}: arguments after `--` are only for `test` (pytest's)")
        args.pytest_args = passed_on
        if not getattr(args, "command", None):
            make_parser().print_help()
            raise UsageError("python -m pybuild: no command given; choose one of those listed above")
        if extra:
            raise UsageError(f"python -m pybuild {args.command}: unrecognized arguments: {' '.join(extra)} "
                             f"(see python -m pybuild {args.command} --help)")
        return int(args.func(args))
    except PybuildError as e:
        if debug and (not isinstance(e, UsageError) or e.__cause__ is not None):  # not argparse's own
            traceback.print_exc()
        error(str(e))
        return e.exit_code
    except KeyboardInterrupt:
        error("interrupted; build/ was left as it was")
        return 130
    except OSError as e:  # a file-system failure (permissions, a full disk, a path that is a file)
        if debug:
            traceback.print_exc()
        where = f"{e.filename}: " if e.filename else ""
        hint = _OS_HINTS.get(e.errno or 0, "")
        error(f"{where}{e.strerror or e}{'; ' + hint if hint else ''}")
        return 1


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
