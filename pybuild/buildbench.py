"""``bench-build``: what turning one source change into every variant costs on this machine.

Each leg runs ``python -m pybuild build`` on a copy of the kernel (its sources only) with a ccache
folder of the leg's own, and is timed from start to end:

- ``cold-variant``: one variant (the reference), empty ccache, no work folder;
- ``cold-matrix``: every selected variant in one run, empty ccache: what compiles once for
  several variants (a device unit shared by the torch variants of one CUDA release) shows here;
- ``no-op``: the same run again, nothing changed;
- ``edit``: one line added to one source (a ``.cu`` where a CUDA variant is selected), every
  variant rebuilt from the matrix's ccache;
- ``second-machine``: a fresh copy of the kernel elsewhere, a fresh HOME, fresh environments and an
  empty local ccache, pointed at the shared cache the first machine filled (only with a shared cache).

Environments are made before the legs and are not timed (``environments`` in the result says how
long the second machine's took). Each leg's time is also given as a ratio to ``cold-variant``.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import backends
from .cache import SharedCache, ccache_stats
from .envplan import Refusal
from .envs import ensure_env, host_facts, index_config, plan_env
from .errors import BuildError
from .host import ccache, kernel_host_variants
from .jobs import usable_cores
from .manifest import Manifest, load_manifest
from .variants import Matrix, Variant

EDIT_LINE = "namespace {{ [[maybe_unused]] constexpr int pybuild_bench_edit_{n} = {n}; }}\n"
STATS = (  # ccache's counters a leg reports, as `ccache --print-stats` names them
    "direct_cache_hit",
    "preprocessed_cache_hit",
    "cache_miss",
    "local_storage_hit",
    "remote_storage_hit",
    "remote_storage_miss",
    "remote_storage_write",
)

Say = Callable[[str], None]


@dataclass(frozen=True)
class Leg:
    name: str
    seconds: float
    ratio: float | None  # seconds / cold-variant's seconds
    built: int  # variants built (the others were up to date)
    variants: int
    ccache: dict[str, int]
    note: str = ""
    per_variant: dict[str, float] = field(default_factory=dict)  # each variant's build, in seconds


@dataclass
class Plan:
    manifest: Manifest
    matrix: Matrix
    variants: list[Variant]  # the matrix legs' variants
    reference: Variant  # the cold-variant leg's
    refused: list[str] = field(default_factory=list)  # "variant: reason" of those no index serves here


def plan(kernel: Path, matrix: Matrix, names: Sequence[str], reference: str | None) -> Plan:
    """The variants to time: ``names``, else every variant ``build --all`` builds here (this machine's
    own and those an environment serves); the reference: ``reference``, else the newest torch's CUDA
    variant among them, else the newest torch's."""
    manifest = load_manifest(kernel)
    offered = {v.name: v for v in [*kernel_host_variants(manifest), *manifest.variants(matrix.variants)]}
    refused: list[str] = []
    if names:
        unknown = [n for n in names if n not in offered]
        if unknown:
            msg = (
                f"--variant {unknown[0]}: not a variant of {manifest.path}; "
                f"`python -m pybuild variants --kernel {kernel}` lists them"
            )
            raise BuildError(msg)
        variants = [offered[n] for n in dict.fromkeys(names)]
    else:
        host = kernel_host_variants(manifest)
        config, facts = index_config(), host_facts()
        variants = list(host)
        for v in manifest.variants(matrix.variants):
            if v in host:
                continue
            env_plan = plan_env(v, config, facts)
            if isinstance(env_plan, Refusal):
                refused.append(f"{v.name}: {env_plan.reason}")
            else:
                variants.append(v)
    if not variants:
        raise BuildError(
            f"bench-build: {manifest.name} has no variant this machine builds; see `python -m pybuild build --all`"
        )
    if reference is not None:
        if reference not in {v.name for v in variants}:
            raise BuildError(
                f"--reference {reference}: not among the variants timed ({', '.join(v.name for v in variants)})"
            )
        ref = next(v for v in variants if v.name == reference)
    else:
        ranked = sorted(variants, key=lambda v: (_has_device(v), _torch_key(v)))
        ref = ranked[-1]
    return Plan(manifest, matrix, variants, ref, refused)


