"""The environment a kernel's own tests run in, under ``pybuild test`` and ``pybuild shell``: what
kernel-builder's test shell gives a kernel's tests, so that suites written for it run unmodified.

- The built variant's folder comes first on the import path, so ``import rotary`` imports the build;
  a source folder of the same name at the kernel's root does not shadow it (``PYTHONSAFEPATH`` keeps
  the working folder off the path, and the pytest plugin :mod:`pybuild.pytest_plugin` resolves the
  kernel's package to the build even where pytest puts the kernel's root on the path).
- ``LOCAL_KERNELS`` maps the kernel's repo id (``[general.hub] repo-id``) and every repo id of the
  same kernel its tests name (``get_kernel("kernels-community/rotary")``) to the built variant.
- The plugin registers the ``kernels_ci`` marker (``--ci`` runs only the tests it marks).

Pure: it reads the kernel's tests, never writes.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import safeload
from .errors import PybuildError

if TYPE_CHECKING:
    from .host import TorchInfo
    from .manifest import Manifest
    from .variants import Variant

#: The folder holding the ``pybuild`` package (its plugin and ``pybuild.testing``), put on the path.
PYBUILD_PARENT = Path(__file__).resolve().parent.parent
PLUGIN = "pybuild.pytest_plugin"
#: ``{"package": "variant folder"}``: the packages the plugin resolves to the build (JSON).
PACKAGES_VAR = "PYBUILD_TEST_PACKAGES"
#: The marker of the tests kernel-builder's CI runs.
CI_MARKER = "kernels_ci"
#: A quoted repo id in a test file: "org/name".
_REPO_ID = re.compile(r"""["']([A-Za-z0-9][-A-Za-z0-9_.]*/([A-Za-z0-9][-A-Za-z0-9_.]*))["']""")
#: The file names pytest collects by default.
_TEST_FILES = ("test_*.py", "*_test.py")


@dataclass(frozen=True)
class Runner:
    """A Python that runs the tests: this one (``env`` None) or a per-variant environment's."""

    python: str
    torch: TorchInfo
    env: Path | None = None

    @property
    def label(self) -> str:
        return "this Python" if self.env is None else str(self.env)


def variant_dir(manifest: Manifest, variant: Variant) -> Path:
    return (manifest.root / "build" / variant.name).resolve()


def check_built(manifest: Manifest, variant: Variant) -> None:
    """``variant`` of ``manifest`` is built (its metadata.json is there), else one line saying how to build it."""
    folder = manifest.root / "build" / variant.name
    if not (folder / "metadata.json").is_file():
        raise PybuildError(
            f"{folder}: not built, and --no-build builds nothing; build it first "
            f"(python -m pybuild build {manifest.root} --variant {variant.name}) or drop --no-build"
        )


def suite_files(manifest: Manifest) -> list[Path]:
    """The files pytest collects by default from the kernel's ``tests/``."""
    tests = manifest.root / "tests"
    found = {p for p in safeload.files(tests) if any(p.match(pat) for pat in _TEST_FILES) and p.is_file()}
    return sorted(found)


def check_tests(manifest: Manifest) -> None:
    """The kernel has tests to run, else one line saying so: a kernel without tests never passes."""
    tests = manifest.root / "tests"
    if not tests.is_dir():
        raise PybuildError(
            f"{manifest.root}: no tests/ folder, so there is nothing to test; add tests/test_{manifest.python_name}.py "
            "(pytest tests that import the kernel)"
        )
    if not suite_files(manifest):
        raise PybuildError(
            f"{tests}: no test files (pytest collects {' and '.join(_TEST_FILES)}); add "
            f"tests/test_{manifest.python_name}.py"
        )


def local_kernel_ids(manifest: Manifest) -> list[str]:
    """The repo ids ``LOCAL_KERNELS`` maps to the build: the kernel's own (``[general.hub] repo-id``)
    and each repo id its tests name whose repo is this kernel (by name, ``-`` or ``_`` spelled)."""
    names = {manifest.name, manifest.python_name}
    ids = [manifest.repo_id] if manifest.repo_id else []
    tests = manifest.root / "tests"
    for path in safeload.files(tests) if tests.is_dir() else []:
        if path.suffix != ".py" or not path.is_file():
            continue
        for repo_id, name in _REPO_ID.findall(path.read_text(errors="replace")):
            if name in names and repo_id not in ids:
                ids.append(repo_id)
    return ids


def suite_environ(
    manifest: Manifest, variant: Variant, base: Mapping[str, str], runner: Runner | None = None
) -> dict[str, str]:
    """``base`` (the caller's environment) with what the kernel's tests need for ``variant``; with
    ``runner``, its ``bin/`` first on PATH (for a shell: `python`, `pytest` are the runner's)."""
    built = variant_dir(manifest, variant)
    env = dict(base)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(built), str(PYBUILD_PARENT), base.get("PYTHONPATH")]))
    env["PYTHONSAFEPATH"] = "1"  # the working folder (the kernel's root) is not on the path
    env[PACKAGES_VAR] = json.dumps({manifest.python_name: str(built)})
    env["PYTEST_ADDOPTS"] = " ".join(filter(None, [f"-p {PLUGIN}", base.get("PYTEST_ADDOPTS")]))
    env["PYBUILD_TEST_VARIANT"] = variant.name
    ids = local_kernel_ids(manifest)
    if ids:  # tests written as upstream's, get_kernel(repo-id): the variant folder itself is loaded
        env["LOCAL_KERNELS"] = ":".join(f"{i}={built}" for i in ids)
    if runner is not None:
        bin_dir = str(Path(runner.python).parent)
        env["PATH"] = os.pathsep.join(filter(None, [bin_dir, base.get("PATH")]))
        if runner.env is not None:
            env["VIRTUAL_ENV"] = str(runner.env)
    return env


def pytest_command(runner: Runner, manifest: Manifest, pytest_args: list[str], ci: bool = False) -> list[str]:
    """The command that runs the kernel's tests/ (``ci``: only those marked ``kernels_ci``)."""
    marker = ["-m", CI_MARKER] if ci else []
    tests = str((manifest.root / "tests").resolve())
    return [runner.python, "-m", "pytest", tests, "-p", "no:cacheprovider", *marker, *pytest_args]
