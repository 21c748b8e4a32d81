"""The layers of pybuild, read from its source: no import circle, and no backend named outside
``pybuild/backends/``.

The import graph counts every import: at module level, inside a function and under
``TYPE_CHECKING``; importing ``pybuild.a.b`` counts as importing the package ``pybuild.a`` too (Python
runs its ``__init__`` first). A circle is reported as the modules of one strongly connected component.

"Naming a backend" is a string constant equal to a backend's name (every ``name`` and
``noarch-name`` of ``backends.json``) used as a value the code decides on: an operand of a comparison
(``==``, ``!=``, ``in``, ``is``), a key of a dict literal, a subscript, an element of a tuple, list or
set literal, the key of ``.get``/``.pop``/``.setdefault``, or a ``case`` pattern; and any ``Backend.X``
member. Text that only mentions a backend (messages, help, docstrings) is not a decision and is not
counted. :data:`ALLOWED` lists the few places that are data of another format, each with its reason.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "pybuild"
BACKENDS_DIR = PACKAGE / "backends"

#: (file, backend value) -> why that file may name it. Each entry must still be used.
ALLOWED: dict[tuple[str, str], str] = {
    # Upstream's editions are fixed formats: the [general.<backend>] tables each one defines are part
    # of that edition's schema (v3/v4: cuda, neuron, xpu; v5 adds tpu), whatever backends pybuild has.
    ("pybuild/manifest/editions/v3.py", "cuda"): "upstream edition 3's [general.cuda] table",
    ("pybuild/manifest/editions/v3.py", "neuron"): "upstream edition 3's [general.neuron] table",
    ("pybuild/manifest/editions/v3.py", "xpu"): "upstream edition 3's [general.xpu] table",
    ("pybuild/manifest/editions/v4.py", "cuda"): "upstream edition 4's [general.cuda] table",
    ("pybuild/manifest/editions/v4.py", "neuron"): "upstream edition 4's [general.neuron] table",
    ("pybuild/manifest/editions/v4.py", "xpu"): "upstream edition 4's [general.xpu] table",
    ("pybuild/manifest/editions/v5.py", "cuda"): "upstream edition 5's [general.cuda] table",
    ("pybuild/manifest/editions/v5.py", "neuron"): "upstream edition 5's [general.neuron] table",
    ("pybuild/manifest/editions/v5.py", "tpu"): "upstream edition 5's [general.tpu] table",
    ("pybuild/manifest/editions/v5.py", "xpu"): "upstream edition 5's [general.xpu] table",
    # Names a kernel may not take because torch and C++ already use them (`torch.ops.cuda`), not a backend.
    ("pybuild/scaffold.py", "cuda"): "a namespace torch takes (torch.ops.cuda), not a backend",
    # bench-build's machine description: "cpu" is the processor's model name, not a backend.
    ("pybuild/buildbench.py", "cpu"): "the machine description's processor model, not a backend",
}

#: The benchmark harness times on torch's device type "cuda" (CUDA events, CUDA graphs, nvidia-smi)
#: or on the CPU: torch's device names, which the backends do not own.
TORCH_DEVICE_FILES = (
    "pybuild/bench/environment.py",
    "pybuild/bench/runner.py",
    "pybuild/bench/sweep.py",
    "pybuild/bench/timing.py",
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The pybuild modules the module ``name`` (at ``path``) imports, wherever the import stands."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                prefix = ".".join([*base, *([node.module] if node.module else [])])
            else:
                prefix = node.module or ""
            targets = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in known else prefix for a in node.names]
        for target in targets:
            while target not in known and "." in target:
                target = target.rpartition(".")[0]
            if target not in known:
                continue
            parts = target.split(".")
            for i in range(2, len(parts) + 1):  # the packages above it run first
                above = ".".join(parts[:i])
                if above in known and above != name and not name.startswith(above + "."):
                    yield above


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: set(imported(name, path, known)) for name, path in known.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_graph_reader_sees_every_kind_of_import(tmp_path: Path) -> None:
    """A circle closed by a function-level import, and one closed under TYPE_CHECKING, are both found."""
    pkg = tmp_path / "pybuild"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .low import X\n")
    (pkg / "sub" / "low.py").write_text("def f():\n    from ..high import Y\n")
    (pkg / "high.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .sub.low import X\n")
    (pkg / "other.py").write_text("from pybuild import high\n")
    known = {module_name_in(tmp_path, p): p for p in sorted(pkg.rglob("*.py"))}
    graph = {n: set(imported(n, p, known)) for n, p in known.items()}
    assert graph["pybuild.high"] == {"pybuild.sub", "pybuild.sub.low"}
    assert circles(graph) == [["pybuild.high", "pybuild.sub", "pybuild.sub.low"]]


def module_name_in(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_import_circle() -> None:
    found = circles(import_graph())
    assert not found, "import circles (move the shared fact down a layer):\n" + "\n".join(
        f"{len(c)} modules: {' '.join(c)}" for c in found
    )


def backend_values() -> set[str]:
    entries = json.loads((BACKENDS_DIR / "backends.json").read_text(encoding="utf-8"))["backends"]
    return {e["name"] for e in entries} | {e["noarch-name"] for e in entries}


def _constants(node: ast.AST | None, values: set[str]) -> Iterator[ast.Constant]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in values:
        yield node
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for element in node.elts:
            yield from _constants(element, values)


def named_backends(tree: ast.AST, values: set[str]) -> Iterator[tuple[int, str]]:
    """(line, value) for each place ``tree`` decides on a backend's name (see the module docstring)."""
    for node in ast.walk(tree):
        hits: list[ast.Constant] = []
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                hits += _constants(operand, values)
        elif isinstance(node, ast.Dict):
            for k in node.keys:
                hits += _constants(k, values)
        elif isinstance(node, ast.Subscript):
            hits += _constants(node.slice, values)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            hits += _constants(node, values)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            if node.func.attr in ("get", "pop", "setdefault"):
                hits += _constants(node.args[0], values)
        elif isinstance(node, ast.MatchValue):
            hits += _constants(node.value, values)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Backend":
            yield node.lineno, f"Backend.{node.attr}"
        for hit in hits:
            yield hit.lineno, hit.value