def _has_device(v: Variant) -> bool:
    return backends.get(v.backend).device_module is not None


def _torch_key(v: Variant) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v.torch or "0"))


def prepare_envs(p: Plan, say: Say) -> float:
    """Make (or find) the environments of ``p``'s variants that this Python's torch does not build;
    the seconds it took."""
    start = time.monotonic()
    host = set(kernel_host_variants(p.manifest))
    config, facts = index_config(), host_facts()
    for v in p.variants:
        if v in host:
            continue
        env_plan = plan_env(v, config, facts)
        if isinstance(env_plan, Refusal):
            raise BuildError(f"bench-build: {v.name}: {env_plan.reason}")
        ensure_env(env_plan, v, progress=say)
    return time.monotonic() - start


def copy_kernel(manifest: Manifest, dest: Path) -> Path:
    """The kernel's folder without its builds (``build/``, ``.pybuild/``), at ``dest``."""
    if dest.exists():
        shutil.rmtree(dest)
    ignore = shutil.ignore_patterns("build", ".pybuild", "__pycache__", "compile_commands.json")
    shutil.copytree(manifest.root, dest, ignore=ignore, symlinks=True)
    return dest


@dataclass(frozen=True)
class Runner:
    """Runs ``python -m pybuild build`` for the legs, each with its own ccache folder."""

    variants_file: Path
    cache: SharedCache | None
    cuda_archs: str | None
    jobs: int | None
    say: Say

    def build(
        self, kernel: Path, variants: Sequence[Variant], ccache_dir: Path, env: dict[str, str], *, shared: bool = True
    ) -> tuple[float, int, dict[str, int], dict[str, float]]:
        """(seconds, variants built, ccache's counters of this run, each variant's seconds as the build
        reports them); ``shared``: with the shared cache."""
        cmd = [sys.executable, "-m", "pybuild", "build", str(kernel), "--variants", str(self.variants_file), "--json"]
        cmd += [a for v in variants for a in ("--variant", v.name)]
        env = {k: v for k, v in env.items() if k != "PYBUILD_SHARED_CACHE"}  # only what --cache says
        if self.cache is not None and shared:
            cmd += ["--cache", self.cache.spec]
        if self.cuda_archs:
            cmd += ["--cuda-archs", self.cuda_archs]
        if self.jobs:
            cmd += ["--jobs", str(self.jobs)]
        env = {**env, "CCACHE_DIR": str(ccache_dir)}
        ccache_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(["ccache", "--zero-stats"], env=env, capture_output=True, check=False)
        start = time.monotonic()
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        seconds = time.monotonic() - start
        if out.returncode != 0:
            tail = "\n".join((out.stderr or out.stdout).strip().splitlines()[-5:])
            raise BuildError(f"bench-build: `{' '.join(cmd[1:4])} …` failed (exit {out.returncode}):\n{tail}")
        rows = json.loads(out.stdout[out.stdout.index("[") :])
        built = sum(1 for r in rows if r.get("status") == "built")
        stats = ccache_stats(env)
        each = {r["variant"]: float(str(r.get("time", "0")).split()[0]) for r in rows}
        return seconds, built, {k: stats.get(k, 0) for k in STATS}, each


def edit_one_source(p: Plan, kernel: Path) -> tuple[Path, str]:
    """Add one line to the first source of the first section of a timed device backend (a ``.cu`` of
    a CUDA section), else of the first section; (the file, its text before)."""
    timed = {v.backend for v in p.variants}
    device = {v.backend for v in p.variants if _has_device(v)}
    sections = [k for k in p.manifest.kernels if k.compiled_src and k.backend in timed]
    if not sections:
        raise BuildError(f"bench-build: {p.manifest.path} compiles no source for the variants timed")
    section = next((k for k in sections if k.backend in device), sections[0])
    path = kernel / section.compiled_src[0]
    before = path.read_text()
    path.write_text(before + EDIT_LINE.format(n=1))
    return path, before


