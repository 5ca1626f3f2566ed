"""Retention is exact: a terminal job is gone for every read from its purge
time (ended + its TTL) on, and idle queues shed its record within seconds,
served or not. Only a job a `result()` waiter watches is kept `min_retention`
at least, so the waiter can read it."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

import pytest
import redis

import worqr
from tests.support.waiting import wait_until
from worqr._keys import MeshKeys, QueueKeys

from .conftest import Running, fast_worker

Make = Callable[..., worqr.Worqr]

POLL = 1.0  # the serving worker's fallback poll (seconds)
UPKEEP = 2.0  # the most seconds between two upkeep passes of the mesh (UPKEEP_INTERVAL)
MARGIN = 2.0  # seconds allowed on top of a poll or an upkeep pass, for a loaded machine


def record_keys(raw: redis.Redis, keys: QueueKeys, id: str) -> dict[str, bool]:
    """Which of the job's places in Redis still hold something."""
    return {
        "record": bool(raw.hexists(keys.jobs, id)),
        "hot fields": bool(raw.hexists(keys.jobs, id + "\x01")),
        "payload": bool(raw.hexists(keys.job_data, id)),
        "result": bool(raw.hexists(keys.job_result, id)),
        "finished entry": raw.zscore(keys.job_finished, id) is not None,
    }


def ended_at(wq: worqr.Worqr, queue: str, id: str) -> float:
    """Wait (without marking the job watched) until it finished; its end."""
    info = wait_until(
        lambda: (job := wq.get_job(queue, id)) is not None and job.state == "finished" and job,
        timeout=10,
        message="the job finished",
    )
    assert info and info.ended is not None and info.result == "done"
    return info.ended


def assert_gone_for_every_read(wq: worqr.Worqr, queue: str, id: str) -> None:
    assert wq.get_job(queue, id) is None
    assert wq.count_jobs(queue)["finished"] == 0
    assert wq.get_jobs(queue, "finished") == ([], None)
    with pytest.raises(worqr.JobNotFoundError):
        wq.result(queue, id, timeout=0)
    with pytest.raises(worqr.JobNotFoundError):
        wq.result(queue, id, timeout=5)  # not found at once: nothing to wait for


@pytest.mark.slow
def test_an_idle_served_queue_forgets_an_expired_job_at_once_and_sheds_it_by_its_poll(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str, redis_client: redis.Redis
) -> None:
    """result_ttl=1 on a queue whose one worker is idle: from 1 s after the end
    every read says the job is gone (min_retention's 10 s do not apply), and the
    worker's next fallback poll (a take) purges its record, with no new take or
    submit from anyone else."""
    worker = fast_worker(redis_url, prefix, poll_interval=POLL)

    @worker.job("q")
    def handler(payload: str) -> str:
        return "done"

    running.start(worker)
    ref = wq.submit("q", "x", result_ttl=1)
    ended = ended_at(wq, "q", ref.id)
    assert wq.count_jobs("q")["finished"] == 1  # kept while its TTL runs
    wait_until(lambda: wq.server_time() > ended + 1.0, timeout=3)  # exactly 1 s after the end
    assert_gone_for_every_read(wq, "q", ref.id)
    keys = MeshKeys(prefix).queue("q")
    wait_until(
        lambda: not any(record_keys(redis_client, keys, ref.id).values()),
        timeout=POLL + MARGIN,
        message="the idle worker's poll purged the record",
    )
    assert wq.get_stats("q")["purged"] == 1


