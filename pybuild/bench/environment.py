"""What a result was measured on: versions, the device, the source commit; and which device to use."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from pathlib import Path
from typing import Any

from ..errors import PybuildError, UsageError

FARM_ROOT = Path(__file__).resolve().parents[2]


def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _device(device: str) -> dict[str, Any]:
    import torch

    if device != "cuda":
        return {"name": platform.processor() or platform.machine(), "threads": torch.get_num_threads()}
    p = torch.cuda.get_device_properties(0)
    return {
        "name": p.name,
        "capability": f"{p.major}.{p.minor}",
        "sms": p.multi_processor_count,
        "l2-bytes": getattr(p, "L2_cache_size", 0),
        "memory-bytes": p.total_memory,
    }


def source_commit(root: Path = FARM_ROOT) -> str | None:
    """``PYBUILD_SOURCE_COMMIT`` when set (a copy of the tree shipped elsewhere: its caller knows
    best), else the checkout's commit, with ``-dirty`` when tracked files changed."""
    if os.environ.get("PYBUILD_SOURCE_COMMIT"):
        return os.environ["PYBUILD_SOURCE_COMMIT"]
    commit = _run(["git", "-C", str(root), "rev-parse", "HEAD"])
    if len(commit) != 40:
        return None
    dirty = bool(_run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"]))
    return commit + ("-dirty" if dirty else "")


def builds_of(kernels: Any) -> dict[str, Any]:
    """Per kernel of ``(name, loaded package, cases module)`` triples, what its loaded build's
    ``metadata.json`` says it was built from, or ``None`` for a package without one: the variant,
    ``built-at`` (the farm's commit when it was built, and ``built-dirty``), ``kernel-commit`` (the
    last commit that changed the kernel's sources, and ``kernel-dirty``) and the source hash. This
    names the code that ran even when the checkout that runs the bench is not the one the build
    came from (a build carried to another machine)."""
    from ..metadata import read_metadata

    def obj(value: Any) -> dict[str, Any]:
        return value if isinstance(value, dict) else {}

    builds: dict[str, Any] = {}
    for name, package, _ in kernels:
        where = getattr(package, "__file__", None)
        try:
            # the package folder's parent is the variant folder, which holds metadata.json
            doc = read_metadata(Path(where).resolve().parent.parent) if where else None
        except (OSError, PybuildError):  # missing, unreadable, not a JSON object
            doc = None
        if doc is None:
            builds[name] = None
            continue
        provenance = obj(doc.get("provenance"))
        builder, kernel, info = (
            obj(obj(provenance.get("kernel-builder")).get("git")),
            obj(provenance.get("kernel")),
            obj(doc.get("pybuild")),
        )
        builds[name] = {
            "variant": info.get("variant"),
            "built-at": builder.get("commit"),
            "built-dirty": builder.get("dirty"),
            "kernel-commit": kernel.get("commit"),
            "kernel-dirty": kernel.get("dirty"),
            "source-hash": info.get("source-hash"),
        }
    return builds


def environment(device: str) -> dict[str, Any]:
    """Python, torch, triton, nvcc, driver and device, and the source commit, for the JSON."""
    import torch

    env: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch-cuda": torch.version.cuda,
        "platform": platform.platform(),
    }
    try:
        import triton  # type: ignore[import-not-found]

        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    nvcc = _run(["nvcc", "--version"]).splitlines()
    env["nvcc"] = nvcc[-1] if nvcc else None
    env["device"] = _device(device)
    if device == "cuda":
        env["driver"] = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]) or None
    env["git"] = source_commit()
    if os.environ.get("PYBUILD_TEST_VARIANT"):  # a variant loaded by name, as built elsewhere
        env["variant"] = os.environ["PYBUILD_TEST_VARIANT"]
    return env


def device_slug(doc: dict[str, Any]) -> str:
    """The default result name: ``gpu-<device name>`` on CUDA (``gpu-nvidia-h200``), else the CPU's;
    a run of a variant loaded by name adds :func:`variant_tag`, so that it never takes the name of the
    machine's own run."""
    name = doc["environment"]["device"]["name"] if doc["method"]["device"] == "cuda" else "cpu"
    slug = "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")
    while "--" in slug:
        slug = slug.replace("--", "-")
    return ("gpu-" if doc["method"]["device"] == "cuda" else "") + slug + variant_tag(doc["environment"])


def variant_tag(env: dict[str, Any]) -> str:
    """``""``, or for a run of a variant loaded by name (``PYBUILD_TEST_VARIANT``) ``-`` and that
    variant without its system, then the torch that ran when the variant's name does not begin with
    it: ``-torch215-cxx11-cu132``, ``-torch-stable-abi211-cu130-torch215``."""
    variant = env.get("variant")
    if not variant:
        return ""
    tag = re.sub(r"-(x86_64|aarch64)-[a-z]+$", "", variant.lower())
    ran = re.match(r"(\d+)\.(\d+)", env.get("torch") or "")
    if ran:
        torch_tag = f"torch{ran.group(1)}{ran.group(2)}"
        if not (tag == torch_tag or tag.startswith(torch_tag + "-")):
            tag += "-" + torch_tag
    return "-" + re.sub(r"[^a-z0-9._]+", "-", tag).strip("-")


def resolve_device(requested: str) -> str:
    """``auto`` -> cuda when torch sees a GPU, else cpu; ``cuda`` without one is a usage error."""
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: torch sees no CUDA device here; use --device cpu")
    return requested
