"""The compliance gate: is every built variant of a kernel fit to publish?

For each ``build/<variant>/`` it checks, in order:

``metadata``        metadata.json parses the way the ``kernels`` loader parses it (its own parser where
                    installed), the variant name parses, the package is where the loader looks, the
                    recorded backend matches the name;
``digest``          every file matches the sha256 digest recorded in metadata.json;
``abi3``            no extension references a Python symbol outside the stable ABI (``kernel-abi-check``)
                    or links libpython;
``manylinux_2_28``  glibc/libstdc++ symbol versions fit manylinux_2_28 (``kernel-abi-check``);
                    ``macos`` on darwin;
``rpath``           no RPATH/RUNPATH into the machine that built it;
``sources``         it was built from the kernel's current sources (when metadata.json records them);
``import``          the package imports in a fresh interpreter, exactly as the loader imports it, where
                    this machine can (same torch major.minor and system; CPU, or CUDA with a GPU).

Per kernel, ``variants`` checks that every variant the matrix requires for the kernel's backends is
present. ``check_kernel`` returns a :class:`CheckReport`; the CLI prints it as a table.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from . import safeload
from .build import other_kind_variants
from .digest import digest_mismatches, source_hash
from .elf import NotELFError, bad_rpaths, dynamic_entries, embedded_cxx_runtime
from .errors import InputLimitError, PybuildError, ToolchainError, UsageError, VariantsError
from .manifest import NAME_RE, Manifest, load_manifest, loader_python_depends
from .metadata import METADATA
from .variants import Matrix, Variant, parse_variant_name

Status = Literal["pass", "fail", "skip"]

#: The oldest CPython the ``abi3`` extensions must load in (wheel tag ``cp39-abi3``).
PYTHON_ABI = "3.9"
MANYLINUX = "manylinux_2_28"
MACOS = "15.0"
IMPORT_TIMEOUT_S = 180

NOT_MANYLINUX_HINT = (
    "a host build (this machine's glibc is newer) is for development only; build release variants "
    "in a manylinux_2_28 container, or with the Nix toolchain given an old-glibc stdenv overlay "
    "(`nix build .#{kernel} -L`, then `python -m pybuild collect result`; see docs/nix.md)"
)


@dataclass(frozen=True)
class CheckResult:
    """One row of the report: one check of one variant (or of the whole kernel)."""

    variant: str  # a variant name, or "*" for kernel-wide checks
    check: str
    status: Status
    detail: str = ""
    data: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class CheckReport:
    kernel: str
    build_dir: Path
    results: tuple[CheckResult, ...]

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "fail"]

    @property
    def variants(self) -> list[str]:
        return sorted({r.variant for r in self.results if r.variant != "*"})

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "build-dir": str(self.build_dir),
            "ok": self.ok,
            "results": [
                {"variant": r.variant, "check": r.check, "status": r.status, "detail": r.detail, **r.data}
                for r in self.results
            ],
        }


# --------------------------------------------------------------------------------------------
# Locating what to check


@dataclass(frozen=True)
class Target:
    """What ``check`` was pointed at: the build folder, and the kernel's manifest when there is one."""

    build_dir: Path
    manifest: Manifest | None
    variant_dirs: tuple[Path, ...]

    @property
    def kernel(self) -> str:
        if self.manifest is not None:
            return self.manifest.name
        return self.build_dir.parent.name if self.build_dir.name == "build" else self.build_dir.name


def _variant_dirs(build_dir: Path) -> tuple[Path, ...]:
    if not build_dir.is_dir():
        return ()
    return tuple(sorted(p for p in build_dir.iterdir() if p.is_dir() and not p.name.startswith(".")))


def find_target(path: Path) -> Target:
    """Accept a kernel folder (with build.toml), its ``build/`` folder, or one variant folder."""
    if os.path.lexists(path / "build.toml") and not (path / "build.toml").is_dir():  # load_manifest names a FIFO
        return Target(path / "build", load_manifest(path), _variant_dirs(path / "build"))
    if (path / METADATA).is_file():  # a single variant folder
        kernel_root = path.parent.parent
        manifest = load_manifest(kernel_root) if (kernel_root / "build.toml").is_file() else None
        return Target(path.parent, manifest, (path,))
    if path.is_dir() and any((p / METADATA).is_file() for p in _variant_dirs(path)):
        manifest = load_manifest(path.parent) if (path.parent / "build.toml").is_file() else None
        return Target(path, manifest, _variant_dirs(path))
    if path.is_dir() and path.name == "build" and (path.parent / "build.toml").is_file():
        return Target(path, load_manifest(path.parent), ())
    msg = (f"{path}: neither a kernel folder (build.toml), a build folder (build/<variant>/metadata.json) "
           "nor a variant folder (metadata.json); pass e.g. kernels/img2gray")
    raise UsageError(msg)


