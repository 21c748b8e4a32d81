"""One list of dependencies: pyproject.toml's ``[project].dependencies`` and its ``dev`` group, which
``.ci/setup`` installs (through ``.ci/deps.py``); every library pybuild imports is on it."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
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


#: Imported by pybuild but only needed where tests or the loader run: in the dev group, not the runtime list.
DEV_ONLY = {
    "kernels": "check: also loads the variant name with the loader's own parser where the loader is installed",
    "pytest": "pybuild.testing: helpers for kernels' own tests",
}


def listed(runtime_only: bool = False) -> set[str]:
    reqs = [*PYPROJECT["project"]["dependencies"], *([] if runtime_only else PYPROJECT["dependency-groups"]["dev"])]
    return {canonicalize_name(Requirement(r).name) for r in reqs}


def imported_modules(folders: tuple[str, ...] = ("pybuild",)) -> dict[str, str]:
    """Top-level third-party modules imported anywhere in ``folders`` -> a file importing it."""
    found: dict[str, str] = {}
    for path in sorted(p for folder in folders for p in (REPO / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ("pybuild", "tests"):
                    found.setdefault(top, str(path.relative_to(REPO)))
    return found


def test_one_list() -> None:
    assert "optional-dependencies" not in PYPROJECT["project"], "dependencies go in one list: the dev group"
    assert not list(REPO.glob("requirements*.txt")), "dependencies go in pyproject.toml, not requirements files"
    printed = subprocess.run(
        [sys.executable, str(REPO / ".ci" / "deps.py")], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert printed == [*PYPROJECT["project"]["dependencies"], *PYPROJECT["dependency-groups"]["dev"]]


@pytest.mark.parametrize("runtime_only", [False, True], ids=["any-list", "runtime"])
def test_every_imported_library_is_listed(runtime_only: bool) -> None:
    """Everything pybuild imports is listed; what it needs at run time (all but DEV_ONLY) is in
    ``[project].dependencies``, so an installed pybuild has it without the dev group."""
    dists = packages_distributions()
    names = listed(runtime_only)
    missing = []
    for module, where in imported_modules().items():
        if module in NOT_LISTED or (runtime_only and module in DEV_ONLY):
            continue
        candidates = {canonicalize_name(d) for d in dists.get(module, [])} or {canonicalize_name(module)}
        if not candidates & names:
            missing.append(f"{module} (imported in {where}; distribution {sorted(candidates)})")
    where = "[project].dependencies" if runtime_only else "[project].dependencies (or the dev group)"
    assert not missing, f"add to pyproject.toml's {where}: {missing}"


#: Imported by tests but installed otherwise, and why.
TESTS_NOT_LISTED = {
    "setuptools": "the build backend of a generated setup.py (a golden file), never imported by the suite",
    "test_editions": "a sibling test module (tests/unit), imported by name",
}


def test_every_library_the_tests_import_is_listed() -> None:
    """The suite runs in a fresh venv made by .ci/setup alone: what the tests import is on a list too."""
    dists = packages_distributions()
    names = listed()
    missing = []
    for module, where in imported_modules(("tests", "benchmarks")).items():
        if module in NOT_LISTED or module in TESTS_NOT_LISTED:
            continue
        candidates = {canonicalize_name(d) for d in dists.get(module, [])} or {canonicalize_name(module)}
        if not candidates & names:
            missing.append(f"{module} (imported in {where}; distribution {sorted(candidates)})")
    assert not missing, f"add to pyproject.toml's dev group: {missing}"


def test_setup_installs_tomli_before_reading_pyproject(tmp_path: Path) -> None:
    """On a fresh Python 3.10 (no tomllib, no tomli) ``.ci/setup`` installs tomli before deps.py reads
    pyproject.toml. A stand-in interpreter records what setup asks of it."""
    log, tomli = tmp_path / "calls", tmp_path / "tomli-installed"
    fake = tmp_path / "python"
    fake.write_text(f"""#!/usr/bin/env bash
echo "$*" >> {log}
case "$*" in
  "-c import tomllib") exit 1 ;;
  "-c import tomli") [ -f {tomli} ] ;;
  *"pip install -q tomli>=2") touch {tomli} ;;
  *deps.py*) [ -f {tomli} ] || {{ echo "deps.py: Python 3.10 needs tomli" >&2; exit 1; }} ;;
  *) exit 0 ;;
esac
""")
    fake.chmod(0o755)
    tools = tmp_path / "tools" / "actionlint" / "node_modules" / "@tktco" / "node-actionlint"
    tools.mkdir(parents=True)
    (tools / "main.wasm").write_bytes(b"")
    env = {**os.environ, "PYTHON": str(fake), "PYBUILD_TOOLS": str(tmp_path / "tools")}
    r = subprocess.run(["bash", str(REPO / ".ci" / "setup")], capture_output=True, text=True, env=env, cwd=REPO)
    assert r.returncode == 0, r.stderr
    calls = log.read_text().splitlines()
    install = next(i for i, c in enumerate(calls) if c.endswith("pip install -q tomli>=2"))
    assert install < next(i for i, c in enumerate(calls) if "deps.py" in c)
