"""``python -m pybuild new``: start a kernel folder whose example op builds and passes its tests as it is.

The files come from ``templates/new/``: a CUDA kernel that includes no torch header, its torch-facing
launcher, a CPU implementation of the same op, the binding, a Python wrapper with input checks and a
fake implementation, and tests (plain-torch reference, opcheck, torch.compile); with ``noarch``, a
pure-Python custom op (``templates/new/noarch/``) and its tests. The folder appears
in one step (written beside it, then renamed), so a failure leaves nothing behind.
"""

from __future__ import annotations

import builtins
import errno
import keyword
import os
import re
import shutil
import tempfile
from pathlib import Path

import jinja2

from .errors import PybuildError, UsageError, VariantsError
from .manifest import NAME_RULE, is_kernel_name, load_manifest, parse_manifest
from .manifest.lock import LOCK_FILE, write_lock
from .variants import Matrix, find_variants_file, load_matrix

TEMPLATES = Path(__file__).resolve().parent / "templates" / "new"

#: template under TEMPLATES -> file in the kernel folder ({py}: the kernel's Python name)
FILES = {
    "build.toml.j2": "build.toml",
    "csrc/kernel.h.j2": "csrc/{py}.h",
    "csrc/kernel_args.h.j2": "csrc/{py}_args.h",
    "csrc/kernel.cu.j2": "csrc/{py}.cu",
    "csrc/kernel_cuda.cpp.j2": "csrc/{py}_cuda.cpp",
    "csrc/kernel_cpu.cpp.j2": "csrc/{py}_cpu.cpp",
    "torch-ext/torch_binding.cpp.j2": "torch-ext/torch_binding.cpp",
    "torch-ext/torch_binding.h.j2": "torch-ext/torch_binding.h",
    "torch-ext/package/__init__.py.j2": "torch-ext/{py}/__init__.py",
    "tests/test_kernel.py.j2": "tests/test_{py}.py",
    "tests/conftest.py.j2": "tests/conftest.py",
}
#: the same for a pure-Python (noarch) kernel
NOARCH_FILES = {
    "noarch/build.toml.j2": "build.toml",
    "noarch/__init__.py.j2": "torch-ext/{py}/__init__.py",
    "noarch/test_kernel.py.j2": "tests/test_{py}.py",
    "tests/conftest.py.j2": "tests/conftest.py",
}

#: Names the generated C++ or Python could not use as a namespace, function or package.
_CXX_KEYWORDS = frozenset(
    """
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t
    class compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield
    decltype default delete do double dynamic_cast else enum explicit export extern false float for friend
    goto if inline int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private
    protected public register reinterpret_cast requires return short signed sizeof static static_assert
    static_cast struct switch template this thread_local throw true try typedef typeid typename union
    unsigned using virtual void volatile wchar_t while xor xor_eq""".split()  # noqa: SIM905 (a word list reads best as text)
)
# Namespaces the generated C++ lives beside, and `name`, which every torch.ops namespace already has.
_TAKEN = frozenset({"at", "c10", "caffe2", "std", "torch", "ops", "cuda", "kernels", "name"})
#: The longest kernel name `new` accepts (file names and C++ symbols are built from it).
MAX_NAME = 64

_LICENSE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+\-]*", re.ASCII)


def check_name(name: str) -> str:
    """The kernel's Python name, or UsageError naming the rule ``name`` breaks."""
    if not is_kernel_name(name) or "--" in name:
        raise UsageError(f"new: kernel name {name!r}: use {NAME_RULE}, and no '--' (e.g. my-op)")
    if len(name) > MAX_NAME:
        raise UsageError(f"new: kernel name {name[:20]}... is {len(name)} characters long; use at most {MAX_NAME}")
    py = name.replace("-", "_")
    if keyword.iskeyword(py) or py in _CXX_KEYWORDS or py in _TAKEN or hasattr(builtins, py):
        raise UsageError(
            f"new: kernel name {name!r} is a reserved word or built-in name of Python, C++ or torch, "
            f"which the generated code cannot use; pick another (e.g. {name}-op)"
        )
    return py


