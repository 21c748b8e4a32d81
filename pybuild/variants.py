"""The variant matrix: ``variants.json`` in, a sorted list of :class:`Variant` out.

A variant is one (torch version, backend + version, C++ ABI, system) combination. Its name is
exactly what the ``kernels`` loader parses, e.g. ``torch213-cxx11-cpu-x86_64-linux`` or
``torch211-cxx11-cu130-x86_64-linux``; darwin drops the ABI part (``torch212-metal-aarch64-darwin``)
and a pure-Python (noarch) kernel has one variant per backend, ``torch-cuda``, ``torch-cpu``, ...
(loaded by any torch version on any system of that backend).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import Version

from . import backends, safeload
from .errors import VariantsError

CXX_ABIS = ("cxx11", "cxx98")
SYSTEMS = ("x86_64-linux", "aarch64-linux", "aarch64-darwin")
#: torch releases a matrix may name (a new release: add it here once its wheels are out).
KNOWN_TORCH = tuple(f"2.{minor}" for minor in range(0, 16))
EXCLUDE_KEYS = ("torch", "backend", "backend-version", "cxx-abi", "system", "reason")

_FRAMEWORK_RE = r"(?P<framework>torch-stable-abi|torch|tvm-ffi)(?P<major>\d)(?P<minor>\d+)(?:-(?P<abi>cxx11|cxx98))?"
_SYSTEM_RE = r"(?P<system>x86_64-linux|aarch64-linux|aarch64-darwin)"


@dataclass(frozen=True, order=True)
class Variant:
    """One build variant. A noarch variant (pure-Python kernels) has only a backend: its torch,
    backend version, ABI and system are None and its name is ``torch-<backend>``."""

    torch: str | None  # "2.13"; None for noarch
    backend: str  # a registered backend: backends.names() (noarch: backends.noarch_names())
    backend_version: str | None  # "13.0" for CUDA, None for cpu/metal and noarch
    cxx_abi: str | None  # "cxx11"; None on darwin and noarch
    system: str | None  # "x86_64-linux"; None for noarch
    #: built against torch's stable ABI of version ``torch``: loads with that torch and every later one
    stable_abi: bool = False
    #: a tvm-ffi kernel: ``torch`` holds the tvm-ffi version ("0.1") it is built against
    tvm_ffi: bool = False
    #: a stable-ABI variant: the torch release it is compiled with (a matrix torch at least ``torch``
    #: offering its backend version and system); not part of its name or identity
    build_torch: str | None = field(default=None, compare=False)

    @property
    def noarch(self) -> bool:
        return self.torch is None

    @property
    def name(self) -> str:
        if self.torch is None:
            return f"torch-{backends.get(self.backend).facts.noarch_name}"
        major, minor = self.torch.split(".")
        if self.stable_abi:  # torch-stable-abi211-cu130-x86_64-linux: no C++ ABI part
            return f"torch-stable-abi{major}{minor}-{self.backend_tag}-{self.system}"
        if self.tvm_ffi:  # tvm-ffi01-cu130-x86_64-linux
            return f"tvm-ffi{major}{minor}-{self.backend_tag}-{self.system}"
        abi = f"-{self.cxx_abi}" if self.cxx_abi is not None else ""
        return f"torch{major}{minor}{abi}-{self.backend_tag}-{self.system}"

    @property
    def backend_tag(self) -> str:
        """``cpu``, ``cu130``, ``rocm71``, ``metal``: the backend part of the name."""
        return backends.get(self.backend).tag(self.backend_version)

    @property
    def torch_tuple(self) -> tuple[int, int]:
        if self.torch is None:
            raise ValueError(f"{self.name} is a noarch variant: it has no torch version")
        major, minor = Version(self.torch).release[:2]
        return major, minor

    def __str__(self) -> str:
        return self.name


def noarch_variant(backend: str) -> Variant:
    """The variant ``torch-<backend>`` of a pure-Python kernel."""
    return Variant(None, backend, None, None, None)


#: The tvm-ffi release line tvm-ffi kernels are built against (the loader wants the installed one's
#: major.minor; the `kernels` 0.17 line works with apache-tvm-ffi 0.1).
TVM_FFI_VERSION = "0.1"


def tvm_ffi_variant(variant: Variant, version: str = TVM_FFI_VERSION) -> Variant:
    """The tvm-ffi variant of ``variant``'s backend and system (torch plays no part in its name)."""
    return Variant(version, variant.backend, variant.backend_version, None, variant.system, tvm_ffi=True)


