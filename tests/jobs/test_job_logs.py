"""Job logs: ``current_job().log(line)`` in sync and async handlers (on lanes and
on the loop's threads), kept in order across retries, capped at 1,000 lines and
64 KB, fenced like a finish, gone with the job's record (its purge time, a purge,
a new life, the queue's deletion), and read by `get_job_log`."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pytest
import redis

import worqr
from tests.support.apps import job_log_app
from tests.support.waiting import wait_until
from worqr._core.job_logs import MAX_LINE_BYTES, MAX_LOG_BYTES, MAX_LOG_LINES, log_line
from worqr._jobs import JobProcess
from worqr._keys import MeshKeys, QueueKeys

from .conftest import Running, fast_worker

Make = Callable[..., worqr.Worqr]


def take(client: worqr.Worqr, queue: str = "q", count: int = 10) -> list[JobProcess]:
    _, taken, _ = client.internals.take_jobs(queue, [], count)
    return taken


def finish(client: worqr.Worqr, process: JobProcess) -> bool:
    flags, _, _ = client.internals.take_jobs(process.queue, [(process, "s", b"ok")], 0)
    return flags[0]


def append(client: worqr.Worqr, process: JobProcess, *lines: str) -> bool:
    return client.internals.append_job_log(process, [log_line(line) for line in lines])


def log_keys(prefix: str, queue: str) -> QueueKeys:
    return MeshKeys(prefix).queue(queue)


def test_lines_keep_their_order_across_handlers_and_retries(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    """A retry's lines append to the first attempt's (the attempt shows only
    where the handler writes it); the last lines land before the outcome, on
    lanes (an all-sync worker) and on the loop (sync handlers in threads, async
    ones on the loop)."""
    lanes = fast_worker(redis_url, prefix)
    mixed = fast_worker(redis_url, prefix)

    def sync_handler(payload: str) -> str:
        job = worqr.current_job()
        for i in range(30):
            job.log(f"attempt {job.attempt} line {i}")
        if job.attempt == 1:
            raise RuntimeError("once")
        return "done"

    async def async_handler(payload: str) -> str:
        job = worqr.current_job()
        for i in range(30):
            job.log(f"attempt {job.attempt} line {i}")
            if i % 10 == 0:
                await asyncio.sleep(0)
        if job.attempt == 1:
            raise RuntimeError("once")
        return "done"

    lanes.job("lanes", retries=1, backoff=0.01)(sync_handler)
    mixed.job("threads", retries=1, backoff=0.01)(sync_handler)
    mixed.job("loop", retries=1, backoff=0.01)(async_handler)
    running.start(lanes)
    running.start(mixed)
    wanted = [f"attempt {a} line {i}" for a in (1, 2) for i in range(30)]
    for queue in ("lanes", "threads", "loop"):
        ref = wq.submit(queue, "p")
        assert wq.result(queue, ref.id, timeout=15) == "done"
        assert wq.get_job_log(queue, ref.id, limit=1000) == wanted, queue
        assert wq.get_job_log(queue, ref.id, limit=5) == wanted[-5:]
        assert wq.get_job_log(queue, ref.id) == wanted  # the default limit, 100
        info = wq.get_job(queue, ref.id)
        assert info is not None and not hasattr(info, "log")


@pytest.mark.slow  # the worker starts its handler children ahead
def test_an_isolated_handler_logs_as_one_in_process_does(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    """Its lines cross from the child in frames, in order, before its outcome."""
    worker = fast_worker(redis_url, prefix, concurrency=2)
    worker.job("isolated", isolated=True)(job_log_app.logs)
    running.start(worker)
    ref = wq.submit("isolated", "300")
    assert wq.result("isolated", ref.id, timeout=20) == "done"
    assert wq.get_job_log("isolated", ref.id, limit=1000) == [
        *(f"attempt 1 line {i}" for i in range(300)),
        "refused: a log line must be str, not bytes",
    ]


def test_a_handler_gets_a_type_error_and_long_lines_are_cut(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    worker = fast_worker(redis_url, prefix)

    @worker.job("q")
    def write(payload: str) -> str:
        job = worqr.current_job()
        with pytest.raises(TypeError, match="must be str, not bytes"):
            job.log(b"raw")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="must be str, not int"):
            job.log(5)  # type: ignore[arg-type]
        job.log("é" * 20_000)  # 40,000 bytes of UTF-8
        job.log("")
        job.log("two\nlines stay one line")
        return "done"

    running.start(worker)
    ref = wq.submit("q", "p")
    assert wq.result("q", ref.id, timeout=10) == "done"
    cut, empty, multi = wq.get_job_log("q", ref.id) or []
    assert len(cut.encode()) <= MAX_LINE_BYTES
    kept = cut.split(" [... ")[0]
    assert set(kept) == {"é"} and cut.endswith(f" [... {40_000 - len(kept.encode())} bytes cut]")
    assert (empty, multi) == ("", "two\nlines stay one line")


def test_a_log_keeps_the_newest_lines_within_both_caps(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    """The caps hold across calls: 1,000 lines, and 64 KB (the oldest go first);
    the index holds the log's exact size."""
    producer, worker = make(), make(start=True)
    ref = producer.submit("q", "p")
    [process] = take(worker)
    for start in range(0, 1500, 100):
        assert append(worker, process, *(f"line {i}" for i in range(start, start + 100)))
    assert producer.get_job_log("q", ref.id, limit=MAX_LOG_LINES) == [
        f"line {i}" for i in range(500, 1500)
    ]
    # 1,000-byte lines: 65 of them fit in 64 KB (65,000 bytes), 66 do not.
    for i in range(80):
        assert append(worker, process, f"{i:04d}" + "x" * 996)
    lines = producer.get_job_log("q", ref.id, limit=MAX_LOG_LINES) or []
    assert len(lines) == MAX_LOG_BYTES // 1000 == 65
    assert [line[:4] for line in lines] == [f"{i:04d}" for i in range(15, 80)]
    keys = log_keys(prefix, "q")
    assert int(redis_client.hget(keys.job_logs, ref.id) or 0) == 65_000
    # One call with more than a log holds keeps its newest lines too.
    assert append(worker, process, *(f"burst {i}" for i in range(3000)))
    assert producer.get_job_log("q", ref.id, limit=2) == ["burst 2998", "burst 2999"]
    assert redis_client.llen(keys.job_log(ref.id)) == MAX_LOG_LINES


