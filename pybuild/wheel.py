"""One wheel per built variant, for users who install kernels with pip instead of the ``kernels`` loader.

A variant ``build/torch213-cxx11-cpu-x86_64-linux/img2gray/`` becomes
``img2gray-1.1.2+torch213cpucxx11-cp39-abi3-linux_x86_64.whl``: the package as built, a
``Requires-Dist: torch==2.13.*`` (the extension binds to that torch's C++ ABI), and a platform tag
that tells the truth: ``manylinux_2_28_<arch>`` only when ``kernel-abi-check`` says the extensions
fit it, else ``linux_<arch>``. ``packaging`` validates and writes the core metadata (name, version,
requirements) and the tag; ``wheel.wheelfile.WheelFile`` writes the archive and its RECORD (sha256 of
every file, PEP 427). What no library does is kept here: sorted entries, fixed timestamps
(``SOURCE_DATE_EPOCH`` or 1980-01-01) and modes for reproducible bytes, and the file moved into
place only when complete.
"""

from __future__ import annotations

import ast
import json
import os
import re
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from packaging.metadata import ExceptionGroup, InvalidMetadata, Metadata, RawMetadata
from packaging.tags import Tag
from packaging.utils import canonicalize_name
from wheel.wheelfile import WheelFile

from . import __version__, safeload
from .check import MACOS, MANYLINUX, PYTHON_ABI
from .deps.python import python_requirements
from .digest import digest_mismatches
from .errors import PybuildError, UsageError
from .metadata import METADATA
from .variants import Variant, parse_variant_name

ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class WheelSpec:
    """Everything that names and describes one wheel."""

    name: str  # distribution name, e.g. "img2gray" or "rms-norm"
    version: str  # full version with local label, e.g. "1.1.2+torch213cpucxx11"
    python_tag: str
    abi_tag: str
    platform_tag: str
    requires: tuple[str, ...]
    summary: str
    license: str

    @property
    def dist_name(self) -> str:
        """The name as it appears in file names (PEP 491 escaping)."""
        return canonicalize_name(self.name).replace("-", "_")

    @property
    def tag(self) -> str:
        return str(Tag(self.python_tag, self.abi_tag, self.platform_tag))

    @property
    def filename(self) -> str:
        return f"{self.dist_name}-{self.version}-{self.tag}.whl"

    @property
    def dist_info(self) -> str:
        return f"{self.dist_name}-{self.version}.dist-info"


def local_label(variant: Variant) -> str:
    """``torch213cpucxx11``, ``torch211cu130cxx11``, ``torch212metal`` (the guide's ``torch27cu128cxx11``);
    ``torchcuda`` for a pure-Python variant."""
    if variant.torch is None:
        return f"torch{variant.backend}"
    major, minor = variant.torch.split(".")
    if variant.stable_abi:
        return f"torchstableabi{major}{minor}{variant.backend_tag}"
    if variant.tvm_ffi:
        return f"tvmffi{major}{minor}{variant.backend_tag}"
    return f"torch{major}{minor}{variant.backend_tag}{variant.cxx_abi or ''}"


def platform_tag(variant: Variant, extensions: list[Path]) -> str:
    """The most specific platform tag the extensions truthfully satisfy."""
    if not extensions:
        return "any"
    if variant.system is None:
        raise PybuildError(
            f"{extensions[0].parent}: compiled files in the pure-Python variant {variant.name}; "
            "remove them (`python -m pybuild check` names them)"
        )
    arch = variant.system.split("-")[0]
    import kernel_abi_check as kac

    if variant.system.endswith("-darwin"):
        if any(kac.ObjectFile(p).check_macos(MACOS) for p in extensions):
            raise PybuildError(f"{extensions[0].parent}: needs a macOS newer than {MACOS}; no truthful wheel tag known")
        mac_arch = "arm64" if arch == "aarch64" else arch
        return f"macosx_{MACOS.replace('.', '_')}_{mac_arch}"
    ok = all(not kac.ObjectFile(p).check_manylinux(MANYLINUX) for p in extensions)
    return f"{MANYLINUX}_{arch}" if ok else f"linux_{arch}"


def _extensions(pkg: Path) -> list[Path]:
    return [p for p in safeload.files(pkg, PybuildError) if p.suffix in (".so", ".dylib", ".pyd")]


