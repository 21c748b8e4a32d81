"""Terminal output: progress while building, a summary table at the end, one-line errors."""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

# Without a terminal (CI logs, pipes) rich would wrap at 80 columns; tables stay readable at 160.
err_console = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 160)
out_console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_NEWLINE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def printable(text: str, newlines: bool = False) -> str:
    """``text`` with every control character written as an escape (``\\x1b``): a file name from a
    kernel folder cannot move the cursor, recolour the terminal or forge a line of output."""
    pattern = _CONTROL_BUT_NEWLINE if newlines else _CONTROL
    return pattern.sub(lambda m: m[0].encode("unicode_escape").decode("ascii"), text)


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


class TaskLine:
    """One progress line: ``line(message, fraction)`` shows where the work is; ``line.done()`` takes the
    line away once the work is over (what became of it is printed as a line of its own)."""

    def __init__(self, update: Callable[[str, float | None], None], remove: Callable[[], None]) -> None:
        self._update, self._remove = update, remove
        self._done = False

    def __call__(self, message: str, fraction: float | None) -> None:
        if not self._done:
            self._update(message, fraction)

    def done(self) -> None:
        if not self._done:
            self._done = True
            self._remove()


class Reporter:
    """Progress for long steps (to stderr); quiet mode prints nothing but errors."""

    def __init__(self, quiet: bool = False, json_mode: bool = False):
        self.quiet = quiet or json_mode
        self.json_mode = json_mode
        self.silent = quiet  # -q: not even warnings

    def info(self, message: str) -> None:
        if not self.quiet:
            err_console.print(escape(printable(message, newlines=True)))

    def warn(self, message: str) -> None:
        """One ``warning:`` line on stderr (shown with --json too; only -q silences it)."""
        if not self.silent:
            err_console.print(
                f"[yellow]warning:[/] {escape(printable(message))}", markup=True, highlight=False, soft_wrap=True
            )

    @contextmanager
    def task(self, label: str) -> Iterator[TaskLine]:
        """Yields ``update(message, fraction)`` that drives one progress line."""
        with self.tasks() as new_task:
            yield new_task(label)

    @contextmanager
    def tasks(self) -> Iterator[Callable[[str], TaskLine]]:
        """Several progress lines at once (parallel work): yields ``new_task(label)`` which returns
        that task's :class:`TaskLine`; it may be called from any thread."""
        if self.quiet or not sys.stderr.isatty():
            lock = threading.Lock()

            def new_plain(label: str) -> TaskLine:
                last: list[str] = []

                def update(message: str, fraction: float | None) -> None:
                    # one line per phase, and per translation unit while compiling (a log shows
                    # where a long CUDA build is)
                    step = message if message.startswith("compiling [") else message.split(" [")[0]
                    with lock:
                        if not self.quiet and (not last or last[-1] != step):
                            last.append(step)
                            err_console.print(escape(printable(f"  {label}: {message}")))

                return TaskLine(update, lambda: None)

            yield new_plain
            return
        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TimeElapsedColumn(),
            console=err_console,
            transient=True,
        ) as progress:

            def new_live(label: str) -> TaskLine:
                task_id = progress.add_task(label, total=None)

                def update(message: str, fraction: float | None) -> None:
                    progress.update(
                        task_id,
                        description=escape(printable(f"{label}: {message}")),
                        total=None if fraction is None else 1.0,
                        completed=fraction or 0.0,
                    )

                return TaskLine(update, lambda: progress.remove_task(task_id))

            yield new_live

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        if self.json_mode:
            out_console.print_json(json.dumps([dict(zip(columns, map(str, r), strict=False)) for r in rows]))
            return
        if self.quiet:
            return
        table = Table(title=escape(printable(title)), title_justify="left")
        for c in columns:
            table.add_column(c)
        for r in rows:
            table.add_row(*(escape(printable(str(x))) for x in r))
        out_console.print(table)


def warning(message: str) -> None:
    err_console.print(
        f"[bold yellow]warning:[/] {escape(printable(message))}", markup=True, highlight=False, soft_wrap=True
    )


def error(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {escape(printable(message))}", markup=True, highlight=False, soft_wrap=True)
