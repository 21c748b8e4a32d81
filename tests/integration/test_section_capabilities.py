"""Each CUDA source compiles for its own `[kernel]` section's capabilities, narrowed to the build's,
as upstream kernel-builder does: a kernel with an sm90a section beside an sm80 one builds the first
for 9.0a only and the second for 8.0 only, while a section that names none takes the build's whole
list. On a GPU, each section's code reports the architecture it ran as."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pybuild.backends.cuda import find_nvcc
from pybuild.host import kernel_host_variants
from pybuild.manifest import load_manifest

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "section-capabilities"
#: built in its own environment where the running torch has no CUDA (as on a CPU-only CI machine)
ENV_VARIANT = "torch213-cxx11-cu130-x86_64-linux"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(find_nvcc() is None, reason="needs nvcc (the CUDA toolkit) to compile CUDA sources"),
]


def _variant(kdir: Path) -> str:
    """The host's CUDA variant where the running torch has CUDA, else one built in its own environment."""
    cuda = [v.name for v in kernel_host_variants(load_manifest(kdir)) if v.backend == "cuda"]
    return cuda[0] if cuda else ENV_VARIANT


def _build(kdir: Path, variant: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "PYBUILD_CUDA_ARCHS"} | env
    return subprocess.run(
        [sys.executable, "-m", "pybuild", "build", str(kdir), "--variant", variant],
        cwd=REPO,
        env=environ,
        capture_output=True,
        text=True,
        check=False,
    )


def _gencodes(command: str) -> set[str]:
    """The (virtual arch, code) pairs of a compile command's --generate-code/-gencode flags."""
    found = set()
    for arch, codes in re.findall(r"(?:--generate-code|-gencode)[= ]arch=(compute_\w+),code=\[?([\w,]+)\]?", command):
        found |= {(arch, code) for code in codes.split(",")}
    return found


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    kdir = tmp_path_factory.mktemp("sections") / "section-capabilities"
    shutil.copytree(FIXTURE, kdir)
    variant = _variant(kdir)
    done = _build(kdir, variant)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return kdir, variant


def test_each_source_compiles_for_its_own_sections_capabilities(built: tuple[Path, str]) -> None:
    kdir, variant = built
    commands = {Path(c["file"]).name: c["command"] for c in json.loads((kdir / "compile_commands.json").read_text())}
    sm90a, sm80, ptx80 = ("compute_90a", "sm_90a"), ("compute_80", "sm_80"), ("compute_80", "compute_80")
    assert _gencodes(commands["hopper.cu"]) == {sm90a}
    assert _gencodes(commands["ampere.cu"]) == {sm80, ptx80}  # 8.0 is the newest plain capability: its PTX too
    assert _gencodes(commands["any.cu"]) == {sm90a, sm80, ptx80}  # no list of its own: the build's
    assert not _gencodes(commands["torch_binding.cpp"])
    meta = json.loads((kdir / "build" / variant / "metadata.json").read_text())
    assert sorted(meta["backend"]["archs"]) == ["8.0+PTX", "9.0a"]


def test_a_section_left_without_capabilities_stops_the_build_naming_it(tmp_path: Path) -> None:
    kdir = tmp_path / "section-capabilities"
    shutil.copytree(FIXTURE, kdir)
    done = _build(kdir, _variant(kdir), PYBUILD_CUDA_ARCHS="9.0")
    assert done.returncode != 0
    out = done.stdout + done.stderr
    assert "[kernel.ampere] cuda-capabilities (8.0) leave none of this build's capabilities (9.0)" in out, out[-3000:]
    assert "Traceback" not in out


PROBE = r"""
import json, sys, torch
sys.path.insert(0, sys.argv[1])
import section_capabilities as k
seen = {}
for op in ("any_arch", "hopper_arch", "ampere_arch"):
    out = torch.zeros(1, dtype=torch.int32, device="cuda")
    getattr(k.ops, op)(out)
    seen[op] = int(out.item())
print(json.dumps(seen))
"""


@pytest.mark.gpu
def test_on_a_hopper_gpu_each_section_runs_its_own_code(built: tuple[Path, str]) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs a CUDA GPU of capability 9.0 (sm_90a code runs there, sm_80 code runs as PTX)")
    kdir, variant = built
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(kdir / "build" / variant)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"any_arch": 900, "hopper_arch": 900, "ampere_arch": 800}
