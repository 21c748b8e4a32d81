"""The checks of compiled extensions: ``abi3``, ``manylinux_2_28`` / ``macos``, ``rpath`` and ``runtime``."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..elf import NotELFError, bad_rpaths, dynamic_entries, embedded_cxx_runtime
from ..errors import ToolchainError
from .results import MACOS, MANYLINUX, NOT_MANYLINUX_HINT, PYTHON_ABI, BuiltVariant, CheckResult


def _abi_checker() -> Any:
    try:
        import kernel_abi_check
    except ImportError:
        msg = "kernel-abi-check is not installed; pip install kernel-abi-check (a dependency in pyproject.toml)"
        raise ToolchainError(msg) from None
    return kernel_abi_check


def check_abi3(v: BuiltVariant) -> CheckResult:
    exts = v.extensions()
    if not exts:
        return CheckResult(v.name, "abi3", "pass", "no compiled extension")
    if v.variant is not None and v.variant.noarch:
        return CheckResult(
            v.name,
            "abi3",
            "fail",
            f"{', '.join(p.name for p in exts)} in a pure-Python variant: {v.name} loads on every "
            "system and torch of its backend, so it must hold no compiled file; remove it",
        )
    kac = _abi_checker()
    problems: list[str] = []
    symbols: list[str] = []
    for so in exts:
        try:
            found = kac.ObjectFile(so).check_python_abi(PYTHON_ABI)
        except (OSError, ValueError) as e:
            problems.append(f"{so.name}: cannot be read: {e}")
            continue
        for s in found:
            if isinstance(s, kac.IncompatibleAbi3Symbol):
                problems.append(f"{so.name}: {s.name} is in the stable ABI only since Python {s.version_added}")
            else:
                problems.append(f"{so.name}: {s.name} is not in Python's stable ABI")
            symbols.append(s.name)
        if so.suffix == ".so":
            try:
                entries = dynamic_entries(so)
            except NotELFError as e:  # e.g. a Mach-O file kernel-abi-check reads but pyelftools cannot
                problems.append(str(e))
                continue
            libpython = [val for tag, val in entries if tag == "NEEDED" and val.startswith("libpython")]
            problems += [f"{so.name}: links {lib}; an abi3 extension must not link libpython" for lib in libpython]
    if problems:
        return CheckResult(
            v.name,
            "abi3",
            "fail",
            "; ".join(problems) + f" (must load in every CPython >= {PYTHON_ABI}: use only the "
            "limited API, Py_LIMITED_API)",
            {"symbols": symbols},
        )
    tag = f"cp{PYTHON_ABI.replace('.', '')}-abi3"
    return CheckResult(v.name, "abi3", "pass", f"{len(exts)} extension(s) use only the stable ABI ({tag})")


def check_platform(v: BuiltVariant) -> CheckResult:
    exts = v.extensions()
    darwin = v.variant is not None and (v.variant.system or "").endswith("-darwin")
    name = "macos" if darwin else MANYLINUX
    if not exts:
        return CheckResult(v.name, name, "pass", "no compiled extension")
    if v.variant is not None and v.variant.noarch:
        return CheckResult(v.name, name, "skip", "a pure-Python variant may hold no compiled file (see abi3)")
    kac = _abi_checker()
    problems: list[str] = []
    newest = ""
    for so in exts:
        try:
            obj = kac.ObjectFile(so)
            found = obj.check_macos(MACOS) if darwin else obj.check_manylinux(MANYLINUX)
        except (OSError, ValueError) as e:
            problems.append(f"{so.name}: cannot be read: {e}")
            continue
        for s in found:
            if darwin:
                problems.append(f"{so.name}: {s!r}")
                continue
            problems.append(f"{s.dep}_{s.version} ({s.name})")
            if s.dep == "GLIBC" and _version_key(s.version) > _version_key(newest or "0"):
                newest = s.version
    if not problems:
        return CheckResult(v.name, name, "pass", f"symbol versions fit {'macOS ' + MACOS if darwin else MANYLINUX}")
    uniq = sorted(set(problems))
    if darwin:
        return CheckResult(v.name, name, "fail", f"needs a newer macOS than {MACOS}: {'; '.join(uniq)}")
    glibc = f"needs glibc {newest}, newer than {MANYLINUX} (glibc 2.28) allows: " if newest else ""
    detail = (
        f"NOT {MANYLINUX}: {glibc}references {', '.join(uniq[:4])}{' …' if len(uniq) > 4 else ''}; "
        + NOT_MANYLINUX_HINT.format(kernel=v.kernel or "<kernel>")
    )
    return CheckResult(v.name, name, "fail", detail, {"symbols": uniq})


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version))


def _each_module(
    v: BuiltVariant, check: str, find: Callable[[Path], list[str]], verb: str, *, fail: str, ok: str
) -> CheckResult:
    """``check`` runs ``find`` on each of ``v``'s ``.so`` modules: it passes with ``ok`` if it finds
    nothing, else fails with ``fail`` (its ``{}`` standing for "<module><verb><found>; ...")."""
    problems = []
    for so in v.extensions():
        if so.suffix != ".so":
            continue
        try:
            found = find(so)
        except NotELFError as e:
            return CheckResult(v.name, check, "fail", f"{e}; rebuild the variant")
        if found:
            problems.append(f"{so.name}{verb}{', '.join(found)}")
    if problems:
        return CheckResult(v.name, check, "fail", fail.format("; ".join(problems)))
    return CheckResult(v.name, check, "pass", ok)


def check_rpath(v: BuiltVariant) -> CheckResult:
    return _each_module(
        v,
        "rpath",
        bad_rpaths,
        ": ",
        ok="no RPATH into build directories",
        fail="RPATH/RUNPATH into the build machine: {}; keep CMAKE_INSTALL_RPATH empty",
    )


def check_runtime(v: BuiltVariant) -> CheckResult:
    """The C++ runtime must be the process's shared one (torch's), not a static copy in the module."""
    return _each_module(
        v,
        "runtime",
        embedded_cxx_runtime,
        " defines ",
        ok="uses the shared C++ runtime",
        fail="embedded C++ runtime: {}; link the shared libstdc++ "
        "(no -static-libstdc++; the generated CMake project links -l:libstdc++.so.6)",
    )
