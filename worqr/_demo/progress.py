"""The demo's progress bar: `rich` when it is installed, else a plain text bar."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Protocol


class Progress(Protocol):
    def __enter__(self) -> Progress: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def advance(self, count: int) -> None: ...


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

    def __enter__(self) -> TextProgress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
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

    def __enter__(self) -> RichProgress:
        self._bar.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._bar.stop()

    def advance(self, count: int) -> None:
        self._bar.advance(self._task, count)


def make_progress(total: int, label: str) -> Progress:
    try:
        return RichProgress(total, label)
    except ImportError:
        return TextProgress(total, label)