# --------------------------------------------------------------------------------------------
# Per-variant checks


@dataclass
class _Variant:
    """What the checks of one variant share."""

    path: Path
    variant: Variant | None = None
    metadata: dict[str, Any] | None = None
    kernel: str = ""

    @property
    def name(self) -> str:
        return self.path.name

    def extensions(self) -> list[Path]:
        return [p for p in safeload.files(self.path) if p.suffix in (".so", ".dylib", ".pyd")
                and "__pycache__" not in p.parts]


def _loader_metadata(path: Path) -> tuple[Any | None, str | None]:
    """Parse metadata.json with the ``kernels`` loader's own parser (``kernels-data``, the library the
    loader parses and verifies with): (parsed, error), or (None, None) where it is not installed."""
    try:
        from kernels_data import Metadata
    except ImportError:
        return None, None
    try:
        return Metadata.read_from_file(path), None
    except (OSError, ValueError) as e:
        return None, str(e)


def check_metadata(v: _Variant) -> CheckResult:
    path = v.path / METADATA
    if not os.path.lexists(path):
        return CheckResult(v.name, "metadata", "fail", f"{path} is missing; the loader refuses a variant without it")
    try:
        data = safeload.load_json(path)
    except json.JSONDecodeError as e:
        return CheckResult(v.name, "metadata", "fail", f"{path}: invalid JSON: {e}")
    except UnicodeDecodeError:
        return CheckResult(v.name, "metadata", "fail", f"{path}: not UTF-8 text; rebuild this variant")
    except PybuildError as e:  # too large, too deep, duplicate keys, a FIFO
        return CheckResult(v.name, "metadata", "fail", str(e))
    except OSError as e:
        return CheckResult(v.name, "metadata", "fail", f"{path}: cannot be read ({e.strerror})")
    if not isinstance(data, dict):
        return CheckResult(v.name, "metadata", "fail", f"{path}: must hold a JSON object")
    v.metadata = data
    problems: list[str] = []
    parsed, loader_error = _loader_metadata(path)
    if loader_error:
        problems.append(f"the kernels loader rejects it: {loader_error}")
    for key, kind in (("name", str), ("id", str), ("version", int), ("backend", dict)):
        if not isinstance(data.get(key), kind):
            problems.append(f"`{key}` must be {'an integer' if kind is int else 'a ' + kind.__name__}, "
                            f"found {data.get(key)!r}")
    name = data.get("name")
    if isinstance(name, str) and not NAME_RE.fullmatch(name):
        problems.append(f"`name` {name!r} does not match {NAME_RE.pattern}")
    if isinstance(name, str):
        v.kernel = name
    try:
        v.variant = parse_variant_name(v.name)
    except VariantsError as e:
        problems.append(str(e))
    try:
        from kernels.variants import parse_variant as loader_parse_variant
    except ImportError:
        loader_parse_variant = None
    if loader_parse_variant is not None:
        try:
            loader_parse_variant(v.name)
        except ValueError as e:
            problems.append(f"the kernels loader cannot parse the variant name: {e}")
    backend = data.get("backend")
    if v.variant is not None and isinstance(backend, dict) and backend.get("type") != v.variant.backend:
        problems.append(f"backend.type is {backend.get('type')!r} but the variant name says {v.variant.backend!r}")
    if isinstance(name, str):
        pkg = name.replace("-", "_")
        if not (v.path / "__init__.py").is_file() and not (v.path / pkg / "__init__.py").is_file():
            problems.append(f"no {pkg}/__init__.py (nor a flat __init__.py): the loader finds no module")
    depends = data.get("python-depends", [])
    if not isinstance(depends, list) or not all(isinstance(d, str) for d in depends):
        problems.append(f"`python-depends` must be a list of package names, found {depends!r}")
        depends = []
    unknown = _unknown_python_depends(depends, v.variant.backend if v.variant else "")
    if unknown:
        problems.append(f"python-depends {unknown} are not in the kernels loader's allow-list "
                        "(kernels/python_depends.json); the loader refuses the kernel")
    if problems:
        return CheckResult(v.name, "metadata", "fail", "; ".join(problems))
    how = "kernels loader's parser" if parsed is not None else "pybuild's reader (kernels not installed)"
    return CheckResult(v.name, "metadata", "pass", f"{data['name']} id {data['id']} v{data['version']} ({how})")