def _spdx_expression(text: str) -> bool:
    """An SPDX license identifier or expression: ids joined by AND/OR/WITH, with parentheses."""
    if not re.fullmatch(r"[A-Za-z0-9.+\-()]+( [A-Za-z0-9.+\-()]+)*", text, re.ASCII):
        return False
    expect_id, depth = True, 0
    for token in re.findall(r"[()]|[^() ]+", text):
        if token == "(" and expect_id:
            depth += 1
        elif token == ")" and not expect_id and depth > 0:
            depth -= 1
        elif token in ("AND", "OR", "WITH") and not expect_id:
            expect_id = True
        elif _LICENSE_ID.fullmatch(token) and expect_id:
            expect_id = False
        else:
            return False
    return not expect_id and depth == 0


def check_license(license_: str) -> None:
    if not _spdx_expression(license_):
        raise UsageError(
            f"new: --license {license_!r}: give an SPDX identifier or expression, e.g. Apache-2.0 or MIT OR Apache-2.0"
        )


def render(name: str, license_: str, noarch: bool = False) -> dict[str, str]:
    """Every file of the new kernel folder, relative path -> text."""
    py = check_name(name)
    check_license(license_)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined, keep_trailing_newline=True
    )
    return {
        rel.format(py=py): env.get_template(tpl).render(name=name, py=py, license=license_)
        for tpl, rel in (NOARCH_FILES if noarch else FILES).items()
    }


def kernel_named(kernels_dir: Path, name: str) -> Path | None:
    """The folder under ``kernels_dir`` whose build.toml names the kernel ``name``, if any (broken
    build.toml files are skipped: `build` reports those)."""
    for toml in sorted(kernels_dir.glob("*/build.toml")):
        try:
            if load_manifest(toml.parent).name == name:
                return toml.parent
        except (PybuildError, OSError):
            continue
    return None


def _matrix_for(dest: Path, variants: Path | None) -> Matrix | None:
    """``variants``, else the nearest variants.json above ``dest``; None where there is none (pybuild
    installed, used outside a farm): the kernel then gets no lock yet."""
    if variants is not None:
        return load_matrix(variants)
    try:
        return load_matrix(find_variants_file(dest.parent))
    except VariantsError:
        return None


def create_kernel(
    dest: Path, name: str, license_: str = "Apache-2.0", noarch: bool = False, variants: Path | None = None
) -> list[str]:
    """Write the kernel folder ``dest`` in one step; return its files (relative paths, sorted). Its
    variants.lock.json is written for ``variants`` or the nearest variants.json, if there is one.

    Missing parent folders are created, and removed again if anything fails."""
    files = render(name, license_, noarch)
    matrix = _matrix_for(dest, variants)
    if os.path.lexists(dest):
        raise UsageError(f"new: {dest} already exists; choose another name, pass --dir, or remove it")
    missing = [d for d in [dest.parent, *dest.parent.parents] if not os.path.lexists(d)]
    existing = next(d for d in [dest.parent, *dest.parent.parents] if os.path.lexists(d))
    if not existing.is_dir():
        raise UsageError(f"new: {existing} is a file, so {dest} cannot be created; pass a --dir inside a folder")
    other = kernel_named(dest.parent, name)
    if other is not None:
        raise UsageError(
            f"new: {other / 'build.toml'} already names the kernel {name!r}, and a kernel's name must be "
            "unique in the farm; pick another name"
        )
    staging = None
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.new-", dir=dest.parent))
        for rel, text in files.items():
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            (staging / rel).write_text(text, encoding="utf-8")
        parse_manifest(files["build.toml"], staging / "build.toml")  # the farm reads it as written
        if matrix is not None:
            write_lock(staging, matrix)  # the variants Nix builds
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(staging, 0o777 & ~umask)  # mkdtemp made it private
        os.rename(staging, dest)
    except BaseException as e:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        if missing:
            shutil.rmtree(missing[-1], ignore_errors=True)  # the folders this call created
        if isinstance(e, OSError):
            hint = {errno.ENAMETOOLONG: "use a shorter --dir", errno.ENOSPC: "free some disk space"}.get(
                e.errno or 0, "pass a --dir in a folder you can write to"
            )
            raise PybuildError(f"new: cannot create {dest}: {e.strerror or e}; {hint}") from e
        raise
    return sorted([*files, *([LOCK_FILE] if matrix is not None else [])])