@pytest.mark.slow
def test_an_idle_served_queue_sheds_a_backlog_of_expired_records_within_a_poll(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str, redis_client: redis.Redis
) -> None:
    """A burst of jobs ends together, then the queue idles: their records expire
    together, and the idle worker's next poll purges far more than purge_budget
    (a take that finishes nothing purges a larger bounded batch), so the backlog
    leaves Redis within about a poll, not 16 records a poll."""
    worker = fast_worker(redis_url, prefix, poll_interval=POLL)

    @worker.job("q")
    def handler(payload: str) -> str:
        return "done"

    running.start(worker)
    burst = 300  # far more than purge_budget (16), below one idle take's batch (500)
    wq.submit_many("q", [str(i) for i in range(burst)], result_ttl=1)
    wait_until(lambda: wq.count_jobs("q")["finished"] == burst, timeout=20)
    keys = MeshKeys(prefix).queue("q")
    wait_until(lambda: wq.count_jobs("q")["finished"] == 0, timeout=3)  # expired, 1 s on
    wait_until(
        lambda: redis_client.hlen(keys.jobs) == redis_client.zcard(keys.job_finished) == 0,
        timeout=POLL + MARGIN,
        message="the idle worker's poll purged the backlog",
    )
    assert redis_client.hlen(keys.job_data) == redis_client.hlen(keys.job_result) == 0
    assert wq.get_stats("q")["purged"] == burst


@pytest.mark.slow
def test_a_queue_with_no_members_sheds_an_expired_job_by_the_mesh_upkeep(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str, redis_client: redis.Redis
) -> None:
    """The same on a queue no worker serves any more: reads forget the job 1 s
    after its end, and the mesh's upkeep (run by a worker of another queue)
    purges its record within a pass interval."""
    served = fast_worker(redis_url, prefix)

    @served.job("q")
    def handler(payload: str) -> str:
        return "done"

    other = fast_worker(redis_url, prefix)

    @other.job("other")
    def other_handler(payload: str) -> str:
        return "other"

    running.start(other)
    running.start(served)
    ref = wq.submit("q", "x", result_ttl=1)
    ended = ended_at(wq, "q", ref.id)
    served.stop()  # q has no member left: only the upkeep can purge it now
    keys = MeshKeys(prefix).queue("q")
    wait_until(lambda: redis_client.scard(keys.members) == 0, timeout=10)
    wait_until(lambda: wq.server_time() > ended + 1.0, timeout=3)
    assert_gone_for_every_read(wq, "q", ref.id)
    wait_until(
        lambda: not any(record_keys(redis_client, keys, ref.id).values()),
        timeout=UPKEEP + MARGIN,
        message="the mesh's upkeep purged the record",
    )
    assert wq.get_stats("q")["purged"] == 1


def test_a_watched_job_outlives_a_zero_ttl_for_its_waiter_and_an_unwatched_one_does_not(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str, redis_client: redis.Redis
) -> None:
    """Two jobs with result_ttl=0 end together: the one a result() call waits on
    is kept min_retention, so the woken waiter gets its result; the other is gone
    the moment it ends, its record purged by the take that finished it."""
    release = threading.Event()
    worker = fast_worker(redis_url, prefix)

    @worker.job("q")
    def handler(payload: str) -> str:
        assert release.wait(10)
        return f"result of {payload}"

    running.start(worker)
    watched, unwatched = (wq.submit("q", name, result_ttl=0) for name in ("watched", "unwatched"))
    keys = MeshKeys(prefix).queue("q")
    wait_until(lambda: wq.count_jobs("q")["active"] == 2, timeout=10)
    got: list[object] = []
    waiter = threading.Thread(target=lambda: got.append(wq.result("q", watched.id, timeout=20)))
    waiter.start()
    wait_until(
        lambda: json.loads(redis_client.hget(keys.jobs, watched.id) or "{}").get("w"),
        message="result() watches the job",
    )
    release.set()
    waiter.join(timeout=20)
    assert got == ["result of watched"]
    wait_until(lambda: wq.get_stats("q").get("finished") == 2, timeout=10)
    assert wq.get_job("q", unwatched.id) is None  # ended + 0: gone at once
    assert not any(record_keys(redis_client, keys, unwatched.id).values())
    info = wq.get_job("q", watched.id)  # kept min_retention (10 s) for its waiter
    assert info is not None and info.state == "finished" and info.ended is not None
    assert wq.count_jobs("q")["finished"] == 1
    purge_at = redis_client.zscore(keys.job_finished, watched.id)
    assert purge_at == round(info.ended * 1000) + 10_000