def _unknown_python_depends(names: list[str], backend: str) -> list[str]:
    """Names the installed ``kernels`` loader would refuse (empty where it is not installed)."""
    allow = loader_python_depends()
    if allow is None:
        return []
    general, per_backend = allow
    return [n for n in names if n not in general | per_backend.get(backend, set())]


def check_digest(v: _Variant) -> CheckResult:
    meta = v.metadata or {}
    digest = meta.get("digest")
    if not isinstance(digest, dict) or not isinstance(digest.get("files"), dict):
        return CheckResult(v.name, "digest", "fail",
                           "metadata.json has no digest; rebuild with `python -m pybuild build`")
    if str(digest.get("algorithm", "")).lower() != "sha256":
        return CheckResult(v.name, "digest", "fail", f"unsupported digest algorithm {digest.get('algorithm')!r}")
    # pybuild's reading (names each file) and, where installed, the loader's own verdict.
    try:
        problems = digest_mismatches(v.path, digest["files"]) or _loader_digest_problems(v.path) or []
    except PybuildError as e:  # a tree too deep, a FIFO, a name that is not UTF-8
        return CheckResult(v.name, "digest", "fail", str(e))
    if problems:
        shown = "; ".join(problems[:5]) + (f"; … {len(problems) - 5} more" if len(problems) > 5 else "")
        return CheckResult(v.name, "digest", "fail",
                           f"{shown}: the files differ from what was built; rebuild (or re-collect) this variant",
                           {"problems": problems})
    signature = signature_problem(v.path)
    if signature:
        return CheckResult(v.name, "digest", "fail", signature)
    signed = "; metadata.json.sigstore covers this metadata.json" if (v.path / SIGNATURE).exists() else ""
    return CheckResult(v.name, "digest", "pass", f"{len(digest['files'])} files match their sha256{signed}")


#: The sigstore bundle the release workflow writes beside each variant's metadata.json, where
#: ``kernels verify-signature`` looks for it.
SIGNATURE = "metadata.json.sigstore"


def signature_problem(variant_dir: Path) -> str | None:
    """What is wrong with ``metadata.json.sigstore`` as far as can be told offline (None: absent or
    fine): it must be a sigstore bundle whose signed message digest is this metadata.json's sha256.
    Whether the signature itself and its signer's identity hold needs the sigstore services (Fulcio's
    roots, Rekor's log): ``kernels verify-signature`` (or ``kernels.verify.verify_variant``) checks that."""
    import base64
    import hashlib

    path = variant_dir / SIGNATURE
    if not os.path.lexists(path):
        return None
    try:
        bundle = safeload.load_json(path)
        raw = safeload.read_bytes(variant_dir / METADATA)
    except (ValueError, OSError, PybuildError) as e:
        return f"{path}: not a readable sigstore bundle ({e}); sign metadata.json again"
    signed = (bundle.get("messageSignature") or {}).get("messageDigest") or {} if isinstance(bundle, dict) else {}
    if signed.get("algorithm") != "SHA2_256" or not isinstance(signed.get("digest"), str):
        return f"{path}: not a sigstore bundle of a signed file (no messageSignature.messageDigest); sign metadata.json again"
    if signed["digest"] != base64.b64encode(hashlib.sha256(raw).digest()).decode():
        return (f"{path}: signs other content than this metadata.json (rebuilt after signing?); the loader would "
                "reject it: sign metadata.json again, or remove the stale bundle")
    return None