@contextlib.contextmanager
def second_machine(base: Path) -> Iterator[dict[str, str]]:
    """The environment of a second machine: a fresh HOME and environments folder under ``base``. The
    package indexes' settings (pip's config) and uv's download cache are the first machine's, as a
    fleet's machines each have their mirror of the wheels."""
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    real_home = Path.home()
    keep = {
        "XDG_CONFIG_HOME": os.environ.get("XDG_CONFIG_HOME") or str(real_home / ".config"),
        "UV_CACHE_DIR": os.environ.get("UV_CACHE_DIR") or _uv_cache_dir(),
    }
    changed = {
        "HOME": str(home),
        "PYBUILD_CACHE_DIR": str(base / "pybuild-cache"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        **keep,
    }
    saved = {k: os.environ.get(k) for k in changed}
    os.environ.update(changed)
    try:
        yield dict(os.environ)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _uv_cache_dir() -> str:
    from .envs import uv_bin

    out = subprocess.run([uv_bin(), "cache", "dir"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or str(Path.home() / ".cache" / "uv")


def machine() -> dict[str, object]:
    """This machine, as a result file names it: CPU, cores, memory, GPU, toolkits."""
    cpu = ""
    with contextlib.suppress(OSError):
        m = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.M)
        cpu = m[1].strip() if m else ""
    mem = 0.0
    with contextlib.suppress(OSError, AttributeError):
        m = re.search(r"^MemTotal:\s*(\d+) kB", Path("/proc/meminfo").read_text(), re.M)
        mem = round(int(m[1]) / 2**20, 1) if m else 0.0
    gpus = []
    if shutil.which("nvidia-smi"):
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, check=False
        )
        gpus = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    facts = host_facts()
    version = ""
    exe = ccache()
    if exe:
        version = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout.splitlines()[0]
    return {
        "cpu": cpu,
        "cores": usable_cores(),
        "memory-gib": mem,
        "gpus": gpus,
        "system": f"{platform.system()} {platform.machine()}",
        "python": platform.python_version(),
        "nvcc": facts.nvcc_version,
        "ccache": version,
        "load-average": [round(x, 2) for x in os.getloadavg()],
    }


def legs_table(legs: Sequence[Leg]) -> list[tuple[str, ...]]:
    """Rows of the summary table: leg, time, ratio, built, ccache hits and misses."""
    rows: list[tuple[str, ...]] = []
    for leg in legs:
        s = leg.ccache
        rows.append(
            (
                leg.name,
                f"{leg.seconds:.1f} s",
                "-" if leg.ratio is None else f"{leg.ratio:.2f}x",
                f"{leg.built}/{leg.variants}",
                f"{s.get('direct_cache_hit', 0)}+{s.get('preprocessed_cache_hit', 0)}",
                str(s.get("remote_storage_hit", 0)),
                str(s.get("cache_miss", 0)),
                leg.note,
            )
        )
    return rows


def goals(legs: Sequence[Leg]) -> dict[str, dict[str, object]]:
    """The farm's goals for its build, measured: the cold matrix at most 1.5x one cold variant, the
    second machine's matrix at most 0.2x the first's, a no-op under 1 s; the edit's compiles (cache
    misses) are reported as they are (one per edited unit and CUDA release, plus the binding per
    variant, whose op namespace is a hash of the sources)."""
    by = {leg.name: leg for leg in legs}
    out: dict[str, dict[str, object]] = {}

    def ratio(name: str, of: str, goal: float) -> None:
        a, b = by.get(name), by.get(of)
        if a is None or b is None or a.ratio is None or not b.seconds:
            out[f"{name}/{of}"] = {"value": None, "goal": goal, "met": None}
            return
        value = round(a.seconds / b.seconds, 3)
        out[f"{name}/{of}"] = {"value": value, "goal": goal, "met": value <= goal}

    ratio("cold-matrix", "cold-variant", 1.5)
    ratio("second-machine", "cold-matrix", 0.2)
    noop = by.get("no-op")
    if noop is not None:
        out["no-op-seconds"] = {"value": round(noop.seconds, 2), "goal": 1.0, "met": noop.seconds < 1.0}
    edit = by.get("edit")
    if edit is not None:
        out["edit-compiles"] = {"value": edit.ccache.get("cache_miss", 0), "variants": edit.variants}
    return out


def as_json(legs: Sequence[Leg]) -> list[dict[str, object]]:
    return [asdict(leg) for leg in legs]
