"""Error types. Each class has its own exit code; the CLI prints ``str(error)`` as one line."""

from __future__ import annotations


class PybuildError(Exception):
    """Base class: a failure the user can fix, reported as one clear line."""

    exit_code = 1


class UsageError(PybuildError):
    """A wrong command-line argument."""

    exit_code = 2


class ManifestError(PybuildError):
    """A broken ``build.toml``."""

    exit_code = 3


class VariantsError(PybuildError):
    """A broken ``variants.json`` or a variant name that does not parse."""

    exit_code = 4


class ToolchainError(PybuildError):
    """A missing or unusable compiler, CMake, torch or CUDA toolkit."""

    exit_code = 5


class BuildError(PybuildError):
    """The compile or link step failed."""

    exit_code = 6


class CollectError(PybuildError):
    """A Nix ``result/`` tree that is corrupt, partial or unknown."""

    exit_code = 7


class CheckError(PybuildError):
    """A build that fails the compliance check."""

    exit_code = 8


class PublishError(PybuildError):
    """A release that cannot be published."""

    exit_code = 9


class InputLimitError(PybuildError):
    """An input beyond what pybuild reads: a tree nested too deep, a file too large, a special file
    (FIFO, device) where a regular one belongs, a file name that is not UTF-8."""

    exit_code = 10