def _loader_digest_problems(path: Path) -> list[str] | None:
    """The verdict of ``kernels-data`` (what the loader and ``kernels verify-signature`` use) on every
    file against the digest in metadata.json (None where it is not installed)."""
    try:
        from kernels_data import Digest, DigestValidationError, Metadata
    except ImportError:
        return None
    try:
        meta = Metadata.read_from_file(path / METADATA)
        if meta.digest is None:
            return ["no digest"]
        meta.digest.validate(Digest.hash_variant(meta.digest.algorithm, path))
    except DigestValidationError as e:
        return [str(x) for x in e.violations]
    except (OSError, ValueError, RuntimeError) as e:
        return [str(e)]
    return []


def _abi_checker() -> Any:
    try:
        import kernel_abi_check
    except ImportError:
        msg = "kernel-abi-check is not installed; pip install kernel-abi-check (it is in requirements-dev.txt)"
        raise ToolchainError(msg) from None
    return kernel_abi_check


def check_abi3(v: _Variant) -> CheckResult:
    exts = v.extensions()
    if not exts:
        return CheckResult(v.name, "abi3", "pass", "no compiled extension")
    if v.variant is not None and v.variant.noarch:
        return CheckResult(v.name, "abi3", "fail",
                           f"{', '.join(p.name for p in exts)} in a pure-Python variant: {v.name} loads on every "
                           "system and torch of its backend, so it must hold no compiled file; remove it")
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
            except NotELFError as e:  # e.g. a Mach-O file kernel-abi-check reads but readelf cannot
                problems.append(str(e))
                continue
            libpython = [val for tag, val in entries if tag == "NEEDED" and val.startswith("libpython")]
            problems += [f"{so.name}: links {lib}; an abi3 extension must not link libpython" for lib in libpython]
    if problems:
        return CheckResult(v.name, "abi3", "fail",
                           "; ".join(problems) + f" (must load in every CPython >= {PYTHON_ABI}: use only the "
                           "limited API, Py_LIMITED_API)", {"symbols": symbols})
    tag = f"cp{PYTHON_ABI.replace('.', '')}-abi3"
    return CheckResult(v.name, "abi3", "pass", f"{len(exts)} extension(s) use only the stable ABI ({tag})")


def check_platform(v: _Variant) -> CheckResult:
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
    detail = (f"NOT {MANYLINUX}: {glibc}references {', '.join(uniq[:4])}{' …' if len(uniq) > 4 else ''}; "
              + NOT_MANYLINUX_HINT.format(kernel=v.kernel or "<kernel>"))
    return CheckResult(v.name, name, "fail", detail, {"symbols": uniq})


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version))


def check_rpath(v: _Variant) -> CheckResult:
    problems = []
    for so in v.extensions():
        if so.suffix != ".so":
            continue
        try:
            bad = bad_rpaths(so)
        except NotELFError as e:
            return CheckResult(v.name, "rpath", "fail", f"{e}; rebuild the variant")
        if bad:
            problems.append(f"{so.name}: {', '.join(bad)}")
    if problems:
        return CheckResult(v.name, "rpath", "fail",
                           f"RPATH/RUNPATH into the build machine: {'; '.join(problems)}; "
                           "keep CMAKE_INSTALL_RPATH empty")
    return CheckResult(v.name, "rpath", "pass", "no RPATH into build directories")


def check_runtime(v: _Variant) -> CheckResult:
    """The C++ runtime must be the process's shared one (torch's), not a static copy in the module."""
    problems = []
    for so in v.extensions():
        if so.suffix == ".so":
            found = embedded_cxx_runtime(so)
            if found:
                problems.append(f"{so.name} defines {', '.join(found)}")
    if problems:
        return CheckResult(v.name, "runtime", "fail",
                           f"embedded C++ runtime: {'; '.join(problems)}; link the shared libstdc++ "
                           "(no -static-libstdc++; the generated CMake project links -l:libstdc++.so.6)")
    return CheckResult(v.name, "runtime", "pass", "uses the shared C++ runtime")


