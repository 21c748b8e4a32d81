"""The kernels' sources say what the code does and why, in the present tense: no commit hashes, no
timings or measured ratios, and no path to a file that does not exist. Measurements and their
history live in docs/performance.md."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "kernels"
#: The farm's shared kernel headers, copied into every kernel's project: held to the same rule.
SHARED = REPO / "pybuild" / "include"

#: Text files of a kernel folder that people write (sources, headers, Python, build.toml, notes).
SUFFIXES = {".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp", ".py", ".toml", ".md", ".txt", ".metal", ".sh"}
#: Suffixes that make a token a file name.
FILE_SUFFIXES = "py|cu|cuh|h|hpp|cpp|cc|json|md|sh|toml|txt|svg|png|nix|yml|yaml|log|csv|ncu-rep"

# 7-40 hex digits with at least one digit and one letter, a whole word (not the tail of a decimal
# such as 0.3275911f, not the body of a 0x literal).
HASH = re.compile(r"(?<![\w.])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?!\w)")
# A number and a unit of time or bandwidth, or a measured ratio such as 0.95x.
TIMING = re.compile(
    r"(?<![\w.])\d+(?:\.\d+)?(?:\s?(?:-|to)\s?\d+(?:\.\d+)?)?\s?(?:µs|us|ms|ns|[KMGT]B/s)(?![\w])"
    r"|(?<![\w.])\d+\.\d+x(?!\w)"
)
# A path with a folder (a/b.py) or a bare file name (b.py), outside #include lines and quotes (a
# quoted name is data the code writes or reads, not a citation).
PATH = re.compile(rf"(?<![\w./<'\"-])((?:\.{{1,2}}/)?[\w.-]+(?:/[\w.-]+)*\.(?:{FILE_SUFFIXES}))(?![\w/'\"-])")
INCLUDE = re.compile(r"^\s*#\s*include\b")


def kernel_files() -> list[Path]:
    """Every file under kernels/ and of the shared kernel headers that git tracks or would track
    (generated and build files aside)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "--", "kernels", "pybuild/include"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        files = [REPO / line for line in out.splitlines()]
    except (OSError, subprocess.CalledProcessError):  # a tree copied without .git
        skip = {"build", "__pycache__", ".pybuild", "cmake"}
        files = [p for p in KERNELS.rglob("*") if p.is_file() and not skip & set(p.relative_to(KERNELS).parts)]
        files += [p for p in SHARED.rglob("*") if p.is_file()]
    return sorted(p for p in files if p.suffix in SUFFIXES and p.is_file())


def repo_names() -> set[str]:
    """The base names of every file in the repository (where a bare file name may point)."""
    skip = {".git", "build", "__pycache__", ".pybuild", ".venv", "node_modules"}
    return {p.name for p in REPO.rglob("*") if p.is_file() and not skip & set(p.relative_to(REPO).parts)}


def path_exists(token: str, source: Path, names: set[str]) -> bool:
    if "/" not in token:
        return token in names
    kernel = KERNELS / source.relative_to(KERNELS).parts[0] if source.is_relative_to(KERNELS) else source.parent
    return any((base / token).exists() for base in (REPO, kernel, source.parent))


def scan(text: str, source: Path, names: set[str]) -> list[str]:
    """``line: kind 'token'`` for each hash, timing and missing file in ``text``, read as ``source``."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        out += [f"{n}: commit hash {m.group(0)!r}" for m in HASH.finditer(line)]
        out += [f"{n}: timing {m.group(0)!r}" for m in TIMING.finditer(line)]
        if not INCLUDE.match(line):
            out += [
                f"{n}: no such file {m.group(1)!r}"
                for m in PATH.finditer(line)
                if not path_exists(m.group(1), source, names)
            ]
    return out


def test_kernel_sources_cite_no_commit_timing_or_missing_file() -> None:
    files = kernel_files()
    assert any(p.suffix == ".cu" for p in files), "no CUDA source found under kernels/"
    names = repo_names()
    found = [
        f"{p.relative_to(REPO)}:{f}"
        for p in files
        for f in scan(p.read_text(encoding="utf-8", errors="replace"), p, names)
    ]
    assert found == [], (
        "kernel sources read as a lab log; say what the code does and why, and put figures in "
        "docs/performance.md:\n" + "\n".join(found)
    )


@pytest.mark.parametrize(
    "text, kind",
    [
        ("// measured at 35ea8dc on an H200", "commit hash"),
        ("// (raw files at 9b4f38a)", "commit hash"),
        ("// 8.03 -> 6.50 us a call", "timing"),
        ("// 52.9 µs against 71.7", "timing"),
        ("// runs at 4176 GB/s", "timing"),
        ("# 1.2-1.9 ms", "timing"),
        ("// 0.88-1.24x the fastest peer", "timing"),
        ("// see benchmarks/explore/duel.py", "no such file"),
        ("// (order-after3-nvidia-h200.json)", "no such file"),
    ],
)
def test_the_scan_finds_each_kind(text: str, kind: str) -> None:
    found = scan(text, KERNELS / "img2gray" / "csrc" / "img2gray.cu", repo_names())
    assert [f for f in found if kind in f], f"{text!r} not reported as {kind}: {found}"


@pytest.mark.parametrize(
    "text",
    [
        "constexpr float kA = 0.3275911f, kB = 0.7071067811865476f;",
        "uint32_t mask = 0xffffffffu;",
        '#include "img2gray.h"',
        "#include <cuda_bf16.h>",
        "// see csrc/img2gray.cu and docs/performance.md",
        "// inputs of 4x L2 or more; rows of 2, 4 or 8 bytes; 16-byte packs",
        "// bf16 3608x12398, 1080x1920",
        'script = tmp_path / "no_pdl.py"',
    ],
)
def test_the_scan_passes_plain_code_and_real_paths(text: str) -> None:
    assert scan(text, KERNELS / "img2gray" / "csrc" / "img2gray.cu", repo_names()) == []
