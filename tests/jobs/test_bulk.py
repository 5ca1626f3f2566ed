"""Bulk operations (cancel_jobs, retry_jobs, promote_jobs, purge_jobs),
update_job and delete_queue(if_idle=True), on queues larger than one script
chunk (`BULK_CHUNK`): exact counts, at the end and between the chunks."""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from typing import Any

import pytest
import redis

import worqr
from tests.support.mesh import keys_under
from tests.support.waiting import wait_until
from worqr._core.bulk import BULK_CHUNK
from worqr._core.calls import Call
from worqr._keys import MeshKeys

from .conftest import Running, fast_worker
from .test_lifecycle import counts, finish, take

Make = Callable[..., worqr.Worqr]
MANY = 2500  # more than two chunks


def snapshot(raw: redis.Redis, prefix: str) -> dict[bytes, bytes | None]:
    """Every key of the mesh with its value, byte for byte."""
    return {key: raw.dump(key) for key in keys_under(raw, prefix)}  # type: ignore[misc]


def observed(
    plan: Generator[Any, Any, Any], script: str, after: Callable[[], None]
) -> Generator[Any, Any, Any]:
    """``plan``, calling ``after`` once each call of ``script`` has returned:
    between two chunks of a bulk operation."""
    reply: Any = None
    try:
        while True:
            request = plan.send(reply)
            reply = yield request
            if isinstance(request, Call) and request.script == script:
                after()
    except StopIteration as stop:
        return stop.value


def test_cancel_jobs_cancels_each_state_in_chunks(make: Make, redis_client: redis.Redis) -> None:
    producer, worker = make(), make(start=True)
    assert BULK_CHUNK < MANY
    producer.submit_many("q", [f"p{i}" for i in range(MANY - 700)])
    producer.submit_many("q", [f"hi{i}" for i in range(700)], priority=3)
    producer.submit_many("q", [f"d{i}" for i in range(1200)], delay=600)
    active = take(worker, count=3)
    assert producer.count_jobs("q") == counts(queued=MANY - 3, delayed=1200, active=3)

    assert producer.cancel_jobs("q", state="queued") == MANY - 3
    assert producer.count_jobs("q") == counts(delayed=1200, active=3, cancelled=MANY - 3)
    assert producer.cancel_jobs("q", state="delayed") == 1200
    assert producer.cancel_jobs("q") == 3  # the rest: the active ones
    assert producer.count_jobs("q") == counts(cancelled=MANY + 1200)
    assert [finish(worker, process) for process in active] == [False] * 3  # fenced
    assert producer.count_jobs("q") == counts(cancelled=MANY + 1200)
    keys = MeshKeys(producer.settings.prefix).queue("q")
    # No tombstones left behind: the list was emptied from its front.
    assert redis_client.llen(keys.tasks) == redis_client.zcard(keys.job_prio) == 0
    assert redis_client.hlen(keys.processes) == 0
    assert producer.cancel_jobs("q") == 0
    info = producer.get_job("q", active[0].job_id)
    assert info is not None and info.state == "cancelled"  # kept per retention


def test_counts_stay_exact_between_the_chunks_of_a_bulk_cancel(make: Make) -> None:
    producer, reader = make(), make()
    producer.submit_many("q", [f"p{i}" for i in range(MANY)])
    readings: list[dict[str, int]] = []
    plan = producer._core.bulk.cancel_jobs("q")
    cancelled = producer._drive(
        observed(plan, "job_cancel_many", lambda: readings.append(reader.count_jobs("q")))
    )
    assert cancelled == MANY
    assert all(sum(reading.values()) == MANY for reading in readings), readings
    partial = [r["cancelled"] for r in readings if 0 < r["cancelled"] < MANY]
    assert len(partial) >= 2 and partial == sorted(partial)  # seen mid-way, growing
    assert readings[-1] == counts(cancelled=MANY)


