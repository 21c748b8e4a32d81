"""The exit codes in one place: what ``--help`` says about them, and how an error becomes one line
on stderr and its exit code (each error class carries its own: ``pybuild.errors``)."""

from __future__ import annotations

import errno
import traceback
from collections.abc import Callable

from ..errors import PybuildError, UsageError
from ..ui import error

EPILOG = (
    "Run `python -m pybuild <command> --help` for a command's options. Exit codes: 0 done, 1 other failure "
    "(e.g. a file system error), 2 command-line argument, 3 build.toml, 4 variants.json, 5 toolchain, "
    "6 compile/link, 7 collect, 8 check, 9 publish, 10 an input beyond pybuild's limits (too deep, too "
    "large, a special file, a file name that is not UTF-8) in a tree a build reads; met in build.toml, "
    "variants.json or by collect, check or publish, such an input exits with their code."
)

#: Exit code of a file-system failure (and of any other failure without its own code).
OTHER = 1
#: Exit code of Ctrl-C, as a shell reports a process ended by SIGINT.
INTERRUPTED = 130

#: What to do about the file-system errors a command may meet, by errno.
OS_HINTS = {
    errno.EACCES: "check the permissions of that path (or pass another folder)",
    errno.EPERM: "check the permissions of that path (or pass another folder)",
    errno.EROFS: "that file system is read-only; pass a writable folder",
    errno.ENOSPC: "the disk is full; free some space (e.g. `python -m pybuild clean --build`) and run again",
    errno.EDQUOT: "the disk quota is used up; free some space and run again",
    errno.ENOTDIR: "a file stands where a folder is needed; move it away",
    errno.EISDIR: "a folder stands where a file is needed; move it away",
    errno.ENOENT: "it does not exist; check the path",
    errno.ENAMETOOLONG: "the path is too long; use a shorter folder",
}


def os_error_line(e: OSError) -> str:
    """A file-system failure as one line: the path, the system's words, and the fix."""
    where = f"{e.filename}: " if e.filename else ""
    hint = OS_HINTS.get(e.errno or 0, "")
    return f"{where}{e.strerror or e}{'; ' + hint if hint else ''}"


def guarded(work: Callable[[], int], debug: bool) -> int:
    """Run ``work`` and return its exit code; an error the user can act on is printed as one line
    (with ``debug``, after its traceback) and returns its class's exit code."""
    try:
        return work()
    except PybuildError as e:
        if debug and (not isinstance(e, UsageError) or e.__cause__ is not None):  # not argparse's own
            traceback.print_exc()
        error(str(e))
        return e.exit_code
    except KeyboardInterrupt:
        error("interrupted; build/ was left as it was")
        return INTERRUPTED
    except OSError as e:  # a file-system failure (permissions, a full disk, a path that is a file)
        if debug:
            traceback.print_exc()
        error(os_error_line(e))
        return OTHER
