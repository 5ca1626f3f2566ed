"""Redis outages under a running worker: an acknowledgement outlives the
client's own retries and still lands, and a listener registered again after a
failed subscribe hears each event once."""

from __future__ import annotations

import logging
import threading

import pytest

import worqr
from tests.support.waiting import wait_until
from tests.support.workers import Runner, WorkerFactory
from worqr.embedded import EmbeddedRedis

pytestmark = pytest.mark.fault


def logged(caplog: pytest.LogCaptureFixture, text: str) -> bool:
    return any(text in record.getMessage() for record in caplog.records)


@pytest.mark.slow
def test_a_finish_during_an_outage_is_retried_until_it_lands(
    runner: Runner,
    new_worker: WorkerFactory,
    fresh_redis: EmbeddedRedis,
    prefix: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    timing = {"ttl": 5.0, "heartbeat": 0.5, "retry_deadline": 0.2}
    go = threading.Event()
    runs: list[str] = []
    worker = new_worker(timing, url=fresh_redis.url)

    @worker.handler("q")
    def handle(task: str) -> None:
        runs.append(task)
        go.wait(30)

    caplog.set_level(logging.WARNING, logger="worqr")
    runner.start(worker)
    first_id = worker.worker_id
    with worqr.Worqr(fresh_redis.url, prefix=prefix) as wq:
        wq.enqueue("q", "t")
        wait_until(lambda: runs == ["t"])
        fresh_redis.stop()
        go.set()  # the handler returns while Redis is away
        wait_until(lambda: logged(caplog, "acknowledge: Redis unreachable"), timeout=10)
        fresh_redis.start()
        wait_until(lambda: logged(caplog, "acknowledge: Redis reachable again"), timeout=10)
        wait_until(lambda: worker.in_flight == 0)
        assert runs == ["t"]  # ran once: finished, not requeued
        assert wq.count_tasks("q") == wq.count_processes("q") == 0
        assert wq.get_stats("q").get("finished") == 1
        assert worker.worker_id == first_id  # no lease was lost


def test_a_listener_registered_again_after_a_failed_subscribe_hears_events_once(
    fresh_redis: EmbeddedRedis, prefix: str
) -> None:
    # The worker retries each start-up step through an outage, `on` included.
    heard: list[tuple[str, object]] = []

    def listen(event: str, message: object) -> None:
        heard.append((event, message))

    quick = worqr.Settings(prefix=prefix, retry_deadline=0.3)
    with worqr.Worqr(fresh_redis.url, settings=quick) as wq:
        fresh_redis.stop()
        with pytest.raises(worqr.RedisUnavailableError):
            wq.on("q", listen)
        fresh_redis.start()
        wq.on("q", listen)
        wq.start_worker()
        pids = []
        for task in ("t", "u"):
            wq.enqueue("q", task)
            process = wq.dequeue("q")
            assert process is not None
            pids.append(process.id)
            assert wq.cancel_tasks("q", task) == 1
        # Events arrive in order: once u's is heard, any duplicate of t's would be too.
        wait_until(lambda: ("cancel", [pids[1]]) in heard)
        cancels = [entry for entry in heard if entry[0] == "cancel"]
        assert cancels == [("cancel", [pids[0]]), ("cancel", [pids[1]])]
