"""The CUDA fragment's loose intersection of a section's capabilities with the build's (run by CMake
itself, `cmake -P`), on the cases upstream kernel-builder documents and the farm's own."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pybuild import backends

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")

CASES = [
    # (section's capabilities, build's capabilities, compiled for)
    ("7.5;8.0;8.6;9.0;9.0a", "8.0;8.9;9.0", "9.0a;8.0;8.6"),  # 9.0a takes 9.0; 8.6 code serves 8.9
    ("8.0", "8.6", "8.0"),  # sm_80 code runs on 8.6
    ("8.0", "9.0", ""),  # never across a major version
    ("9.0a", "9.0", "9.0a"),
    ("9.0a", "9.0a;10.0a", "9.0a"),
    ("10.0f", "8.0;9.0a;10.0f", "10.0f"),
    ("8.0;8.9;9.0a", "8.0;8.9;9.0a;10.0a", "9.0a;8.0;8.9"),
    ("12.0", "10.0;12.0;12.1", "12.0"),
]


def test_a_sections_capabilities_narrow_to_the_builds_as_upstream(tmp_path: Path) -> None:
    helpers = backends.get("cuda").cmake_fragment("helpers", ("9.0",))
    function = re.search(r"function\(pybuild_cuda_section_archs .*?endfunction\(\)", helpers, re.S)
    assert function is not None
    calls = "\n".join(
        f'pybuild_cuda_section_archs(_out "{section}" "{build}")\nmessage("{i}=${{_out}}")'
        for i, (section, build, _) in enumerate(CASES)
    )
    script = tmp_path / "archs.cmake"
    script.write_text(f"cmake_minimum_required(VERSION 3.22)\n{function.group(0)}\n{calls}\n")
    done = subprocess.run(["cmake", "-P", str(script)], capture_output=True, text=True, check=True)
    got = dict(line.split("=", 1) for line in done.stderr.splitlines() if "=" in line)
    assert got == {str(i): want for i, (_, _, want) in enumerate(CASES)}
