"""A leading underscore means "this module only": no module of pybuild imports another's private
name, and no package of it exports one."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports() -> list[str]:
    found = []
    for path in sorted((REPO / "pybuild").rglob("*.py")):
        rel = path.relative_to(REPO)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("pybuild")):
                found += [f"{rel}:{node.lineno} imports {a.name}" for a in node.names if _is_private(a.name)]
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                names = [e.value for e in getattr(node.value, "elts", []) if isinstance(e, ast.Constant)]
                found += [f"{rel}:{node.lineno} exports {n}" for n in names if _is_private(str(n))]
    return found


def test_no_private_name_crosses_a_module() -> None:
    assert not private_imports(), "give these a public name (no leading underscore)"
