"""Terminal output: progress while building, a summary table at the end, one-line errors."""

from __future__ import annotations

import json
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

    def info(self, message: str) -> None:
        if not self.quiet:
            err_console.print(escape(message))

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
                    phase = message.split(" [")[0]
                    with lock:
                        if not self.quiet and (not last or last[-1] != phase):
                            last.append(phase)
                            err_console.print(escape(f"  {label}: {message}"))

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
                        description=escape(f"{label}: {message}"),
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
        table = Table(title=title, title_justify="left")
        for c in columns:
            table.add_column(c)
        for r in rows:
            table.add_row(*(escape(str(x)) for x in r))
        out_console.print(table)


def error(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {escape(message)}", markup=True, highlight=False, soft_wrap=True)
