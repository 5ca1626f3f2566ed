"""Durable pause: a job queue's (`pause`, `resume`, `is_paused`) held in the take
script on every worker process and across restarts, and a schedule's
(`pause_schedule`, `resume_schedule`) kept by the upsert every worker makes at
start (against a real redis-server; `worqr worker` processes where it says so)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

import worqr
from tests.client.test_extreme_options import snapshot
from tests.support.job_mesh import Mesh
from tests.support.mesh import queue_keys
from tests.support.waiting import wait_until

from .test_limits import start_times
from .test_schedules import fire_times

Make = Callable[..., worqr.Worqr]
APP = "pause_app:worker"
SLOW_POLL = ("--poll-interval", "30")  # no fallback poll within a test: only wake-ups


@pytest.fixture
def meshes(redis_url: str, prefix: str, tmp_path: Path) -> Iterator[Callable[[], Mesh]]:
    """``meshes()``: a new `worqr worker pause_app:worker` mesh (not started);
    every one closed after the test."""
    made: list[Mesh] = []

    def new() -> Mesh:
        mesh = Mesh(redis_url, prefix, tmp_path / f"worker{len(made)}.log", app=APP)
        made.append(mesh)
        return mesh

    yield new
    for mesh in made:
        mesh.close()


def idle_workers(raw: redis.Redis, prefix: str, queue: str) -> set[str]:
    return {w.decode() for w in raw.smembers(queue_keys(prefix, queue).idle)}


def live_workers(client: worqr.Worqr) -> set[str]:
    ids = client.get_workers()
    return {w for w, up in zip(ids, client.workers_alive(ids), strict=True) if up}


def state_of(client: worqr.Worqr, queue: str, id: str) -> str | None:
    job = client.get_job(queue, id)
    return None if job is None else job.state


@pytest.mark.slow
def test_no_job_starts_after_pause_returns_and_resume_wakes_the_workers(
    meshes: Callable[[], Mesh],
) -> None:
    """Two worker processes drain; once `pause` returns no job starts on either
    (start times on Redis's clock); active jobs finish, a delayed job comes due
    and waits; `resume` wakes the idle workers (their fallback poll is 30 s) and
    the rest drains."""
    mesh = meshes()
    client = mesh.client
    client.submit_many("work", [f"j{i}" for i in range(3000)])
    mesh.start(2, "--concurrency", "4", *SLOW_POLL)
    wait_until(lambda: client.count_jobs("work")["finished"] >= 100, timeout=30, message="a drain")
    client.pause("work")
    paused_at = client.server_time()  # read right after pause returned
    late = client.submit("work", "late", delay=0.3)
    wait_until(
        lambda: client.count_jobs("work")["active"] == 0, timeout=10, message="actives ended"
    )
    wait_until(
        lambda: state_of(client, "work", late.id) == "queued", timeout=10, message="came due"
    )
    counts = client.count_jobs("work")
    assert counts["queued"] > 0 and counts["failed"] == 0
    assert counts["queued"] + counts["finished"] == 3001, counts  # the actives finished
    assert not [t for t in start_times(client, "work") if t > paused_at], "started while paused"
    assert client.is_paused("work") and client.get_limits("work").paused

    client.resume("work")
    resumed_at = client.server_time()
    assert not client.is_paused("work")
    wait_until(
        lambda: client.count_jobs("work")["finished"] == 3001,
        timeout=25,  # below the 30 s poll: only the resume's wake-ups can start them
        message="the rest drained",
    )
    first = min(t for t in start_times(client, "work") if t > paused_at)
    print(f"first start {1000 * (first - resumed_at):.1f} ms after resume")
    assert first - resumed_at < 1.0


@pytest.mark.slow
def test_a_pause_survives_a_restart_of_every_worker(
    meshes: Callable[[], Mesh], redis_client: redis.Redis, prefix: str
) -> None:
    """Paused before it has jobs; two workers start, take nothing and wait; both
    are replaced by two new processes, which take nothing either; `resume` runs it."""
    first = meshes()
    client = first.client
    client.pause("work")
    client.submit_many("work", [f"j{i}" for i in range(20)])
    for mesh in (first, meshes()):
        mesh.start(2, "--poll-interval", "0.2")
        workers = live_workers(client)
        wait_until(
            lambda: idle_workers(redis_client, prefix, "work") >= workers,  # noqa: B023
            timeout=10,
            message="both took and found nothing to start",
        )
        counts = client.count_jobs("work")
        assert (counts["queued"], counts["active"], counts["finished"]) == (20, 0, 0)
        assert client.is_paused("work")
        mesh.close()
    last = meshes()
    last.start(2, *SLOW_POLL)
    wait_until(lambda: idle_workers(redis_client, prefix, "work"), message="idle workers")
    last.client.resume("work")
    wait_until(
        lambda: last.client.count_jobs("work")["finished"] == 20, timeout=20, message="a drain"
    )


@pytest.mark.slow
def test_a_paused_schedule_survives_the_upsert_of_restarted_workers(
    meshes: Callable[[], Mesh], redis_client: redis.Redis, prefix: str
) -> None:
    """pause_app's workers declare "tick" (every 0.5 s) at start. Paused, it fires
    nothing while every worker restarts (and declares it again); resumed, it
    fires once for what it missed, without waiting for a poll."""
    mesh = meshes()
    client = mesh.client
    mesh.start(2, *SLOW_POLL)
    wait_until(lambda: fire_times(redis_client, prefix, "ticks", "tick"), timeout=10)
    assert client.pause_schedule("ticks", "tick")
    paused_ms = round(client.server_time() * 1000)
    mesh.close()
    again = meshes()
    again.start(2, *SLOW_POLL)
    wait_until(lambda: idle_workers(redis_client, prefix, "ticks"), message="idle workers")
    wait_until(
        lambda: again.client.server_time() * 1000 > paused_ms + 1500,
        timeout=5,
        message="three periods",
    )
    (info,) = again.client.get_schedules("ticks")
    assert info.paused and info.next_run is None
    assert not [t for t in fire_times(redis_client, prefix, "ticks", "tick") if t > paused_ms]
    before_ms = round(again.client.server_time() * 1000)
    assert again.client.resume_schedule("ticks", "tick")
    wait_until(
        lambda: [t for t in fire_times(redis_client, prefix, "ticks", "tick") if t > paused_ms],
        timeout=5,
        message="a fire after resume",
    )
    wait_until(
        lambda: (
            again.client.count_jobs("ticks")["queued"] == 0
            and again.client.count_jobs("ticks")["active"] == 0
        ),
        message="its job ran",
    )
    # Once for all it missed: one fire at most of a time before the resume began.
    # (A tick falling due while resume_schedule runs fires on its own, as it should.)
    missed = [t for t in fire_times(redis_client, prefix, "ticks", "tick") if t > paused_ms]
    assert len([t for t in missed if t <= before_ms]) <= 1, (missed, before_ms)
    assert all(b - a >= 500 for a, b in itertools.pairwise(missed)), missed  # no extra fire


def test_a_paused_queue_accepts_finishes_and_promotes_but_starts_nothing(make: Make) -> None:
    worker = make(start=True)  # a member taking by hand
    refs = worker.submit_many("q", ["a", "b", "c"])
    _, held, _ = worker.internals.take_jobs("q", [], 2)
    assert len(held) == 2
    worker.pause("q")
    late = worker.submit("q", "late", delay=0.05)
    done, taken, _ = worker.internals.take_jobs("q", [(p, "s", b"ok") for p in held], 2)
    assert done == [True, True] and taken == []
    wait_until(
        lambda: (
            not worker.internals.take_jobs("q", [], 4)[1]  # each take promotes, none starts
            and state_of(worker, "q", late.id) == "queued"
        ),
        message="the delayed job came due",
    )
    counts = worker.count_jobs("q")
    assert (counts["queued"], counts["active"], counts["finished"]) == (2, 0, 2)
    assert worker.get_limits("q").paused and worker.get_limits("q").as_json()["paused"]
    worker.resume("q")
    _, taken, _ = worker.internals.take_jobs("q", [], 4)
    assert sorted(p.job_id for p in taken) == sorted([refs[2].id, late.id])


def test_resume_wakes_as_many_idle_workers_as_ready_jobs(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer = make()
    producer.pause("q")  # before the queue has jobs: it becomes a job queue
    producer.submit("q", "one")
    workers = [make(start=True) for _ in range(3)]
    for worker in workers:
        assert worker.internals.take_jobs("q", [], 4)[1] == []  # refused: each goes idle
    assert len(idle_workers(redis_client, prefix, "q")) == 3
    producer.resume("q")
    assert len(idle_workers(redis_client, prefix, "q")) == 2  # one woken for one job
    producer.resume("q")  # not paused: nothing happens
    assert len(idle_workers(redis_client, prefix, "q")) == 2


def test_resume_wakes_no_more_idle_workers_than_the_limits_let_start(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer = make()
    producer.configure_queue("q", max_active=1)
    producer.pause("q")
    producer.submit_many("q", ["a", "b", "c"])
    workers = [make(start=True) for _ in range(3)]
    for worker in workers:
        assert worker.internals.take_jobs("q", [], 4)[1] == []
    producer.resume("q")
    assert len(idle_workers(redis_client, prefix, "q")) == 2  # one job may start


def test_pause_is_for_job_queues_and_resume_leaves_other_queues_alone(wq: worqr.Worqr) -> None:
    wq.enqueue("tasks", "t")
    with pytest.raises(worqr.WrongQueueKindError, match="tasks"):
        wq.pause("tasks")
    assert not wq.is_paused("tasks")
    wq.resume("tasks")  # not paused: left as it is
    wq.resume("unknown")
    assert wq.get_queues() == ["tasks"] and wq.count_tasks("tasks") == 1
    wq.pause("fresh")
    with pytest.raises(worqr.WrongQueueKindError):
        wq.enqueue("fresh", "a task")  # pausing made it a job queue
    assert wq.is_paused("fresh") and not wq.is_paused("unknown")
    assert wq.get_limits("fresh") == worqr.QueueLimits(None, None, 0, None, paused=True)
    # Paused before it had a job, and listed: status, the metrics and the view show it.
    assert wq.get_queues() == ["fresh", "tasks"]


def test_a_paused_schedule_fires_nothing_then_once_for_the_times_it_missed(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    wq = make(start=True)
    wq.start_work("ticks")  # a member: schedules fire only for queues someone serves
    wq.schedule("ticks", "tick", every=0.1)
    wait_until(
        lambda: (
            wq.internals.promote_due("ticks") >= 0
            and fire_times(redis_client, prefix, "ticks", "tick")
        ),
        message="a first fire",
    )
    assert wq.pause_schedule("ticks", "tick") and wq.pause_schedule("ticks", "tick")
    paused_ms = round(wq.server_time() * 1000)
    (info,) = wq.get_schedules("ticks")
    assert info.paused and info.next_run is None

    def fired_since() -> list[int]:
        return [t for t in fire_times(redis_client, prefix, "ticks", "tick") if t > paused_ms]

    def visit_until(ms: int) -> bool:
        wq.internals.promote_due("ticks")
        assert not fired_since(), "fired while paused"
        return wq.server_time() * 1000 > ms

    wait_until(lambda: visit_until(paused_ms + 500), message="five periods visited")
    again = wq.schedule("ticks", "tick", every=0.1)  # an equal spec: kept as it is
    assert again.paused and again.next_run is None
    changed = wq.schedule("ticks", "tick", every=0.15)  # a new spec from now, still paused
    assert changed.paused and changed.next_run is None
    wait_until(lambda: visit_until(paused_ms + 1000), message="more periods visited")
    assert wq.resume_schedule("ticks", "tick") and wq.resume_schedule("ticks", "tick")
    resumed_ms = round(wq.server_time() * 1000)
    assert not wq.get_schedules("ticks")[0].paused
    wait_until(
        lambda: wq.internals.promote_due("ticks") >= 0 and len(fired_since()) >= 4,
        message="fires after the resume",
    )
    fires = fired_since()
    owed = [t for t in fires if t <= resumed_ms]
    assert len(owed) == 1, (fires, resumed_ms)
    after = [t for t in fires if t > resumed_ms]
    assert after == [owed[0] + 150 * k for k in range(1, len(after) + 1)], "then each period"
    assert not wq.pause_schedule("ticks", "nope") and not wq.resume_schedule("ticks", "nope")


def test_a_paused_cron_schedule_owes_one_fire_after_its_buffer_ran_out(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    """A cron schedule paused for longer than its buffer of fire times: resumed,
    the refill computes missed times from the resume on, so one fire is owed."""
    pytest.importorskip("cronsim")
    wq = make(start=True, jobs=worqr.JobSettings(misfire_grace=1e9))
    wq.start_work("q")
    wq.schedule("q", "minutely", cron="* * * * *")
    key = f"{{{prefix}:q}}:job:sched"
    assert wq.pause_schedule("q", "minutely")
    spec = redis_client.hget(key, "minutely")
    assert spec is not None
    # Every buffered fire is in the past: as if paused for hours.
    old = json.loads(spec)
    old["f"] = [t - 3_600_000 * 10 for t in old["f"]]
    old["b"] = old["f"][-1]
    redis_client.hset(key, "minutely", json.dumps(old))
    wq.internals.promote_due("q")
    assert not fire_times(redis_client, prefix, "q", "minutely")
    assert wq.resume_schedule("q", "minutely")
    wait_until(
        lambda: (
            wq.internals.promote_due("q") >= 0 and fire_times(redis_client, prefix, "q", "minutely")
        ),
        message="the owed fire",
    )
    resumed_ms = round(wq.server_time() * 1000)
    wq.internals.promote_due("q")
    fires = fire_times(redis_client, prefix, "q", "minutely")
    assert fires[0] == old["f"][-1], "the latest time it missed"
    assert all(t > resumed_ms for t in fires[1:]), "and no other it missed"


def test_bad_input_raises_and_writes_nothing(
    wq: worqr.Worqr, redis_client: redis.Redis, prefix: str
) -> None:
    wq.submit("q", "already here")
    wq.schedule("q", "s", every=60)
    wq.enqueue("tasks", "t")
    before = snapshot(redis_client, prefix)
    for call, error in [
        (lambda: wq.pause(""), ValueError),
        (lambda: wq.pause("a{b}"), ValueError),
        (lambda: wq.pause(5), TypeError),  # type: ignore[arg-type]
        (lambda: wq.resume(None), TypeError),  # type: ignore[arg-type]
        (lambda: wq.resume("bad\x00name"), ValueError),
        (lambda: wq.is_paused(b"q"), TypeError),  # type: ignore[arg-type]
        (lambda: wq.pause_schedule("q", ""), ValueError),
        (lambda: wq.pause_schedule("q", 5), TypeError),  # type: ignore[arg-type]
        (lambda: wq.resume_schedule("q", "x" * 201), ValueError),
        (lambda: wq.resume_schedule("", "s"), ValueError),
        (lambda: wq.pause("tasks"), worqr.WrongQueueKindError),
    ]:
        with pytest.raises(error):
            call()
        assert snapshot(redis_client, prefix) == before
