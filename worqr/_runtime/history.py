"""The worker's side of the metrics history: a `Hooks` that tallies job runs by
queue and minute in memory, and the loop that adds the tallies to Redis.

Per run the hooks cost a clock read, a lock, a dict lookup and, at its end, a
bisect over the fixed bucket bounds; they may be called from lane threads. The
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


class HistoryRecorder(Hooks):
    """Tallies job runs (hooks) and adds them to the history (`flush`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tally: Tally = {}
        self.offset = 0.0  # Redis's clock minus this host's, as of the last write
        # The current minute's rows by queue (also in the tally), and its bounds
        # on this host's clock: most calls need no division and no new tuple.
        self._rows: dict[str, list[int]] = {}
        self._minute = 0
        self._from = self._to = 0.0

    def _row(self, queue: str) -> list[int]:
        """The queue's row of the current minute (called under the lock)."""
        now = time.time()
        if not self._from <= now < self._to:
            self._turn(now)
        row = self._rows.get(queue)
        if row is None:
            row = self._tally.setdefault((queue, self._minute), [0] * WIDTH)
            self._rows[queue] = row
        return row

    def _turn(self, now: float) -> None:
        """Another minute (on Redis's clock, as the offset estimates it)."""
        server = now + self.offset
        self._minute = int(server) - int(server) % 60
        self._from = self._minute - self.offset
        self._to = self._from + 60
        self._rows = {}

    def on_job_run_started(self, run: JobRun) -> None:
        with self._lock:
            self._row(run.queue)[_STARTED] += 1

    def on_job_run_ended(
        self, run: JobRun, outcome: str, seconds: float, error: BaseException | None
    ) -> None:
        column = _COLUMN.get(outcome)
        if column is None:
            return  # returned, fenced: no end of the job's run here
        bucket = min(_FIRST_BUCKET + bisect_left(BOUNDS, seconds), _LAST_BUCKET)
        with self._lock:
            row = self._row(run.queue)
            row[column] += 1
            row[bucket] += 1

    def take(self) -> Tally:
        """The tallies so far; the recorder starts new ones."""
        with self._lock:
            tally, self._tally = self._tally, {}
            self._rows = {}
        return tally

    def give_back(self, tally: Tally) -> None:
        """Tallies a flush could not write: added to the current ones, except
        those past the history's retention."""
        oldest = time.time() + self.offset - TEN_MINUTES.keep
        with self._lock:
            for key, row in tally.items():
                if key[1] < oldest:
                    continue
                mine = self._tally.setdefault(key, [0] * WIDTH)
                for i, n in enumerate(row):
                    mine[i] += n

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
        with self._lock:
            self.offset = offset
            self._to = 0.0  # the next run finds the minute's bounds again

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
