"""The metrics history's budgets: Redis memory per queue at full retention, and
the Redis commands it adds to a job drain.

    python -m benchmarks.history                    # both parts, about a minute
    python -m benchmarks.history --jobs 5000        # a smoke run
    python -m benchmarks.history --jobs 20000 --pairs 6   # the drain with / without it

Starts its own redis-server (or uses ``--url``; keys under a fresh prefix).

Memory: writes 72 hours of minutes of one queue with explicit times (what a
busy queue's workers write: every count non-zero, runs spread over eight
run-time buckets), one `history_add` call per hour of minutes, as the worker's
flush does, then sums ``MEMORY USAGE`` over the queue's history keys (the ones
Redis has not expired: 8 hours of minutes, 72 of ten minutes): budget 200 KB.
It also prints the growth of ``used_memory``, which swings by a hundred KB
from run to run (connection buffers, the allocator), so the verdict is the keys'.

Drain: ``--jobs`` no-op jobs submitted, then one `worqr.Worker` (default
settings, a sync handler: the lanes call the hooks from their threads) drains
them; prints jobs per second and how many `history_add` calls its flushes made
(the only commands the history adds). Budget: at most one per 16 jobs. With
``--pairs P``: P pairs of drains back to back, one with the history and one
without (the recorder taken out), and the median ratio of their rates (budget:
within 3%); pairing keeps a shared machine's load out of the ratio as far as
it can.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import threading
import time
import uuid
from dataclasses import dataclass

import redis

import worqr
from worqr._core.history_model import COUNTS, WIDTH, encode
from worqr._hooks import HookList
from worqr._runtime.history import HistoryRecorder
from worqr.embedded import EmbeddedRedis

MEMORY_BUDGET = 200 * 1024
JOBS_PER_COMMAND = 16


def busy_tally(minute: int) -> str:
    """A busy minute: about 3,000 runs, every outcome, eight buckets."""
    row = [0] * WIDTH
    row[: len(COUNTS)] = [3000 + minute % 97, 2990, 7, 3, 1]
    for offset, share in enumerate((40, 300, 900, 1100, 500, 150, 9, 1)):
        row[len(COUNTS) + 6 + offset] = share
    return encode(row)


def memory(url: str) -> dict[str, object]:
    prefix = f"bench{uuid.uuid4().hex[:8]}"
    raw = redis.Redis.from_url(url)
    with worqr.Worqr(url, prefix=prefix) as wq:
        now = int(wq.internals.server_time())
        wq.internals.record_history("warm-up", [(now - now % 60, busy_tally(0))])
        wq.get_history("warm-up")  # the scripts loaded and the connection's buffers grown
        raw.delete(*raw.scan_iter(match=f"{{{prefix}:warm-up}}:*"))
        before = int(raw.info("memory")["used_memory"])
        last = now - now % 60
        minutes = list(range(last - 72 * 3600 + 60, last + 60, 60))
        for start in range(0, len(minutes), 60):
            hour = minutes[start : start + 60]
            wq.internals.record_history("q", [(m, busy_tally(m)) for m in hour])
        points = len(wq.get_history("q", since=8 * 3600)) + len(
            wq.get_history("q", since=72 * 3600)
        )
    keys = list(raw.scan_iter(match=f"{{{prefix}:q}}:history:*", count=1000))
    used = sum(int(raw.memory_usage(key, samples=0) or 0) for key in keys)
    encodings = sorted({raw.object("encoding", key).decode() for key in keys})
    grown = int(raw.info("memory")["used_memory"]) - before
    raw.close()
    return {
        "keys": len(keys),
        "points": points,
        "memory_usage": used,
        "used_memory_growth": grown,
        "encodings": encodings,
    }


class CountingRecorder(HistoryRecorder):
    """Counts the `history_add` calls of a worker's flushes."""

    writes = 0

    async def _write(self, client: worqr.AsyncWorqr, queue: str, rows: dict) -> None:  # type: ignore[type-arg]
        CountingRecorder.writes += 1
        await super()._write(client, queue, rows)


