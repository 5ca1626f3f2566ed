"""Notifications: who is woken, when, and that no wake-up is lost.

What was published is read from Redis itself: a raw pattern subscriber on the
queue's wake channels sees every wake-up; a sentinel published after the
operation marks the end of what that operation sent (Redis delivers one
connection's messages in publish order), so "only one" needs no sleep.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from core_helpers import Clients, Recorder, kill, queue_keys
from helpers import wait_until

import worqr

Q = "jobs"
SENTINEL = "~sentinel"


@pytest.fixture
def clients(redis_url: str, prefix: str) -> Iterator[Clients]:
    made = Clients(redis_url, prefix)
    try:
        yield made
    finally:
        made.close_all()


class WakeTap:
    """A raw subscriber to every wake channel of one queue."""

    def __init__(self, raw: redis.Redis, prefix: str, queue: str) -> None:
        self.raw = raw
        self.wake_prefix = queue_keys(prefix, queue).wake_prefix
        self.pubsub = raw.pubsub()
        self.pubsub.psubscribe(self.wake_prefix + "*")
        wait_until(lambda: self._next() == "psubscribe", message="tap subscribed")

    def _next(self) -> Any:
        message = self.pubsub.get_message(timeout=0.1)
        return message and message["type"]

    def published(self) -> list[tuple[str, str]]:
        """(worker id, message) of every wake-up sent since the last call."""
        self.raw.publish(self.wake_prefix + SENTINEL, "end")
        seen: list[tuple[str, str]] = []
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            message = self.pubsub.get_message(timeout=0.1)
            if not message or message["type"] != "pmessage":
                continue
            worker = message["channel"].decode()[len(self.wake_prefix) :]
            if worker == SENTINEL:
                return seen
            seen.append((worker, message["data"].decode()))
        raise AssertionError("the sentinel never arrived")

    def close(self) -> None:
        self.pubsub.close()


@pytest.fixture
def tap(redis_client: redis.Redis, prefix: str) -> Iterator[WakeTap]:
    made = WakeTap(redis_client, prefix, Q)
    try:
        yield made
    finally:
        made.close()


def idle_listening_worker(clients: Clients, **settings: Any) -> tuple[worqr.Worqr, Recorder]:
    """A worker waiting on Q whose listener has confirmed its subscriptions."""
    worker = clients.worker(**settings)
    events = Recorder()
    worker.on(Q, events)
    worker.start_work(Q)
    wait_until(lambda: ("work", 0) in events.snapshot(), message="subscribed (drain hint)")
    assert worker.dequeue(Q) is None  # drained: idle
    events.clear()
    return worker, events


def woken(events: Recorder) -> list[tuple[str, Any]]:
    return events.matching(lambda event, n: event == "work" and n > 0)


def test_one_task_wakes_exactly_one_of_five_idle_workers(
    clients: Clients, tap: WakeTap, redis_client: redis.Redis, prefix: str
) -> None:
    workers = [idle_listening_worker(clients) for _ in range(5)]
    idle_key = queue_keys(prefix, Q).idle
    assert redis_client.scard(idle_key) == 5
    producer = clients.make()

    producer.enqueue(Q, "one")

    sent = tap.published()
    assert len(sent) == 1 and sent[0][1] == "work:1"
    assert redis_client.scard(idle_key) == 4
    chosen = next(w for w, _ in workers if w.worker_id == sent[0][0])
    chosen_events = next(e for w, e in workers if w is chosen)
    wait_until(lambda: woken(chosen_events) == [("work", 1)], message="the chosen one hears")
    process = chosen.dequeue(Q)
    assert process is not None and process.task == "one"
    # Only the chosen one heard (its callback ran; the tap proved nobody else was sent one).
    assert [len(woken(e)) for w, e in workers if w is not chosen] == [0, 0, 0, 0]

    # Three tasks at once wake three of the four still idle.
    producer.enqueue_many(Q, ["x", "y", "z"])
    sent = tap.published()
    assert len(sent) == 3 and {m for _, m in sent} == {"work:3"}
    assert len({w for w, _ in sent}) == 3
    assert redis_client.scard(idle_key) == 1


def test_busy_workers_are_not_woken(clients: Clients, tap: WakeTap) -> None:
    producer = clients.make()
    producer.enqueue_many(Q, ["a", "b"])
    worker = clients.worker(Q)
    assert worker.dequeue(Q) is not None  # got what it asked for: not idle
    tap.published()  # (nothing so far)
    producer.enqueue(Q, "c")
    assert tap.published() == []
    assert worker.dequeue_many(Q, 5) != []  # took b and c but asked for more: idle again
    producer.enqueue(Q, "d")
    assert tap.published() == [(str(worker.worker_id), "work:1")]


def test_stop_process_wakes_an_idle_worker(clients: Clients, tap: WakeTap) -> None:
    producer = clients.make()
    producer.enqueue(Q, "task")
    holder = clients.worker(Q)
    held = holder.dequeue(Q)
    assert held is not None
    idle, events = idle_listening_worker(clients)
    tap.published()

    assert holder.stop_process(held)

    assert tap.published() == [(str(idle.worker_id), "work:1")]
    wait_until(lambda: woken(events) == [("work", 1)], message="idle worker hears")
    again = idle.dequeue(Q)
    assert again is not None and again.task == "task"


@pytest.mark.parametrize("how", ["failover", "stop_work", "fail_worker"])
def test_requeued_tasks_wake_an_idle_worker(
    clients: Clients, tap: WakeTap, redis_client: redis.Redis, how: str
) -> None:
    producer = clients.make()
    producer.enqueue_many(Q, ["a", "b", "c"])
    holder = clients.worker(Q)
    assert len(holder.dequeue_many(Q, 3)) == 3
    idle, events = idle_listening_worker(clients)
    reaper = clients.worker()  # not on the queue: cannot be woken
    tap.published()

    if how == "failover":
        kill(redis_client, holder)
        assert reaper.reap() == 1
    elif how == "stop_work":
        holder.stop_work(Q)
    else:
        assert holder.fail_worker() == 3

    assert tap.published() == [(str(idle.worker_id), "work:3")]
    wait_until(lambda: woken(events) == [("work", 3)], message="idle worker hears")
    assert [p.task for p in idle.dequeue_many(Q, 3)] == ["a", "b", "c"]


def test_killed_subscriber_connection_loses_no_wake_up(
    clients: Clients, redis_client: redis.Redis
) -> None:
    """`CLIENT KILL TYPE pubsub` drops the listener's connection. A task enqueued
    while it is down is not announced, so the listener must resubscribe and send
    a ("work", 0) drain hint; a task enqueued after that is announced again."""
    producer = clients.make()
    # No fallback poll during the test: only a resubscribe can send the drain hint.
    worker, events = idle_listening_worker(clients, poll_interval=60)

    assert redis_client.client_kill_filter(_type="pubsub") == 1
    producer.enqueue(Q, "during")  # its wake-up may go nowhere

    wait_until(lambda: ("work", 0) in events.snapshot(), timeout=5, message="drain hint")
    process = worker.dequeue(Q)
    assert process is not None and process.task == "during"
    assert worker.finish_process(process)
    assert worker.dequeue(Q) is None  # idle again
    events.clear()

    producer.enqueue(Q, "after")
    wait_until(lambda: woken(events) == [("work", 1)], message="announced after reconnect")
    process = worker.dequeue(Q)
    assert process is not None and process.task == "after"


def test_fallback_poll_hint_arrives_every_poll_interval(clients: Clients) -> None:
    poll = 0.3
    worker, events = idle_listening_worker(clients, poll_interval=poll)
    stamps: list[float] = []
    worker.on(Q, lambda event, n: event == "work" and n == 0 and stamps.append(time.monotonic()))
    start = time.monotonic()
    wait_until(lambda: len(stamps) >= 3, timeout=poll * 3 + 1, message="three poll hints")
    # The first within one interval of listening; then about one per interval.
    assert stamps[0] - start <= poll + 0.15
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    assert all(poll - 0.1 <= gap <= poll + 0.2 for gap in gaps), gaps
    # Only "work" hints of 0, no other events, came from polling.
    assert {event for event, _ in events.snapshot()} == {"work"}


def test_listener_that_does_not_work_the_queue_gets_no_poll_hints(clients: Clients) -> None:
    """Polling is for queues this client works on; a plain listener only hears events."""
    poll = 0.2
    listener = clients.make(poll_interval=poll)
    events = Recorder()
    listener.on(Q, events)
    _, worker_events = idle_listening_worker(clients, poll_interval=poll)
    wait_until(lambda: len(worker_events.snapshot()) >= 2, message="the worker polls")
    assert events.snapshot() == []
