"""The boundary of an untrusted build step: CMake, ninja and the compilers run under bubblewrap.

``sandboxed`` turns one command into the same command inside a fresh bubblewrap sandbox: no network
(every namespace unshared), the whole file system read-only, the user's home folder replaced by an
empty one (the kernel folder and the toolchain's Python re-exposed read-only where they lie in it),
an empty ``/tmp``, no environment but an allow-list, and only the given folders writable (the
variant's work folder, its staging folder). Nix builds have their own sandbox; this gives the
per-variant path the same boundary. A kernel's C++ still runs when the built kernel is imported:
loading a kernel is trusting it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from .errors import ToolchainError

#: Environment variables a build step keeps (every other one, tokens included, is dropped).
ENV_ALLOWED = frozenset(
    {
        "PATH",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TZ",
        "SOURCE_DATE_EPOCH",
        "MAX_JOBS",
        "CMAKE_BUILD_PARALLEL_LEVEL",
        "TORCH_CUDA_ARCH_LIST",
        "CC",
        "CXX",
        "CUDACXX",
        "CUDAHOSTCXX",
        "CUDA_HOME",
        "CUDA_PATH",
        "NVCC_APPEND_FLAGS",
        "NVCC_PREPEND_FLAGS",
        "LD_LIBRARY_PATH",
        "VIRTUAL_ENV",
    }
)
#: Prefixes of the variables pybuild itself sets for a build (PYBUILD_DEP_<NAME>, ...).
ENV_ALLOWED_PREFIXES = ("PYBUILD_",)
#: The empty home folder inside the sandbox.
HOME = "/tmp/home"
#: What `pybuild build --sandbox` defaults to: on where this variable is "1" (CI sets it for pull requests).
DEFAULT_VARIABLE = "PYBUILD_SANDBOX"


def default_on() -> bool:
    """Whether builds are sandboxed without --sandbox (``PYBUILD_SANDBOX=1``, e.g. CI on pull requests)."""
    return os.environ.get(DEFAULT_VARIABLE) == "1"


def bwrap() -> str:
    found = shutil.which("bwrap")
    if found is None:
        raise ToolchainError(
            "--sandbox runs build steps under bubblewrap, which is not installed; install it "
            "(apt-get install bubblewrap) or build without --sandbox"
        )
    return found


def sandboxed_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` reduced to the allow-list, with an empty HOME and /tmp, and ccache off (its cache is a
    folder every build shares: an untrusted compile gets none)."""
    kept = {k: v for k, v in env.items() if k in ENV_ALLOWED or k.startswith(ENV_ALLOWED_PREFIXES)}
    return {**kept, "HOME": HOME, "TMPDIR": "/tmp", "CCACHE_DISABLE": "1"}


def sandboxed(
    cmd: list[str],
    env: dict[str, str],
    *,
    cwd: Path,
    writable: Iterable[Path],
    readable: Iterable[Path] = (),
    home: Path | None = None,
) -> list[str]:
    """``cmd`` as a bubblewrap command line: run in ``cwd`` with ``sandboxed_env(env)``, ``writable``
    folders the only ones it may write, ``readable`` ones re-exposed read-only inside the masked
    ``home`` (default: this user's home folder)."""
    home = (home or Path.home()).resolve()
    args = [bwrap(), "--die-with-parent", "--new-session", "--unshare-all", "--ro-bind", "/", "/"]
    args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--dir", HOME]
    if home != Path("/"):
        args += ["--tmpfs", str(home)]  # the user's files (keys, tokens, configs) are not there
    for path in _existing(readable):
        args += ["--ro-bind", str(path), str(path)]
    for path in _existing(writable):
        args += ["--bind", str(path), str(path)]
    args += ["--clearenv"]
    for key, value in sorted(sandboxed_env(env).items()):
        args += ["--setenv", key, value]
    return [*args, "--chdir", str(cwd.resolve()), "--", *cmd]


def _existing(paths: Iterable[Path]) -> list[Path]:
    """Resolved, existing, each once, parents before children (a bind inside another stays visible)."""
    return sorted({p.resolve() for p in paths if p.exists()}, key=lambda p: len(p.parts))