def test_cancel_jobs_stops_active_jobs_on_a_real_worker(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    worker = fast_worker(redis_url, prefix, concurrency=4)
    started: list[str] = []
    heard: list[str] = []
    returned = threading.Semaphore(0)

    @worker.job("q")
    def hold(payload: str) -> str:
        started.append(payload)
        if worqr.current_job().cancelled.wait(30):
            heard.append(payload)
        returned.release()
        return "done anyway"  # its finish is fenced

    running.start(worker)
    wq.submit_many("q", [f"j{i}" for i in range(6)])
    # Their handlers running, not only taken: a job cancelled between its take
    # and its handler's start never runs (CI, loaded: none heard the cancel).
    wait_until(lambda: len(started) == 4, message="four handlers never started")
    assert wq.count_jobs("q")["active"] == 4
    assert wq.cancel_jobs("q") == 6
    wait_until(lambda: len(heard) == 4, message="the handlers did not hear the cancel")
    for _ in range(4):
        assert returned.acquire(timeout=10)
    wait_until(lambda: wq.count_jobs("q") == counts(cancelled=6))
    assert wq.get_stats("q").get("finished", 0) == 0


def test_retry_jobs_keeps_attempts_and_skips_a_live_unique_payload(make: Make) -> None:
    producer, worker = make(), make(start=True)
    producer.submit_many("q", [f"p{i}" for i in range(MANY)])
    assert producer.cancel_jobs("q") == MANY
    assert producer.retry_jobs("q", state="cancelled", limit=1200) == 1200
    assert producer.count_jobs("q") == counts(queued=1200, cancelled=MANY - 1200)
    assert producer.retry_jobs("q") == MANY - 1200
    assert producer.count_jobs("q") == counts(queued=MANY)
    assert producer.cancel_jobs("q") == MANY

    failed = producer.submit("u", "same", unique=True, retries=0)
    plain = producer.submit("u", "other", retries=0)
    for process in take(worker, "u"):
        worker.internals.fail_job(process, mode="error", delay=0, retries=0, error="E: x")
    holder = producer.submit("u", "same", unique=True)  # the marker was released
    assert not holder.duplicate
    assert producer.retry_jobs("u", state="failed") == 1  # "same" is live again: left
    assert producer.count_jobs("u") == counts(queued=2, failed=1)
    info = producer.get_job("u", plain.id)
    assert info is not None and (info.state, info.attempts) == ("queued", 1)
    assert producer.cancel_job("u", holder.id)
    assert producer.requeue_failed("u") == 1  # retry_jobs(state="failed")
    assert producer.get_job("u", failed.id).state == "queued"  # type: ignore[union-attr]


def test_promote_jobs_queues_delayed_jobs_now_and_wakes_idle_workers(make: Make) -> None:
    producer, consumer = make(), make(start=True)
    producer.submit_many("q", [f"d{i}" for i in range(MANY)], delay=600)
    producer.submit("q", "r", retries=3)
    [process] = take(consumer)
    consumer.internals.fail_job(process, mode="error", delay=600, retries=3, error="E")
    assert take(consumer) == []  # idle now
    events: list[tuple[str, object]] = []
    consumer.on("q", lambda event, message: events.append((event, message)))

    assert producer.promote_jobs("q", limit=1500) == 1500
    assert producer.count_jobs("q") == counts(queued=1500, delayed=MANY - 1500, retrying=1)
    wait_until(lambda: any(event == "work" for event, _ in events), message="no wake-up")
    assert producer.promote_jobs("q") == MANY - 1500
    assert producer.count_jobs("q") == counts(queued=MANY, retrying=1)  # backoff kept
    assert len(take(consumer, count=10)) == 10


def test_purge_jobs_honours_older_than_on_server_time_and_limit(make: Make) -> None:
    producer = make()
    producer.submit_many("q", [f"old{i}" for i in range(1500)])
    assert producer.cancel_jobs("q") == 1500
    ended = producer.server_time()
    wait_until(lambda: producer.server_time() >= ended + 1.2, message="server time stood still")
    producer.submit_many("q", [f"new{i}" for i in range(1000)])
    assert producer.cancel_jobs("q") == 1000

    assert producer.purge_jobs("q", "cancelled", older_than=3600) == 0
    assert producer.purge_jobs("q", "cancelled", older_than=1.0, limit=1100) == 1100
    assert producer.count_jobs("q") == counts(cancelled=MANY - 1100)
    assert producer.purge_jobs("q", "cancelled", older_than=1.0) == 400
    left, _ = producer.get_jobs("q", "cancelled", limit=1000)
    assert len(left) == 1000 and all(str(job.payload).startswith("new") for job in left)
    assert producer.purge_jobs("q", "finished") == 0
    assert producer.purge_jobs("q", "cancelled") == 1000
    assert producer.count_jobs("q") == counts()


def test_update_job_changes_a_waiting_job(make: Make) -> None:
    producer, worker = make(), make(start=True)
    a, b, c = producer.submit_many("q", ["a", "b", "c"])
    # A queued job whose priority changes moves to its new place.
    assert producer.update_job("q", c.id, priority=5)
    queued, _ = producer.get_jobs("q", "queued")
    assert [job.id for job in queued] == [c.id, a.id, b.id]
    # A queued job given a delay becomes delayed, due then by Redis's clock.
    assert producer.update_job("q", a.id, delay=600)
    info = producer.get_job("q", a.id)
    assert info is not None and info.state == "delayed"
    assert info.due is not None and abs(info.due - (producer.server_time() + 600)) < 5
    # A delayed job: payload, priority and due time; due now, it is queued.
    assert producer.update_job("q", a.id, payload="A", priority=9, delay=0)
    info = producer.get_job("q", a.id)
    assert info is not None and (info.state, info.payload) == ("queued", "A")
    assert producer.update_job("q", b.id, at=producer.server_time() + 3600)
    assert producer.count_jobs("q") == counts(queued=2, delayed=1)
    taken = take(worker, count=10)
    assert [p.job_id for p in taken] == [a.id, c.id]  # each once: the tombstone is skipped
    # A retrying job: due now, it is queued.
    worker.internals.fail_job(taken[0], mode="error", delay=600, retries=3, error="E")
    assert producer.get_job("q", a.id).state == "retrying"  # type: ignore[union-attr]
    assert producer.update_job("q", a.id, delay=None)
    assert producer.get_job("q", a.id).state == "queued"  # type: ignore[union-attr]


def test_update_job_moves_the_unique_marker_with_the_payload(make: Make) -> None:
    producer = make()
    ref = producer.submit("q", "one", unique=True)
    other = producer.submit("q", "two", unique=True)
    assert not producer.update_job("q", ref.id, payload="two")  # "two" is held
    assert producer.update_job("q", ref.id, payload="three")
    assert not producer.submit("q", "one", unique=True).duplicate  # released
    assert producer.submit("q", "three", unique=True) == worqr.JobRef("q", ref.id, True)
    assert producer.get_job("q", other.id).payload == "two"  # type: ignore[union-attr]


def test_update_job_changes_nothing_for_other_jobs(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer, worker = make(), make(start=True)
    producer.submit("q", "active")
    [active] = take(worker)
    done = producer.submit("q", "done")
    [process] = take(worker)
    assert finish(worker, process)
    producer.submit_chain([worqr.Step("q", "first"), worqr.Step("r")])
    flow_job = next(job for job in producer.get_jobs("q", "queued")[0] if job.payload == "first")
    before = snapshot(redis_client, prefix)
    for id in (active.job_id, done.id, "unknown", flow_job.id):
        assert not producer.update_job("q", id, payload="x", priority=1, delay=5)
        assert snapshot(redis_client, prefix) == before, id
    with pytest.raises(ValueError, match="not both"):
        producer.update_job("q", flow_job.id, delay=1, at=2)
    assert snapshot(redis_client, prefix) == before


def test_delete_queue_if_idle_is_refused_while_a_job_is_active(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer, worker = make(), make(start=True)
    producer.submit_many("q", ["a", "b"])
    producer.schedule("q", "tick", every=3600)
    [process] = take(worker, count=1)
    before = snapshot(redis_client, prefix)
    with pytest.raises(worqr.QueueBusyError, match="nothing was deleted"):
        producer.delete_queue("q", if_idle=True)
    assert snapshot(redis_client, prefix) == before
    assert finish(worker, process)
    producer.delete_queue("q", if_idle=True)
    keys = MeshKeys(prefix).queue("q")
    assert not any(key.startswith(keys.tag.encode()) for key in keys_under(redis_client, prefix))
    assert producer.get_schedules("q") == []
    # A task queue with a task in process is busy too.
    producer.enqueue("t", "task")
    held = worker.dequeue("t")
    with pytest.raises(worqr.QueueBusyError):
        producer.delete_queue("t", if_idle=True)
    assert held is not None and worker.finish_process(held)
    producer.delete_queue("t", if_idle=True)
    assert producer.count_tasks("t") == 0


@pytest.mark.parametrize(
    "call",
    [
        lambda wq: wq.cancel_jobs("q", state="finished"),
        lambda wq: wq.cancel_jobs("q", state="nope"),
        lambda wq: wq.retry_jobs("q", state="queued"),
        lambda wq: wq.retry_jobs("q", limit=0),
        lambda wq: wq.promote_jobs("q", limit=-1),
        lambda wq: wq.purge_jobs("q", "queued"),
        lambda wq: wq.purge_jobs("q", "failed", older_than=-1),
        lambda wq: wq.purge_jobs("q", "failed", limit=0),
        lambda wq: wq.purge_jobs("q", None),
        lambda wq: wq.update_job("q", "id", delay=1, at=5),
        lambda wq: wq.update_job("q", "id", payload=None),
        lambda wq: wq.update_job("q", "id", priority=1.5),
        lambda wq: wq.update_job("q", "", priority=1),
        lambda wq: wq.cancel_jobs("a{b"),
        lambda wq: wq.delete_queue("q", if_idle=1),
    ],
)
def test_bad_input_writes_nothing(
    make: Make, redis_client: redis.Redis, prefix: str, call: Callable[[worqr.Worqr], Any]
) -> None:
    wq = make()
    wq.submit_many("q", ["a", "b"])
    wq.submit("q", "later", delay=60)
    before = snapshot(redis_client, prefix)
    with pytest.raises((ValueError, TypeError)):
        call(wq)
    assert snapshot(redis_client, prefix) == before
