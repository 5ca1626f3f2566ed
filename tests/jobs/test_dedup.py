"""Dedup keys on submit (`worqr.Dedup`): throttle, debounce and keep_last, each
through its terminal paths; bursts against real workers; bad input writes nothing."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest
import redis

import worqr
from tests.support.waiting import wait_until
from worqr._keys import MeshKeys

from .conftest import Running, fast_worker
from .test_bulk import snapshot
from .test_lifecycle import finish, take

Make = Callable[..., worqr.Worqr]


def throttle(key: str = "k", ttl: float = 60.0) -> worqr.Dedup:
    return worqr.Dedup(key, ttl=ttl)


def debounce(key: str = "k") -> worqr.Dedup:
    return worqr.Dedup(key, mode="debounce")


def keep_last(key: str = "k") -> worqr.Dedup:
    return worqr.Dedup(key, mode="keep_last")


def state(client: worqr.Worqr, id: str, queue: str = "q") -> str | None:
    info = client.get_job(queue, id)
    return None if info is None else info.state


def payload(client: worqr.Worqr, id: str, queue: str = "q") -> object:
    info = client.get_job(queue, id)
    assert info is not None, id
    return info.payload


def marker(redis_client: redis.Redis, prefix: str, field: str) -> bytes | None:
    return redis_client.hget(MeshKeys(prefix).queue("q").job_unique, field)  # type: ignore[return-value]


# -- throttle -------------------------------------------------------------------


def test_throttle_answers_the_first_job_whatever_its_state_until_its_ttl(make: Make) -> None:
    producer, worker = make(), make(start=True)
    first = producer.submit("q", "a", dedup=throttle(ttl=60), retries=0)
    assert not first.duplicate
    assert producer.submit("q", "b", dedup=throttle(ttl=60)) == worqr.JobRef("q", first.id, True)
    [process] = take(worker)
    assert producer.submit("q", "c", dedup=throttle(ttl=60)).id == first.id  # active
    worker.internals.fail_job(process, mode="fail", delay=0, retries=0, error="E")
    assert state(producer, first.id) == "failed"
    assert producer.submit("q", "d", dedup=throttle(ttl=60)) == worqr.JobRef("q", first.id, True)
    assert producer.count_jobs("q")["failed"] == 1 and producer.count_jobs("q")["queued"] == 0
    other = producer.submit("q", "e", dedup=throttle("other", ttl=60))  # keys are independent
    assert not other.duplicate
    assert producer.submit("q", "e", dedup=debounce()).id != first.id  # so are modes


@pytest.mark.parametrize("end", ["finished", "cancelled"])
def test_throttle_is_not_extended_by_duplicates_and_outlives_the_job(make: Make, end: str) -> None:
    producer, worker = make(), make(start=True)
    ttl = 0.4
    first = producer.submit("q", "a", dedup=throttle(ttl=ttl))
    if end == "finished":
        [process] = take(worker)
        assert finish(worker, process)
    else:
        assert producer.cancel_job("q", first.id)
    assert state(producer, first.id) == end
    created = producer.get_job("q", first.id).created  # type: ignore[union-attr]

    def a_new_job() -> worqr.JobRef | None:  # duplicates all along: none may extend the window
        ref = producer.submit("q", "again", dedup=throttle(ttl=ttl))
        return None if ref.duplicate else ref

    second = wait_until(a_new_job, timeout=10, message="a new job once the ttl passed")
    assert second.id != first.id
    new = producer.get_job("q", second.id)
    # Created times are whole milliseconds: compare them so, not as float seconds.
    assert new is not None and round((new.created - created) * 1000) >= ttl * 1000


def test_throttle_markers_are_forgotten_once_expired(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer = make()
    keys = MeshKeys(prefix).queue("q")
    started = producer.server_time()
    for i in range(40):
        producer.submit("q", "x", dedup=throttle(f"k{i}", ttl=2.0))
    if producer.server_time() < started + 2.0:  # none expired yet (a very slow machine aside)
        assert redis_client.zcard(keys.job_throttle) == 40
    expires = producer.server_time() + 2.0
    wait_until(lambda: producer.server_time() > expires, timeout=10)
    for i in range(3):  # each throttle that creates forgets up to 16 expired markers
        producer.submit("q", "y", dedup=throttle(f"new{i}", ttl=60))
    assert redis_client.zcard(keys.job_throttle) == 3
    fields = {field.decode() for field in redis_client.hkeys(keys.job_unique)}
    assert fields == {f"throttle:new{i}" for i in range(3)}


# -- debounce -------------------------------------------------------------------


def test_debounce_replaces_a_waiting_jobs_payload_options_and_due_time(make: Make) -> None:
    producer = make()
    first = producer.submit("q", "v1", delay=30, dedup=debounce())
    due = producer.get_job("q", first.id).due  # type: ignore[union-attr]
    second = producer.submit("q", "v2", delay=60, priority=5, retries=1, dedup=debounce())
    assert second == worqr.JobRef("q", first.id, duplicate=True)
    info = producer.get_job("q", first.id)
    assert info is not None and (info.state, info.payload, info.priority) == ("delayed", "v2", 5)
    assert due is not None and info.due is not None and info.due >= due + 29
    third = producer.submit("q", "v3", dedup=debounce())  # no delay: due now
    assert third.id == first.id and state(producer, first.id) == "queued"
    assert producer.submit("q", "v4", dedup=debounce()).id == first.id  # queued: replaced in place
    assert payload(producer, first.id) == "v4"
    assert producer.count_jobs("q")["queued"] == 1 and producer.count_jobs("q")["delayed"] == 0


@pytest.mark.parametrize("end", ["finished", "failed", "cancelled"])
def test_debounce_releases_its_key_on_every_terminal_path(
    make: Make, redis_client: redis.Redis, prefix: str, end: str
) -> None:
    producer, worker = make(), make(start=True)
    first = producer.submit("q", "v1", dedup=debounce(), retries=0)
    [process] = take(worker)
    running = producer.submit("q", "v2", dedup=debounce())  # it runs: the next job is new
    assert not running.duplicate and running.id != first.id
    assert producer.submit("q", "v3", dedup=debounce()).id == running.id
    [process2] = take(worker)
    if end == "finished":
        assert finish(worker, process) and finish(worker, process2)
    elif end == "failed":
        for each in (process, process2):
            worker.internals.fail_job(each, mode="error", delay=0, retries=0, error="E")
    else:
        assert producer.cancel_job("q", first.id) and producer.cancel_job("q", running.id)
    assert state(producer, running.id) == end and payload(producer, running.id) == "v3"
    assert marker(redis_client, prefix, "debounce:k") is None
    assert not producer.submit("q", "v4", dedup=debounce()).duplicate


def test_update_job_keeps_a_dedup_key(make: Make) -> None:
    producer = make()
    first = producer.submit("q", "v1", delay=60, dedup=debounce())
    assert producer.update_job("q", first.id, payload="changed")
    assert producer.submit("q", "v2", delay=60, dedup=debounce()).id == first.id


# -- keep_last ------------------------------------------------------------------


def test_keep_last_waits_as_debounce_then_keeps_one_follow_up_while_it_runs(make: Make) -> None:
    producer, worker = make(), make(start=True)
    first = producer.submit("q", "v1", dedup=keep_last())
    assert producer.submit("q", "v2", dedup=keep_last()) == worqr.JobRef("q", first.id, True)
    [process] = take(worker)
    assert process.task == "v2"
    follow = producer.submit("q", "v3", dedup=keep_last())
    assert not follow.duplicate and follow.id != first.id
    assert state(producer, follow.id) == "waiting"
    assert producer.submit("q", "v4", dedup=keep_last()) == worqr.JobRef("q", follow.id, True)
    assert payload(producer, follow.id) == "v4"
    assert take(worker) == []  # never two runs of a key at once
    assert finish(worker, process)  # the finishing take places the follow-up
    assert state(producer, follow.id) == "queued"
    [after] = take(worker)
    assert (after.job_id, after.task) == (follow.id, "v4")
    counts = producer.count_jobs("q")
    assert (counts["active"], counts["finished"], counts.get("waiting", 0)) == (1, 1, 0)


@pytest.mark.parametrize("end", ["failed", "cancelled", "retried", "poisoned"])
def test_keep_last_places_its_follow_up_when_the_run_ends_any_way(make: Make, end: str) -> None:
    producer, worker = make(), make(start=True)
    first = producer.submit("q", "v1", dedup=keep_last(), retries=1)
    [process] = take(worker)
    follow = producer.submit("q", "v2", dedup=keep_last())
    if end == "failed":
        worker.internals.fail_job(process, mode="fail", delay=0, retries=1, error="E")
    elif end == "cancelled":
        assert producer.cancel_job("q", first.id)
    elif end == "poisoned":
        producer.configure_queue("q", max_recoveries=0)
        dead = worker._core.state.require_worker()  # as a peer fails a dead worker
        worker._drive(worker._core.membership.requeue_owned("q", dead, "fail"))
        worker = make(start=True)
    else:  # retrying: the key's job is not done, its follow-up still waits
        assert worker.internals.fail_job(process, mode="error", delay=60, retries=1, error="E")
        assert state(producer, first.id) == "retrying"
        assert state(producer, follow.id) == "waiting"
        assert producer.submit("q", "v3", dedup=keep_last()).id == follow.id
        assert producer.cancel_job("q", first.id)
    assert state(producer, first.id) == (
        "cancelled" if end in ("cancelled", "retried") else "failed"
    )
    assert state(producer, follow.id) == "queued"
    [after] = take(worker)
    assert after.job_id == follow.id


def test_a_cancelled_follow_up_makes_room_for_a_new_one(make: Make) -> None:
    producer, worker = make(), make(start=True)
    producer.submit("q", "v1", dedup=keep_last())
    [process] = take(worker)
    follow = producer.submit("q", "v2", dedup=keep_last())
    assert producer.cancel_job("q", follow.id)
    again = producer.submit("q", "v3", dedup=keep_last())
    assert not again.duplicate and state(producer, again.id) == "waiting"
    assert finish(worker, process)
    assert state(producer, again.id) == "queued" and state(producer, follow.id) == "cancelled"


def test_a_follow_up_keeps_its_delay_from_its_last_submit(make: Make) -> None:
    producer, worker = make(), make(start=True)
    producer.submit("q", "v1", dedup=keep_last())
    [process] = take(worker)
    follow = producer.submit("q", "v2", delay=60, dedup=keep_last())
    assert finish(worker, process)
    assert state(producer, follow.id) == "delayed"
    info = producer.get_job("q", follow.id)
    assert info is not None and info.due is not None and info.due > producer.server_time() + 50


# -- bad input --------------------------------------------------------------------

BAD_DEDUPS: list[tuple[dict[str, object], type[Exception], str]] = [
    ({"key": ""}, ValueError, "dedup key"),
    ({"key": "x" * 257}, ValueError, "dedup key"),
    ({"key": "a\nb"}, ValueError, "dedup key"),
    ({"key": 7}, TypeError, "dedup key"),
    ({"key": "k"}, ValueError, "needs a ttl"),
    ({"key": "k", "ttl": -1}, ValueError, "dedup ttl"),
    ({"key": "k", "ttl": 0}, ValueError, "dedup ttl"),
    ({"key": "k", "ttl": "1"}, TypeError, "dedup ttl"),
    ({"key": "k", "mode": "latest"}, ValueError, "dedup mode"),
    ({"key": "k", "mode": 1}, TypeError, "dedup mode"),
    ({"key": "k", "ttl": 5, "mode": "debounce"}, ValueError, "takes no ttl"),
    ({"key": "k", "ttl": 5, "mode": "keep_last"}, ValueError, "takes no ttl"),
]


@pytest.mark.parametrize(("fields", "error", "match"), BAD_DEDUPS)
def test_a_bad_dedup_is_refused_when_made(
    fields: dict[str, object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        worqr.Dedup(**fields)  # type: ignore[arg-type]


def test_bad_dedup_input_writes_nothing(make: Make, redis_client: redis.Redis, prefix: str) -> None:
    producer = make()
    producer.submit("q", "warm", dedup=keep_last())
    before = snapshot(redis_client, prefix)
    with pytest.raises(ValueError, match="unique"):
        producer.submit("q", "x", unique=True, dedup=keep_last())
    with pytest.raises(ValueError, match="id"):
        producer.submit("q", "x", id="mine", dedup=throttle())
    with pytest.raises(TypeError, match=r"worqr\.Dedup"):
        producer.submit("q", "x", dedup="k")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="delay or at"):
        producer.submit("q", "x", delay=1, at=1, dedup=keep_last())
    with pytest.raises(TypeError):
        producer.submit("q", 7, dedup=keep_last())  # type: ignore[arg-type]
    assert snapshot(redis_client, prefix) == before


# -- real workers -------------------------------------------------------------------


def test_a_thousand_debounced_submits_run_once_with_the_last_payload(
    make: Make, redis_url: str, prefix: str, running: Running
) -> None:
    runs: list[str] = []
    worker = fast_worker(redis_url, prefix)

    @worker.job("q")
    def handle(value: str) -> None:
        runs.append(value)

    running.start(worker)
    producer = make()
    # Each submit moves the due time 3 s on: the job runs 3 s after the last one.
    refs = {producer.submit("q", str(i), delay=3.0, dedup=debounce()).id for i in range(1000)}
    assert len(refs) == 1
    [id] = refs
    assert producer.result("q", id, timeout=30) is None
    # Nothing is left that could run again: one finished, none queued or delayed.
    counts = producer.count_jobs("q")
    assert (counts["finished"], counts["queued"], counts["delayed"]) == (1, 0, 0)
    assert runs == ["999"]


def test_keep_last_never_runs_two_of_a_key_at_once(
    make: Make, redis_url: str, prefix: str, running: Running
) -> None:
    lock = threading.Lock()
    now_running = 0
    most = 0
    runs: list[str] = []

    def handle(value: str) -> None:
        nonlocal now_running, most
        with lock:
            now_running += 1
            most = max(most, now_running)
        time.sleep(0.03)
        with lock:
            now_running -= 1
            runs.append(value)

    for _ in range(2):  # two workers of four handlers each
        worker = fast_worker(redis_url, prefix)
        worker.job("q")(handle)
        running.start(worker)
    producer = make()
    last = ""
    for i in range(150):
        last = f"v{i}"
        producer.submit("q", last, dedup=keep_last())
        time.sleep(0.002)

    def settled() -> bool:
        counts = producer.count_jobs("q")
        live = ("delayed", "queued", "active", "retrying", "waiting")
        return not any(counts.get(name, 0) for name in live)

    wait_until(settled, timeout=30, message="every run of the key ended")
    assert most == 1, "two runs of one keep_last key overlapped"
    assert len(runs) >= 2 and runs[-1] == last


@pytest.mark.parametrize("end", ["finished", "failed", "cancelled", "cancel_jobs", "cancel_tasks"])
def test_a_follow_up_starts_at_once_when_the_run_ends(
    make: Make, redis_client: redis.Redis, redis_url: str, prefix: str, running: Running, end: str
) -> None:
    """poll_interval is 30 s: only the script that ends the run (the finishing
    take, job_fail, job_cancel; the bulk cancels of a state, job_cancel_many, or
    by payload, job_cancel_payload) can start the follow-up soon."""
    gate = threading.Event()
    worker = fast_worker(redis_url, prefix, poll_interval=30.0)

    @worker.job("q", retries=0)
    async def handle(value: str) -> str:
        if value == "first":
            await asyncio.to_thread(gate.wait, 20)
            if end == "failed":
                raise worqr.Fail("as asked")
        return f"ran {value}"

    running.start(worker)
    producer = make()
    try:
        first = producer.submit("q", "first", dedup=keep_last())
        wait_until(lambda: state(producer, first.id) == "active", timeout=10)
        follow = producer.submit("q", "next", dedup=keep_last())
        assert state(producer, follow.id) == "waiting"
        idle = MeshKeys(prefix).queue("q").idle  # the worker waits for work (a 30 s poll)
        wait_until(lambda: redis_client.scard(idle) == 1, timeout=10)
        started = time.monotonic()
        if end == "cancelled":
            assert producer.cancel_job("q", first.id)
        elif end == "cancel_jobs":
            assert producer.cancel_jobs("q", state="active") == 1
        elif end == "cancel_tasks":
            assert producer.cancel_tasks("q", "first") == 1
        else:
            gate.set()
        assert producer.result("q", follow.id, timeout=10) == "ran next"
        assert time.monotonic() - started < 5  # not a 30 s poll
        assert state(producer, first.id) == {"finished": "finished", "failed": "failed"}.get(
            end, "cancelled"
        )
    finally:
        gate.set()
