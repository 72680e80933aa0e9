"""A rich progress bar on stderr for long passes over attempts, drawn only on an interactive terminal."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

Advance = Callable[[int], None]


def _ignore(_: int) -> None:
    return None


@contextmanager
def progress_bar(enabled: bool, label: str, total: int) -> Iterator[Advance]:
    """Yield ``advance(n)``; a bar redrawn into a log file or CI output is noise, so none is drawn there."""
    console = Console(stderr=True)
    if not enabled or not console.is_terminal or console.is_dumb_terminal:
        yield _ignore
        return
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=console) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)
