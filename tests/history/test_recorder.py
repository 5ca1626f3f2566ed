"""The worker's tally (`HistoryRecorder`): runs told from many threads at once
are all counted, a run's end goes to its outcome's count and its bucket, and a
flush that cannot reach Redis keeps its tallies for the next one; a worker
with ``history=False`` writes none."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass

import redis

import worqr
from tests.support.workers import Runner, worker_settings
from worqr._core.history_model import BOUNDS, COUNTS, totals
from worqr._runtime.history import HistoryRecorder


@dataclass
class Run:
    queue: str
    job_id: str = "j"
    attempt: int = 1
    recoveries: int = 0


def test_runs_told_from_threads_are_all_counted() -> None:
    recorder = HistoryRecorder()
    run = Run("q")

    def lane() -> None:
        for _ in range(2000):
            recorder.on_job_run_started(run)
            recorder.on_job_run_ended(run, "finished", 0.003, None)

    threads = [threading.Thread(target=lane) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rows = list(recorder.take().values())
    summed = [sum(row[i] for row in rows) for i in range(len(rows[0]))]
    assert summed[COUNTS.index("started")] == summed[COUNTS.index("finished")] == 16000
    bucket = next(i for i, bound in enumerate(BOUNDS) if bound >= 0.003)
    assert summed[len(COUNTS) + bucket] == 16000


def test_outcomes_go_to_their_counts() -> None:
    recorder = HistoryRecorder()
    run = Run("q")
    for outcome in (
        "finished",
        "retried",
        "rate_limited",
        "failed",
        "cancelled",
        "returned",
        "fenced",
    ):
        recorder.on_job_run_started(run)
        recorder.on_job_run_ended(run, outcome, 1e9, None)  # past the last bound: the last bucket
    (row,) = recorder.take().values()
    assert dict(zip(COUNTS, row, strict=False)) == {
        "started": 7,
        "finished": 1,
        "retried": 2,  # rate_limited counts as retried
        "failed": 1,
        "cancelled": 1,
    }
    assert row[-1] == 5 and sum(row[len(COUNTS) :]) == 5  # returned, fenced: no end here


def test_a_failed_flush_keeps_its_tallies(redis_url: str, prefix: str) -> None:
    recorder = HistoryRecorder()
    run = Run("q")
    for _ in range(3):
        recorder.on_job_run_started(run)
        recorder.on_job_run_ended(run, "failed", 0.01, None)

    async def main() -> None:
        settings = worqr.Settings(prefix=prefix, retry_deadline=0.2)
        async with worqr.AsyncWorqr("redis://127.0.0.1:1", settings=settings) as away:
            await recorder.flush(away)  # Redis unreachable: kept
        async with worqr.AsyncWorqr(redis_url, prefix=prefix) as client:
            await recorder.flush(client)
            got = totals(await client.get_history("q", since=600))
        assert (got["started"], got["failed"]) == (3, 3)
        assert recorder.take() == {}

    asyncio.run(main())


def test_a_worker_without_history_writes_none(
    redis_url: str, prefix: str, runner: Runner, redis_client: redis.Redis
) -> None:
    """Two workers drain the same kind of jobs; only the one that keeps the
    history (the default) writes it, and its last counts land as it stops."""
    for queue, keeps in (("kept", True), ("off", False)):
        worker = worqr.Worker(redis_url, settings=worker_settings(prefix, history=keeps))
        worker.job(queue)(lambda payload: payload)
        runner.start(worker)
        with worqr.Worqr(redis_url, prefix=prefix) as wq:
            refs = wq.submit_many(queue, ["a", "b", "c"])
            assert [wq.result(queue, ref.id, timeout=10) for ref in refs] == ["a", "b", "c"]
            runner.stop(worker)
            assert totals(wq.get_history(queue, since=600))["started"] == (3 if keeps else 0)
    assert redis_client.keys(f"*{prefix}:kept*history*")
    assert not redis_client.keys(f"*{prefix}:off*history*")
