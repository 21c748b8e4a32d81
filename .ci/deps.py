"""Print the farm's Python requirements, one per line, from pyproject.toml: ``[project].dependencies``
and the ``dev`` dependency group (PEP 735: tests, lint, types). The one list lives in pyproject.toml;
this only reads it, for a pip that cannot install a project's dependencies without the project.

    python3 .ci/deps.py              every requirement
    python3 .ci/deps.py --missing    only those this Python does not satisfy (empty: nothing to install)
    python3 .ci/deps.py --group dev  the group only
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    try:
        import tomli as tomllib
    except ImportError:
        sys.exit("deps.py: Python 3.10 needs tomli to read pyproject.toml: pip install tomli")

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def requirements(group: str | None = None) -> list[str]:
    data = tomllib.loads(PYPROJECT.read_text())
    groups = data.get("dependency-groups", {})
    if group is not None:
        return list(groups[group])
    return [*data["project"]["dependencies"], *groups.get("dev", [])]


def satisfied(requirement: str) -> bool:
    try:
        from importlib.metadata import PackageNotFoundError, version

        from packaging.requirements import Requirement
    except ImportError:  # a bare machine: install everything
        return False
    req = Requirement(requirement)
    if req.marker is not None and not req.marker.evaluate():
        return True  # not for this Python
    try:
        return req.specifier.contains(version(req.name), prereleases=True)
    except PackageNotFoundError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", action="store_true", help="only requirements this Python does not satisfy")
    parser.add_argument("--group", help="one dependency group only (e.g. dev)")
    args = parser.parse_args()
    for req in requirements(args.group):
        if not (args.missing and satisfied(req)):
            print(req)
    return 0


if __name__ == "__main__":
    sys.exit(main())
