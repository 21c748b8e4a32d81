"""``python -m pybuild``: the command line is ``pybuild.cli``."""

from .cli import entry, main

__all__ = ["entry", "main"]

if __name__ == "__main__":
    entry()
