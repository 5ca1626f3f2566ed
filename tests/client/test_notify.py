"""Wake-ups over pub/sub against a real Redis: one idle worker woken per task (no
thundering herd), requeues announced, no wake-up lost when the subscriber
connection is killed, a fallback poll, and no payload ever on a channel.

To prove that something did *not* arrive, a test publishes a sentinel on the
queue's events channel after the fact: Redis delivers one connection's messages
in publish order, so once every listener heard the sentinel, every earlier
message has been delivered too.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis

import worqr
from tests.support.clients import Factory
from tests.support.recorders import Events
from tests.support.waiting import wait_until
from worqr._keys import MeshKeys
from worqr.embedded import EmbeddedRedis


def idle_worker(make: Factory, queue: str = "q", **changes: Any) -> tuple[worqr.Worqr, Events]:
    """A started worker that listens on ``queue``, is subscribed and waits for work."""
    client, recorder = make(**changes), Events()
    client.start_worker()
    client.on(queue, recorder)
    client.start_work(queue)  # joins the idle set
    wait_until(lambda: recorder.hints(), message="no drain hint after subscribing")
    return client, recorder


def fence(raw: redis.Redis, prefix: str, recorders: list[Events], queue: str = "q") -> None:
    """Wait until every listener has heard everything published before now."""
    token = f"fence-{time.monotonic_ns()}"
    raw.publish(MeshKeys(prefix).queue(queue).events, f"cancel:{token}")
    for recorder in recorders:
        wait_until(lambda r=recorder: r.seen("cancel", [token]), message="fence not heard")


def test_one_task_wakes_exactly_one_idle_worker(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    workers = [idle_worker(make) for _ in range(5)]
    recorders = [recorder for _, recorder in workers]
    producer = make()
    producer.enqueue("q", "task")
    wait_until(lambda: any(r.wakes() for r in recorders))
    fence(redis_client, prefix, recorders)
    assert [r.wakes() for r in recorders].count([1]) == 1
    assert sum(len(r.wakes()) for r in recorders) == 1, "more than one worker woken"
    # The woken worker left the idle set; the other four still wait in it.
    assert redis_client.scard(MeshKeys(prefix).queue("q").idle) == 4


def test_enqueue_many_wakes_one_idle_worker_per_task(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    workers = [idle_worker(make) for _ in range(5)]
    recorders = [recorder for _, recorder in workers]
    producer = make()
    producer.enqueue_many("q", ["a", "b", "c"])
    wait_until(lambda: sum(len(r.wakes()) for r in recorders) >= 3)
    fence(redis_client, prefix, recorders)
    assert sorted(len(r.wakes()) for r in recorders) == [0, 0, 1, 1, 1]
    # More tasks than idle workers wake the two that are left, and nobody twice.
    producer.enqueue_many("q", [str(i) for i in range(10)])
    fence(redis_client, prefix, recorders)
    assert sorted(len(r.wakes()) for r in recorders) == [1, 1, 1, 1, 1]
    producer.enqueue("q", "nobody idle")
    fence(redis_client, prefix, recorders)
    assert sum(len(r.wakes()) for r in recorders) == 5


def test_a_worker_that_got_what_it_asked_for_is_not_woken(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    """Only a worker whose last dequeue came back short waits in the idle set:
    one that got everything it asked for is busy and hears nothing."""
    producer = make()
    producer.enqueue_many("q", ["a", "b"])
    worker, recorder = idle_worker(make)
    idle = MeshKeys(prefix).queue("q").idle
    assert worker.dequeue("q") is not None  # got what it asked for: busy
    assert not redis_client.sismember(idle, str(worker.worker_id))
    producer.enqueue("q", "c")
    fence(redis_client, prefix, [recorder])
    assert recorder.wakes() == []
    assert len(worker.dequeue_many("q", 5)) == 2  # b and c, but it asked for more: idle
    assert redis_client.sismember(idle, str(worker.worker_id))
    producer.enqueue("q", "d")
    wait_until(lambda: recorder.wakes() == [1], message="the idle worker was not woken")


def test_a_woken_worker_that_drains_the_queue_waits_again(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    worker, recorder = idle_worker(make)
    producer = make()
    producer.enqueue("q", "a")
    wait_until(lambda: recorder.wakes() == [1])
    process = worker.dequeue("q")
    assert process is not None and worker.finish_process(process)
    producer.enqueue("q", "b")  # not idle: it took a full batch, so no wake
    fence(redis_client, prefix, [recorder])
    assert recorder.wakes() == [1]
    assert [p.task for p in worker.dequeue_many("q", 5)] == ["b"]  # fewer than asked: idle
    producer.enqueue("q", "c")
    wait_until(lambda: recorder.wakes() == [1, 1])


def test_stop_process_wakes_an_idle_worker(make: Factory) -> None:
    holder = make()
    holder.start_worker()
    producer = make()
    producer.enqueue("q", "task")
    process = holder.dequeue("q")
    assert process is not None
    _, recorder = idle_worker(make)
    assert holder.stop_process(process)
    wait_until(lambda: recorder.wakes() == [1], message="the requeue woke nobody")


def test_peer_failover_wakes_an_idle_worker(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    doomed = make()
    doomed.start_worker()
    producer = make()
    producer.enqueue_many("q", ["a", "b"])
    assert len(doomed.dequeue_many("q", 2)) == 2  # a full batch: doomed is not idle
    waiter, recorder = idle_worker(make)
    redis_client.delete(MeshKeys(prefix).alive(str(doomed.worker_id)))
    assert producer.reap() == 1
    wait_until(lambda: recorder.wakes() == [2], message="the failover woke nobody")
    assert [p.task for p in waiter.dequeue_many("q", 2)] == ["a", "b"]


def test_fail_worker_and_stop_work_wake_an_idle_worker(make: Factory) -> None:
    holder = make()
    holder.start_worker()
    producer = make()
    producer.enqueue_many("q", ["a", "b", "c"])
    assert len(holder.dequeue_many("q", 3)) == 3  # a full batch: holder is not idle
    waiter, recorder = idle_worker(make)
    assert holder.fail_worker() == 3
    wait_until(lambda: recorder.wakes() == [3], message="fail_worker woke nobody")
    assert len(holder.dequeue_many("q", 3)) == 3
    assert waiter.dequeue("q") is None  # a woken worker waits again once it finds nothing
    holder.stop_work("q")
    wait_until(lambda: recorder.wakes() == [3, 3], message="stop_work woke nobody")


@pytest.mark.fault
def test_killed_subscriber_resubscribes_and_loses_no_wake_up(
    make_redis: Callable[..., EmbeddedRedis], make: Factory
) -> None:
    server = make_redis()  # private: CLIENT KILL must hit only this test's connections
    raw = redis.Redis.from_url(server.url)
    try:
        worker, recorder = idle_worker(lambda **kw: make(server.url, **kw))
        producer = make(server.url)
        assert raw.client_kill_filter(_type="pubsub") >= 1
        producer.enqueue("q", "sent while the subscriber was down")
        # The listener reconnects, resubscribes and gets a drain hint ...
        wait_until(lambda: len(recorder.hints()) >= 2, message="no resubscribe")
        # ... so the task is found even if its wake-up was published to nobody.
        process = worker.dequeue("q")
        assert process is not None and process.task == "sent while the subscriber was down"
        assert worker.finish_process(process)
        assert worker.dequeue("q") is None  # drained: idle again
        # Wake-ups reach the new connection.
        producer.enqueue("q", "after")
        wait_until(lambda: 1 in recorder.wakes(), message="no wake-up after the reconnect")
        assert [p.task for p in worker.dequeue_many("q", 2)] == ["after"]
    finally:
        raw.close()


@pytest.mark.slow
def test_fallback_poll_hint_arrives_every_poll_interval(make: Factory) -> None:
    _, recorder = idle_worker(make, poll_interval=0.5)
    subscribed = recorder.hints()[0]
    # Nothing is ever published: only the fallback poll produces these.
    wait_until(lambda: len(recorder.hints()) >= 4, timeout=5, message="no fallback poll")
    hints = recorder.hints()
    gaps = [later - earlier for earlier, later in itertools.pairwise(hints)]
    assert hints[1] - subscribed < 0.5 + 0.5, "first poll hint came late"
    assert all(0.3 < gap < 0.5 + 0.5 for gap in gaps[1:]), f"poll gaps {gaps}"


def test_no_poll_hints_for_a_queue_not_worked(make: Factory, redis_client: redis.Redis) -> None:
    listener = make(poll_interval=0.2)
    recorder = Events()
    listener.on("q", recorder)  # listens to events only; not a worker of the queue
    _, busy = idle_worker(make, poll_interval=0.2)
    wait_until(lambda: len(busy.hints()) >= 4)
    assert recorder.hints() == []


def test_channels_carry_counts_and_ids_never_payloads(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    secret = "secret-payload-7f3a"
    raw = redis_client.pubsub()
    raw.psubscribe(f"{{{prefix}*")  # every channel of the mesh
    try:
        worker, recorder = idle_worker(make)
        producer = make()
        producer.enqueue_many("q", ["other", secret, secret, secret])
        assert worker.stop_process(worker.dequeue("q"))  # type: ignore[arg-type]
        held = worker.dequeue_many("q", 3)[1:]  # "other" again, then two copies
        assert [p.task for p in held] == [secret, secret]
        assert producer.cancel_tasks("q", secret) == 3  # two in process, one queued
        wait_until(lambda: recorder.seen("cancel"), message="no cancel event")
        assert sorted(recorder.seen("cancel")[0]) == sorted(p.id for p in held)
        producer.delete_queue("q")
        wait_until(lambda: recorder.seen("delete"))

        messages = []
        while (message := raw.get_message(timeout=0.5)) is not None:
            if message["type"] == "pmessage":
                messages.append(message["data"])
        assert any(m.startswith(b"cancel:") for m in messages)
        assert any(m.startswith(b"work:") for m in messages)
        assert b"delete" in messages
        assert not [m for m in messages if secret.encode() in m], "a payload went on a channel"
    finally:
        raw.close()