def stable_abi_variant(variant: Variant, torch: str) -> Variant:
    """The stable-ABI variant (built against torch ``torch``'s stable ABI) of ``variant``'s backend and
    system, compiled with ``variant``'s torch."""
    return Variant(
        torch,
        variant.backend,
        variant.backend_version,
        None,
        variant.system,
        stable_abi=True,
        build_torch=variant.torch,
    )


def _sort_key(v: Variant) -> tuple[Any, ...]:
    return (
        (1, ()) if v.noarch else (0, v.torch_tuple),
        backends.rank(v.backend),
        Version(v.backend_version).release if v.backend_version else (),
        v.cxx_abi or "",
        v.system or "",
    )


def parse_variant_name(name: str) -> Variant:
    """Parse ``torch213-cxx11-cpu-x86_64-linux`` (or a noarch ``torch-cuda``) back into a :class:`Variant`."""
    if name.startswith("torch-") and (noarch := backends.by_noarch_name(name[len("torch-") :])) is not None:
        return noarch_variant(noarch.name)
    compiled = [b for b in backends.all_backends() if b.facts.compiled]
    tags = "|".join(b.tag_pattern() for b in compiled)
    m = re.fullmatch(f"{_FRAMEWORK_RE}-(?P<backend>{tags})-{_SYSTEM_RE}", name, re.ASCII)
    if not m:
        msg = (
            f"variant name {name!r} does not parse; expected e.g. "
            "'torch213-cxx11-cpu-x86_64-linux', 'torch211-cxx11-cu130-x86_64-linux' or (pure Python) 'torch-cuda'"
        )
        raise VariantsError(msg)
    tag = m["backend"]
    backend = next(b for b in compiled if re.fullmatch(b.tag_pattern(), tag, re.ASCII))
    return Variant(
        torch=f"{m['major']}.{m['minor']}",
        backend=backend.name,
        backend_version=backend.version_from_tag(tag),
        cxx_abi=m["abi"],
        system=m["system"],
        stable_abi=m["framework"] == "torch-stable-abi",
        tvm_ffi=m["framework"] == "tvm-ffi",
    )


@dataclass(frozen=True)
class Matrix:
    """The expanded matrix and where it came from."""

    path: Path
    variants: tuple[Variant, ...]
    excluded: tuple[tuple[Variant, str], ...]  # (variant, reason)

    def names(self) -> list[str]:
        return [v.name for v in self.variants]


def _fail(path: Path, where: str, msg: str) -> VariantsError:
    return VariantsError(f"{path}: {where}: {msg}")


