"""The demo's progress bar: `rich` when it is installed, else a plain text bar."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class Progress(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...

    def advance(self, count: int) -> None: ...


@contextmanager
def shown(progress: Progress) -> Iterator[Progress]:
    """The bar drawn while the block runs, and stopped when it ends (an error too)."""
    progress.start()
    try:
        yield progress
    finally:
        progress.stop()


class TextProgress:
    """``label [#####.....] done/total``, redrawn in place on a terminal, else
    printed once at the end (a log file needs no animation)."""

    WIDTH = 40

    def __init__(self, total: int, label: str) -> None:
        self.total = total
        self.label = label
        self.done = 0
        self.live = sys.stdout.isatty()

    def _line(self) -> str:
        filled = self.WIDTH * self.done // max(1, self.total)
        bar = "#" * filled + "." * (self.WIDTH - filled)
        return f"  {self.label} [{bar}] {self.done}/{self.total}"

    def start(self) -> None:
        pass  # drawn on the first advance

    def stop(self) -> None:
        print(("\r" if self.live else "") + self._line(), flush=True)

    def advance(self, count: int) -> None:
        self.done += count
        if self.live:
            print("\r" + self._line(), end="", flush=True)


class RichProgress:
    def __init__(self, total: int, label: str) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
        from rich.progress import Progress as Bar

        self._bar = Bar(TextColumn(f"  {label}"), BarColumn(), MofNCompleteColumn())
        self._task = self._bar.add_task(label, total=total)

    def start(self) -> None:
        self._bar.start()

    def stop(self) -> None:
        self._bar.stop()

    def advance(self, count: int) -> None:
        self._bar.advance(self._task, count)


def make_progress(total: int, label: str) -> Progress:
    try:
        return RichProgress(total, label)
    except ImportError:
        return TextProgress(total, label)