def drain(url: str, jobs: int, *, history: bool = True) -> dict[str, float]:
    """``jobs`` no-op jobs drained by one worker (sync handler: its lanes call
    the hooks from their threads), from its start; ``history=False`` takes the
    recorder out (what the worker cost before the history)."""
    prefix = f"bench{uuid.uuid4().hex[:8]}"
    with worqr.Worqr(url, prefix=prefix) as wq:
        for start in range(0, jobs, 1000):
            wq.submit_many("drain", ["x"] * min(1000, jobs - start))
    worker = worqr.Worker(url, prefix=prefix)
    recorder = CountingRecorder()
    worker._history = recorder  # the counting one in its place, or none
    worker._hooks._hooks.clear()
    worker._hooks._listeners.clear()
    if history:
        worker._hooks.add(recorder)
    CountingRecorder.writes = 0
    lock, done, all_done = threading.Lock(), [0], threading.Event()

    @worker.job("drain")
    def handle(payload: str) -> None:
        with lock:
            done[0] += 1
            if done[0] == jobs:
                all_done.set()

    async def run() -> float:
        started = time.perf_counter()
        async with worker:
            await asyncio.to_thread(all_done.wait)
            seconds = time.perf_counter() - started
        return seconds

    cpu = time.process_time()
    seconds = asyncio.run(run())
    cpu = time.process_time() - cpu
    return {
        "worker_cpu_us_per_job": cpu / jobs * 1e6,
        "jobs": jobs,
        "seconds": seconds,
        "jobs_per_second": jobs / seconds,
        "history_writes": CountingRecorder.writes,
        "jobs_per_write": jobs / max(1, CountingRecorder.writes),
    }


@dataclass(frozen=True)
class _Run:
    queue: str = "drain"
    job_id: str = "j"
    attempt: int = 1
    recoveries: int = 0


def hook_cost(calls: int = 200_000) -> float:
    """Nanoseconds the two job-run hooks cost per job with the recorder
    registered, over what they cost without (the best of five timings each)."""
    run, timings = _Run(), {}
    for history in (False, True):
        hooks = HookList()
        if history:
            hooks.add(HistoryRecorder())
        best = math.inf
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(calls):
                hooks.on_job_run_started(run)
                hooks.on_job_run_ended(run, "finished", 0.0012, None)
            best = min(best, time.perf_counter() - started)
        timings[history] = best / calls * 1e9
    return timings[True] - timings[False]


def paired(url: str, jobs: int, pairs: int) -> tuple[list[float], list[float]]:
    """Per pair of drains run back to back (alternating which goes first), with
    the history over without it: the drain rates' ratio, and the worker
    process's CPU per job's (less swayed by other processes' load)."""
    rates, cpus = [], []
    for i in range(pairs):
        order = (True, False) if i % 2 == 0 else (False, True)
        ran = {each: drain(url, jobs, history=each) for each in order}
        rates.append(ran[True]["jobs_per_second"] / ran[False]["jobs_per_second"])
        cpus.append(ran[True]["worker_cpu_us_per_job"] / ran[False]["worker_cpu_us_per_job"])
    return rates, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a Redis to use (default: start one)")
    parser.add_argument("--jobs", type=int, default=50_000, help="jobs the drain part runs")
    parser.add_argument(
        "--pairs", type=int, default=0, help="paired drains with and without the history"
    )
    args = parser.parse_args()
    server = None if args.url else EmbeddedRedis().start()
    url = args.url or server.url  # type: ignore[union-attr]
    try:
        got = memory(url)
        used, grown = int(got["memory_usage"]), int(got["used_memory_growth"])  # type: ignore[call-overload]
        verdict = "within" if used <= MEMORY_BUDGET else "OVER"
        print(
            f"memory at full retention (72 h of busy minutes): {got['keys']} keys, "
            f"{got['points']} points read back, encoded {got['encodings']}, MEMORY USAGE "
            f"{used / 1024:.1f} KB (used_memory grew {grown / 1024:.1f} KB): {verdict} the "
            f"{MEMORY_BUDGET // 1024} KB budget"
        )
        cost = hook_cost()
        alone = drain(url, args.jobs, history=False)["worker_cpu_us_per_job"]
        print(
            f"the hooks cost {cost:.0f} ns per job (best of five, one thread): "
            f"{cost / 10 / alone:.1f}% of the worker's CPU per job without them ({alone:.0f} µs)"
        )
        ran = drain(url, args.jobs)
        verdict = "within" if ran["jobs_per_write"] >= JOBS_PER_COMMAND else "OVER"
        print(
            f"drain of {ran['jobs']} jobs: {ran['seconds']:.2f} s, {ran['jobs_per_second']:.0f} "
            f"jobs/s, {ran['history_writes']} history writes = one per "
            f"{ran['jobs_per_write']:.0f} jobs: {verdict} the budget of one per {JOBS_PER_COMMAND}"
        )
        if args.pairs:
            rates, cpus = paired(url, args.jobs, args.pairs)
            for what, ratios in (("drain rate", rates), ("worker CPU per job", cpus)):
                print(
                    f"paired drains of {args.jobs} jobs, {what} with / without the history: "
                    f"median {statistics.median(ratios):.3f} "
                    f"({', '.join(f'{r:.3f}' for r in ratios)})"
                )
    finally:
        if server is not None:
            server.close()


if __name__ == "__main__":
    main()