def _summary(pkg: Path) -> str:
    try:
        doc = ast.get_docstring(ast.parse((pkg / "__init__.py").read_text())) or ""
    except (OSError, SyntaxError):
        return ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def _package_dir(variant_dir: Path, meta: dict) -> Path:
    pkg = variant_dir / str(meta.get("name", "")).replace("-", "_")
    if (pkg / "__init__.py").is_file():
        return pkg
    if (variant_dir / "__init__.py").is_file():
        return variant_dir  # flat layout: the variant folder is the package
    raise PybuildError(f"{variant_dir}: no {pkg.name}/__init__.py; not a built variant")


def wheel_spec(variant_dir: Path, version: str) -> tuple[WheelSpec, Path]:
    """The spec of ``variant_dir``'s wheel and the package folder it packs."""
    if not re.fullmatch(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)", version, re.ASCII):
        raise UsageError(f"--version {version!r}: expected MAJOR.MINOR.PATCH without leading zeros, e.g. 1.0.0")
    path = variant_dir / METADATA
    if not path.exists():
        raise PybuildError(
            f"{variant_dir}: not a built variant (no {METADATA}); remove the folder, or rebuild "
            "the variant it was (python -m pybuild build)"
        )
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise PybuildError(f"{path}: unreadable ({e}); rebuild the variant") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        raise PybuildError(f'{path}: not a kernel metadata object (no "name"); rebuild the variant')
    depends_list = meta.get("python-depends", [])
    if not isinstance(depends_list, list) or not all(isinstance(d, str) for d in depends_list):
        raise PybuildError(
            f'{path}: "python-depends" must be a list of names; found {depends_list!r}; rebuild the variant'
        )
    digest = meta.get("digest")
    files = digest.get("files") if isinstance(digest, dict) else None
    if not isinstance(files, dict):
        raise PybuildError(f"{path}: no digest of the variant's files; rebuild the variant")
    problems = digest_mismatches(variant_dir, files)
    if problems:
        raise PybuildError(
            f"{variant_dir}: files differ from metadata.json's digest ({'; '.join(problems[:3])}); "
            "rebuild the variant or restore its files"
        )
    try:
        variant = parse_variant_name(variant_dir.name)
    except PybuildError as e:
        raise type(e)(f"{variant_dir}: {e}") from None
    pkg = _package_dir(variant_dir, meta)
    exts = _extensions(pkg)
    depends = python_requirements(list(depends_list), variant.backend)
    # a stable-ABI build loads with its torch and every later one; any other binds to its torch minor
    torch_req = (
        "torch"
        if variant.noarch
        else f"torch>={variant.torch}"
        if variant.stable_abi
        else f"apache-tvm-ffi=={variant.torch}.*"
        if variant.tvm_ffi
        else f"torch=={variant.torch}.*"
    )
    requires = [torch_req, *depends]
    spec = WheelSpec(
        name=str(meta["name"]),
        version=f"{version}+{local_label(variant)}",
        python_tag=f"cp{PYTHON_ABI.replace('.', '')}" if exts else "py3",
        abi_tag="abi3" if exts else "none",
        platform_tag=platform_tag(variant, exts),
        requires=tuple(requires),
        summary=_summary(pkg),
        license=str(meta.get("license") or ""),
    )
    return spec, pkg


#: Core metadata field -> where its value comes from, to name in an error.
_FIELD_SOURCE = {
    "requires-dist": f'{METADATA} key "python-depends"',
    "license": f'{METADATA} key "license"',
    "name": f'{METADATA} key "name"',
    "summary": "the package's docstring (first line)",
    "version": "--version",
}


def _metadata_error(spec: WheelSpec, variant_dir: Path, error: Exception) -> PybuildError:
    """One line naming every problem ``packaging`` found, and what to fix for each."""
    errors = list(error.exceptions) if isinstance(error, ExceptionGroup) else [error]
    parts = []
    for e in errors:
        field = getattr(e, "field", "")
        fix = _FIELD_SOURCE.get(field, f"field {field}")
        parts.append(f"{str(e).splitlines()[0]}: fix {fix}")
    return PybuildError(f"{variant_dir}: no valid wheel metadata for {spec.name} {spec.version}: {'; '.join(parts)}")