def test_lines_of_a_worker_that_lost_the_job_are_dropped(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    """Fenced like a finish: once a peer reaped the worker, its lines change
    nothing (and raise nothing); the peer's run appends."""
    producer, worker, peer = make(), make(start=True), make(start=True)
    ref = producer.submit("q", "work")
    [held] = take(worker)
    assert append(worker, held, "attempt 1 starts")
    redis_client.delete(MeshKeys(prefix).alive(worker.worker_id or ""))
    assert peer.reap() == 1
    assert not append(worker, held, "attempt 1, after its lease was lost")
    [again] = take(peer)
    assert again.job_id == ref.id and again.attempt == 2
    assert append(peer, again, "attempt 2 starts")
    assert finish(peer, again)
    assert not append(peer, again, "after the finish")  # its life is over
    assert producer.get_job_log("q", ref.id) == ["attempt 1 starts", "attempt 2 starts"]


def test_retry_job_keeps_the_log_and_a_new_job_of_the_id_starts_one(make: Make) -> None:
    producer, worker = make(), make(start=True)
    ref = producer.submit("q", "work", id="redo")
    [first] = take(worker)
    assert append(worker, first, "run 1")
    assert worker.internals.fail_job(first, mode="fail", delay=0, retries=0, error="Fail: no")[0]
    assert producer.get_job_log("q", ref.id) == ["run 1"]  # a failed job's log stays
    assert producer.retry_job("q", ref.id)
    [second] = take(worker)
    assert append(worker, second, "run 2")
    assert not append(worker, first, "late")  # the failed life's process is gone
    assert producer.get_job_log("q", ref.id) == ["run 1", "run 2"]


def test_a_handler_whose_worker_lost_the_job_logs_without_error(
    running: Running, make: Make, redis_client: redis.Redis, redis_url: str, prefix: str
) -> None:
    worker = fast_worker(redis_url, prefix)
    release, errors = threading.Event(), []

    @worker.job("q")
    def held(payload: str) -> str:
        job = worqr.current_job()
        job.log(f"attempt {job.attempt} starts")
        if job.attempt == 1:
            release.wait(15)
            try:
                job.log("attempt 1, after its lease was lost")
            except BaseException as error:  # pragma: no cover - the assertion says it
                errors.append(error)
        return f"attempt {job.attempt}"

    running.start(worker)
    producer, peer = make(), make()
    ref = producer.submit("q", "work")
    wait_until(lambda: producer.get_job_log("q", ref.id), timeout=10, message="the first line")
    redis_client.delete(MeshKeys(prefix).alive(worker.worker_id or ""))
    peer.reap()  # or the worker fails its old id itself: it hears its lease go
    wait_until(
        lambda: (
            (info := producer.get_job("q", ref.id)) is not None
            and (info.state == "queued" or info.attempts >= 2)
        ),
        message="the job queued again, its first process gone",
    )
    release.set()
    assert producer.result("q", ref.id, timeout=15) == "attempt 2"
    assert producer.get_job_log("q", ref.id) == ["attempt 1 starts", "attempt 2 starts"]
    assert not errors


def test_a_log_goes_with_its_record(make: Make, redis_client: redis.Redis, prefix: str) -> None:
    """At the record's purge time (a result TTL), with a purge, with a new life of
    its id, and with the queue; a queue made again never sees an old log."""
    settings = worqr.JobSettings(min_retention=0)
    producer, worker = make(jobs=settings), make(start=True, jobs=settings)
    keys = log_keys(prefix, "q")
    short, kept, renewed = producer.submit_many("q", ["short", "kept", "renewed"])
    producer.submit("q", "x", id="short-ttl", result_ttl=0.2)
    processes = {process.job_id: process for process in take(worker)}
    for process in processes.values():
        assert append(worker, process, f"{process.job_id} ran")
        assert finish(worker, process)
    assert producer.get_job_log("q", "short-ttl") == ["short-ttl ran"]
    wait_until(lambda: producer.get_job_log("q", "short-ttl") is None, timeout=3)
    take(worker)  # a take purges what expired: the log's keys go with the record
    assert not redis_client.exists(keys.job_log("short-ttl"))
    assert not redis_client.hexists(keys.job_logs, "short-ttl")
    # A purge.
    assert producer.purge_jobs("q", "finished", limit=1) == 1
    gone = next(ref.id for ref in (short, kept, renewed) if producer.get_job("q", ref.id) is None)
    assert producer.get_job_log("q", gone) is None
    assert not redis_client.exists(keys.job_log(gone))
    # A new life of a terminal id starts an empty log.
    left = [ref.id for ref in (short, kept, renewed) if ref.id != gone]
    producer.submit("q", "again", id=left[0])
    assert producer.get_job_log("q", left[0]) == []
    assert not redis_client.exists(keys.job_log(left[0]))
    assert producer.get_job_log("q", left[1]) == [f"{left[1]} ran"]
    # The queue: its index becomes a grave the deleter sweeps at once.
    producer.delete_queue("q")
    assert not redis_client.exists(keys.job_log(left[1]), keys.job_logs)
    assert not redis_client.keys(f"{keys.tag}:job:log*")
    assert not redis_client.hlen(keys.group_graves)
    assert producer.get_job_log("q", left[1]) is None


def test_a_deleted_queues_lists_left_unswept_are_nobodys_log(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    """A list the deleter left (it crashed before its sweep) is no log of the
    queue made again: not read, started over by the next line, and the sweep
    spares the new log."""
    producer, worker = make(), make(start=True)
    keys = log_keys(prefix, "q")
    ref = producer.submit("q", "p", id="same")
    [process] = take(worker)
    assert append(worker, process, "old queue")
    # What delete_queue leaves before its sweep: the index renamed to a grave.
    redis_client.rename(keys.job_logs, f"{keys.job_logs}:1")
    redis_client.hset(keys.group_graves, "log:1", "0")
    assert finish(worker, process)
    again = producer.submit("q", "p", id="same")
    assert again.id == ref.id and not again.duplicate
    assert producer.get_job_log("q", "same") == []  # the old list is nobody's
    [process] = take(worker, "q")
    assert append(worker, process, "new queue")
    assert producer.get_job_log("q", "same") == ["new queue"]
    # The upkeep finishes the sweep the deleter left.
    mesh = MeshKeys(prefix)
    redis_client.sadd(mesh.graves, "q")
    redis_client.delete(mesh.upkeep)
    producer.reap()
    assert not redis_client.hlen(keys.group_graves)
    assert producer.get_job_log("q", "same") == ["new queue"]
    assert not redis_client.exists(f"{keys.job_logs}:1")


def test_get_job_log_reads_like_get_job(make: Make, redis_client: redis.Redis) -> None:
    producer, worker = make(), make(start=True)
    assert producer.get_job_log("q", "unknown") is None
    ref = producer.submit("q", "p")
    assert producer.get_job_log("q", ref.id) == []  # no line yet
    with pytest.raises(ValueError, match="limit"):
        producer.get_job_log("q", ref.id, limit=0)
    with pytest.raises(ValueError, match="limit"):
        producer.get_job_log("q", ref.id, limit=MAX_LOG_LINES + 1)
    with pytest.raises(TypeError, match="limit"):
        producer.get_job_log("q", ref.id, limit="5")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="job id"):
        producer.get_job_log("q", 5)  # type: ignore[arg-type]
    producer.enqueue("tasks", "t")
    with pytest.raises(worqr.WrongQueueKindError):
        producer.get_job_log("tasks", "unknown")
    assert worker.worker_id


def test_the_async_client_reads_a_log(make: Make, redis_url: str, prefix: str) -> None:
    producer, worker = make(), make(start=True)
    ref = producer.submit("q", "p")
    [process] = take(worker)
    assert append(worker, process, "one", "two")

    async def main() -> None:
        async with worqr.AsyncWorqr(redis_url, settings=worqr.Settings(prefix=prefix)) as client:
            assert await client.get_job_log("q", ref.id, limit=1) == ["two"]
            assert await client.get_job_log("q", "unknown") is None

    asyncio.run(main())
