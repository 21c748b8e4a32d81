"""``build.toml`` in, a frozen :class:`Manifest` out.

Parsing is pure apart from reading the manifest and checking that the files it names exist and
stay inside the kernel folder. Every error names the file and key, shows what was found and says
the fix; unknown keys get a did-you-mean.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

from .. import safeload
from ..deps.python import loader_table
from ..errors import ManifestError
from ..sections.reader import Reader
from .convert import (
    framework_of,
    general_fields,
    kernel_section,
    noarch_list,
    pyext,
    schema_of,
    stable_abi,
)
from .doubts import doubts
from .editions import detect
from .editions.base import Edition
from .kernels import kernel_types
from .model import Manifest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _torch_fields(path: Path, data: dict[str, Any], framework: str, general: dict[str, Any]) -> dict[str, Any]:
    """The framework table ([torch], [torch-noarch] or [tvm-ffi]) as fields of :class:`Manifest`."""
    section = framework if framework in data else "torch"
    torch = Reader.checked(path, section, data.get(section, {}))
    noarch, backends = framework == "torch-noarch", general["backends_filter"]
    if not data.get("kernel") and backends and (torch.table.get("src") or torch.table.get("include")):
        key = "src" if torch.table.get("src") else "include"  # before the path checks
        torch.fail(
            f"`{key}` in [{section}] names C++ files, but no [kernel.*] section compiles anything; add the "
            "kernel sections, or drop the key for a pure-Python kernel"
        )
    minver, maxver = torch.version("minver"), torch.version("maxver")
    if minver and maxver and minver > maxver:
        torch.fail(f"`minver` {minver} is above `maxver` {maxver} in [{section}]; no torch version is left")
    if noarch:
        for key in ("minver", "maxver"):
            if key in torch.table and backends:
                torch.fail(
                    f"`{key}` in [torch] does not apply to a pure-Python kernel: its torch-<backend> "
                    "variants load with any torch version; drop it"
                )
    noarch_archs = []
    for backend, t in kernel_types().items() if noarch else ():
        archs = noarch_list(torch, t.noarch_archs_key) if t.noarch_archs_key else ()
        t.check_noarch_archs(torch, archs)
        if archs:
            noarch_archs.append((backend, archs))
    return {
        "torch_src": torch.paths(path.parent, "src"),
        "torch_include": torch.paths(path.parent, "include", must_be_dir=True),
        "torch_minver": minver,
        "torch_maxver": maxver,
        "torch_pyext": pyext(torch),
        "torch_cxx_flags": torch.flags("cxx-flags"),
        "stable_abi": stable_abi(torch, backends) if framework == "torch" else (),
        "noarch_backend_archs": tuple(noarch_archs),
    }


def _check_shape(m: Manifest, has_framework_table: bool) -> None:
    """The kernel sections, the binding and the backends fit together."""
    section = m.framework if m.framework != "torch-noarch" or has_framework_table else "torch"
    if not m.noarch and not m.kernels or m.noarch and not m.backends_filter and not has_framework_table:
        raise ManifestError(
            f"{m.path}: no [kernel.<name>] section; add one with backend and src, e.g. [kernel.{m.name}] "
            f'backend = "cpu", src = ["csrc/{m.name}.cpp"] (or, for a pure-Python kernel, list its '
            'backends in [general], e.g. backends = ["cuda", "cpu"], and leave out the [kernel.*] sections)'
        )
    if m.kernels and not m.torch_src:
        raise ManifestError(
            f'{m.path}: `src` in [{section}] is empty; list the binding, e.g. ["torch-ext/torch_binding.cpp"]'
        )
    if m.noarch and not m.backends_filter:
        raise ManifestError(
            f'{m.path}: a pure-Python kernel lists its backends; add backends = ["cuda", "cpu"] '
            "(or the ones it runs on) to [general]"
        )
    pkg = f"{m.package_dir}/{m.python_name}/__init__.py"
    if not (m.root / pkg).is_file():
        raise ManifestError(f"{m.path}: missing Python package {pkg}; the kernel's wrapper lives there")
    if not m.backends:
        raise ManifestError(f"{m.path}: `backends` in [general] leaves no backend that a [kernel.*] section builds")


def to_model(data: dict[str, Any], edition: Edition, path: Path) -> Manifest:
    """Turn a document that satisfies ``edition``'s schema into the one model, checking meaning."""
    schema = schema_of(edition)
    general = general_fields(path, data, schema)
    framework = framework_of(data, schema)
    sections = data.get("kernel", {})
    if framework == "torch-noarch" and sections:
        first = next(iter(sections))
        raise ManifestError(
            f"{path}: [kernel.{first}] in a pure-Python kernel ([torch-noarch]); compiled kernels "
            "take a [torch] table with the binding in `src`: replace [torch-noarch] with it, or drop "
            "the [kernel.*] sections"
        )
    torch = _torch_fields(path, data, framework, general)
    kernels = tuple(kernel_section(path, k, t, schema) for k, t in sections.items())
    manifest = Manifest(path=path, **general, **torch, kernels=kernels, edition=edition, framework=framework)
    _check_shape(manifest, "torch-noarch" in data)
    _check_python_depends(manifest)
    return dataclasses.replace(manifest, warnings=doubts(manifest))


