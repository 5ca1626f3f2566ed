"""A job's life through the worker-side plans: take, finish with a result,
fail and retry, cancel, retry_job, fencing, exact counts, results waited for,
listing, and bounded retention."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis

import worqr
from tests.support.scripts import script_calls_run
from tests.support.waiting import async_wait_until, wait_until
from worqr._clients import async_client
from worqr._core import produce
from worqr._core.upkeep import UPKEEP_INTERVAL, UPKEEP_SLICE
from worqr._jobs import STATES, JobProcess
from worqr._keys import MeshKeys

Make = Callable[..., worqr.Worqr]


def counts(**nonzero: int) -> dict[str, int]:
    return {**dict.fromkeys(STATES, 0), **nonzero}


def take(client: worqr.Worqr, queue: str = "q", count: int = 10) -> list[JobProcess]:
    _, taken, _ = client.internals.take_jobs(queue, [], count)
    return taken


def finish(client: worqr.Worqr, process: JobProcess, kind: str = "s", data: bytes = b"ok") -> bool:
    flags, _, _ = client.internals.take_jobs(process.queue, [(process, kind, data)], 0)
    return flags[0]


def watched(redis_client: Any, prefix: str, queue: str, id: str) -> bool:
    """Whether a `result` call waits for the job: it marks the record (``w``) only
    once it listens for the job's end."""
    record = redis_client.hget(MeshKeys(prefix).queue(queue).jobs, id)
    return bool(json.loads(record or "{}").get("w"))


def test_a_finished_job_stores_its_result_with_its_type(make: Make) -> None:
    producer, worker = make(), make(start=True)
    text, raw, empty = (producer.submit("q", p) for p in ("text", "raw", "none"))
    by_payload = {p.task: p for p in take(worker)}
    assert counts(active=3) == producer.count_jobs("q")
    assert by_payload["text"].attempt == 1 and by_payload["text"].job_id == text.id
    assert finish(worker, by_payload["text"], "s", "héllo".encode())
    assert finish(worker, by_payload["raw"], "b", b"\xff\x00")
    assert finish(worker, by_payload["none"], "n", b"")
    assert producer.result("q", text.id, timeout=0) == "héllo"
    assert producer.result("q", raw.id, timeout=0) == b"\xff\x00"
    assert producer.result("q", empty.id, timeout=0) is None
    info = producer.get_job("q", text.id)
    assert info is not None and info.state == "finished" and info.result == "héllo"
    assert info.started is not None and info.ended is not None and info.started <= info.ended
    assert producer.count_jobs("q") == counts(finished=3)


