"""Copy what ``nix build`` left in ``result/`` into the kernels' ``build/`` folders.

A result holds ``<variant>/`` folders (one kernel) or ``<kernel>/<variant>/`` (the ``default``
package of several kernels). Every variant is verified before anything is written: its name parses,
its metadata.json reads the way the ``kernels`` loader reads it, it names a kernel of this farm, and
every file matches the digest it records. Only then is each variant copied (writable, out of the
read-only store) into a staging folder, verified again, and swapped into
``kernels/<name>/build/<variant>/`` in one step. A corrupt or partial result changes nothing.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .build import BUILD_DIR
from .check import BuiltVariant, check_digest, check_metadata
from .digest import digest_mismatches
from .errors import CollectError, ManifestError
from .fsutil import remove_tree, replace_dir
from .manifest import duplicate_name_message, load_manifest
from .metadata import METADATA
from .staging import check_writable, owned_staging, variant_lock

Status = Literal["added", "updated", "unchanged"]


@dataclass(frozen=True)
class Incoming:
    """One verified variant of a result, and where it goes."""

    source: Path  # result/<variant>/ (possibly a link into the Nix store)
    variant: str
    kernel: str
    kernel_dir: Path
    digest: dict[str, str]


@dataclass(frozen=True)
class Collected:
    kernel: str
    variant: str
    status: Status
    path: Path


def variant_dirs(result: Path) -> list[Path]:
    """The variant folders of a result: ``result/<variant>/``, or ``result/<kernel>/<variant>/``."""
    if not result.is_dir():
        msg = f"{result}: not found or not a folder; run e.g. `nix build .#img2gray -L` first (it leaves result/)"
        raise CollectError(msg)
    found: list[Path] = []
    for entry in sorted(result.iterdir()):
        if not entry.is_dir():
            raise CollectError(f"{entry}: unexpected file in a result; expected only <variant>/ folders")
        if (entry / METADATA).is_file() or not any(p.is_dir() and (p / METADATA).is_file() for p in entry.iterdir()):
            found.append(entry)  # a variant (a broken one is reported by verify)
        else:
            found += sorted(p for p in entry.iterdir() if p.is_dir())
    if not found:
        raise CollectError(f"{result}: holds no variant folders; expected result/<variant>/metadata.json")
    return found


class _DuplicateName(ManifestError):
    """Two kernel folders of the farm whose build.toml files name the same kernel."""

    def __init__(self, kernel: str, message: str) -> None:
        super().__init__(message)
        self.kernel = kernel


def farm_kernels(farm_root: Path) -> tuple[dict[str, Path], dict[str, ManifestError]]:
    """``{kernel name: kernel folder}`` for every ``kernels/*/build.toml`` of the farm that parses, and
    ``{folder name: error}`` for those that do not (their kernel's variants cannot be placed)."""
    kernels: dict[str, Path] = {}
    broken: dict[str, ManifestError] = {}
    folders: dict[str, list[Path]] = {}
    for toml in sorted((farm_root / "kernels").glob("*/build.toml")):
        try:
            folders.setdefault(load_manifest(toml.parent).name, []).append(toml.parent)
        except ManifestError as e:
            broken[toml.parent.name] = e
    for name, dirs in folders.items():
        if len(dirs) == 1:
            kernels[name] = dirs[0]
            continue
        error = _DuplicateName(name, duplicate_name_message(name, dirs))  # its variants' folder is ambiguous
        for d in dirs:
            broken[d.name] = error
    return kernels, broken


