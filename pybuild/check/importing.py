"""The ``import`` check: the variant imports in a fresh interpreter, as the loader imports it, where this
machine can."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap

from packaging.version import Version

from .. import backends
from ..errors import PybuildError
from ..variants import Variant
from .results import IMPORT_TIMEOUT_S, BuiltVariant, CheckResult

# Runs in a fresh interpreter: import the variant as kernels' importer does (module name = metadata id).
_IMPORT_SCRIPT = textwrap.dedent("""
    import importlib.util, json, sys
    from pathlib import Path
    variant, device, label = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    meta = json.loads((variant / "metadata.json").read_text())
    import torch
    if device and not getattr(torch, device).is_available():
        print(json.dumps({"skip": f"torch sees no {label} device here"}))
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
    from ..host import host_system, torch_info

    try:
        info = torch_info()
    except PybuildError as e:
        return str(e)
    if not variant.noarch:  # a noarch variant loads on any system and torch: only its backend matters
        if variant.system != host_system():
            return f"built for {variant.system}, this machine is {host_system()}"
        here = Version(info.major_minor).release
        if variant.tvm_ffi:
            from ..host import tvm_ffi_version

            if tvm_ffi_version() != variant.torch:
                return f"built for tvm-ffi {variant.torch}, this Python has {tvm_ffi_version() or 'no tvm-ffi'}"
        elif variant.stable_abi and here < variant.torch_tuple:
            return f"built for torch {variant.torch}'s stable ABI, this Python has the older torch {info.version}"
        elif not variant.stable_abi and variant.torch != info.major_minor:
            return f"built for torch {variant.torch}, this Python has torch {info.version}"
    return backends.get(variant.backend).unimportable(variant, info)


def check_import(v: BuiltVariant) -> CheckResult:
    if v.variant is None or v.metadata is None:
        return CheckResult(v.name, "import", "skip", "metadata unusable (see above)")
    reason = importable_here(v.variant)
    if reason is not None:
        return CheckResult(v.name, "import", "skip", f"not importable here: {reason}")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")  # leave build/ as it is (the digest covers it)
    with tempfile.TemporaryDirectory(prefix="pybuild-import-") as cwd:
        try:
            backend = backends.get(v.variant.backend)
            cmd = [
                sys.executable,
                "-c",
                _IMPORT_SCRIPT,
                str(v.path.resolve()),
                backend.device_module or "",
                backend.facts.label,
            ]
            proc = subprocess.run(
                cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=IMPORT_TIMEOUT_S, check=False
            )
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
