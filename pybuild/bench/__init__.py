"""``python -m pybuild bench``: time a kernel against torch eager, ``torch.compile`` and device copies.

Where the cases are: each kernel keeps its own in ``kernels/<name>/benchmarks/cases.py``, beside
its ``tests/`` (``cases.cases_path(kernel_dir)``; ``bench`` with no kernel named runs every kernel
that has one). That file defines

- ``cases(kernel, device, quick) -> list[Case]``: the fixed cases, each with its ``Target`` s
  (``kernel`` is the kernel's loaded package); and optionally
- ``sweep_ops(kernel, device) -> list[SweepOp]``: the ops ``bench --sweep N`` draws random shapes for,

and imports only the names below (``from pybuild.bench import Case, Target, SweepOp``).

The modules: ``cases`` (the file's contract, loading it), ``timing`` (CUDA graphs, launches, wall
clock, copies), ``environment`` (versions, device, commit), ``runner`` (the fixed cases, their
targets and verdicts), ``report`` (tables, plot, JSON), ``sweep`` with ``sweep_shapes``,
``compile_workers`` and ``sweep_report`` (the random-shape sweep), and ``actions`` (the command's
two actions, whole).
"""

from __future__ import annotations

from .actions import Output, bench_cases, bench_sweep
from .cases import CASES_FILE, Case, Target, cases_path, has_cases, load_cases_module
from .environment import device_slug, environment, resolve_device
from .report import SUMMARY_COLUMNS, markdown_table, summary_rows, write_outputs
from .runner import CaseResult, finalize, run, run_case
from .sweep_op import SweepOp
from .sweep_shapes import Distribution, Shape, parse_shapes
from .timing import Timing, round_order

__all__ = [
    "CASES_FILE",
    "SUMMARY_COLUMNS",
    "Case",
    "CaseResult",
    "Distribution",
    "Output",
    "Shape",
    "SweepOp",
    "Target",
    "Timing",
    "bench_cases",
    "bench_sweep",
    "cases_path",
    "device_slug",
    "environment",
    "finalize",
    "has_cases",
    "load_cases_module",
    "markdown_table",
    "parse_shapes",
    "resolve_device",
    "round_order",
    "run",
    "run_case",
    "summary_rows",
    "write_outputs",
]