def _problem(
    path: Path, farm_root: Path, kernels: dict[str, Path], broken: dict[str, ManifestError]
) -> tuple[str, Incoming | None]:
    """Verify one variant folder of a result: (problem, None) or ("", Incoming)."""
    v = BuiltVariant(path)
    for result in (check_metadata(v), check_digest(v)):
        if result.status != "pass":
            return f"{path}: {result.detail}", None
    meta = v.metadata or {}
    built_as = (meta.get("pybuild") or {}).get("variant")
    if built_as is not None and built_as != path.name:
        return f"{path}: metadata.json says it was built as {built_as!r}; the folder was renamed", None
    kernel_dir = kernels.get(v.kernel)
    if kernel_dir is None:
        folder = str(v.kernel).replace("-", "_")
        same = [
            e
            for name, e in broken.items()
            if (isinstance(e, _DuplicateName) and e.kernel == v.kernel) or name.replace("-", "_") == folder
        ]
        if same:  # the kernel's own folder is there, with a build.toml that does not parse: that is the fix
            return f"{path}: kernel {v.kernel!r} cannot be placed: {same[0]}", None
        known = ", ".join(sorted(kernels)) or "none"
        unreadable = f"; unreadable: {', '.join(f'kernels/{n}/build.toml' for n in sorted(broken))}" if broken else ""
        return (
            f"{path}: kernel {v.kernel!r} is not a kernel of {farm_root} (kernels: {known}{unreadable}); "
            "collect into the farm that built it (--farm DIR)"
        ), None
    return "", Incoming(path, path.name, v.kernel, kernel_dir, dict(meta["digest"]["files"]))


def verify(result: Path, farm_root: Path) -> list[Incoming]:
    """Check every variant of ``result``; raise CollectError naming the first problem. Writes nothing."""
    kernels, broken = farm_kernels(farm_root)
    incoming: list[Incoming] = []
    problems: list[str] = []
    for path in variant_dirs(result):
        problem, item = _problem(path, farm_root, kernels, broken)
        if item is None:
            problems.append(problem)
        else:
            incoming.append(item)
    seen: set[tuple[str, str]] = set()
    for item in incoming:
        if (item.kernel, item.variant) in seen:
            problems.append(f"{result}: holds {item.kernel} {item.variant} twice")
        seen.add((item.kernel, item.variant))
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise CollectError(f"{problems[0]}{more}; nothing was collected, build/ is unchanged")
    return incoming


def _copy_writable(source: Path, dest: Path) -> None:
    """Copy a tree out of the read-only store: links followed, owner-writable like a fresh build."""
    shutil.copytree(source, dest, copy_function=shutil.copyfile, dirs_exist_ok=True)
    for dirpath, dirnames, filenames in os.walk(dest):
        for name in [*dirnames, *filenames]:
            p = Path(dirpath) / name
            os.chmod(p, p.stat().st_mode | 0o200)
    os.chmod(dest, dest.stat().st_mode | 0o200)


def _same(final: Path, staging: Path, digest: dict[str, str]) -> bool:
    try:
        same_meta = (final / METADATA).read_bytes() == (staging / METADATA).read_bytes()
    except OSError:
        return False
    return same_meta and not digest_mismatches(final, digest)


def collect_one(item: Incoming) -> Collected:
    """Copy one verified variant into its kernel's ``build/`` atomically."""
    final = item.kernel_dir / BUILD_DIR / item.variant
    check_writable(final.parent)
    # the lock `pybuild build` takes for this variant; staging in build/, as a build's
    with variant_lock(item.kernel_dir, item.variant), owned_staging(item.kernel_dir, item.variant) as staging:
        try:
            _copy_writable(item.source, staging)
        except shutil.Error as e:
            errors = e.args[0] if e.args and isinstance(e.args[0], list) else []
            first = f"{errors[0][0]}: {errors[0][2]}" if errors and len(errors[0]) == 3 else e
            raise CollectError(f"{item.source}: could not be copied ({first}); build/ is unchanged") from None
        problems = digest_mismatches(staging, item.digest)
        if problems:
            raise CollectError(f"{item.source}: the copy differs from its digest ({problems[0]}); build/ is unchanged")
        if final.is_dir() and _same(final, staging, item.digest):
            remove_tree(staging)
            return Collected(item.kernel, item.variant, "unchanged", final)
        status: Status = "updated" if final.exists() else "added"
        replace_dir(staging, final)
    return Collected(item.kernel, item.variant, status, final)


def collect(result: Path, farm_root: Path) -> list[Collected]:
    """Verify every variant of ``result``, then copy each into ``<kernel>/build/<variant>/``."""
    return [collect_one(item) for item in verify(result, farm_root)]
