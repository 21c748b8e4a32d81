"""The commands README.md and docs/*.md show in ``bash`` blocks, and what the tests do with each: run it
as written on a scratch copy of the farm (``RUN``), or name why it cannot run here (``NOT_HERE``).

A command is one line of a fenced ``bash``/``sh``/``shell``/``console`` block, without its trailing
``# comment``, with backslash continuations joined. The blocks without a language hold usage synopses
(``python -m pybuild build [--all] ...``), file trees and output, not commands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELLS = ("bash", "sh", "shell", "console")

_BLOCK = re.compile(r"^```([\w-]*)\n(.*?)^```", re.M | re.S)


@dataclass(frozen=True)
class DocCommand:
    page: str  # "README.md", "docs/building.md"
    text: str


def _strip_comment(line: str) -> str:
    """``line`` without a trailing ``# comment`` (a ``#`` outside quotes after a space)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] == " "):
            return line[:i].rstrip()
    return line.rstrip()


def documented_commands(pages: list[Path] = PAGES) -> list[DocCommand]:
    """Every command of ``pages``' shell blocks, in page order."""
    found = []
    for page in pages:
        name = page.relative_to(REPO).as_posix() if page.is_relative_to(REPO) else page.name
        for block in _BLOCK.finditer(page.read_text(encoding="utf-8")):
            if block[1] not in SHELLS:
                continue
            pending = ""
            for raw in block[2].splitlines():
                line = _strip_comment(raw)
                if line.endswith("\\"):
                    pending += line[:-1].strip() + " "
                    continue
                text = (pending + line.strip()).strip()
                pending = ""
                if text:
                    found.append(DocCommand(name, text))
    return found


@dataclass(frozen=True)
class Run:
    """How a documented command runs on the scratch farm: in ``cwd`` (relative to the farm, or
    ``OUTSIDE`` for a kernel folder outside it), with ``placeholders`` replaced."""

    cwd: str = "."
    placeholders: dict[str, str] = field(default_factory=dict)


#: A kernel folder outside the farm (a copy of the guide's img2gray).
OUTSIDE = "<outside>"
#: The scratch farm's own path.
FARM = "<farm>"

#: Commands run as written (in this order where they depend on each other: page order).
RUN: dict[str, Run] = {
    "bash .ci/setup && python3 -m pybuild build": Run(),
    "pip install -e /path/to/the/farm": Run(placeholders={"/path/to/the/farm": FARM}),
    "pybuild check-config .": Run(cwd=OUTSIDE),
    "python -m pybuild new my-op": Run(),
    "python -m pybuild check-config kernels/my-op": Run(),
    "python -m pybuild build kernels/my-op": Run(),
    "python -m pybuild test kernels/my-op --variant torch213-cxx11-cpu-x86_64-linux": Run(),
    "python -m pybuild build": Run(),
    "python -m pybuild build kernels/img2gray --cuda-archs 9.0": Run(),
    "python -m pybuild clean --build kernels/img2gray": Run(),
    "python -m pybuild test kernels/img2gray --variant torch213-cxx11-cpu-x86_64-linux -- -x -k reference": Run(),
    "python -m pybuild envs": Run(),
    "python -m pybuild check-config kernels/img2gray": Run(),
    "python -m pybuild migrate kernels/img2gray": Run(),
    "python -m pybuild migrate --check": Run(),
    "python -m pybuild variants": Run(),
    "python -m pybuild variants --kernel kernels/img2gray --json": Run(),
    "python -m pybuild variants -q": Run(),
    "python -m pybuild build kernels/my-op && python -m pytest kernels/my-op/tests": Run(),
    "python -m pybuild generate kernels/img2gray": Run(),
    "pip install --no-build-isolation -e kernels/img2gray": Run(),
    'python -c "import torch, img2gray; print(img2gray.img2gray(torch.zeros(4, 4, 3, dtype=torch.uint8)))"': Run(),
    "python -m pybuild clean kernels/img2gray": Run(),
    "nix-instantiate --eval --strict nix/tests": Run(),
}

