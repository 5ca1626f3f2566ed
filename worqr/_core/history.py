"""The metrics history of job queues: where its points live and the plans that
write and read them.

A point's counts sit in a hash field of a *block* key named by its resolution
and start: the minutes of one hour (``history:60:<hour>``), and the ten-minute
spans of twelve hours (``history:600:<start>``). Every write sets the block's
expiry to its end plus the retention of its resolution (8 hours of minutes, 72
hours of ten minutes), so Redis drops old history by itself: no cleaner. All
keys carry the queue's hash tag (one Cluster slot) and are declared to the
scripts by the builders here (the worker's tally names the minutes by Redis's
clock, which it estimates from each write's reply).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from .._checks import seconds as check_seconds
from .calls import Plan, command
from .history_model import HistoryPoint, decode, point
from .history_scripts import Update, history_add, history_read
from .state import CoreState, text


class Resolution(NamedTuple):
    step: int  # seconds a point spans
    block: int  # seconds a block key spans (at most 128 points: a listpack hash)
    keep: int  # seconds a point is kept at least

    def place(self, when: int) -> tuple[str, str, int]:
        """The block, field and expire_at of the point holding ``when``."""
        start = when - when % self.block
        field = str((when - start) // self.step)
        return f"{self.step}:{start}", field, start + self.block + self.keep


MINUTES = Resolution(60, 3600, 8 * 3600)
TEN_MINUTES = Resolution(600, 12 * 3600, 72 * 3600)
MAX_SINCE = float(TEN_MINUTES.keep)
"""The longest history a read may ask for, in seconds (72 hours)."""


def check_since(since: object) -> float:
    """``since`` if it is a number of seconds above 0 and at most 72 hours."""
    return check_seconds("since", since, above=True, high=MAX_SINCE)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(value: str) -> float:
    """``since`` as text (the command line's, the HTTP API's): seconds, or a
    number with a unit: ``90s``, ``30m``, ``8h``, ``3d`` (at most 72 hours)."""
    text = value.strip().lower()
    scale = _UNITS.get(text[-1:], 0)
    number = text[:-1] if scale else text
    try:
        seconds = float(number) * (scale or 1)
    except ValueError:
        raise ValueError(
            f"since must be seconds or a number with a unit (s, m, h, d), got {value!r}"
        ) from None
    return check_since(seconds)


def updates(tallies: Iterable[tuple[int, str]]) -> tuple[list[str], list[Update]]:
    """The blocks and updates of `history_add` for (minute, tally) pairs: each
    tally goes to its minute and to its ten minutes."""
    blocks: dict[str, int] = {}
    out: list[Update] = []
    for minute, tally in tallies:
        for resolution in (MINUTES, TEN_MINUTES):
            block, field, expire_at = resolution.place(minute)
            index = blocks.setdefault(block, len(blocks) + 1)
            out.append((str(index), field, tally, str(expire_at)))
    return list(blocks), out


@dataclass(eq=False)
class History:
    """Plans of the metrics history (`Worqr.get_history`, the worker's flush)."""

    state: CoreState

    def record(self, queue: str, tallies: Sequence[tuple[int, str]]) -> Plan[float]:
        """Add (minute start, tally text) pairs to ``queue``'s history; returns
        Redis's clock (epoch seconds) as the write ran."""
        keys = self.state.queue_keys(queue)
        blocks, changes = updates(tallies)
        now_ms = yield history_add(keys, blocks, changes)
        return int(now_ms) / 1000

    def server_time(self) -> Plan[float]:
        """Redis's clock, in epoch seconds."""
        secs, micros = yield command("TIME")
        return int(secs) + int(micros) / 1_000_000

    def read(self, queue: str, since: float) -> Plan[list[HistoryPoint]]:
        """The points of ``queue`` that start at or after now - ``since``, oldest
        first; minutes up to 8 hours back, ten minutes beyond."""
        since = check_since(since)
        keys = self.state.queue_keys(queue)
        now = yield from self.server_time()
        resolution = MINUTES if since <= MINUTES.keep else TEN_MINUTES
        start = now - since
        first = int(start) - int(start) % resolution.block
        starts = range(first, int(now) + 1, resolution.block)
        blocks = yield history_read(keys, [f"{resolution.step}:{s}" for s in starts])
        points = []
        for block_start, fields in zip(starts, blocks, strict=True):
            for i in range(0, len(fields), 2):
                when = block_start + int(fields[i]) * resolution.step
                if when >= start:
                    points.append(point(when, resolution.step, decode(text(fields[i + 1]))))
        points.sort(key=lambda each: each.time)
        return points
