"""`complete`: finish a batch of processes and take the next tasks in one script
call (a worker's steady state). Fenced like `finish_process`, safe to resend like
`dequeue`, and never loses or duplicates a task."""

from __future__ import annotations

import asyncio

import pytest
import redis

import worqr
from tests.support.clients import Clients
from tests.support.mesh import CountingRedis, kill, queue_keys, sha
from tests.support.timing import quiet
from worqr._core import scripts
from worqr._core.processes import DEQUEUE_CHUNK

Q = "jobs"


def test_complete_finishes_a_batch_and_takes_the_next_in_one_script_call(
    clients: Clients, redis_url: str
) -> None:
    clients.make().enqueue_many(Q, [f"t{i}" for i in range(7)])
    counting = CountingRedis.from_url(redis_url)
    worker = clients.worker(Q, redis=counting)
    warm = worker.dequeue(Q)
    assert warm is not None and worker.complete(Q, [warm], 0) == ([True], [])  # loads it
    first = worker.dequeue_many(Q, 3)
    counting.scripts_sent.clear()
    accepted, taken = worker.complete(Q, first, 2)
    assert counting.scripts_sent == [sha("complete")]  # one round trip for both
    assert accepted == [True, True, True]
    assert [p.task for p in taken] == ["t4", "t5"]
    assert all(p.queue == Q and p.worker_id == worker.worker_id for p in taken)
    assert worker.count_processes(Q) == 2
    assert worker.get_stats(Q)["finished"] == 4
    # count 0 only finishes; a short take puts the worker in the idle set.
    assert worker.complete(Q, [taken[0].id], 0) == ([True], [])
    accepted, rest = worker.complete(Q, [taken[1]], 5)
    assert accepted == [True] and [p.task for p in rest] == ["t6"]
    assert worker.complete(Q, rest, 1) == ([True], [])
    assert worker.count_processes(Q) == 0 and worker.count_tasks(Q) == 0
    stats = worker.get_stats(Q)
    assert stats["finished"] == 7 and stats["dequeued"] == 7
    with pytest.raises(ValueError):
        worker.complete(Q, [], -1)
    for wrong in (True, 1.5):
        with pytest.raises(TypeError):
            worker.complete(Q, [], wrong)  # type: ignore[arg-type]


def test_complete_accepts_only_processes_that_still_exist(
    clients: Clients, redis_client: redis.Redis
) -> None:
    """Partial acceptance: a finished, cancelled or unknown process answers False
    and changes nothing; the others in the same batch are finished."""
    producer = clients.make()
    producer.enqueue_many(Q, ["a", "b", "c", "d"])
    worker = clients.worker(Q)
    a, b, c = worker.dequeue_many(Q, 3)
    assert worker.finish_process(a)
    assert producer.cancel_tasks(Q, "b") == 1
    accepted, taken = worker.complete(Q, [a, b, c, "no-such-process"], 1)
    assert accepted == [False, False, True, False]
    assert [p.task for p in taken] == ["d"]
    assert worker.get_stats(Q)["finished"] == 2  # a and c, each once
    assert worker.complete(Q, [c], 0) == ([False], [])  # already acknowledged


def test_complete_of_a_failed_worker_is_rejected_and_its_tasks_run_elsewhere(
    clients: Clients, redis_client: redis.Redis, prefix: str
) -> None:
    """Fencing of a batched ack: once peers failed the worker, its pending
    finishes are refused, its tasks are back at the front for a live peer, and it
    cannot dequeue under its old id."""
    clients.make().enqueue_many(Q, ["a", "b", "c"])
    zombie = clients.worker(Q)
    held = zombie.dequeue_many(Q, 2)
    old = kill(redis_client, zombie)
    peer = clients.worker(Q)
    assert peer.reap() == 1
    with pytest.raises(worqr.LeaseLostError):
        zombie.complete(Q, held, 2)  # refused whole: nothing finished, nothing taken
    assert zombie.complete(Q, held, 0) == ([False, False], [])
    assert [p.task for p in peer.dequeue_many(Q, 5)] == ["a", "b", "c"]
    assert redis_client.zcard(queue_keys(prefix, Q).owned(old)) == 0


def test_a_resent_complete_neither_duplicates_nor_hides(
    clients: Clients, redis_client: redis.Redis, prefix: str
) -> None:
    """The same call twice (a resend after a lost reply): finishes apply once and
    the resend returns the processes the first call created, taking no more."""
    clients.make().enqueue_many(Q, ["a", "b", "c", "d", "e"])
    worker = clients.worker(Q)
    held = worker.dequeue_many(Q, 2)
    worker_id = worker.worker_id
    assert worker_id is not None
    keys = queue_keys(prefix, Q)
    call = scripts.complete(  # the call one complete makes (its builder's), sent twice
        keys, worker_id, f"{worker_id}.resend.", count=2, pids=[p.id for p in held]
    )
    first = worker._execute(call, 0)
    again = worker._execute(call, 0)
    assert first[0] == [1, 1] and again[0] == [0, 0]
    assert again[1] == first[1] and [t for t in first[1][1::2]] == [b"c", b"d"]
    assert redis_client.llen(keys.tasks) == 1  # "e" is still queued, not hidden
    assert redis_client.hlen(keys.processes) == 2
    stats = worker.get_stats(Q)
    assert stats["finished"] == 2 and stats["dequeued"] == 4


def test_complete_spans_several_script_calls_and_other_owners(clients: Clients) -> None:
    """More finishes than one script call takes, and processes held under another
    queue: each is finished where it lives, with flags in the caller's order."""
    producer = clients.make()
    producer.enqueue_many(Q, [f"t{i}" for i in range(1203)])
    producer.enqueue(Q + "2", "other")
    worker = clients.worker(Q, Q + "2")
    many = worker.dequeue_many(Q, 1200)
    other = worker.dequeue(Q + "2")
    assert other is not None
    accepted, taken = worker.complete(Q, [other, *many], 3)
    assert accepted == [True] * 1201
    assert [p.task for p in taken] == ["t1200", "t1201", "t1202"]
    assert worker.count_processes(Q) == 3 and worker.count_processes(Q + "2") == 0
    assert worker.get_stats(Q)["finished"] == 1200


def test_async_complete_matches_sync(redis_url: str, prefix: str) -> None:
    async def scenario() -> None:
        settings = quiet(prefix)
        async with worqr.AsyncWorqr(redis_url, settings=settings) as client:
            await client.enqueue_many(Q, ["a", "b", "c"])
            await client.start_worker()
            await client.start_work(Q)
            held = await client.dequeue_many(Q, 2)
            accepted, taken = await client.complete(Q, held, 2)
            assert accepted == [True, True] and [p.task for p in taken] == ["c"]
            assert await client.complete(Q, [*held, *taken], 0) == ([False, False, True], [])

    asyncio.run(scenario())


def test_complete_takes_at_most_one_dequeue_chunk_per_call(clients: Clients) -> None:
    """Like dequeue_many, complete never runs one unbounded script: a count over
    DEQUEUE_CHUNK takes one chunk and leaves the rest queued, in order."""
    chunk = DEQUEUE_CHUNK
    clients.make().enqueue_many(Q, [f"t{i}" for i in range(chunk + 100)])
    worker = clients.worker(Q)
    flags, taken = worker.complete(Q, [], chunk + 50)
    assert flags == [] and [p.task for p in taken] == [f"t{i}" for i in range(chunk)]
    assert worker.count_tasks(Q) == 100
