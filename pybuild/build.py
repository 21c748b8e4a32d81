"""Build the host variant(s) of a kernel with CMake + ninja into ``<kernel>/build/<variant>/``.

A pure-Python (noarch) kernel compiles nothing: each of its ``torch-<backend>`` variants is its
package, ``_ops.py`` and ``metadata.json``, assembled the same way on any machine.

Each variant is compiled in ``<kernel>/.pybuild/<variant>/`` (kept for incremental builds and
``compile_commands.json``), installed into a fresh staging directory, completed with ``_ops.py``,
the Python package and ``metadata.json``, and only then swapped into ``build/`` in one step.
A build whose inputs (sources, variant, torch, templates, flags) are unchanged is skipped.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from . import __version__, backends, safeload
from .cache import SharedCache
from .deps import Resolved
from .digest import digest_mismatches, source_hash
from .digest import ops_name as make_ops_name
from .elf import NotELFError, bad_rpaths
from .errors import BuildError, InputLimitError, ToolchainError, VariantsError
from .fsutil import dir_size, remove_tree, replace_dir
from .generate import ProjectSpec, render_ops_py, template_fingerprint, write_project
from .host import Toolchain, ccache, host_toolchain
from .jobs import compile_jobs
from .logged_run import run_logged as _run_logged
from .manifest import Manifest
from .metadata import METADATA, git_state, make_metadata, write_metadata
from .preflight import check_variant_buildable, resolve_depends
from .staging import check_writable, owned_staging, remove_dead_leftovers, variant_lock
from .variants import Variant, parse_variant_name

WORK_DIR = ".pybuild"
BUILD_DIR = "build"

Progress = Callable[[str, float | None], None]  # (message, fraction done or None)


@dataclass(frozen=True)
class BuildOptions:
    cuda_archs: tuple[str, ...] | None = None  # override build.toml, e.g. ("9.0",) for a quick dev build
    force: bool = False
    jobs: int | None = None
    sandbox: bool = False  # configure, compile and install under bubblewrap (pybuild.sandbox)
    cache: SharedCache | None = None  # ccache's remote storage for the compile steps (pybuild.cache)


@dataclass(frozen=True)
class BuildResult:
    kernel: str
    variant: str
    status: str  # "built" | "up to date" | "failed"
    seconds: float
    size: int
    path: Path
    message: str = ""
    exit_code: int = 0  # of a failed build: its error's exit code


def _no_progress(message: str, fraction: float | None) -> None:
    return None


def content_key(
    manifest: Manifest,
    variant: Variant,
    src_hash: str,
    archs: tuple[str, ...],
    toolchain: Toolchain | None,
    deps: tuple[Resolved, ...] = (),
) -> str:
    """The content key of one variant's build: what decides its files, and nothing else. ``build``,
    ``test`` (which builds in the variant's environment) and a host build after the dev loop compute
    the same key for the same inputs, so none rebuilds what another built.

    In it: the sources (build.toml, every source file, the package, the farm's shared headers), the
    variant, the torch release, the backend's toolkit and flag variables, the device architectures
    (a CUDA variant's only: a CPU variant has none), pybuild's templates and the git state. Not in it:
    paths (the interpreter's, the environment's), nor the Python version, as extensions are built
    against the limited API (abi3)."""
    key = {
        "source": src_hash,
        "variant": variant.name,
        # a noarch variant holds no binary: the torch and toolkit that assemble it do not matter
        "torch": None if toolchain is None else toolchain.torch.version,
        "toolchain": None if toolchain is None else backends.get(variant.backend).key_inputs(toolchain),
        "templates": template_fingerprint(),
        "archs": list(archs),
        # the pinned dependencies' header trees (pybuild.deps), by content
        "depends": [[d.pin.name, d.tree_sha256] for d in deps],
        # metadata.json records the commit the sources come from and whether they differ from it: a
        # commit that changes them (or a newly dirty tree) makes a new build; other commits do not
        "git": git_state(manifest.root, manifest.source_files(), last_change=True),
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def _sha256(path: Path) -> str:
    return hashlib.sha256(safeload.read_bytes(path)).hexdigest()  # a FIFO or /dev/zero is refused, not read


def is_up_to_date(final: Path, stamp: Path, key: str) -> bool:
    """Same inputs as the last build, and its files are still exactly what metadata.json lists."""
    try:
        data = safeload.load_json(stamp)
        if data["key"] != key or data["metadata-sha256"] != _sha256(final / METADATA):
            return False
        files = safeload.load_json(final / METADATA)["digest"]["files"]
        return not digest_mismatches(final, files)
    except (OSError, ValueError, KeyError, TypeError, InputLimitError):
        return False


def _check_output_place(root: Path, variant: Variant) -> None:
    """``build/`` and ``build/<variant>`` must be folders (or absent) before a build starts."""
    for place in (root / BUILD_DIR, root / BUILD_DIR / variant.name, root / WORK_DIR):
        if (place.exists() or place.is_symlink()) and not place.is_dir():  # a file, or a dangling link
            raise BuildError(f"{place}: a file stands where pybuild needs a folder; move it away")
    check_writable(root / BUILD_DIR)


def build_variant(
    manifest: Manifest,
    variant: Variant,
    options: BuildOptions = BuildOptions(),
    progress: Progress = _no_progress,
    toolchain: Toolchain | None = None,
) -> BuildResult:
    """Build one variant of one kernel with ``toolchain`` (default: this Python's torch and the
    machine's nvcc; ``pybuild.envs`` makes one per variant)."""
    if variant.noarch:
        return _assemble_noarch(manifest, variant, options)
    toolchain = toolchain or host_toolchain()
    start = time.monotonic()
    root = manifest.root.resolve()  # absolute: CMake runs with cwd=.pybuild/<variant>
    final = root / BUILD_DIR / variant.name
    stamp = root / WORK_DIR / variant.name / "stamp.json"
    check_variant_buildable(variant, toolchain)
    _check_output_place(root, variant)
    deps = resolve_depends(manifest, variant, lambda message: progress(message, None))

    remove_dead_leftovers(root)  # what killed runs left, even when this run has nothing to do
    src_hash = source_hash(manifest)
    archs = backends.get(variant.backend).build_archs(manifest, variant, options.cuda_archs)
    key = content_key(manifest, variant, src_hash, archs, toolchain, deps)
    if not options.force and is_up_to_date(final, stamp, key):
        return BuildResult(manifest.name, variant.name, "up to date", time.monotonic() - start, dir_size(final), final)
    cmake, ninja = toolchain.cmake_and_ninja()  # the whole toolchain before anything is written

    with variant_lock(root, variant.name, lambda: progress(f"waiting for another build of {variant.name}", None)):
        if not options.force and is_up_to_date(final, stamp, key):  # built by the run this one waited for
            return BuildResult(
                manifest.name, variant.name, "up to date", time.monotonic() - start, dir_size(final), final
            )
        ops = make_ops_name(manifest, variant.backend, src_hash)
        job = _Job(manifest, variant, toolchain, root, ops, archs, cmake, ninja, deps=deps, sandbox=options.sandbox)
        job.work.mkdir(parents=True, exist_ok=True)
        job.log.write_text(f"pybuild {__version__} building {manifest.name} for {variant.name}\n")
        env = _configure(job, progress)
        _compile(job, env, options, progress)
        progress("assembling", None)
        _install(job, final, src_hash)
        stamp.write_text(json.dumps({"key": key, "metadata-sha256": _sha256(final / METADATA)}))
        _publish_compile_commands(job)
    return BuildResult(manifest.name, variant.name, "built", time.monotonic() - start, dir_size(final), final)


def _publish_compile_commands(job: _Job) -> None:
    """Put the variant's ``compile_commands.json`` at the kernel's root for editors and clangd, in one
    rename: variants of one kernel built at once (in threads or in other runs) each replace the whole
    file, the last one's stays, and no reader sees a mix. The temporary copy is named for the variant,
    whose lock the caller holds, so no other build writes it meanwhile."""
    commands = job.cmake_dir / "compile_commands.json"
    if not commands.is_file():
        return
    tmp = job.root / f".compile_commands.json.{job.variant.name}.tmp"
    shutil.copyfile(commands, tmp)
    os.replace(tmp, job.root / "compile_commands.json")


@dataclass(frozen=True)
class _Job:
    """One compiled variant's build, once it is known to be needed."""

    manifest: Manifest
    variant: Variant
    toolchain: Toolchain
    root: Path  # the kernel folder, absolute
    ops: str
    archs: tuple[str, ...]
    cmake: str
    ninja: str
    deps: tuple[Resolved, ...] = ()
    sandbox: bool = False

    @property
    def work(self) -> Path:
        return self.root / WORK_DIR / self.variant.name

    @property
    def log(self) -> Path:
        return self.work / "build.log"

    @property
    def cmake_dir(self) -> Path:
        return self.work / "cmake"


def _configure(job: _Job, progress: Progress) -> dict[str, str]:
    """Write the CMake project and configure it (again only when its settings changed); returns the
    environment the build steps run in."""
    variant, backend = job.variant, backends.get(job.variant.backend)
    project = job.work / "project"
    python = stable_python(job.work, job.toolchain.python)
    write_project(
        job.manifest, ProjectSpec(backend=variant.backend, ops_name=job.ops, cuda_archs=job.archs), dest=project
    )
    args = [
        job.cmake,
        "-S",
        str(project),
        "-B",
        str(job.cmake_dir),
        "-G",
        "Ninja",
        f"-DCMAKE_MAKE_PROGRAM={job.ninja}",
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DPython3_EXECUTABLE={python}",
        f"-DPYBUILD_TORCH_CMAKE_PREFIX={_torch_cmake_prefix(job, python)}",
        f"-DPYBUILD_SOURCE_DIR={job.root}",
        f"-DPYBUILD_BACKEND={variant.backend}",
        f"-DOPS_NAME={job.ops}",
    ]
    launcher = ccache()
    if launcher:
        args += [
            f"-DCMAKE_CXX_COMPILER_LAUNCHER={launcher}",
            f"-DCMAKE_CUDA_COMPILER_LAUNCHER={_cuda_launcher(job, launcher)}",
        ]
    args += backend.cmake_args(job.manifest, variant, job.toolchain, job.archs)
    args += [f"-D{d.pin.env_var}={d.root}" for d in job.deps]
    _drop_moved_cmake_cache(job.cmake_dir)
    # the environment behind the alias is part of the configuration: a new one configures afresh
    configure_key = hashlib.sha256("\0".join([*args, job.toolchain.python]).encode()).hexdigest()
    configure_stamp = job.work / "configure.sha256"
    env = job.toolchain.environ()
    # Paths relative to the kernel folder in ccache's hash: copies of a kernel share cache hits.
    env.setdefault("CCACHE_BASEDIR", str(job.root))
    env.setdefault("CCACHE_NOHASHDIR", "1")
    env.update(backend.build_environ(job.archs))
    if (
        not (job.cmake_dir / "CMakeCache.txt").is_file()
        or not configure_stamp.is_file()
        or configure_stamp.read_text() != configure_key
    ):
        # other settings, another toolchain (e.g. a new environment) or a failed configure: the
        # old cache would keep the old torch's and compiler's paths; configure afresh (ccache
        # keeps the compiles cheap)
        shutil.rmtree(job.cmake_dir, ignore_errors=True)
        progress("configuring (CMake)", None)
        _step(job, args, env, writable=[job.work])
        configure_stamp.write_text(configure_key)
    return env


TOOLCHAIN_ALIAS = "toolchain"


def stable_python(work: Path, python: str) -> str:
    """``python`` as CMake sees it in the variant's work folder ``work``. An environment's Python (a
    venv: ``pyvenv.cfg`` beside its ``bin/``) is reached through the link ``<work>/toolchain`` to its
    folder, so torch's and NVIDIA's include folders appear at ``../toolchain/...`` from the CMake
    folder in every variant. With ccache's base_dir at the kernel folder, a translation unit that
    includes no torch header (device code) then compiles with the same command and the same
    preprocessed text in every variant of one CUDA release, and ccache compiles it once for all of
    them. Another Python (a system one) is used as it is: its prefix lookup depends on where it lives."""
    exe = Path(python)
    prefix = exe.parent.parent
    if exe.parent.name != "bin" or not (prefix / "pyvenv.cfg").is_file():
        return python
    alias = work / TOOLCHAIN_ALIAS
    if not (alias.is_symlink() and os.readlink(alias) == str(prefix)):
        if alias.is_symlink() or alias.is_file():
            alias.unlink()
        elif alias.exists():
            shutil.rmtree(alias)
        alias.symlink_to(prefix, target_is_directory=True)
    return str(alias / "bin" / exe.name)


UNIT_LOCKS = ".unit-locks"  # in .pybuild/: the locks of pybuild/unitlock.py, shared by the variants


def _cuda_launcher(job: _Job, ccache_exe: str) -> str:
    """ccache for CUDA units, behind pybuild/unitlock.py: variants built at once compile a device unit
    they share one after another, so the first compiles it and the others take ccache's hit. A
    sandboxed build (no ccache, nothing writable beside its own work folder) gets ccache alone."""
    if job.sandbox:
        return ccache_exe
    script = Path(__file__).with_name("unitlock.py")
    return ";".join([sys.executable, str(script), str(job.root / WORK_DIR / UNIT_LOCKS), str(job.work), ccache_exe])


def _torch_cmake_prefix(job: _Job, python: str) -> str:
    """torch's ``share/cmake`` folder, through the toolchain link where ``python`` goes through it (so
    torch's paths stay the same in every variant), handed to CMake so that configuring needs no
    ``import torch``."""
    torch_dir = job.toolchain.torch.path
    prefix = Path(job.toolchain.python).parent.parent
    if python != job.toolchain.python and torch_dir.is_relative_to(prefix):
        torch_dir = job.work / TOOLCHAIN_ALIAS / torch_dir.relative_to(prefix)
    return str(torch_dir / "share" / "cmake")


def _step(
    job: _Job,
    cmd: list[str],
    env: dict[str, str] | None,
    *,
    writable: list[Path],
    on_line: Callable[[str], None] | None = None,
) -> None:
    """Run one build step in the variant's work folder; with ``--sandbox`` under bubblewrap, where only
    ``writable`` may be written and the kernel folder and the toolchain are read-only."""
    if job.sandbox:
        from .sandbox import sandboxed

        tc = job.toolchain
        python = Path(tc.python)
        readable = [job.root, python.parent.parent, python.resolve().parent.parent, tc.torch.path, *tc.bin_dirs]
        readable += [d.root for d in job.deps]  # the pinned dependencies' header trees
        readable += [c.resolve().parent.parent for _, c in tc.compilers]  # each compiler's toolkit (its bin/..)
        cmd = sandboxed(cmd, env or dict(os.environ), cwd=job.work, writable=writable, readable=readable)
        env = {"PATH": os.environ.get("PATH", "")}  # bubblewrap's own; the step gets the allow-list
    _run_logged(cmd, job.log, cwd=job.work, on_line=on_line, env=env)


def _compile(job: _Job, env: dict[str, str], options: BuildOptions, progress: Progress) -> None:
    def on_line(line: str) -> None:
        m = re.match(r"\[(\d+)/(\d+)\] (.*)", line)
        if m:
            done, total = int(m[1]), int(m[2])
            what = m[3].split(" ")
            target = Path(what[-1]).name if what else ""
            progress(f"compiling [{done}/{total}] {target}", done / total)

    build_cmd = [job.cmake, "--build", str(job.cmake_dir), "--parallel", str(options.jobs or compile_jobs())]
    if options.cache is not None and not job.sandbox:  # a sandboxed build has neither network nor ccache
        env = {**env, **options.cache.environ()}
    progress("compiling", 0.0)
    _step(job, build_cmd, env, writable=[job.work], on_line=on_line)


def _install(job: _Job, final: Path, src_hash: str) -> None:
    """Install the build into a staging folder, complete it (package, metadata.json) and swap it in."""
    variant = job.variant
    with _staging(job.root, variant) as staging:
        _step(
            job,
            [job.cmake, "--install", str(job.cmake_dir), "--prefix", str(staging)],
            None,
            writable=[job.work, staging],
        )
        pkg_dest = _add_package(job.manifest, staging, job.ops, noarch=False)
        for so in pkg_dest.glob("*.so"):
            try:
                bad = bad_rpaths(so)
            except NotELFError as e:
                raise BuildError(f"{e}: the build installed a broken extension") from None
            if bad:
                msg = (
                    f"{so.name}: RPATH points into build directories ({', '.join(bad)}); "
                    "CMAKE_INSTALL_RPATH must stay empty"
                )
                raise BuildError(msg)
        info = job.toolchain.torch
        toolkit = backends.get(variant.backend).toolkit_version(info)
        extra = {
            "version": __version__,
            "variant": variant.name,
            "torch": info.version,
            **({variant.backend: toolkit} if toolkit is not None else {}),  # the backend's toolkit version
            "source-hash": src_hash,
        }
        _seal(job.manifest, variant, staging, final, ops=job.ops, archs=job.archs, extra=extra)


def _assemble_noarch(manifest: Manifest, variant: Variant, options: BuildOptions) -> BuildResult:
    """A pure-Python variant: the package, its ``_ops.py`` and ``metadata.json``; no toolchain needed."""
    start = time.monotonic()
    if not manifest.noarch:
        raise ToolchainError(f"variant {variant.name} is for pure-Python kernels; {manifest.path} compiles sources")
    root = manifest.root.resolve()
    final = root / BUILD_DIR / variant.name
    work = root / WORK_DIR / variant.name
    stamp = work / "stamp.json"
    src_hash = source_hash(manifest)
    ops = make_ops_name(manifest, variant.backend, src_hash)
    key = content_key(manifest, variant, src_hash, (), None)
    _check_output_place(root, variant)
    remove_dead_leftovers(root)  # what killed runs left, even when this run has nothing to do
    if not options.force and is_up_to_date(final, stamp, key):
        return BuildResult(manifest.name, variant.name, "up to date", time.monotonic() - start, dir_size(final), final)
    with variant_lock(root, variant.name):
        if not options.force and is_up_to_date(final, stamp, key):  # built by the run this one waited for
            return BuildResult(
                manifest.name, variant.name, "up to date", time.monotonic() - start, dir_size(final), final
            )
        work.mkdir(parents=True, exist_ok=True)
        with _staging(root, variant) as staging:
            _add_package(manifest, staging, ops, noarch=True)
            extra = {"version": __version__, "variant": variant.name, "source-hash": src_hash}
            _seal(manifest, variant, staging, final, ops=ops, archs=(), extra=extra)
        stamp.write_text(json.dumps({"key": key, "metadata-sha256": _sha256(final / METADATA)}))
    return BuildResult(manifest.name, variant.name, "built", time.monotonic() - start, dir_size(final), final)


def _staging(root: Path, variant: Variant) -> contextlib.AbstractContextManager[Path]:
    """A fresh staging folder for ``variant`` in ``build/`` (on the destination's file system), removed
    again if anything fails before it is sealed."""
    return owned_staging(root, variant.name)


def _add_package(manifest: Manifest, staging: Path, ops: str, *, noarch: bool) -> Path:
    """Put the kernel's Python package and its generated ``_ops.py`` into ``staging``."""
    pkg_dest = staging / manifest.python_name
    _copy_python_package(manifest, pkg_dest)
    (pkg_dest / "_ops.py").write_text(render_ops_py(ops, noarch=noarch, tvm_ffi=manifest.framework == "tvm-ffi"))
    return pkg_dest


def _seal(
    manifest: Manifest,
    variant: Variant,
    staging: Path,
    final: Path,
    *,
    ops: str,
    archs: tuple[str, ...],
    extra: Mapping[str, object],
) -> None:
    """Write ``metadata.json`` (its digest over the finished files) and swap ``staging`` in as ``final``."""
    metadata = make_metadata(
        manifest, ops_name=ops, backend=variant.backend, archs=archs, variant_dir=staging, extra=extra
    )
    write_metadata(staging, metadata)
    replace_dir(staging, final)


def other_kind_variants(manifest: Manifest) -> list[Path]:
    """Folders in ``build/`` of the other kind than the kernel is now: compiled variants of a kernel
    that became pure Python, or ``torch-<backend>`` ones of a kernel that now compiles. The loader
    would pick them over (or beside) what the kernel builds now, and nothing rebuilds them."""
    build = manifest.root / BUILD_DIR
    found = []
    for d in sorted(build.iterdir()) if build.is_dir() else ():
        try:
            kind_differs = d.is_dir() and parse_variant_name(d.name).noarch != manifest.noarch
        except VariantsError:
            continue
        if kind_differs:
            found.append(d)
    return found


def remove_other_kind_variants(manifest: Manifest) -> list[str]:
    """Remove :func:`other_kind_variants` (each under its variant's build lock); their names."""
    removed = []
    for d in other_kind_variants(manifest):
        with variant_lock(manifest.root, d.name):
            remove_tree(d)
        removed.append(d.name)
    return removed


def _drop_moved_cmake_cache(cmake_dir: Path) -> None:
    """A kernel folder copied or moved with its .pybuild/ carries a CMake cache that names the old
    place, which CMake refuses to reuse: start that configuration afresh (ccache keeps it cheap)."""
    cache = cmake_dir / "CMakeCache.txt"
    try:
        text = cache.read_text(errors="replace")
    except OSError:
        return
    m = re.search(r"^CMAKE_CACHEFILE_DIR:INTERNAL=(.*)$", text, re.MULTILINE)
    if m and Path(m[1].strip()).resolve() != cmake_dir.resolve():
        shutil.rmtree(cmake_dir, ignore_errors=True)


def _copy_python_package(manifest: Manifest, dest: Path) -> None:
    """Copy the package files the manifest ships (its [torch] `pyext`) into ``dest``."""
    src = manifest.root / manifest.package_dir / manifest.python_name
    dest.mkdir(parents=True, exist_ok=True)
    for rel in manifest.package_files():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / rel, target)