def test_cancel_by_payload_pages_through_the_queue_and_cancels_each_live_copy_once(
    make: Make, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cancel_tasks` on a job queue scans the payloads a bounded page per script
    call (a queue may retain millions of jobs): every live copy ends cancelled,
    over many pages, and nothing else changes."""
    monkeypatch.setattr(produce, "CANCEL_SCAN_PAGE", 40)
    producer, worker = make(), make(start=True)
    refs = producer.submit_many("q", [f"other-{i}" for i in range(600)])
    delayed = producer.submit("q", "drop", delay=60)
    [active] = [p for p in take(worker, count=1)]
    copies = producer.submit_many("q", ["drop"] * 5)
    done = producer.submit("q", "drop", priority=9)
    [finished] = take(worker, count=1)
    assert finished.job_id == done.id and finish(worker, finished)
    calls_before = script_calls_run(redis_client)
    assert producer.cancel_tasks("q", "drop") == 6  # the delayed one and the 5 queued
    calls = script_calls_run(redis_client) - calls_before
    assert calls >= 600 // 40 // 2  # page by page, not the whole hash in one call
    for ref in (delayed, *copies):
        assert producer.get_job("q", ref.id).state == "cancelled"  # type: ignore[union-attr]
    assert producer.get_job("q", done.id).state == "finished"  # type: ignore[union-attr]
    assert producer.cancel_tasks("q", "drop") == 0  # nothing live is left to cancel
    assert producer.count_jobs("q") == counts(queued=599, active=1, finished=1, cancelled=6)
    assert active.job_id == refs[0].id  # the other payloads are untouched


def test_a_finish_is_fenced_and_counted_once(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer, worker, peer = make(), make(start=True), make(start=True)
    ref = producer.submit("q", "work")
    [process] = take(worker)
    assert finish(worker, process, "s", b"first")
    # The same finish again (a resend whose first reply was lost): acknowledged,
    # and nothing changes: the result stays the first one.
    assert finish(worker, process, "s", b"again")
    assert producer.result("q", ref.id, timeout=0) == "first"
    # A worker whose lease was lost: its job goes to a peer, and its late finish is refused.
    second = producer.submit("q", "work 2")
    [held] = take(worker)
    redis_client.delete(MeshKeys(prefix).alive(worker.worker_id or ""))
    assert peer.reap() == 1
    info = producer.get_job("q", second.id)
    assert info is not None and info.state == "queued"  # back to the front
    [again] = take(peer)
    assert again.job_id == second.id and again.attempt == 2 and again.recoveries == 1
    assert finish(peer, again, "s", b"the peer's")
    assert not finish(worker, held, "s", b"late")
    assert producer.result("q", second.id, timeout=0) == "the peer's"
    assert producer.count_jobs("q") == counts(finished=2)
    assert producer.get_stats("q")["finished"] == 2


def test_failures_retry_after_their_delay_then_fail(make: Make) -> None:
    producer, worker = make(), make(start=True)
    ref = producer.submit("q", "flaky", retries=2)
    for attempt in (1, 2, 3):
        [process] = take(worker)
        assert process.attempt == attempt and process.failures == attempt - 1
        accepted, state = worker.internals.fail_job(
            process, mode="error", delay=0.05, retries=2, error=f"ValueError: no {attempt}"
        )
        assert accepted
        if attempt < 3:
            assert state == "r"
            info = producer.get_job("q", ref.id)
            assert info is not None and info.state == "retrying" and info.due is not None
            assert take(worker) == []  # not due yet: never early
            due = info.due
            wait_until(lambda due=due: producer.server_time() >= due, timeout=2)
        else:
            assert state == "x"
    info = producer.get_job("q", ref.id)
    assert info is not None and (info.state, info.attempts, info.error) == (
        "failed",
        3,
        "ValueError: no 3",
    )
    with pytest.raises(worqr.JobFailedError, match="no 3") as caught:
        producer.result("q", ref.id, timeout=0)
    assert caught.value.error == "ValueError: no 3"
    assert producer.count_jobs("q") == counts(failed=1)
    failed, _ = producer.get_jobs("q", "failed")
    assert [job.id for job in failed] == [ref.id]
    assert producer.count_failed("q") == 1 and producer.get_failed("q") == ["flaky"]


def test_fail_now_ignores_retries(make: Make) -> None:
    producer, worker = make(), make(start=True)
    ref = producer.submit("q", "bad", retries=5)
    [process] = take(worker)
    assert worker.internals.fail_job(
        process, mode="fail", delay=0, retries=5, error="Fail: bad"
    ) == (
        True,
        "x",
    )
    assert producer.get_job("q", ref.id).state == "failed"  # type: ignore[union-attr]


def test_cancel_reaches_every_live_state(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer, worker = make(), make(start=True)
    queued = producer.submit("q", "queued")
    prioritised = producer.submit("q", "prio", priority=3)
    delayed = producer.submit("q", "delayed", delay=60)
    active = producer.submit("q", "active", priority=9)
    [process] = take(worker, count=1)
    assert process.job_id == active.id
    for ref in (queued, prioritised, delayed, active):
        assert producer.cancel_job("q", ref.id)
        assert producer.get_job("q", ref.id).state == "cancelled"  # type: ignore[union-attr]
        assert not producer.cancel_job("q", ref.id)  # terminal now
    assert not producer.cancel_job("q", "unknown")
    assert not finish(worker, process)  # its process is gone: fenced
    assert take(worker) == []  # the queued entry is a tombstone that takes skip
    assert producer.count_jobs("q") == counts(cancelled=4)
    with pytest.raises(worqr.JobCancelledError):
        producer.result("q", queued.id, timeout=0)
    keys = MeshKeys(prefix).queue("q")
    assert redis_client.zcard(keys.job_delayed) == 0 and redis_client.hlen(keys.processes) == 0


def test_retry_job_gives_a_new_life_and_respects_the_unique_marker(make: Make) -> None:
    producer, worker = make(), make(start=True)
    ref = producer.submit("q", "same", unique=True, retries=0)
    [process] = take(worker)
    worker.internals.fail_job(process, mode="error", delay=0, retries=0, error="E: x")
    other = producer.submit("q", "same", unique=True)  # the marker was released
    assert not other.duplicate
    assert not producer.retry_job("q", ref.id)  # the other live job holds the marker
    assert producer.cancel_job("q", other.id)
    assert producer.retry_job("q", ref.id)
    info = producer.get_job("q", ref.id)
    assert info is not None and (info.state, info.attempts, info.error) == ("queued", 1, "E: x")
    assert producer.submit("q", "same", unique=True) == worqr.JobRef("q", ref.id, duplicate=True)
    [again] = take(worker)
    assert again.attempt == 2 and again.failures == 0  # attempts kept, failures reset
    assert finish(worker, again)
    assert producer.get_job("q", ref.id).error is None  # type: ignore[union-attr]  # cleared
    assert not producer.retry_job("q", ref.id)  # finished: nothing to retry
    assert producer.count_jobs("q") == counts(finished=1, cancelled=1)


def test_requeue_and_purge_failed_jobs(make: Make) -> None:
    producer, worker = make(), make(start=True)
    refs = producer.submit_many("q", ["a", "b", "c"], retries=0)
    for process in take(worker):
        worker.internals.fail_job(process, mode="error", delay=0, retries=0, error="E")
    assert producer.count_failed("q") == 3
    assert producer.requeue_failed("q") == 3
    assert producer.count_jobs("q") == counts(queued=3)
    for process in take(worker):
        worker.internals.fail_job(process, mode="fail", delay=0, retries=0, error="E")
    assert producer.purge_failed("q") == 3
    assert producer.count_jobs("q") == counts()
    assert all(producer.get_job("q", ref.id) is None for ref in refs)


@pytest.mark.serial
def test_result_waits_for_the_end_without_polling(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    """poll_interval is 30 s here: only the done message can end the wait soon."""
    producer, worker = make(poll_interval=30.0), make(start=True)
    ref = producer.submit("q", "slow")
    [process] = take(worker)
    got: list[object] = []
    waiter = threading.Thread(target=lambda: got.append(producer.result("q", ref.id, timeout=20)))
    waiter.start()
    wait_until(
        lambda: watched(redis_client, prefix, "q", ref.id), message="result() waits for the job"
    )
    started = time.monotonic()
    assert finish(worker, process, "s", b"done")
    waiter.join(timeout=20)
    assert got == ["done"] and time.monotonic() - started < 1.0


@pytest.mark.serial
def test_result_times_out_and_reads_once_with_timeout_zero(make: Make) -> None:
    producer = make()
    ref = producer.submit("q", "never taken")
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="still queued"):
        producer.result("q", ref.id, timeout=0.3)
    assert 0.25 < time.monotonic() - started < 3
    with pytest.raises(TimeoutError):
        producer.result("q", ref.id, timeout=0)
    with pytest.raises(worqr.JobNotFoundError):
        producer.result("q", "unknown", timeout=5)
    with pytest.raises(ValueError, match="timeout"):
        producer.result("q", ref.id, timeout=-1)


@pytest.mark.serial
def test_async_result_waits_too(
    make: Make, redis_client: redis.Redis, redis_url: str, prefix: str
) -> None:
    """poll_interval is 30 s here: only the done message can end the wait soon."""
    import asyncio

    worker = make(start=True)
    settings = worqr.Settings(prefix=prefix, poll_interval=30.0)

    async def main() -> None:
        async with worqr.AsyncWorqr(redis_url, settings=settings) as producer:
            ref = await producer.submit("q", "async")
            waiting = asyncio.create_task(producer.result("q", ref.id, timeout=10))
            await async_wait_until(
                lambda: watched(redis_client, prefix, "q", ref.id),
                message="result() waits for the job",
            )
            [process] = await asyncio.to_thread(take, worker)
            started = time.monotonic()
            await asyncio.to_thread(finish, worker, process, "b", b"\x00")
            assert await waiting == b"\x00"
            assert time.monotonic() - started < 1.0

    asyncio.run(main())


@pytest.mark.serial
def test_an_idle_async_listener_lets_a_new_subscription_in_at_once(
    make: Make,
    redis_client: redis.Redis,
    redis_url: str,
    prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An idle asyncio listener reads for long stretches (30 s here); each
    result() on a new queue subscribes to its channel, which cuts the read short
    instead of waiting for it, and the done messages still arrive (poll: 60 s)."""
    import asyncio

    monkeypatch.setattr(async_client, "LISTEN_SLICE", 30.0)
    worker = make(start=True)
    settings = worqr.Settings(prefix=prefix, poll_interval=60.0)

    async def main() -> None:
        async with worqr.AsyncWorqr(redis_url, settings=settings) as producer:
            for queue in ("a", "b", "c"):
                ref = await producer.submit(queue, queue)
                began = time.monotonic()
                waiting = asyncio.create_task(producer.result(queue, ref.id, timeout=20))
                await async_wait_until(
                    lambda q=queue, i=ref.id: watched(redis_client, prefix, q, i),
                    message="result() subscribed and waits for the job",
                )
                assert time.monotonic() - began < 1.0, "the subscription waited for a read"
                [process] = await asyncio.to_thread(take, worker, queue)
                finished = time.monotonic()
                await asyncio.to_thread(finish, worker, process, "s", b"done")
                assert await waiting == "done"
                assert time.monotonic() - finished < 1.0

    asyncio.run(main())


def test_get_jobs_pages_through_each_state(make: Make) -> None:
    producer, worker = make(), make(start=True)
    refs = producer.submit_many("q", [f"j{i}" for i in range(12)])
    producer.cancel_job("q", refs[3].id)  # a tombstone in the list
    seen: list[str | bytes | None] = []
    cursor = None
    while True:
        page, cursor = producer.get_jobs("q", "queued", limit=5, cursor=cursor)
        seen += [job.payload for job in page]
        if cursor is None:
            break
    assert seen == [f"j{i}" for i in range(12) if i != 3]
    cancelled, _ = producer.get_jobs("q", "cancelled")
    assert [job.id for job in cancelled] == [refs[3].id]
    active = take(worker, count=4)
    page, cursor = producer.get_jobs("q", "active", limit=100)
    assert sorted(job.payload for job in page) == sorted(p.task for p in active)  # type: ignore[type-var]
    for process in active:
        finish(worker, process)
    finished, _ = producer.get_jobs("q", "finished")
    assert len(finished) == 4 and all(job.result == "ok" for job in finished)
    with pytest.raises(ValueError, match="cursor"):
        producer.get_jobs("q", "queued", cursor="nonsense")


def test_any_cursor_of_digits_is_taken_by_every_state_and_nothing_else_is(make: Make) -> None:
    """A cursor is a number below 10**19 for every state (queued ones cross the
    three segments of run order); one past the end is an empty last page, and
    anything else is a ValueError before Redis sees it."""
    producer = make()
    producer.submit_many("q", ["hi-a", "hi-b"], priority=5)
    producer.submit_many("q", ["mid-a", "mid-b", "mid-c"])
    producer.submit("q", "lo-a", priority=-5)
    seen: list[str | bytes | None] = []
    cursor, pages = None, 0
    while True:
        page, cursor = producer.get_jobs("q", "queued", limit=2, cursor=cursor)
        seen += [job.payload for job in page]
        pages += 1
        if cursor is None:
            break
        assert cursor.isdigit()
    assert seen == ["hi-a", "hi-b", "mid-a", "mid-b", "mid-c", "lo-a"] and pages >= 3
    for state in STATES:
        for far in ("9" * 19, str(2**53 * 3)):
            page, after = producer.get_jobs("q", state, cursor=far)
            if state != "active":  # an HSCAN cursor may still find entries
                assert (page, after) == ([], None), (state, far)
        for bad in ("nonsense", "-1", "1" * 20, "\u0661", " 1", "hi:0", "", "1.0"):
            with pytest.raises(ValueError, match="cursor"):
                producer.get_jobs("q", state, cursor=bad)


def test_retention_is_logical_exact_and_bounded(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    """A TTL is exact: a job kept result_ttl=0 is gone for every read the moment
    it ends (min_retention keeps only watched jobs longer), and the take that
    finished it already purged it. Past max_retained, the cap purges."""
    settings = worqr.JobSettings(result_ttl=0, min_retention=30, max_retained=5, purge_budget=50)
    producer, worker = make(jobs=settings), make(start=True, jobs=settings)
    refs = producer.submit_many("q", [f"j{i}" for i in range(10)])
    for process in take(worker):
        finish(worker, process)
    assert producer.count_jobs("q") == counts()  # no floor: gone at once
    assert all(producer.get_job("q", ref.id) is None for ref in refs)  # for every read
    assert producer.get_jobs("q", "finished") == ([], None)
    with pytest.raises(worqr.JobNotFoundError):
        producer.result("q", refs[0].id, timeout=0)
    keys = MeshKeys(prefix).queue("q")
    assert redis_client.hlen(keys.jobs) == 0 and redis_client.hlen(keys.job_data) == 0
    assert redis_client.zcard(keys.job_finished) == 0 and redis_client.hlen(keys.job_result) == 0
    assert producer.get_stats("q")["purged"] == 10
    # The cap: past max_retained terminal records, the oldest go (once min_retention passed).
    capped = make(jobs=worqr.JobSettings(max_retained=5, min_retention=0.1, purge_budget=50))
    capped_worker = make(start=True, jobs=capped.settings.jobs)
    capped.submit_many("c", [f"c{i}" for i in range(12)])
    for process in take(capped_worker, "c", 12):
        finish(capped_worker, process)
    finished, _ = capped.get_jobs("c", "finished", limit=100)
    last = max(job.ended or 0.0 for job in finished)
    wait_until(lambda: capped.server_time() > last + 0.1)  # past min_retention: the cap may purge
    take(capped_worker, "c")
    assert redis_client.zcard(MeshKeys(prefix).queue("c").job_finished) == 5
    assert capped.count_jobs("c")["finished"] == 5
    assert capped.get_stats("c")["purged_by_cap"] == 7


@pytest.mark.slow
def test_failed_and_cancelled_records_expire_and_takes_purge_them(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    """Each terminal state has its own TTL, exact (min_retention keeps only
    watched jobs longer), and a take purges every state's expired records (the
    purge looks only where the counts say records are)."""
    settings = worqr.JobSettings(failure_ttl=1, cancelled_ttl=1, min_retention=30)
    producer, worker = make(jobs=settings), make(start=True, jobs=settings)
    failed, cancelled, kept = producer.submit_many("q", ["fails", "cancelled", "kept"])
    assert producer.cancel_job("q", cancelled.id)
    [process] = [p for p in take(worker) if p.job_id == failed.id]
    worker.internals.fail_job(process, mode="fail", delay=0, retries=0, error="Fail: no")
    ended = {ref.id: producer.get_job("q", ref.id) for ref in (failed, cancelled)}
    assert [info.state for info in ended.values() if info] == ["failed", "cancelled"]
    last = max(info.ended or 0.0 for info in ended.values() if info)
    # 1 s after the later end, both are gone for every read (not min_retention's 30 s).
    wait_until(lambda: producer.server_time() > last + 1.0, timeout=3)
    assert producer.count_jobs("q")["failed"] == producer.count_jobs("q")["cancelled"] == 0
    assert all(producer.get_job("q", id) is None for id in ended)
    take(worker)  # a take purges what expired
    keys = MeshKeys(prefix).queue("q")
    assert redis_client.zcard(keys.job_failed) == redis_client.zcard(keys.job_cancelled) == 0
    assert redis_client.hlen(keys.job_data) == 1  # only the live job's payload is left
    assert producer.get_stats("q")["purged"] == 2
    assert producer.get_job("q", kept.id).state == "active"  # type: ignore[union-attr]


@pytest.mark.slow
def test_queues_no_worker_serves_are_tidied_once_per_interval_for_the_mesh(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    """A job queue whose workers left keeps expired records (invisible to reads)
    and due delayed jobs: the mesh's reaper purges and promotes them, in passes
    bounded per call and at most one per interval for the whole mesh."""
    settings = worqr.JobSettings(result_ttl=0.5)  # expires after its worker left
    producer, worker = make(jobs=settings), make(start=True, jobs=settings)
    total = 1200  # more than one script call's budget (UPKEEP_BUDGET)
    producer.submit_many("idle", [f"j{i}" for i in range(total)])
    taken = take(worker, "idle", 500) + take(worker, "idle", 500) + take(worker, "idle", 500)
    assert len(taken) == total
    flags, _, _ = worker.internals.take_jobs(
        "idle", [(p, "s", b"ok") for p in taken], 0
    )  # one call
    assert all(flags)
    later = producer.submit("idle", "later", delay=0.2)
    worker.stop_work("idle")  # no member is left to purge as it takes
    keys = MeshKeys(prefix).queue("idle")
    wait_until(lambda: producer.count_jobs("idle")["finished"] == 0, timeout=3)
    wait_until(
        lambda: producer.internals.job_counts("idle")["overdue"] == 1, timeout=3
    )  # due, waiting
    assert redis_client.hlen(keys.jobs) == 2 * (total + 1)  # expired, but held: 2 fields each

    reaper, peer = make(start=True), make(start=True)
    reaper.reap()
    assert redis_client.hlen(keys.jobs) == 2 and redis_client.hlen(keys.job_data) == 1
    assert producer.get_job("idle", later.id).state == "queued"  # type: ignore[union-attr]
    assert producer.get_stats("idle")["purged"] == total
    assert 0 < redis_client.pttl(MeshKeys(prefix).upkeep) <= UPKEEP_INTERVAL * 1000
    # Within the interval, no peer tidies again.
    producer.submit("idle", "another", delay=0.05)
    wait_until(lambda: producer.internals.job_counts("idle")["overdue"] == 1, timeout=3)
    peer.reap()
    assert producer.count_jobs("idle") == counts(queued=1, delayed=1)  # not this interval


def upkeep_pass(client: worqr.Worqr, members_of: dict[str, str]) -> list[str]:
    """Run one upkeep pass step by step; the queues whose members it checked
    (``members_of``: each queue's members key -> its name)."""
    plan = client._core.upkeep.tidy_job_queues()
    checked: list[str] = []
    try:
        request = next(plan)
        while True:
            if request.script is None and request.args[0] == "SCARD":
                name = members_of.get(str(request.args[1]))
                checked += [name] if name else []
            request = plan.send(client._execute(request, 0))
    except StopIteration:
        return checked


@pytest.mark.slow
def test_the_upkeep_sweeps_many_job_queues_a_bounded_slice_per_pass(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    """A mesh with a thousand job queues nobody serves: each upkeep pass checks
    a slice of about UPKEEP_SLICE of them, round robin through the registry
    (from a cursor the mesh keeps), so a pass costs the same with 10 or 10,000
    job queues; a sweep reaches every queue, however many others have no
    members either, and purges their expired records."""
    settings = worqr.JobSettings(result_ttl=0.2)
    producer, worker = make(jobs=settings), make(start=True, jobs=settings)
    mesh = MeshKeys(prefix)
    names = [f"empty-{i:04}" for i in range(1000)]
    redis_client.sadd(mesh.jobqueues, *names)  # registered, no member, nothing held
    expired = ["a-first", "m-middle", "z-last"]
    for queue in expired:
        producer.submit(queue, "x")
        [process] = take(worker, queue)
        assert finish(worker, process)
        worker.stop_work(queue)
    wait_until(lambda: all(producer.count_jobs(q)["finished"] == 0 for q in expired), timeout=3)
    assert all(redis_client.hlen(mesh.queue(q).jobs) == 2 for q in expired)  # held, unread
    worker.close()  # its heartbeat takes reaper turns: only the test's passes may run
    # close() waits 5 s for each thread; on a loaded machine a heartbeat may still
    # be in a pass then, holding the upkeep lock or moving the cursor under the test.
    wait_until(lambda: not any(t.is_alive() for t in worker._threads), timeout=60)
    members_of = {mesh.queue(q).members: q for q in [*names, *expired]}
    seen: list[str] = []
    passes = 0
    while passes == 0 or redis_client.get(mesh.upkeep_cursor) != b"0":  # one whole sweep
        assert passes <= 3 * len(members_of) // UPKEEP_SLICE, "the sweep did not end"
        redis_client.delete(mesh.upkeep)  # as if the interval passed
        checked = upkeep_pass(producer, members_of)
        # A slice, whatever the registry holds. It may be empty: SSCAN can return an
        # empty page (the 1,003 members just added are still being rehashed); the
        # bound on passes above and the full sweep below prove the progress.
        assert len(checked) <= 2 * UPKEEP_SLICE
        seen += checked
        passes += 1
    assert passes >= len(members_of) // (2 * UPKEEP_SLICE)  # sliced, not all in one pass
    assert set(seen) == set(members_of.values())  # the sweep reached every queue
    assert len(seen) <= len(members_of) + 2 * UPKEEP_SLICE  # ... about once each
    assert not any(redis_client.hlen(mesh.queue(q).jobs) for q in expired)  # purged
    assert not redis_client.keys(f"{{{prefix}:empty-*")  # nothing written for them


def test_a_mesh_of_task_queues_writes_no_upkeep_key(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    worker = make(start=True)
    worker.enqueue("tasks", "t")
    worker.reap()
    assert not redis_client.exists(MeshKeys(prefix).upkeep)