def _metadata_text(spec: WheelSpec, variant_dir: Path) -> bytes:
    """Core metadata 2.1, validated by ``packaging`` (a bad name, version or requirement is refused)."""
    raw: RawMetadata = {
        "metadata_version": "2.1",
        "name": spec.name,
        "version": spec.version,
        "requires_python": f">={PYTHON_ABI}",
        "requires_dist": list(spec.requires),
    }
    if spec.summary:
        raw["summary"] = spec.summary
    if spec.license:
        raw["license"] = spec.license
    try:
        return bytes(Metadata.from_raw(raw).as_rfc822())
    except (InvalidMetadata, ExceptionGroup) as e:
        raise _metadata_error(spec, variant_dir, e) from None


def _wheel_text(spec: WheelSpec) -> bytes:
    return (
        f"Wheel-Version: 1.0\nGenerator: pybuild {__version__}\nRoot-Is-Purelib: "
        f"{'true' if spec.abi_tag == 'none' else 'false'}\nTag: {spec.tag}\n"
    ).encode()


def _zip_time() -> tuple[int, int, int, int, int, int]:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.isdigit():
        t = time.gmtime(max(int(epoch), 315532800))  # zip cannot go before 1980
        return (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec)
    return ZIP_EPOCH


def wheel_entries(spec: WheelSpec, pkg: Path, variant_dir: Path) -> list[tuple[str, bytes, bool]]:
    """``(archive path, bytes, executable)`` of every file but RECORD (which the writer adds last)."""
    top = re.sub(r"[-.]+", "_", spec.name)
    entries: list[tuple[str, bytes, bool]] = []
    for p in safeload.files(pkg, PybuildError):  # a symlink or special file is refused by name
        rel = p.relative_to(pkg)
        if (
            "__pycache__" in rel.parts
            or p.suffix == ".pyc"
            or (pkg == variant_dir and rel.as_posix() in (METADATA, f"{METADATA}.sigstore"))
        ):
            continue
        entries.append((f"{top}/{rel.as_posix()}", p.read_bytes(), p.suffix in (".so", ".dylib")))
    di = spec.dist_info
    entries.append((f"{di}/METADATA", _metadata_text(spec, variant_dir), False))
    entries.append((f"{di}/WHEEL", _wheel_text(spec), False))
    entries.append((f"{di}/kernel-metadata.json", (variant_dir / METADATA).read_bytes(), False))
    return entries


class _ReproducibleWheel(WheelFile):
    """A ``WheelFile`` whose every entry, RECORD included, has the same timestamp and a fixed mode."""

    def __init__(self, file: Path, date: tuple[int, int, int, int, int, int]) -> None:
        self.date = date
        super().__init__(file, "w")

    def entry(self, path: str, executable: bool) -> zipfile.ZipInfo:
        info = zipfile.ZipInfo(path, date_time=self.date)
        info.external_attr = (0o100755 if executable else 0o100644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        info.create_system = 3  # unix, so the modes above are honoured
        return info

    def writestr(
        self, zinfo_or_arcname: str | zipfile.ZipInfo, data: bytes | str, compress_type: int | None = None
    ) -> None:
        if isinstance(zinfo_or_arcname, str):  # RECORD, written on close
            zinfo_or_arcname = self.entry(zinfo_or_arcname, False)
        super().writestr(zinfo_or_arcname, data, compress_type)


def build_wheel(variant_dir: Path, version: str, out_dir: Path) -> Path:
    """Write the wheel of one built variant into ``out_dir``; returns its path."""
    spec, pkg = wheel_spec(variant_dir, version)
    entries = wheel_entries(spec, pkg, variant_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    final = out_dir / spec.filename
    # WheelFile reads the name and version from the file name, so the temporary file has the final name
    tmp_dir = Path(tempfile.mkdtemp(prefix=f".{spec.filename}.", dir=out_dir))
    try:
        with _ReproducibleWheel(tmp_dir / spec.filename, _zip_time()) as whl:
            for path, data, executable in entries:
                whl.writestr(whl.entry(path, executable), data)
        os.replace(tmp_dir / spec.filename, final)
    finally:
        (tmp_dir / spec.filename).unlink(missing_ok=True)
        tmp_dir.rmdir()
    return final