def loader_python_depends() -> tuple[set[str], dict[str, set[str]]] | None:
    """The installed ``kernels`` loader's allow-list for ``python-depends``: (for every backend, per
    backend); None where ``kernels`` is not installed."""
    table = loader_table()
    if table is None:
        return None
    try:
        return set(table.get("general", {})), {b: set(v) for b, v in table.get("backends", {}).items()}
    except (AttributeError, TypeError):
        return None


def _check_python_depends(manifest: Manifest) -> None:
    allow = loader_python_depends()
    if allow is None:
        return
    general_ok, per_backend = allow
    for backend in manifest.backends:
        wanted = manifest.python_depends_for(backend)
        ok = general_ok | per_backend.get(backend, set())
        refused = [d for d in wanted if d not in ok]
        if refused:
            where = "[general]" if any(d in manifest.python_depends for d in refused) else f"[general.{backend}]"
            raise ManifestError(
                f"{manifest.path}: `python-depends` in {where} names {', '.join(map(repr, refused))}, "
                f"which the kernels loader refuses for backend {backend}; allowed: "
                f"{', '.join(sorted(ok)) or 'none'} (kernels/python_depends.json)"
            )


def parse_manifest(text: str, path: Path) -> Manifest:
    """Parse ``build.toml`` text of any edition the farm reads. ``path`` locates the kernel folder for
    the file checks."""
    if text.startswith("\ufeff"):
        raise ManifestError(
            f"{path}: starts with a UTF-8 byte-order mark, which TOML does not allow; save it without one"
        )
    try:
        data = safeload.loads_toml(text, str(path), ManifestError)
    except tomllib.TOMLDecodeError as e:
        raise ManifestError(f"{path}: TOML syntax error: {e}") from None
    edition, why = detect(data)
    if edition is None:
        raise ManifestError(f"{path}: {why}")
    return to_model(data, edition, path)


def load_manifest(kernel_dir: Path) -> Manifest:
    """Read ``kernel_dir/build.toml``."""
    path = kernel_dir / "build.toml"
    try:
        text = safeload.read_text(path, ManifestError, limit=1 << 20)
    except FileNotFoundError:
        raise ManifestError(f"{path}: not found; a kernel folder needs a build.toml") from None
    except UnicodeDecodeError:
        raise ManifestError(f"{path}: not valid UTF-8 text") from None
    except OSError as e:  # a folder, a dangling link, a link loop, no permission
        raise ManifestError(f"{path}: cannot be read ({e.strerror}); a kernel folder needs a build.toml file") from None
    return parse_manifest(text, path)


def duplicate_name_message(name: str, dirs: list[Path]) -> str:
    """One line for kernel folders whose build.toml files share a ``name`` (their builds, metadata and
    Hub repos would collide)."""
    files = " and ".join(str(d / "build.toml") for d in dirs)
    return (
        f"{files} both name the kernel {name!r}; a kernel's name must be unique in the farm: "
        "rename one ([general] name)"
    )