# Runs in a fresh interpreter: import the variant as kernels' importer does (module name = metadata id).
_IMPORT_SCRIPT = textwrap.dedent("""
    import importlib.util, json, sys
    from pathlib import Path
    variant = Path(sys.argv[1])
    meta = json.loads((variant / "metadata.json").read_text())
    import torch
    if meta["backend"]["type"] == "cuda" and not torch.cuda.is_available():
        print(json.dumps({"skip": "torch sees no CUDA device here"}))
        sys.exit(0)
    init = variant / "__init__.py"
    if not init.exists():
        init = variant / meta["name"].replace("-", "_") / "__init__.py"
    spec = importlib.util.spec_from_file_location(meta["id"], init)
    module = importlib.util.module_from_spec(spec)
    sys.modules[meta["id"]] = module
    spec.loader.exec_module(module)
    names = [n for n in getattr(module, "__all__", dir(module)) if not n.startswith("_")]
    print(json.dumps({"ok": names}))
""")


def importable_here(variant: Variant) -> str | None:
    """Why this machine cannot import ``variant`` (None if it can try)."""
    from .host import host_system, torch_info

    try:
        info = torch_info()
    except PybuildError as e:
        return str(e)
    if not variant.noarch:  # a noarch variant loads on any system and torch: only its backend matters
        if variant.system != host_system():
            return f"built for {variant.system}, this machine is {host_system()}"
        here = tuple(int(x) for x in info.major_minor.split("."))
        if variant.tvm_ffi:
            from .host import tvm_ffi_version

            if tvm_ffi_version() != variant.torch:
                return f"built for tvm-ffi {variant.torch}, this Python has {tvm_ffi_version() or 'no tvm-ffi'}"
        elif variant.stable_abi and here < variant.torch_tuple:
            return f"built for torch {variant.torch}'s stable ABI, this Python has the older torch {info.version}"
        elif not variant.stable_abi and variant.torch != info.major_minor:
            return f"built for torch {variant.torch}, this Python has torch {info.version}"
    if variant.backend == "cpu":
        return None
    if variant.backend == "cuda":
        if not info.cuda:
            return f"a CUDA variant; torch {info.version} has no CUDA"
        if variant.backend_version and variant.backend_version.split(".")[0] != info.cuda.split(".")[0]:
            return f"built for CUDA {variant.backend_version}, torch has CUDA {info.cuda}"
        return None
    return f"backend {variant.backend} is not available on this machine"


