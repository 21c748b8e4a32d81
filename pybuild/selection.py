"""Which variants one ``build`` call builds, and where: the policy behind ``python -m pybuild build``.

* Plain ``build``: each kernel's host variants (those this Python's torch builds), here. A compiled
  kernel with none gets the variants of this torch release that an environment builds on this
  machine (e.g. its CUDA variant where torch is a CPU build); kernels with a host variant keep to it,
  since an environment costs a torch of gigabytes and the device compiles.
* ``--all``: every variant of each kernel's matrix, each in its own environment (a pure-Python
  kernel's variants are assembled here); variants no reachable index serves are listed, not built.
* ``--variant NAME``: only those named; one this Python's torch builds stays a host build, the
  others go to environments, and one that cannot be built here stops the run before any work.

Every name is checked, and every environment planned, before any build starts. Notes for the user
(why a kernel builds nothing here, what goes to an environment) go to ``info``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .envs import Refusal, host_facts, index_config
from .errors import PybuildError, ToolchainError, UsageError, VariantsError
from .host import host_variants, kernel_host_variants, torch_info, tvm_ffi_version
from .manifest import Manifest
from .matrix import VariantJob, plan_jobs, refusal_error
from .reach import env_variants, next_command
from .variants import Matrix, Variant, parse_variant_name

Info = Callable[[str], None]


def check_request(all_variants: bool, names: Sequence[str] | None) -> None:
    """--all and --variant together, or a --variant that is no variant name: refused before any work."""
    if all_variants and names:
        raise UsageError(
            f"build: --all and --variant {names[0]} exclude each other: --all builds every "
            "variant of the matrix, --variant only those named; give one"
        )
    for name in names or []:
        try:
            parse_variant_name(name)
        except VariantsError:
            raise UsageError(
                f"--variant {name}: not a variant name; `python -m pybuild variants` lists them "
                "(--kernel DIR: one kernel's)"
            ) from None


@dataclass(frozen=True)
class BuildSelection:
    """What one ``build`` call builds."""

    #: each kernel's host variants (by kernel folder), whether or not this call builds them
    planned: dict[Path, list[Variant]]
    #: the host variants to build here (None: every planned one)
    host_names: set[str] | None
    #: the (kernel, variant) pairs to build in per-variant environments
    env_wanted: list[tuple[Manifest, Variant]]
    #: their environments, one job per variant
    jobs: list[VariantJob]
    #: those no reachable index serves (--all lists them as not built)
    refusals: list[Refusal]

    def host_builds(self, manifest: Manifest, info: Info) -> list[Variant]:
        """The host variants of ``manifest`` to build here; where there are none, ``info`` says why
        (unless --variant/--all, or plain build for a kernel sent to an environment, took them)."""
        variants = self.planned[manifest.root]
        if self.host_names is not None:
            return [v for v in variants if v.name in self.host_names]
        if variants or any(m.root == manifest.root for m, _ in self.env_wanted):
            return variants
        info(f"{manifest.name}: no host variant to build ({_no_host_variant(manifest)})")
        return []


def select_builds(
    manifests: Sequence[Manifest],
    matrix: Matrix,
    *,
    all_variants: bool = False,
    names: Sequence[str] | None = None,
    info: Info = print,
) -> BuildSelection:
    """The builds of one ``build`` call (see the module's docstring); a --variant no kernel named
    builds, or one no reachable index serves, raises before any work."""
    planned = {m.root: kernel_host_variants(m) for m in manifests}
    if all_variants or names:
        env_wanted, host_names = _named(manifests, matrix, planned, all_variants, names or ())
    else:
        env_wanted, host_names = _within_reach(manifests, planned, matrix, info), None
    jobs: list[VariantJob] = []
    refusals: list[Refusal] = []
    if env_wanted:
        jobs, refusals = plan_jobs(env_wanted)
        if refusals and not all_variants:
            raise refusal_error(refusals)
    return BuildSelection(planned, host_names, env_wanted, jobs, refusals)


def _no_host_variant(manifest: Manifest) -> str:
    """Why this machine builds no host variant of ``manifest``, in a phrase."""
    if manifest.framework == "tvm-ffi" and tvm_ffi_version() is None:
        return "a [tvm-ffi] kernel, and this Python has no tvm-ffi: pip install 'apache-tvm-ffi>=0.1.9,<0.2'"
    host = host_variants()
    same_backend = [v for v in host if v.backend in manifest.backends]
    if same_backend:  # the backend is here, the torch version is not: say which bound
        bounds = " and ".join(
            f'{k} = "{b[0]}.{b[1]}"'
            for k, b in (("minver", manifest.torch_minver), ("maxver", manifest.torch_maxver))
            if b
        )
        return f"this machine's torch {same_backend[0].torch} is outside [torch] {bounds} of {manifest.path}"
    return f"kernel backends {list(manifest.backends)}, host {[v.name for v in host]}"


def _within_reach(
    manifests: Sequence[Manifest], planned: dict[Path, list[Variant]], matrix: Matrix, info: Info
) -> list[tuple[Manifest, Variant]]:
    """Plain ``build``: for each compiled kernel without a host variant, the variants of this machine's
    torch that an environment builds here."""
    wanted: list[tuple[Manifest, Variant]] = []
    orphans = [m for m in manifests if not m.noarch and not planned[m.root]]
    if not orphans:
        return wanted
    config, host, torch = index_config(), host_facts(), torch_info().major_minor
    for manifest in orphans:
        for variant, plan in env_variants(manifest, matrix.variants, torch, config, host):
            info(
                f"{manifest.name}: this Python's torch builds none of its variants; building {variant.name} "
                f"in its own environment (torch from {plan.source})"
            )
            wanted.append((manifest, variant))
    return wanted


def _named(
    manifests: Sequence[Manifest],
    matrix: Matrix,
    planned: dict[Path, list[Variant]],
    all_variants: bool,
    names: Sequence[str],
) -> tuple[list[tuple[Manifest, Variant]], set[str]]:
    """--all or --variant: the (kernel, variant) pairs to build in per-variant environments, and the
    host variants to build here. A --variant this Python's torch builds stays a host build."""
    host_names: set[str] = set()
    wanted: list[tuple[Manifest, Variant]] = []
    if all_variants:
        for m in manifests:
            if m.noarch:  # pure Python: assembled here, for every backend
                host_names |= {v.name for v in planned[m.root]}
            else:
                wanted += [(m, v) for v in m.variants(matrix.variants)]
        return wanted, host_names
    offered_host = {v.name for vs in planned.values() for v in vs}
    for name in dict.fromkeys(names):
        if name in offered_host:
            host_names.add(name)
            continue
        variant = parse_variant_name(name)
        kernels = [m for m in manifests if not m.noarch and variant in m.variants(matrix.variants)]
        if not kernels:
            choices = sorted({v.name for m in manifests for v in m.variants(matrix.variants)} | offered_host)
            raise UsageError(_not_a_variant(name, choices, matrix, manifests))
        # the kernel's own variant: a stable-ABI one carries the matrix torch it is built with
        wanted += [(m, next(v for v in m.variants(matrix.variants) if v == variant)) for m in kernels]
    return wanted, host_names


def _not_a_variant(name: str, choices: list[str], matrix: Matrix, manifests: Sequence[Manifest]) -> str:
    """One line for a --variant the kernels named do not build: the closest names, and where all are."""
    close = difflib.get_close_matches(name, choices, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    where = (
        f"`python -m pybuild variants --kernel {manifests[0].root}` lists its {len(choices)}"
        if len(manifests) == 1
        else "`python -m pybuild variants --kernel DIR` lists each kernel's"
    )
    return (
        f"--variant {name}: not a variant of {matrix.path.name} for {', '.join(m.name for m in manifests)}; "
        f"{hint}{where}"
    )


def left_to_environments(
    manifests: Sequence[Manifest], planned: dict[Path, list[Variant]], matrix: Matrix
) -> dict[str, list[str]]:
    """After a plain build: {variant name: kernels} of this torch release that an environment would
    build here for kernels that built host variants instead (e.g. their CUDA variant on a CPU torch);
    empty where the index or torch cannot be read."""
    built = [m for m in manifests if not m.noarch and planned[m.root]]
    if not built:
        return {}
    try:
        config, host, torch = index_config(), host_facts(), torch_info().major_minor
    except PybuildError:
        return {}
    kernels_of: dict[str, list[str]] = {}
    for manifest in built:
        here = {v.backend for v in planned[manifest.root]}
        for variant, _ in env_variants(manifest, matrix.variants, torch, config, host):
            if variant.backend not in here:
                kernels_of.setdefault(variant.name, []).append(manifest.name)
    return kernels_of


def nothing_to_build(manifests: Sequence[Manifest], matrix: Matrix) -> ToolchainError:
    """Nothing built and nothing to build: the error naming the one command that builds something here."""
    command = next_command(manifests, matrix.variants, index_config(), host_facts())
    return ToolchainError(
        f"nothing built: no kernel named has a variant this machine builds (see the lines above); try `{command}`"
    )
