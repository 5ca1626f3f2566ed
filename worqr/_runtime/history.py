"""The worker's side of the metrics history: a `Hooks` that tallies job runs by
queue and minute in memory, and the loop that adds the tallies to Redis.

Per run the hooks cost a clock read, a dict lookup in the calling thread's own
tally (no lock: only that thread writes it, and the flush sends what grew
since it last read) and, at its end, a bisect over the fixed bucket bounds. The
flush runs on the worker's loop every `FLUSH_EVERY` seconds: one script call
per queue that ran jobs since the last one (at full drain, thousands of jobs
per call), plus a last one when the worker stops.

Outcomes counted (`JOB_RUN_OUTCOMES`): "finished", "retried" and "rate_limited"
(both count as retried: the job will run again), "failed" and "cancelled", each
with its run time. A "returned" or "fenced" run is not an end of the job's run
by this worker (the job goes back, or a peer has it): it is counted started only.

Redis outages: a flush that fails keeps its tallies and the next one sends them
again (a write whose reply was lost may so be counted twice); tallies older than
the history's retention are dropped.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from bisect import bisect_left

from .._clients.async_client import AsyncWorqr
from .._core.history import TEN_MINUTES
from .._core.history_model import BOUNDS, COUNTS, WIDTH, encode
from .._hooks import Hooks, JobRun

logger = logging.getLogger("worqr.worker")

FLUSH_EVERY = 1.0
"""Seconds between flushes of the tallies."""

LAST_FLUSH = 2.0
"""Seconds a stopping worker gives its last flush."""

_COLUMN = {
    "finished": COUNTS.index("finished"),
    "retried": COUNTS.index("retried"),
    "rate_limited": COUNTS.index("retried"),
    "failed": COUNTS.index("failed"),
    "cancelled": COUNTS.index("cancelled"),
}
_STARTED = COUNTS.index("started")
_FIRST_BUCKET = len(COUNTS)
_LAST_BUCKET = WIDTH - 1

Tally = dict[tuple[str, int], list[int]]
"""(queue, minute start on Redis's clock) -> row (`history_model.WIDTH` cells)."""


PRUNE_AFTER = 60.0
"""Seconds after its minute ended that a thread's row is dropped (its last
counts sent): no thread writes a past minute's row (one that turned to the new
minute got a new row), unless stalled that long between its read and its write."""


def _add(into: Tally, rows: Tally) -> None:
    for key, row in rows.items():
        mine = into.get(key)
        if mine is None:
            into[key] = list(row)
        else:
            for i, n in enumerate(row):
                mine[i] += n


class _ThreadTally:
    """One thread's counts: only that thread writes them, and only by adding,
    so the hooks take no lock. The flush reads them (a copy of a row, or of
    the dict of rows, is one step for the interpreter: never half written) and
    sends what grew since it last read (``sent``, the flush's own)."""

    __slots__ = ("end", "minute", "rows", "sent", "start", "today")

    def __init__(self) -> None:
        self.rows: Tally = {}
        self.today: dict[str, list[int]] = {}  # the current minute's rows by queue (in rows)
        self.minute = 0
        self.start = self.end = 0.0  # the minute's bounds on this host's clock
        self.sent: Tally = {}


class HistoryRecorder(Hooks):
    """Tallies job runs (hooks) and adds them to the history (`flush`)."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()  # the list of tallies (a thread's first run adds to it)
        self._tallies: list[_ThreadTally] = []
        self._kept: Tally = {}  # a failed flush's counts, for the next one (the flush's own)
        self.offset = 0.0  # Redis's clock minus this host's, as of the last write

    def _row(self, queue: str) -> list[int]:
        """This thread's row of ``queue`` for the current minute: most runs need
        no lock, no division and no new object."""
        try:
            tally: _ThreadTally = self._local.tally
        except AttributeError:
            tally = self._local.tally = _ThreadTally()
            with self._lock:
                self._tallies.append(tally)
        now = time.time()
        if tally.start <= now < tally.end:
            row = tally.today.get(queue)
            if row is not None:
                return row
        else:
            server = now + self.offset
            tally.minute = int(server) - int(server) % 60
            tally.start = tally.minute - self.offset
            tally.end = tally.start + 60
            tally.today = {}
        row = tally.rows.setdefault((queue, tally.minute), [0] * WIDTH)
        tally.today[queue] = row
        return row

    def on_job_run_started(self, run: JobRun) -> None:
        self._row(run.queue)[_STARTED] += 1

    def on_job_run_ended(
        self, run: JobRun, outcome: str, seconds: float, error: BaseException | None
    ) -> None:
        column = _COLUMN.get(outcome)
        if column is None:
            return  # returned, fenced: no end of the job's run here
        row = self._row(run.queue)
        row[column] += 1
        row[min(_FIRST_BUCKET + bisect_left(BOUNDS, seconds), _LAST_BUCKET)] += 1

    def take(self) -> Tally:
        """What every thread counted since the last take (and what a failed
        flush kept); rows of minutes long past are dropped once sent."""
        taken, self._kept = self._kept, {}
        with self._lock:
            tallies = list(self._tallies)
        stale = time.time() + self.offset - 60 - PRUNE_AFTER
        for tally in tallies:
            for key, row in list(tally.rows.items()):
                now, before = list(row), tally.sent.get(key)
                grown = now if before is None else [a - b for a, b in zip(now, before, strict=True)]
                if any(grown):
                    _add(taken, {key: grown})
                    tally.sent[key] = now
                if key[1] < stale:
                    del tally.rows[key]
                    tally.sent.pop(key, None)
        return taken

    def give_back(self, taken: Tally) -> None:
        """Counts a flush could not write, for the next one; those past the
        history's retention are dropped."""
        oldest = time.time() + self.offset - TEN_MINUTES.keep
        _add(self._kept, {key: row for key, row in taken.items() if key[1] >= oldest})

    async def sync_clock(self, client: AsyncWorqr) -> None:
        """Estimate Redis's clock before the first runs are tallied."""
        before = time.time()
        server = await client.internals.server_time()
        self._set_offset(server - (before + time.time()) / 2)

    async def flush(self, client: AsyncWorqr) -> None:
        """Add the tallies to Redis, one call per queue; failed ones are kept."""
        tally = self.take()
        if not tally:
            return
        by_queue: dict[str, Tally] = {}
        for key, row in tally.items():
            by_queue.setdefault(key[0], {})[key] = row
        results = await asyncio.gather(
            *(self._write(client, queue, rows) for queue, rows in by_queue.items()),
            return_exceptions=True,
        )
        for rows, result in zip(by_queue.values(), results, strict=True):
            if isinstance(result, BaseException):
                logger.debug("writing the history failed (kept for the next flush): %r", result)
                self.give_back(rows)

    async def _write(self, client: AsyncWorqr, queue: str, rows: Tally) -> None:
        tallies = [(minute, encode(row)) for (_, minute), row in sorted(rows.items())]
        before = time.time()
        server = await client.internals.record_history(queue, tallies)
        self._set_offset(server - (before + time.time()) / 2)

    def _set_offset(self, offset: float) -> None:
        self.offset = offset
        with self._lock:
            tallies = list(self._tallies)
        for tally in tallies:
            tally.end = 0.0  # its thread's next run finds the minute's bounds again

    async def run(self, client: AsyncWorqr) -> None:
        """Flush every `FLUSH_EVERY` seconds until cancelled."""
        try:
            await self.sync_clock(client)
        except Exception as error:  # the first write's reply sets it then
            logger.debug("reading Redis's clock failed: %r", error)
        while True:
            await asyncio.sleep(FLUSH_EVERY)
            await self.flush(client)

    async def last_flush(self, client: AsyncWorqr) -> None:
        """The tallies of a stopping worker, given `LAST_FLUSH` seconds."""
        try:
            await asyncio.wait_for(self.flush(client), LAST_FLUSH)
        except Exception as error:
            logger.warning("the last runs' history was not written: %r", error)