def _str_list(path: Path, where: str, value: Any, pattern: str, example: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise _fail(path, where, f"must be a list of strings, e.g. {example}; found {value!r}")
    for x in value:
        if not re.fullmatch(pattern, x, re.ASCII):
            raise _fail(path, where, f"invalid entry {x!r}, e.g. {example}")
    twice = next((x for i, x in enumerate(value) if x in value[:i]), None)
    if twice is not None:
        raise _fail(path, where, f"lists {json.dumps(twice)} twice; list each once")
    return value


def expand_matrix(data: Any, path: Path = Path("variants.json")) -> Matrix:
    """Expand parsed ``variants.json`` data into the sorted variant list. Pure."""
    torch_entries, abis, systems, excludes = _check_top_level(data, path)
    variants: set[Variant] = set()
    excluded: dict[Variant, str] = {}
    seen_torch: set[str] = set()
    for i, entry in enumerate(torch_entries):
        for v in _entry_variants(path, f"torch[{i}]", entry, seen_torch, abis, systems):
            reason = _excluded_by(v, excludes)
            if reason is None:
                variants.add(v)
            else:
                excluded[v] = reason
    expanded = [*variants, *excluded]
    for i, ex in enumerate(excludes):  # a typo ("cpuu", "13") would otherwise exclude nothing, silently
        if not any(_matches(v, ex) for v in expanded):
            keys = json.dumps({k: x for k, x in ex.items() if k != "reason"}, separators=(",", ":"), sort_keys=True)
            raise _fail(path, f"exclude[{i}]", f"matches no variant ({keys}); fix its values or remove it")
    if not variants:
        raise _fail(
            path,
            "top level",
            "expands to no variant (each torch entry's backends on `systems`, minus `exclude`); nothing would be built",
        )
    return Matrix(
        path=path,
        variants=tuple(sorted(variants, key=_sort_key)),
        excluded=tuple(sorted(excluded.items(), key=lambda kv: _sort_key(kv[0]))),
    )


def _check_top_level(data: Any, path: Path) -> tuple[list[Any], list[str], list[str], list[dict[str, str]]]:
    """The torch entries, ABIs, systems and excludes of ``data``, each checked but the torch entries."""
    if not isinstance(data, dict):
        raise _fail(path, "top level", "must be a JSON object with keys torch, cxx-abi, systems")
    unknown = set(data) - {"schema", "torch", "cxx-abi", "systems", "exclude", "$comment"}
    if unknown:
        raise _fail(path, "top level", f"unknown key(s) {sorted(unknown)}; allowed: torch, cxx-abi, systems, exclude")
    torch_entries = data.get("torch")
    if not isinstance(torch_entries, list) or not torch_entries:
        raise _fail(path, "torch", 'must be a non-empty list like [{"version": "2.13", "cuda": ["13.0"], "cpu": true}]')
    if "schema" in data and data["schema"] != 1:
        schema = json.dumps(data["schema"])
        raise _fail(path, "schema", f"is {schema}; this pybuild reads schema 1 (or leave the key out)")
    abis = _str_list(path, "cxx-abi", data.get("cxx-abi"), "cxx11|cxx98", '["cxx11"]')
    systems = _str_list(path, "systems", data.get("systems"), "|".join(SYSTEMS), '["x86_64-linux"]')
    for key, value, example in (("cxx-abi", abis, '["cxx11"]'), ("systems", systems, '["x86_64-linux"]')):
        if not value:
            raise _fail(path, key, f"is empty, which leaves no variant; list at least one, e.g. {example}")
    return torch_entries, abis, systems, _check_excludes(data.get("exclude", []), path)


def _check_excludes(excludes: Any, path: Path) -> list[dict[str, str]]:
    if not isinstance(excludes, list):
        raise _fail(path, "exclude", "must be a list of objects")
    for i, ex in enumerate(excludes):
        if not isinstance(ex, dict) or not ex or set(ex) - set(EXCLUDE_KEYS):
            raise _fail(path, f"exclude[{i}]", f"must be an object with keys from {list(EXCLUDE_KEYS)}; found {ex!r}")
        if not set(ex) - {"reason"}:
            raise _fail(
                path,
                f"exclude[{i}]",
                "has only a reason, so it would exclude every variant; add the keys "
                'it matches, e.g. {"backend": "rocm", "system": "aarch64-linux"}',
            )
        bad = {k: v for k, v in ex.items() if not isinstance(v, str)}
        if bad:
            found = json.dumps(bad, separators=(",", ":"), sort_keys=True)
            raise _fail(path, f"exclude[{i}]", f'values must be strings like "2.13"; found {found}')
    return excludes


def _entry_variants(
    path: Path, where: str, entry: Any, seen_torch: set[str], abis: list[str], systems: list[str]
) -> list[Variant]:
    """Every variant of one ``torch`` entry (before excludes), its keys checked."""
    if not isinstance(entry, dict):
        raise _fail(path, where, "must be an object")
    version = entry.get("version")
    if not isinstance(version, str) or not re.fullmatch(r"\d\.\d+", version, re.ASCII):
        raise _fail(path, f"{where}.version", f'must be "major.minor" like "2.13"; found {version!r}')
    if version not in KNOWN_TORCH:
        raise _fail(
            path,
            f"{where}.version",
            f"unknown torch {version}; known: {', '.join(KNOWN_TORCH)} (a newer "
            "release: add it to KNOWN_TORCH in pybuild/variants.py)",
        )
    if version in seen_torch:
        raise _fail(path, f"{where}.version", f"torch {version} is listed twice")
    seen_torch.add(version)
    matrix_backends = backends.names()
    unknown = set(entry) - {"version", *matrix_backends}
    if unknown:
        raise _fail(path, where, f"unknown key(s) {sorted(unknown)}; allowed: version, {', '.join(matrix_backends)}")
    out = []
    for name in matrix_backends:
        if name not in entry:
            continue
        backend = backends.get(name)
        for bv in _backend_versions(path, f"{where}.{name}", backend, entry[name]):
            for system in systems:
                if not backend.runs_on(system):
                    continue  # metal exists only on darwin, darwin has only metal
                for abi in [None] if system.endswith("-darwin") else abis:
                    out.append(Variant(version, name, bv, abi, system))
    return out


def _backend_versions(path: Path, where: str, backend: backends.BackendType, value: Any) -> list[str | None]:
    """A torch entry's value for ``backend``: its toolkit versions, or ``[None]`` / ``[]`` for true / false."""
    if not backend.facts.versioned:
        if not isinstance(value, bool):
            raise _fail(path, where, f"must be true or false; found {value!r}")
        return [None] if value else []
    versions = _str_list(path, where, value, r"\d+\.\d", '["12.8", "13.0"]')
    known = backend.known_versions
    unknown = [v for v in versions if known and v not in known]
    if unknown:
        raise _fail(path, where, f"unknown {backend.facts.label} {', '.join(unknown)}; known: {', '.join(known)}")
    for v in versions:
        err = backends.tag_error(backend, v)
        if err:
            raise _fail(
                path,
                where,
                f"{err}; list versions of at least {backend.facts.tag_digits} digits without "
                "the dot, or lower the backend's tag-digits",
            )
    return list(versions)


def _matches(v: Variant, ex: dict[str, str]) -> bool:
    fields = {
        "torch": v.torch,
        "backend": v.backend,
        "backend-version": v.backend_version,
        "cxx-abi": v.cxx_abi,
        "system": v.system,
    }
    return all(fields[k] == val for k, val in ex.items() if k != "reason")


def _excluded_by(v: Variant, excludes: list[dict[str, str]]) -> str | None:
    for ex in excludes:
        if _matches(v, ex):
            return str(ex.get("reason", "excluded"))
    return None


def find_variants_file(start: Path | None = None) -> Path:
    """The nearest ``variants.json`` at or above ``start`` (default: the working directory)."""
    here = (start or Path.cwd()).resolve()
    for d in [here, *here.parents]:
        candidate = d / "variants.json"
        if candidate.is_file():
            return candidate
    packaged = Path(__file__).resolve().parent.parent / "variants.json"
    if packaged.is_file():
        return packaged
    msg = f"no variants.json found at or above {here}; run from the farm's root or pass --variants FILE"
    raise VariantsError(msg)


def load_matrix(path: Path) -> Matrix:
    """Read and expand ``variants.json``."""
    try:
        data = safeload.load_json(path, VariantsError, limit=4 << 20)
    except FileNotFoundError:
        raise VariantsError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise VariantsError(f"{path}: is a folder; pass the variants.json file itself") from None
    except UnicodeDecodeError:
        raise VariantsError(f"{path}: not UTF-8 text; variants.json must be a UTF-8 JSON file") from None
    except json.JSONDecodeError as e:
        raise VariantsError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
    except OSError as e:
        raise VariantsError(f"{path}: cannot be read ({e.strerror})") from None
    return expand_matrix(data, path)