_MATRIX_ENVS = (
    "downloads a torch of gigabytes (and NVIDIA's compiler wheels) per variant and compiles each; "
    "tests/integration/test_build_envs.py builds and tests variants in environments"
)
_NIXPKGS = (
    "builds with the flake's Nix toolchain, and nixpkgs cannot be fetched here; tests/integration/test_nix.py "
    "builds with the host toolchain, collects the result and loads it"
)
_REMOTE = "needs a remote machine, cache or credentials of the reader's own"
_GATE = (
    "the compliance gate refuses a development build of this machine by design (Debian's glibc is not "
    "manylinux_2_28, and only the host variant is built); tests/unit/test_check.py and "
    "tests/integration/test_publish_e2e.py run it on builds it passes"
)
_HUB = (
    "talks to the Hugging Face Hub; tests/integration/test_publish_e2e.py does the same against the "
    "loopback Hub fixture"
)
_GPU = "needs a CUDA GPU; benchmarks/run_gpu.sh runs it on the GPU machine (docs/testing.md)"

#: Commands not run here, each with the reason.
NOT_HERE: dict[str, str] = {
    "redis-server --port 6379 --bind 127.0.0.1 --save ''": (
        "a server that keeps running; tests/integration/test_shared_cache.py starts and stops one on a free port"
    ),
    "python -m pybuild build kernels/rms_norm --all --cache redis://127.0.0.1:6379": _MATRIX_ENVS,
    "PYBUILD_SHARED_CACHE=redis://cache.internal:6379 python -m pybuild build --all": _REMOTE,
    "python -m pybuild build --all --cache redis://cache.internal:6379 --cache-read-only": _REMOTE,
    "bash .ci/setup && python3 -m pytest -q": "the whole test suite, this one included; CI runs it (.ci/run)",
    "python -m pybuild build kernels/my-op --all": _MATRIX_ENVS,
    "git add kernels/my-op && nix --extra-experimental-features 'nix-command flakes' build .#my-op -L && "
    "python -m pybuild collect result": _NIXPKGS,
    "python -m pybuild check kernels/my-op": _GATE,
    "python -m pybuild publish kernels/my-op --repo-id my-org/my-op --version 1.0.0": _HUB,
    "python -m pybuild build kernels/img2gray --all": _MATRIX_ENVS,
    "python -m pybuild build kernels/img2gray --variant torch214-cxx11-cu130-x86_64-linux --cuda-archs 9.0": (
        _MATRIX_ENVS
    ),
    "python -m pybuild test kernels/img2gray --variant torch214-cxx11-cpu-x86_64-linux": (
        "torch 2.14 has no CPU wheel within reach, so its environment downloads the CUDA build (gigabytes); "
        "the torch 2.13 command beside it runs"
    ),
    "python -m pybuild test KERNEL --variant torch-stable-abi211-cpu-x86_64-linux --torch 2.14": (
        "KERNEL stands for a stable-ABI kernel, and torch 2.14 downloads gigabytes; "
        "tests/integration/test_build_envs.py tests one under two torch releases"
    ),
    "python -m pybuild build relu-torch-stable-abi --all": (
        "relu-torch-stable-abi is an upstream example, not part of the farm; " + _MATRIX_ENVS
    ),
    "python -m pybuild test relu-torch-stable-abi --variant torch-stable-abi211-cpu-x86_64-linux "
    "--torch 2.13 --torch 2.14": "relu-torch-stable-abi is an upstream example, not part of the farm; " + _MATRIX_ENVS,
    "PYBUILD_CUDA_ARCHS=9.0 python -m pybuild build kernels/img2gray kernels/activation kernels/rms_norm "
    "--variant torch211-cxx11-cu130-x86_64-linux": _MATRIX_ENVS,
    "nix flake show": "Nix with flakes evaluates the whole matrix (minutes here); tests/integration/test_nix.py "
    "runs `nix flake show` on a farm copy",
    "nix build .#img2gray -L": _NIXPKGS,
    "nix build .#img2gray-x86_64-linux -L": _NIXPKGS,
    "nix build .#img2gray-torch213-cxx11-cu130-x86_64-linux -L": _NIXPKGS,
    "nix build . -L": _NIXPKGS,
    "python -m pybuild collect result": "collects what `nix build` left in result/; " + _NIXPKGS,
    "nix develop .#devShells.torch211-cxx11-cu126-x86_64-linux": _NIXPKGS,
    "nix develop .#torch213-cxx11-cpu-x86_64-linux": _NIXPKGS,
    "nix flake check": _NIXPKGS,
    "echo 'ssh-ng://nix@arm-box aarch64-linux /root/.ssh/id_builder 16 1 big-parallel' | sudo tee -a "
    "/etc/nix/machines": _REMOTE,
    "echo 'builders-use-substitutes = true' | sudo tee -a /etc/nix/nix.conf": _REMOTE,
    "nix store ping --store ssh-ng://nix@arm-box": _REMOTE,
    "nix build . -L --max-jobs 4": _NIXPKGS,
    "nix build . -L --builders 'ssh-ng://nix@arm-box aarch64-linux /root/.ssh/id_builder 16 1 big-parallel'": _REMOTE,
    "cachix use my-farm && nix build . -L && cachix push my-farm ./result": _REMOTE,
    "attic use my:farm && attic push my:farm ./result": _REMOTE,
    "nix key generate-secret --key-name farm-1 > farm-1.sec && nix key convert-secret-to-public < farm-1.sec": (
        "makes a signing key meant to be kept; " + _REMOTE
    ),
    "nix store sign --key-file farm-1.sec --recursive ./result": _REMOTE,
    "nix copy --to 's3://my-farm-cache?region=eu-central-1' ./result": _REMOTE,
    "bash benchmarks/run_gpu.sh --wheels wheelhouse": _GPU,
    "bash benchmarks/run_gpu.sh --wheels wheelhouse --sweep 200 --seed 0": _GPU,
    "python -m pybuild bench img2gray activation rms_norm --out OUT": _GPU,
    "python -m pybuild bench rms_norm activation img2gray --sweep 200 --seed 0 --out OUT": _GPU,
    "bash benchmarks/run_gpu.sh --no-tests --no-bench --wheels wheelhouse --sweep 200 --seed 1,2,3": _GPU,
    "python3 benchmarks/table.py OUT/gpu-nvidia-h200.json": "reads the results of a GPU run (OUT); " + _GPU,
    "python3 benchmarks/keep_sweep.py OUT/sweep-rms_norm-nvidia-h200.json": (
        "reads the results of a GPU run (OUT); tests/unit/test_bench.py runs it on a committed sweep; " + _GPU
    ),
    "python -m pybuild check kernels/img2gray": _GATE,
    "python -m pybuild publish kernels/img2gray --repo-id my-org/img2gray --version 1.1.2 --dry-run": _GATE,
    "HF_TOKEN=hf_... python -m pybuild publish kernels/img2gray --repo-id my-org/img2gray --version 1.1.2": _HUB,
    "python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 "
    "-d wheelhouse kernels==0.17.2 kernel-abi-check==0.14.1 kernels-data==0.16.2 tomlkit==0.15.2 tenacity==9.2.1 "
    "pyelftools==0.33": "downloads wheels from PyPI for the GPU machine",
    "PYBUILD_CUDA_ARCHS=9.0 python -m pybuild build kernels/img2gray kernels/activation kernels/rms_norm "
    "--variant torch215-cxx11-cu132-x86_64-linux": _MATRIX_ENVS,
    "PIP_CONSTRAINT=/dev/null python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 "
    "--platform manylinux_2_28_x86_64 --platform manylinux_2_18_x86_64 --platform manylinux2014_x86_64 "
    "-d wheelhouse torch==2.15.0 triton==3.9.0 nvidia-nccl-cu13==2.30.7 nvidia-nvshmem-cu13==3.7.2": (
        "downloads 1.2 GB of wheels from PyPI for the GPU machine"
    ),
    "bash benchmarks/run_gpu.sh --wheels wheelhouse --variant torch215-cxx11-cu132-x86_64-linux --no-bench": _GPU,
    "kernels lock .": _HUB,
    "kernels download .": _HUB,
}
