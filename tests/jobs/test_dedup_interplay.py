"""Where dedup modes, fair-share groups and bulk operations meet: a keep_last
follow-up through bulk cancels, groups, pauses and deletes; debounce and
throttle markers through update, retry, promote, purge and delete_queue
(against a real redis-server and real workers)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
import redis

import worqr
from tests.support.mesh import keys_under, queue_keys
from tests.support.waiting import wait_until
from worqr._jobs import JobProcess

from .conftest import Running, fast_worker
from .test_dedup import debounce, keep_last, marker, payload, state, throttle
from .test_group_bulk import ring
from .test_group_tallies import tallied, walked
from .test_lifecycle import finish, take

Make = Callable[..., worqr.Worqr]
LIVE = ("delayed", "queued", "active", "retrying", "waiting")


def live(client: worqr.Worqr) -> dict[str, int]:
    counts = client.count_jobs("q")
    return {name: counts.get(name, 0) for name in LIVE if counts.get(name, 0)}


def assert_tallies(raw: redis.Redis, prefix: str) -> None:
    assert tallied(raw, prefix) == walked(raw, prefix)


def running_with_follow_up(
    producer: worqr.Worqr, worker: worqr.Worqr, group: str | None = None
) -> tuple[worqr.JobRef, worqr.JobRef, JobProcess]:
    """A keep_last job active (taken by ``worker``) and its follow-up waiting."""
    first = producer.submit("q", "v1", dedup=keep_last(), retries=1, group=group)
    [process] = take(worker)
    follow = producer.submit("q", "v2", dedup=keep_last(), group=group)
    assert state(producer, follow.id) == "waiting"
    return first, follow, process


# -- 1. a follow-up through bulk and single cancels ------------------------------


@pytest.mark.parametrize("state_filter", [None, "waiting"])
@pytest.mark.parametrize("end", ["finish", "fail", "cancel"])
def test_a_bulk_cancelled_follow_up_never_runs_and_the_key_is_free(
    make: Make, redis_client: redis.Redis, prefix: str, state_filter: str | None, end: str
) -> None:
    producer, worker = make(), make(start=True)
    first, follow, process = running_with_follow_up(producer, worker)
    cancelled = producer.cancel_jobs("q", state=state_filter)
    assert cancelled == (2 if state_filter is None else 1)
    assert state(producer, follow.id) == "cancelled"
    if state_filter == "waiting":
        assert state(producer, first.id) == "active"
        if end == "finish":
            assert finish(worker, process)
        elif end == "fail":
            worker.internals.fail_job(process, mode="fail", delay=0, retries=0, error="E")
        else:
            assert producer.cancel_job("q", first.id)
    assert state(producer, follow.id) == "cancelled"
    assert take(worker) == []
    assert live(producer) == {}
    assert marker(redis_client, prefix, "keep_last:k") is None
    assert redis_client.zcard(queue_keys(prefix, "q").job_waiting) == 0
    again = producer.submit("q", "v3", dedup=keep_last())
    assert not again.duplicate and state(producer, again.id) == "queued"


def test_cancel_job_of_a_follow_up_then_every_end_leaves_the_key_free(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer, worker = make(), make(start=True)
    _, follow, process = running_with_follow_up(producer, worker)
    assert producer.cancel_job("q", follow.id)
    assert live(producer) == {"active": 1}
    worker.internals.fail_job(process, mode="fail", delay=0, retries=0, error="E")
    assert take(worker) == [] and live(producer) == {}
    assert marker(redis_client, prefix, "keep_last:k") is None
    assert not producer.submit("q", "v3", dedup=keep_last()).duplicate


def test_cancel_jobs_of_every_state_reaches_a_delayed_follow_up_of_a_retrying_job(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    """The retrying job's cancel places its follow-up (delayed by its own delay):
    the bulk cancel of every state must not leave it to run later."""
    producer, worker = make(), make(start=True)
    first = producer.submit("q", "v1", dedup=keep_last(), retries=1)
    [process] = take(worker)
    assert worker.internals.fail_job(process, mode="error", delay=60, retries=1, error="E")
    assert state(producer, first.id) == "retrying"
    follow = producer.submit("q", "v2", delay=30, dedup=keep_last())
    assert state(producer, follow.id) == "waiting"
    assert producer.cancel_jobs("q") == 2
    assert state(producer, follow.id) == "cancelled"
    assert live(producer) == {}
    assert marker(redis_client, prefix, "keep_last:k") is None


def test_cancel_jobs_active_places_the_follow_up_and_counts_stay_exact(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer, worker = make(), make(start=True)
    first, follow, _ = running_with_follow_up(producer, worker)
    assert producer.cancel_jobs("q", state="active") == 1
    assert state(producer, first.id) == "cancelled" and state(producer, follow.id) == "queued"
    assert live(producer) == {"queued": 1}
    held = marker(redis_client, prefix, "keep_last:k")
    assert held is not None and held.decode().startswith(f"{follow.id}#")
    [after] = take(worker)
    assert after.job_id == follow.id


# -- 2. a follow-up placed without a take wakes an idle worker -----------------------
# (the bulk cancels: tests/jobs/test_dedup.py's test_a_follow_up_starts_at_once...)


def test_a_follow_up_placed_by_a_finish_that_takes_nothing_wakes_an_idle_worker(
    make: Make, redis_client: redis.Redis, redis_url: str, prefix: str, running: Running
) -> None:
    """The run ends in a finishing take that wants no job (count 0: a worker at
    its concurrency, or stopping): another worker, idle on a 30 s poll, must be
    woken for the follow-up it placed, never the holder, whose earlier take left it
    in the idle set."""
    producer, holder = make(), make(start=True)
    first, follow, process = running_with_follow_up(producer, holder)
    worker = fast_worker(redis_url, prefix, poll_interval=30.0)

    @worker.job("q")
    def handle(value: str) -> str:
        return f"ran {value}"

    running.start(worker)
    idle = queue_keys(prefix, "q").idle
    wait_until(lambda: redis_client.sismember(idle, worker.worker_id), timeout=10)
    assert redis_client.sismember(idle, holder.worker_id)  # its take drained the queue
    started = time.monotonic()
    [accepted], _, _ = holder.internals.take_jobs("q", [(process, "s", b"ok")], 0, full=True)
    assert accepted
    # with no room, the holder left the idle set: the wake-up went to the worker
    assert not redis_client.sismember(idle, holder.worker_id)
    assert producer.result("q", follow.id, timeout=10) == "ran v2"
    assert time.monotonic() - started < 5  # not a 30 s poll
    assert state(producer, first.id) == "finished"


def test_a_finish_sent_alone_keeps_the_wake_up_its_last_take_asked_for(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    """A worker with room sends a finish alone (count 0, not full: a lane that
    passed its slot to another queue, a batch sent beside the takes): it stays
    in the idle set its last take put it in, and the next job wakes it at once
    (taken out, it waited for a poll: a flow's next step took 5 s)."""
    producer, holder = make(), make(start=True)
    producer.submit("q", "a")
    [process] = take(holder)  # asked for 10, got 1: it wants a wake-up
    keys = queue_keys(prefix, "q")
    assert redis_client.sismember(keys.idle, holder.worker_id)
    with redis_client.pubsub() as wakes:
        wakes.subscribe(keys.wake(holder.worker_id or ""))
        assert wakes.get_message(timeout=5) is not None  # subscribed
        assert finish(holder, process)
        assert redis_client.sismember(keys.idle, holder.worker_id)
        producer.submit("q", "b")
        woken = wait_until(lambda: wakes.get_message(timeout=0.1), message="a wake-up")
        assert woken["data"] == b"work:1"


# -- 3. dedup and groups -----------------------------------------------------------


def test_a_debounce_replace_keeps_the_first_jobs_group(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer = make()
    first = producer.submit("q", "v1", group="a", delay=30, dedup=debounce())
    again = producer.submit("q", "v2", group="b", dedup=debounce())  # due now: queued
    assert again.id == first.id and again.duplicate
    info = producer.get_job("q", first.id)
    assert info is not None and (info.group, info.state, info.payload) == ("a", "queued", "v2")
    groups = {g.name: (g.queued, g.delayed) for g in producer.get_groups("q")[0]}
    assert groups == {"a": (1, 0)}
    assert ring(redis_client, prefix) == [b"a"]
    assert_tallies(redis_client, prefix)


@pytest.mark.parametrize("end", ["finish", "fail", "cancel", "cancel_jobs"])
def test_a_grouped_follow_up_joins_its_group_when_the_run_ends(
    make: Make, redis_client: redis.Redis, prefix: str, end: str
) -> None:
    producer, worker = make(), make(start=True)
    first, follow, process = running_with_follow_up(producer, worker, group="a")
    assert producer.submit("q", "v3", group="a", dedup=keep_last()).id == follow.id
    assert {g.name: (g.queued, g.active) for g in producer.get_groups("q")[0]} == {"a": (0, 1)}
    assert_tallies(redis_client, prefix)
    if end == "finish":
        assert finish(worker, process)
    elif end == "fail":
        worker.internals.fail_job(process, mode="fail", delay=0, retries=0, error="E")
    elif end == "cancel":
        assert producer.cancel_job("q", first.id)
    else:
        assert producer.cancel_jobs("q", state="active", group="a") == 1
    assert state(producer, follow.id) == "queued"
    assert {g.name: (g.queued, g.active) for g in producer.get_groups("q")[0]} == {"a": (1, 0)}
    assert ring(redis_client, prefix) == [b"a"]
    assert_tallies(redis_client, prefix)
    [after] = take(worker)
    assert (after.job_id, after.task) == (follow.id, "v3")
    assert finish(worker, after)
    assert producer.get_groups("q") == ([], None)
    assert_tallies(redis_client, prefix)


def test_follow_ups_that_bring_groups_back_in_a_take_keep_the_groups_default_limits(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    """The queue has no group when the take begins (its runs have none); the
    follow-ups its finishes place are of group a: the same take starts no more
    of them than the queue's group_max_active."""
    producer, worker = make(), make(start=True)
    producer.configure_queue("q", group_max_active=1)
    for key in ("k1", "k2"):
        producer.submit("q", "run", dedup=keep_last(key))
    held = take(worker)
    assert len(held) == 2
    follows = [producer.submit("q", "next", group="a", dedup=keep_last(k)) for k in ("k1", "k2")]
    assert all(state(producer, f.id) == "waiting" for f in follows)
    _, taken, _ = worker.internals.take_jobs("q", [(p, "s", b"") for p in held], 10)
    assert len(taken) == 1  # group a's max_active
    assert {g.name: (g.queued, g.active) for g in producer.get_groups("q")[0]} == {"a": (1, 1)}
    assert_tallies(redis_client, prefix)


def test_a_bulk_cancel_of_one_group_reaches_its_waiting_follow_up(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer, worker = make(), make(start=True)
    _, follow, _ = running_with_follow_up(producer, worker, group="a")
    other = producer.submit("q", "x", group="b")
    assert producer.cancel_jobs("q", group="a") == 2
    assert state(producer, follow.id) == "cancelled" and state(producer, other.id) == "queued"
    assert live(producer) == {"queued": 1}
    assert marker(redis_client, prefix, "keep_last:k") is None
    assert_tallies(redis_client, prefix)


# -- 4. markers through update, retry, promote, purge and delete_queue ----------------


def test_update_job_keeps_a_debounce_marker_on_the_jobs_new_entry(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer, worker = make(), make(start=True)
    first = producer.submit("q", "v1", group="a", dedup=debounce())
    assert producer.update_job("q", first.id, priority=3)  # a new entry in its group
    assert producer.update_job("q", first.id, delay=60)  # delayed
    assert producer.update_job("q", first.id, delay=0, payload="v2")  # queued again
    assert producer.submit("q", "v3", dedup=debounce()) == worqr.JobRef("q", first.id, True)
    assert live(producer) == {"queued": 1}
    [process] = take(worker)
    assert (process.job_id, process.task) == (first.id, "v3")
    assert_tallies(redis_client, prefix)


def test_update_job_of_a_retrying_debounced_job_leaves_the_keys_newer_job_its_marker(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    """Once a debounced job ran, the next submit creates the key's next job: an
    update of the older one (retrying) must not take the key back from it."""
    producer, worker = make(), make(start=True)
    first = producer.submit("q", "v1", dedup=debounce(), retries=1)
    [process] = take(worker)
    assert worker.internals.fail_job(process, mode="error", delay=60, retries=1, error="E")
    second = producer.submit("q", "v2", dedup=debounce())
    assert not second.duplicate and state(producer, second.id) == "queued"
    assert producer.update_job("q", first.id, priority=2)
    assert producer.update_job("q", first.id, payload="v1 again", delay=30)
    assert state(producer, first.id) == "retrying"
    assert producer.submit("q", "v3", dedup=debounce()) == worqr.JobRef("q", second.id, True)
    assert payload(producer, second.id) == "v3"
    held = marker(redis_client, prefix, "debounce:k")
    assert held is not None and held.decode().startswith(f"{second.id}#")


def test_promote_and_retry_keep_a_debounce_key_to_one_job(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer = make()
    first = producer.submit("q", "v1", delay=60, dedup=debounce())
    assert producer.promote_jobs("q") == 1
    assert producer.submit("q", "v2", dedup=debounce()) == worqr.JobRef("q", first.id, True)
    assert producer.cancel_job("q", first.id)
    assert producer.retry_jobs("q") == 1
    assert producer.submit("q", "v3", dedup=debounce()) == worqr.JobRef("q", first.id, True)
    assert live(producer) == {"queued": 1}


def test_purge_of_a_throttled_job_keeps_the_throttle(make: Make) -> None:
    producer = make()
    first = producer.submit("q", "v1", dedup=throttle(ttl=60))
    assert producer.cancel_job("q", first.id)
    assert producer.purge_jobs("q", "cancelled") == 1
    again = producer.submit("q", "v2", dedup=throttle(ttl=60))  # the marker lives its ttl
    assert again.id == first.id and again.duplicate
    assert live(producer) == {}


@pytest.mark.parametrize("if_idle", [False, True])
def test_delete_queue_leaves_no_dedup_key(
    make: Make, redis_client: redis.Redis, prefix: str, if_idle: bool
) -> None:
    producer, worker = make(), make(start=True)
    running_with_follow_up(producer, worker, group="a")
    producer.submit("q", "t", dedup=throttle("t", ttl=60))
    producer.submit("q", "d", delay=60, dedup=debounce("d"))
    if if_idle:
        with pytest.raises(worqr.QueueBusyError):
            producer.delete_queue("q", if_idle=True)
        producer.cancel_jobs("q", state="active")
    producer.delete_queue("q", if_idle=if_idle)
    tag = queue_keys(prefix, "q").tag
    left = [k for k in keys_under(redis_client, prefix) if k.decode().startswith(tag)]
    assert left in ([], [queue_keys(prefix, "q").job_applied.encode()])
    assert not producer.submit("q", "t", dedup=throttle("t", ttl=60)).duplicate
    assert not producer.submit("q", "k", dedup=keep_last()).duplicate


# -- 5. pauses ------------------------------------------------------------------------


@pytest.mark.parametrize("paused", ["queue", "group"])
def test_a_follow_up_placed_into_a_pause_waits_for_the_resume(
    make: Make, redis_client: redis.Redis, prefix: str, paused: str
) -> None:
    producer, worker = make(), make(start=True)
    _, follow, process = running_with_follow_up(producer, worker, group="a")
    group = "a" if paused == "group" else None
    producer.pause("q", group=group)
    assert finish(worker, process)
    assert state(producer, follow.id) == "queued"
    assert take(worker) == []
    assert_tallies(redis_client, prefix)
    producer.resume("q", group=group)
    [after] = take(worker)
    assert after.job_id == follow.id
    assert_tallies(redis_client, prefix)


# -- 5. waiting jobs are listed ------------------------------------------------------


def test_get_jobs_lists_waiting_follow_ups_and_flow_parents_by_creation(
    make: Make,
) -> None:
    """`get_jobs(queue, "waiting")` lists what `count_jobs` counts as waiting: a
    keep_last follow-up (until the run ends) and a flow parent (until its
    children end), oldest first, over pages."""
    producer, worker = make(), make(start=True)
    first, follow, process = running_with_follow_up(producer, worker)
    flow = producer.submit_flow(worqr.FlowJob("q", "parent", children=[worqr.FlowJob("kids", "1")]))
    parent_id = flow.last[1]
    assert producer.count_jobs("q")["waiting"] == 2
    jobs, after = producer.get_jobs("q", "waiting")
    assert after is None and [(j.id, j.state) for j in jobs] == [
        (follow.id, "waiting"),
        (parent_id, "waiting"),
    ]
    assert jobs[0].payload == "v2"
    page, after = producer.get_jobs("q", "waiting", limit=1)
    assert [j.id for j in page] == [follow.id] and after is not None
    page, after = producer.get_jobs("q", "waiting", limit=1, cursor=after)
    assert [j.id for j in page] == [parent_id]
    assert finish(worker, process)  # the run ends: the follow-up is queued
    assert [j.id for j in producer.get_jobs("q", "waiting")[0]] == [parent_id]
    assert state(producer, first.id) == "finished"
    with pytest.raises(ValueError, match="unknown job state 'paused'"):
        producer.get_jobs("q", "paused")