def check_import(v: _Variant) -> CheckResult:
    if v.variant is None or v.metadata is None:
        return CheckResult(v.name, "import", "skip", "metadata unusable (see above)")
    reason = importable_here(v.variant)
    if reason is not None:
        return CheckResult(v.name, "import", "skip", f"not importable here: {reason}")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")  # leave build/ as it is (the digest covers it)
    with tempfile.TemporaryDirectory(prefix="pybuild-import-") as cwd:
        try:
            proc = subprocess.run([sys.executable, "-c", _IMPORT_SCRIPT, str(v.path.resolve())], cwd=cwd, env=env,
                                  capture_output=True, text=True, timeout=IMPORT_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            return CheckResult(v.name, "import", "fail", f"import did not finish in {IMPORT_TIMEOUT_S} s")
    lines = proc.stdout.strip().splitlines()
    try:
        out = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        out = {}
    if proc.returncode != 0 or "ok" not in out and "skip" not in out:
        err = [line for line in proc.stderr.strip().splitlines() if line.strip()]
        last = err[-1] if err else f"exit {proc.returncode}"
        return CheckResult(v.name, "import", "fail", f"import in a fresh interpreter failed: {last}")
    if "skip" in out:
        return CheckResult(v.name, "import", "skip", f"not importable here: {out['skip']}")
    exports = ", ".join(out["ok"]) or "-"
    return CheckResult(v.name, "import", "pass", f"imports as {v.metadata['id']}; exports {exports}")


def check_sources(path: Path, src_hash: str) -> CheckResult:
    """The variant was built from the kernel's current sources (else its binaries and the published
    sources would disagree)."""
    try:
        built = (json.loads((path / METADATA).read_text()).get("pybuild") or {}).get("source-hash")
    except (OSError, ValueError):
        built = None
    if not built:
        return CheckResult(path.name, "sources", "skip", "metadata.json records no source hash")
    if built != src_hash:
        return CheckResult(path.name, "sources", "fail",
                           f"stale: built from sources {built[:10]}, the kernel's sources are now {src_hash[:10]}; "
                           "rebuild this variant")
    return CheckResult(path.name, "sources", "pass", f"built from the current sources ({src_hash[:10]})")


VARIANT_CHECKS: tuple[Callable[[_Variant], CheckResult], ...] = (
    check_metadata, check_digest, check_abi3, check_platform, check_rpath, check_runtime, check_import,
)


def check_variant(path: Path, *, run_import: bool = True) -> list[CheckResult]:
    v = _Variant(path)
    results = [check_metadata(v)]
    if v.metadata is None:
        return results
    for fn in VARIANT_CHECKS[1:]:
        if fn is check_import and not run_import:
            results.append(CheckResult(v.name, "import", "skip", "not asked for (--no-import)"))
            continue
        try:
            results.append(fn(v))
        except InputLimitError as e:  # a tree too deep, a FIFO, a file name that is not UTF-8
            results.append(CheckResult(v.name, fn.__name__.removeprefix("check_"), "fail", str(e)))
    return results


# --------------------------------------------------------------------------------------------
# Per-kernel checks


def required_variants(manifest: Manifest, matrix: Matrix) -> list[Variant]:
    """Variants the matrix requires for this kernel's backends and torch bounds (for a pure-Python
    kernel, its ``torch-<backend>`` variants)."""
    return manifest.variants(matrix.variants)


def check_coverage(target: Target, matrix: Matrix) -> CheckResult:
    if target.manifest is None:
        return CheckResult("*", "variants", "skip", "no build.toml beside the build folder: required variants unknown")
    required = [v.name for v in required_variants(target.manifest, matrix)]
    present = {p.name for p in target.variant_dirs}
    missing = [n for n in required if n not in present]
    extra = sorted(present - set(required))
    data = {"required": required, "missing": missing, "extra": extra}
    other = [d.name for d in other_kind_variants(target.manifest)]
    if other:
        kind = "pure Python" if target.manifest.noarch else "compiled"
        return CheckResult("*", "variants", "fail",
                           f"build/ holds {', '.join(other)}, left from before the kernel became {kind}; the "
                           "loader would pick it over the current build: `python -m pybuild build` removes it", data)
    source = "build.toml" if target.manifest.noarch else matrix.path.name  # noarch: one per listed backend
    note = f"; not in {source}: {', '.join(extra)}" if extra else ""
    if missing:
        return CheckResult("*", "variants", "fail",
                           f"{len(missing)} of {len(required)} variants required by {source} for backends "
                           f"{', '.join(target.manifest.backends)} are missing (listed below){note}", data)
    return CheckResult("*", "variants", "pass", f"all {len(required)} required variants present{note}", data)


def select_variant_dirs(target: Target, variants: list[str] | None) -> list[Path]:
    """The variant folders to check: all, or the ones named (each must exist)."""
    dirs = list(target.variant_dirs)
    if variants:
        unknown = sorted(set(variants) - {d.name for d in dirs})
        if unknown:
            raise UsageError(f"--variant {', '.join(unknown)}: not built under {target.build_dir} "
                             f"(built: {', '.join(d.name for d in dirs) or 'none'})")
        dirs = [d for d in dirs if d.name in variants]
    return dirs


def check_kernel(path: Path, matrix: Matrix, *, variants: list[str] | None = None,
                 run_import: bool = True) -> CheckReport:
    """Check every built variant of the kernel at ``path`` (or only ``variants``)."""
    target = find_target(path)
    dirs = select_variant_dirs(target, variants)
    results: list[CheckResult] = []
    if not dirs:
        results.append(CheckResult("*", "build", "fail",
                                   f"nothing built under {target.build_dir}; run `python -m pybuild build` first"))
    src_hash = source_hash(target.manifest) if target.manifest is not None else None
    for d in dirs:
        rows = check_variant(d, run_import=run_import)
        if src_hash is not None and len(rows) > 1:
            rows.insert(-1, check_sources(d, src_hash))
        results += rows
    if not variants:
        results.append(check_coverage(target, matrix))
    return CheckReport(target.kernel, target.build_dir, tuple(results))


def failure_summary(report: CheckReport) -> str:
    """One line naming what failed, for errors and the kernel card."""
    parts = []
    for r in report.failures:
        parts.append(f"{r.check}" + (f" ({r.variant})" if r.variant != "*" else ""))
    return ", ".join(parts)
