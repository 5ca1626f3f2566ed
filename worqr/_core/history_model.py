"""What the metrics history holds: the counts of one minute (or ten) of a queue,
their wire form, and percentiles read from its run-time histogram.

The histogram's buckets are fixed: upper bounds doubling from 125 µs to about
37 hours (`BOUNDS`). A run falls in the first bucket whose bound is at least its
run time (a longer run in the last); a percentile reads back as the bound of
the bucket it falls in, so it is at most 2x the true run time and never below it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

BOUNDS: tuple[float, ...] = tuple(0.000125 * 2**k for k in range(31))
"""Upper bounds of the run-time buckets, in seconds (0.000125 … 134217.728)."""

COUNTS = ("started", "finished", "retried", "failed", "cancelled")
"""The counts of a point, in their wire order (named as `get_stats` names events)."""

WIDTH = len(COUNTS) + len(BOUNDS)
"""A row of the worker's tally: the counts, then one cell per bucket."""


@dataclass(frozen=True, slots=True)
class HistoryPoint:
    """One minute (ten, past 8 hours) of a queue's job runs, by Redis's clock.

    ``started`` counts runs by the minute they started; ``finished``,
    ``retried`` (including rate-limited runs), ``failed`` and ``cancelled`` by
    the minute they ended. ``p50``/``p95``/``p99`` are run-time percentiles of
    the runs that ended, in seconds (the upper bound of their bucket), or None
    when none did. ``buckets``: (upper bound, runs) of each bucket with runs."""

    time: int
    step: int
    started: int
    finished: int
    retried: int
    failed: int
    cancelled: int
    p50: float | None
    p95: float | None
    p99: float | None
    buckets: tuple[tuple[float, int], ...]

    def as_dict(self) -> dict[str, object]:
        """The point as JSON-ready fields (without the buckets)."""
        fields: dict[str, object] = {"time": self.time, "step": self.step}
        fields.update(zip(COUNTS, self.counts(), strict=True))
        fields.update(p50=self.p50, p95=self.p95, p99=self.p99)
        return fields

    def counts(self) -> tuple[int, int, int, int, int]:
        return (self.started, self.finished, self.retried, self.failed, self.cancelled)


def encode(row: Sequence[int]) -> str:
    """A tally row (`WIDTH` cells) as the text the scripts add up:
    ``started,finished,retried,failed,cancelled;bucket:runs,...``."""
    head = ",".join(str(n) for n in row[: len(COUNTS)])
    base = len(COUNTS)
    tail = ",".join(f"{i}:{n}" for i, n in enumerate(row[base:]) if n)
    return f"{head};{tail}"


def decode(value: str) -> list[int]:
    """The row `encode` made (or history_add.lua stored)."""
    head, _, tail = value.partition(";")
    row = [0] * WIDTH
    for i, n in enumerate(head.split(",")[: len(COUNTS)]):
        row[i] = int(n)
    for cell in filter(None, tail.split(",")):
        bucket, _, n = cell.partition(":")
        row[len(COUNTS) + min(int(bucket), len(BOUNDS) - 1)] += int(n)
    return row


def percentile(histogram: Sequence[int], q: float) -> float | None:
    """The bound of the bucket holding the ``q`` quantile (0 < q <= 1) of the
    runs counted in ``histogram`` (one count per bucket); None without runs."""
    total = sum(histogram)
    if not total:
        return None
    rank = max(1, math.ceil(q * total))
    seen = 0
    for bound, runs in zip(BOUNDS, histogram, strict=False):
        seen += runs
        if seen >= rank:
            return bound
    return BOUNDS[-1]


def point(time: int, step: int, row: Sequence[int]) -> HistoryPoint:
    histogram = row[len(COUNTS) :]
    s, f, r, x, c = row[: len(COUNTS)]
    return HistoryPoint(
        time,
        step,
        s,
        f,
        r,
        x,
        c,
        percentile(histogram, 0.50),
        percentile(histogram, 0.95),
        percentile(histogram, 0.99),
        tuple((BOUNDS[i], n) for i, n in enumerate(histogram) if n),
    )


def totals(points: Iterable[HistoryPoint]) -> dict[str, int | float | None]:
    """The counts summed over ``points`` and the percentiles of all their runs."""
    sums = [0] * len(COUNTS)
    histogram = [0] * len(BOUNDS)
    index = {bound: i for i, bound in enumerate(BOUNDS)}
    for each in points:
        for i, n in enumerate(each.counts()):
            sums[i] += n
        for bound, runs in each.buckets:
            histogram[index[bound]] += runs
    result: dict[str, int | float | None] = dict(zip(COUNTS, sums, strict=True))
    for name, q in (("p50", 0.50), ("p95", 0.95), ("p99", 0.99)):
        result[name] = percentile(histogram, q)
    return result


def merge(series: Iterable[Iterable[HistoryPoint]]) -> list[HistoryPoint]:
    """Several queues' points as one history: the points of one time summed
    (counts and run-time buckets), oldest first (the mesh-wide chart)."""
    index = {bound: i for i, bound in enumerate(BOUNDS)}
    rows: dict[tuple[int, int], list[int]] = {}
    for points in series:
        for each in points:
            row = rows.setdefault((each.time, each.step), [0] * WIDTH)
            for i, n in enumerate(each.counts()):
                row[i] += n
            for bound, runs in each.buckets:
                row[len(COUNTS) + index[bound]] += runs
    return [point(time, step, row) for (time, step), row in sorted(rows.items())]
