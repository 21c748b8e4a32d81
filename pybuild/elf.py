"""Reading a built extension's dynamic section (RPATH/RUNPATH, NEEDED) and dynamic symbols with ``pyelftools``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from .safeload import shown

#: The dynamic tags whose value is a string (a library name or a search path), as readelf names them.
STRING_TAGS = {"DT_NEEDED": "needed", "DT_SONAME": "soname", "DT_RPATH": "rpath", "DT_RUNPATH": "runpath"}


class NotELFError(ValueError):
    """A file named like an extension that is not a readable ELF object (corrupt, truncated, Mach-O)."""


@contextmanager
def _elf(so: Path) -> Iterator[ELFFile]:
    try:
        with open(so, "rb") as f:
            yield ELFFile(f)
    except (ELFError, OSError, ValueError, EOFError) as e:
        # pyelftools reads lazily: a truncated file fails while the sections are read, inside the block
        raise NotELFError(f"{shown(so.name)}: not a readable shared object ({e or type(e).__name__})") from None


def dynamic_entries(so: Path) -> list[tuple[str, str]]:
    """``[(tag, value)]`` of the dynamic section's string entries, e.g. ``("RUNPATH", "/x:/y")``,
    ``("NEEDED", "libc.so.6")``; empty for a static object."""
    entries = []
    with _elf(so) as elf:
        for section in elf.iter_sections():
            if not isinstance(section, DynamicSection):
                continue
            for tag in section.iter_tags():
                attr = STRING_TAGS.get(tag.entry.d_tag)
                if attr is not None:
                    entries.append((tag.entry.d_tag.removeprefix("DT_"), str(getattr(tag, attr))))
    return entries


def rpaths(so: Path) -> list[str]:
    return [p for tag, v in dynamic_entries(so) if tag in ("RPATH", "RUNPATH") for p in v.split(":") if p]


def bad_rpaths(so: Path) -> list[str]:
    """RPATH/RUNPATH entries other than ``$ORIGIN``-relative ones: they point into the machine
    that built the file (its build tree or toolchain) and do not exist where the kernel is loaded."""
    return [p for p in rpaths(so) if not p.startswith("$ORIGIN")]


#: Defined only by a C++ runtime (libstdc++/libc++abi). A module that defines them carries its own
#: copy: exceptions thrown in it (a failed TORCH_CHECK) are not caught by torch's runtime and crash.
CXX_RUNTIME_SYMBOLS = ("__cxa_throw", "__cxa_begin_catch", "__gxx_personality_v0")


def defined_dynamic_symbols(so: Path) -> set[str]:
    """Names of the symbols ``so`` exports (its dynamic symbol table, undefined ones left out)."""
    with _elf(so) as elf:
        table = elf.get_section_by_name(".dynsym")
        if not isinstance(table, SymbolTableSection):
            return set()
        return {s.name for s in table.iter_symbols() if s.name and s["st_shndx"] != "SHN_UNDEF"}


def embedded_cxx_runtime(so: Path) -> list[str]:
    """C++-runtime symbols ``so`` defines itself (empty when it links the shared runtime, and for a file
    that is not ELF: the rpath and abi3 checks name that one)."""
    try:
        defined = defined_dynamic_symbols(so)
    except NotELFError:
        return []
    return [s for s in CXX_RUNTIME_SYMBOLS if s in defined]