def backend_names_outside_backends() -> list[str]:
    values = backend_values()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if path.is_relative_to(BACKENDS_DIR) or rel in TORCH_DEVICE_FILES:
            continue
        for line, value in sorted(set(named_backends(ast.parse(path.read_text(encoding="utf-8")), values))):
            found.append(f"{rel}:{line}: {value}")
    return found


def test_scan_finds_each_way_of_naming_a_backend() -> None:
    code = (
        'if v.backend == "cuda": pass\n'
        'x = {"rocm": 1}\n'
        'y = d["metal"]\n'
        'z = ("auto", "xpu")\n'
        'w = d.get("cpu")\n'
        'match b:\n    case "npu": pass\n'
        "u = Backend.CUDA\n"
        'msg = "build for cuda or cpu"\n'  # text, not a decision
    )
    found = sorted(set(named_backends(ast.parse(code), backend_values())))
    assert found == [(1, "cuda"), (2, "rocm"), (3, "metal"), (4, "xpu"), (5, "cpu"), (7, "npu"), (8, "Backend.CUDA")]


def test_no_backend_named_outside_backends() -> None:
    found = backend_names_outside_backends()
    unexplained = [f for f in found if (f.split(":")[0], f.split(": ")[-1]) not in ALLOWED]
    assert not unexplained, "backend names outside pybuild/backends/ (ask the backend instead):\n" + "\n".join(
        unexplained
    )


def test_every_allowance_is_used() -> None:
    used = {(f.split(":")[0], f.split(": ")[-1]) for f in backend_names_outside_backends()}
    assert not set(ALLOWED) - used, f"stale entries of ALLOWED: {sorted(set(ALLOWED) - used)}"
    for rel in TORCH_DEVICE_FILES:
        assert (REPO / rel).is_file(), f"{rel} is gone; drop it from TORCH_DEVICE_FILES"
