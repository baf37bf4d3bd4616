"""Tables and progress for the commands: with rich when it is installed (``pip install .[ops]``) and
the output is a terminal, plain text otherwise: a pipe or a file gets aligned columns without box
characters, colours or padding to a width, ready for grep, cut and awk. Rich honours ``NO_COLOR``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any, TextIO

__all__ = ["Progress", "has_rich", "print_table"]


def has_rich() -> bool:
    if os.environ.get("SERVERLESS_RETRY_PLAIN"):  # force the plain output (tests, or by choice)
        return False
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


def _plain_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[object]], out: TextIO) -> None:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(col)] + [len(r[i]) for r in cells]) for i, col in enumerate(columns)]
    if title:
        out.write(f"{title}\n")
    out.write("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip() + "\n")
    for row in cells:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n")


def print_table(
    title: str, columns: Sequence[str], rows: Sequence[Sequence[object]], out: TextIO | None = None
) -> None:
    """One table: a rich table on a terminal when rich is there, aligned plain columns otherwise."""
    out = out or sys.stdout
    if not has_rich() or not out.isatty():
        _plain_table(title, columns, rows, out)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title or None, title_justify="left", show_edge=False, pad_edge=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(str(c) for c in row))
    Console(file=out, soft_wrap=False).print(table)


class Progress:
    """A progress bar on stderr (rich, when on a terminal), else a plain line at most every
    ``every`` seconds and one at the end; never on stdout, so piped results stay clean."""

    def __init__(
        self, description: str, total: int | None, *, every: float = 2.0, out: TextIO | None = None
    ) -> None:
        self.description = description
        self.total = total
        self.every = every
        self.out = out or sys.stderr
        self._bar: Any = None
        self._task: Any = None
        self._last = 0.0
        self._text = ""

    def __enter__(self) -> Progress:
        if has_rich() and self.out.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[counts]}"),
                TimeElapsedColumn(),
                console=Console(file=self.out),
                transient=False,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task(self.description, total=self.total, counts="")
        return self

    def update(self, done: int, text: str) -> None:
        self._text = text
        if self._bar is not None:
            self._bar.update(self._task, completed=done, counts=text)
            return
        now = time.monotonic()
        if now - self._last >= self.every:
            self._last = now
            of = f"/{self.total}" if self.total is not None else ""
            self.out.write(f"{self.description}: {done}{of} {text}\n")
            self.out.flush()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._bar is not None:
            self._bar.__exit__(exc_type, exc, tb)
