"""Progress in a log (no terminal): one line per phase, and one per translation unit while compiling,
so a long CUDA build shows where it is."""

from __future__ import annotations

import pytest

from pybuild import ui


def test_plain_progress_prints_each_translation_unit_once(capsys: pytest.CaptureFixture[str]) -> None:
    rep = ui.Reporter()
    with rep.task("k v") as update:
        update("configuring (CMake)", None)
        update("compiling", 0.0)
        update("compiling [1/3] gemm.cu.o", 1 / 3)
        update("compiling [1/3] gemm.cu.o", 1 / 3)
        update("compiling [2/3] binding.cpp.o", 2 / 3)
        update("compiling [3/3] k.abi3.so", 1.0)
        update("assembling", None)
    lines = [line.strip() for line in capsys.readouterr().err.splitlines()]
    assert lines == [
        "k v: configuring (CMake)",
        "k v: compiling",
        "k v: compiling [1/3] gemm.cu.o",
        "k v: compiling [2/3] binding.cpp.o",
        "k v: compiling [3/3] k.abi3.so",
        "k v: assembling",
    ]


def test_quiet_progress_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with ui.Reporter(quiet=True).task("k v") as update:
        update("compiling [1/3] gemm.cu.o", 1 / 3)
    assert capsys.readouterr().err == ""
