"""A kernel's bench cases: ``kernels/<name>/benchmarks/cases.py``, beside its tests.

That file is the kernel author's: ``cases(kernel, device, quick) -> list[Case]`` gives the fixed
cases of ``python -m pybuild bench`` (``kernel`` is the loaded package), and the optional
``sweep_ops(kernel, device) -> list[SweepOp]`` the ops of ``bench --sweep``. It imports only
``pybuild.bench``. The file is not part of a build (not in the source hash, not shipped).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import UsageError

CASES_FILE = Path("benchmarks") / "cases.py"  # relative to the kernel folder


@dataclass(frozen=True)
class Target:
    """``ours / baseline >= ratio`` (``strict``: ``>``); baseline is eager, compile, copy_same or copy_large."""

    baseline: str
    ratio: float
    strict: bool = False

    def describe(self) -> str:
        return f"ours {'>' if self.strict else '>='} {self.ratio:g} x {self.baseline}"


@dataclass
class Case:
    """One benchmarked call. ``make(seed)`` returns fresh arguments for ``ours``/``eager``."""

    kernel: str
    op: str
    label: str  # shape, e.g. "1080x1920"
    dtype: str
    bytes: int  # fewest bytes one call moves: inputs read once + outputs written once
    make: Callable[[int], tuple[Any, ...]]
    ours: Callable[..., Any]
    eager: Callable[..., Any]
    targets: tuple[Target, ...] = ()
    # Other torch formulations to time too, eager as "<name>" and compiled as "<name>-compile".
    extra: dict[str, Callable[..., Any]] = field(default_factory=dict)
    # Other callables timed as given under their own names (e.g. a differently compiled baseline).
    extra_timed: dict[str, Callable[..., Any]] = field(default_factory=dict)
    exact: bool = False  # outputs must equal eager's exactly (else allclose with atol/rtol)
    atol: float = 1e-2
    rtol: float = 1.6e-2
    panel: str = ""  # plot panel; default "<kernel> <op> <dtype>"


def cases_path(kernel_dir: Path) -> Path:
    """Where a kernel's bench cases live."""
    return Path(kernel_dir) / CASES_FILE


def has_cases(kernel_dir: Path) -> bool:
    return cases_path(kernel_dir).is_file()


def load_cases_module(kernel_dir: Path) -> ModuleType:
    """The kernel's ``benchmarks/cases.py``, imported; any failure is one UsageError naming the file."""
    path = cases_path(kernel_dir)
    if not path.is_file():
        raise UsageError(
            f"{path}: no bench cases for kernel {Path(kernel_dir).name}; add this file with a "
            "cases(kernel, device, quick) function"
        )
    spec = importlib.util.spec_from_file_location(f"_pybuild_bench_{Path(kernel_dir).name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the benchmark file is the kernel author's code: name it and the error
        where = f" line {e.lineno}" if isinstance(e, SyntaxError) and e.lineno else ""
        raise UsageError(f"{path}{where}: cannot be loaded ({type(e).__name__}: {e}); fix the benchmark file") from None
    if not callable(getattr(module, "cases", None)):
        raise UsageError(f"{path}: defines no cases(kernel, device, quick) function; add one that returns the cases")
    return module


def cases_of(module: Any, kernel: Any, device: str, quick: bool) -> list[Case]:
    """``module.cases(...)``, checked: the benchmark file is the kernel author's code, so its failure
    names the file and the error instead of surfacing as a traceback from the bench loop."""
    path = getattr(module, "__file__", module.__name__)
    try:
        cases = list(module.cases(kernel, device, quick))
    except Exception as e:
        raise UsageError(f"{path}: cases() failed ({type(e).__name__}: {e}); fix the benchmark file") from e
    bad = [c for c in cases if not isinstance(c, Case)]
    if bad:
        raise UsageError(f"{path}: cases() must return pybuild.bench.Case objects; got {bad[0]!r}")
    return cases
