"""One list of dependencies: pyproject.toml's ``[project].dependencies`` and its ``dev`` group, which
``.ci/setup`` installs (through ``.ci/deps.py``); every library pybuild imports is on it."""

from __future__ import annotations

import ast
import subprocess
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())

#: Imported by pybuild but deliberately not on the list, and why.
NOT_LISTED = {
    "torch": ".ci/setup installs torch==2.13.0 first (an unpinned torch requirement pulls gigabytes)",
    "httpx2": "huggingface_hub's HTTP client (publish classifies its transport errors)",
    "triton": "bench: optional, on GPU machines",
    "matplotlib": "bench: plots, optional",
}


def listed() -> set[str]:
    reqs = [*PYPROJECT["project"]["dependencies"], *PYPROJECT["dependency-groups"]["dev"]]
    return {canonicalize_name(Requirement(r).name) for r in reqs}


def imported_modules() -> dict[str, str]:
    """Top-level third-party modules imported anywhere in pybuild/ -> a file importing it."""
    found: dict[str, str] = {}
    for path in sorted((REPO / "pybuild").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "pybuild":
                    found.setdefault(top, str(path.relative_to(REPO)))
    return found


def test_one_list() -> None:
    assert "optional-dependencies" not in PYPROJECT["project"], "dependencies go in one list: the dev group"
    assert not list(REPO.glob("requirements*.txt")), "dependencies go in pyproject.toml, not requirements files"
    printed = subprocess.run([sys.executable, str(REPO / ".ci" / "deps.py")], capture_output=True, text=True,
                             check=True).stdout.splitlines()
    assert printed == [*PYPROJECT["project"]["dependencies"], *PYPROJECT["dependency-groups"]["dev"]]


def test_every_imported_library_is_listed() -> None:
    dists = packages_distributions()
    names = listed()
    missing = []
    for module, where in imported_modules().items():
        if module in NOT_LISTED:
            continue
        candidates = {canonicalize_name(d) for d in dists.get(module, [])} or {canonicalize_name(module)}
        if not candidates & names:
            missing.append(f"{module} (imported in {where}; distribution {sorted(candidates)})")
    assert not missing, f"add to pyproject.toml's dependencies (or the dev group): {missing}"
