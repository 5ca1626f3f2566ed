"""Every public method of `worqr.Worqr` against a real Redis, one behaviour at a
time: what it returns, what it changes, FIFO order, requeues to the front (oldest
first) and fencing.

Clients come from the ``make``, ``wq`` and ``worker`` fixtures (conftest.py) with
`QUIET` timers, so no timer fires during a test: liveness steps (heartbeat, reap)
are called directly, and a worker "dies" when the test deletes its alive key
(`tests.support.mesh.kill`). tests/cluster/test_mesh.py runs many of these
tests again on a Redis Cluster.
"""

from __future__ import annotations

import math
import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest
import redis

import worqr
from tests.support.clients import Factory
from tests.support.mesh import keys_under, kill, queue_keys, queued
from tests.support.recorders import OnLeaseLost
from tests.support.scripts import preload, runs_script
from tests.support.waiting import wait_until
from worqr._core import scripts
from worqr._core.processes import DEQUEUE_CHUNK
from worqr._keys import MeshKeys


def tasks(wq: worqr.Worqr, queue: str, count: int) -> list[str | bytes]:
    """Dequeue up to ``count`` tasks and finish them; their payloads, in order."""
    taken = wq.dequeue_many(queue, count)
    for process in taken:
        assert wq.finish_process(process)
    return [p.task for p in taken]


# -- the public surface ----------------------------------------------------------------


def test_every_public_method_of_worqr_is_exercised_in_this_file() -> None:
    """Guards the coverage promise of this file (and, for the job methods,
    tests/jobs/: submit, lifecycle, flows, schedules, limits, pause, groups and
    bulk, job logs; and tests/history/): a new public method of Worqr makes this test fail
    until a test calls it."""
    jobs = Path(__file__).resolve().parent.parent / "jobs"
    homes = (
        "test_submit",
        "test_lifecycle",
        "test_flows",
        "test_schedules",
        "test_limits",
        "test_pause",
        "test_groups",
        "test_bulk",
        "test_job_logs",
    )
    history = sorted((jobs.parent / "history").glob("test_*.py"))  # get_history
    text = "\n".join(
        path.read_text("utf-8")
        for path in (Path(__file__), *(jobs / f"{home}.py" for home in homes), *history)
    )
    public = [name for name in dir(worqr.Worqr) if not name.startswith("_")]
    missing = [name for name in public if not re.search(rf"\.{name}\b", text)]
    assert not missing, f"untested public methods of Worqr: {missing}"


# -- producing and reading ----------------------------------------------------------


def test_enqueue_counts_and_dequeue_is_fifo(wq: worqr.Worqr, worker: worqr.Worqr) -> None:
    assert wq.enqueue("q", "a") is None
    wq.enqueue("q", b"b")
    wq.enqueue("q", "c")
    assert wq.count_tasks("q") == 3
    assert [worker.dequeue("q").task for _ in range(3)] == ["a", "b", "c"]  # type: ignore[union-attr]
    assert worker.dequeue("q") is None
    assert wq.count_tasks("q") == 0
    assert wq.count_processes("q") == 3


def test_enqueue_many_keeps_order_across_batches(wq: worqr.Worqr, worker: worqr.Worqr) -> None:
    payloads = [f"t{i}" for i in range(2500)]  # more than one script call (1000 per batch)
    assert wq.enqueue_many("q", (p for p in payloads)) == 2500  # any iterable, lazy too
    assert wq.enqueue_many("q", iter(["x", "y"])) == 2
    assert wq.enqueue_many("q", []) == 0
    assert wq.count_tasks("q") == 2502
    taken = worker.dequeue_many("q", 3000)
    assert [p.task for p in taken] == [*payloads, "x", "y"]
    assert len({p.id for p in taken}) == 2502
    assert all(worker.finish_process(p) for p in taken)


def test_enqueue_many_of_nothing_writes_nothing(
    wq: worqr.Worqr, redis_client: redis.Redis, prefix: str
) -> None:
    assert wq.enqueue_many("q", []) == 0
    assert keys_under(redis_client, prefix) == []
    with pytest.raises(TypeError):
        wq.enqueue_many("q", "abc")  # one str is not an iterable of tasks
    assert keys_under(redis_client, prefix) == []


def test_get_queues_lists_known_queues_sorted(wq: worqr.Worqr, worker: worqr.Worqr) -> None:
    assert wq.get_queues() == []
    wq.enqueue("b", "x")
    wq.enqueue_many("a", ["y"])
    worker.start_work("c")  # working on a queue registers it too
    assert wq.get_queues() == ["a", "b", "c"]


def test_cancel_removes_queued_and_in_process_copies(wq: worqr.Worqr, worker: worqr.Worqr) -> None:
    wq.enqueue_many("q", ["x", "keep", "x", "x", "keep2"])
    first = worker.dequeue("q")
    assert first is not None and first.task == "x"
    # One copy in process, two queued: three cancelled.
    assert wq.cancel_tasks("q", "x") == 3
    assert wq.count_tasks("q") == 2
    assert wq.count_processes("q") == 0
    assert worker.processes_exist("q", [first.id]) == [False]
    assert worker.finish_process(first) is False  # fenced
    assert worker.stop_process(first) is False  # and not requeued by a late stop
    assert tasks(worker, "q", 10) == ["keep", "keep2"]
    assert wq.cancel_tasks("q", "x") == 0
    assert wq.cancel_tasks("q", "never-enqueued") == 0


def test_cancelled_process_is_never_requeued_by_a_failover(
    make: Factory, wq: worqr.Worqr, redis_client: redis.Redis, prefix: str
) -> None:
    doomed = make()
    doomed.start_worker()
    wq.enqueue_many("q", ["x", "y"])
    assert len(doomed.dequeue_many("q", 2)) == 2
    assert wq.cancel_tasks("q", "x") == 1
    kill(redis_client, doomed)
    assert wq.reap() == 1
    assert wq.count_tasks("q") == 1  # only "y" came back
    assert queued(redis_client, prefix, "q") == ["y"]


def test_delete_queue_drops_everything_fences_processes_and_tells_listeners(
    wq: worqr.Worqr, worker: worqr.Worqr, redis_client: redis.Redis, prefix: str
) -> None:
    events: list[tuple[str, Any]] = []
    wq.on("q", lambda event, message: events.append((event, message)))
    wq.enqueue_many("q", ["a", "b", "c"])
    held = worker.dequeue("q")
    assert held is not None
    failed = worker.dequeue("q")
    assert failed is not None and worker.fail_process(failed)
    wq.configure_queue("q", max_recoveries=1)
    wq.enqueue("other", "stays")

    wq.delete_queue("q")
    wait_until(lambda: ("delete", None) in events, message="no delete event")
    assert wq.count_tasks("q") == 0
    assert wq.count_processes("q") == 0
    assert wq.get_failed("q") == []
    assert wq.get_queues() == ["other"]
    assert worker.finish_process(held) is False  # its processes ended with it
    assert worker.stop_process(held) is False
    assert wq.count_tasks("q") == 0
    # Nothing of the queue is left in Redis; the other queue is untouched.
    tag = queue_keys(prefix, "q").tag
    assert list(redis_client.scan_iter(match=f"{tag}*")) == []
    assert wq.count_tasks("other") == 1


def test_deleted_queue_can_be_used_again(wq: worqr.Worqr, worker: worqr.Worqr) -> None:
    events: list[str] = []
    worker.on("q", lambda event, message: events.append(event))
    worker.start_work("q")
    wq.delete_queue("q")
    wait_until(lambda: "delete" in events)
    # The worker heard the delete and joins again on its next dequeue.
    assert worker.dequeue("q") is None
    wq.enqueue("q", "fresh")
    assert tasks(worker, "q", 1) == ["fresh"]


def test_get_workers_and_worker_id(make: Factory, wq: worqr.Worqr) -> None:
    assert wq.worker_id is None
    assert wq.get_workers() == []
    one, two = make(), make()
    first = one.start_worker()
    assert one.worker_id == first
    assert one.start_worker() == first  # idempotent
    second = two.start_worker()
    assert first != second
    assert wq.get_workers() == sorted([first, second])
    one.close()
    assert one.worker_id is None
    assert wq.get_workers() == [second]


def test_get_working_queues(make: Factory, worker: worqr.Worqr) -> None:
    with pytest.raises(worqr.NotStartedError):
        make().get_working_queues()
    assert worker.get_working_queues() == []
    worker.start_work("b")
    worker.start_work("a:1")
    assert worker.get_working_queues() == ["a:1", "b"]
    other = make()
    assert other.get_working_queues(worker.worker_id) == ["a:1", "b"]
    worker.stop_work("b")
    assert other.get_working_queues(worker.worker_id) == ["a:1"]
    assert other.get_working_queues("no-such-worker") == []
    gone = str(worker.worker_id)
    worker.close()
    assert other.get_working_queues(gone) == []  # forgotten with the worker


def test_counts_per_queue_and_per_worker(make: Factory, wq: worqr.Worqr) -> None:
    wq.enqueue_many("q", ["a", "b", "c", "d"])
    wq.enqueue("other", "z")
    one, two = make(start=True), make(start=True)
    taken = one.dequeue_many("q", 2)
    held = two.dequeue("q")
    assert held is not None
    assert wq.count_tasks("q") == 1
    assert wq.count_tasks("other") == 1
    assert wq.count_tasks("never-used") == 0
    assert wq.count_processes("q") == 3
    assert wq.count_processes("other") == 0
    assert wq.count_worker_processes("q", str(one.worker_id)) == 2
    assert wq.count_worker_processes("q", str(two.worker_id)) == 1
    assert wq.processes_exist("q", [taken[0].id, "nope", held.id]) == [True, False, True]
    assert wq.processes_exist("q", []) == []
    assert one.finish_process(taken[0])
    assert wq.count_processes("q") == 2
    assert wq.count_worker_processes("q", str(one.worker_id)) == 1
    assert wq.processes_exist("q", [taken[0].id, taken[1].id]) == [False, True]


def test_get_stats_counts_lifetime_events(
    make: Factory, wq: worqr.Worqr, worker: worqr.Worqr, redis_client: redis.Redis
) -> None:
    wq.enqueue_many("q", ["a", "b", "c", "d", "e", "x"])
    a, b, c, d = (worker.dequeue("q") for _ in range(4))
    assert a and b and c and d
    worker.finish_process(a)
    worker.stop_process(b)
    worker.fail_process(c)
    assert wq.cancel_tasks("q", "x") == 1
    kill(redis_client, worker)
    peer = make(start=True)
    assert peer.reap() == 1  # d recovered
    assert wq.get_stats("q") == {
        "enqueued": 6,
        "dequeued": 4,
        "finished": 1,
        "stopped": 1,
        "failed": 1,
        "cancelled": 1,
        "recovered": 1,
    }


def test_get_worker_info_and_workers_alive(
    make: Factory, worker: worqr.Worqr, redis_client: redis.Redis
) -> None:
    peer = make(start=True)
    info = peer.get_worker_info(str(worker.worker_id))
    assert info["pid"] == str(os.getpid())
    assert info["host"]
    assert float(info["started"]) > 0
    assert peer.workers_alive([str(worker.worker_id), str(peer.worker_id), "ghost"]) == [
        True,
        True,
        False,
    ]
    dead = kill(redis_client, worker)
    assert peer.workers_alive([dead]) == [False]
    assert peer.reap() == 1
    assert peer.get_worker_info(dead) == {}  # forgotten with the worker


# -- processes --------------------------------------------------------------------


def test_operations_that_need_a_worker_raise_before_start_worker(wq: worqr.Worqr) -> None:
    for call in (
        lambda: wq.dequeue("q"),
        lambda: wq.dequeue_many("q", 2),
        lambda: wq.start_work("q"),
        lambda: wq.stop_work("q"),
        lambda: wq.fail_worker(),
        lambda: wq.heartbeat(),
    ):
        with pytest.raises(worqr.NotStartedError):
            call()
    assert wq.worker_id is None


def test_dequeue_returns_a_process(wq: worqr.Worqr, worker: worqr.Worqr) -> None:
    assert worker.dequeue("q") is None  # joins the queue on its own
    assert worker.get_working_queues() == ["q"]
    wq.enqueue("q", "payload")
    process = worker.dequeue("q")
    assert isinstance(process, worqr.Process)
    assert process.queue == "q"
    assert process.task == "payload"
    assert process.data == b"payload"
    assert process.worker_id == worker.worker_id
    assert "payload" not in repr(process)  # payloads stay out of logs
    assert process.id in repr(process)


def test_dequeue_many_takes_up_to_count_from_the_front(
    wq: worqr.Worqr, worker: worqr.Worqr
) -> None:
    wq.enqueue_many("q", ["a", "b", "c", "d", "e"])
    first = worker.dequeue_many("q", 3)
    assert [p.task for p in first] == ["a", "b", "c"]
    assert len({p.id for p in first}) == 3
    rest = worker.dequeue_many("q", 10)
    assert [p.task for p in rest] == ["d", "e"]
    assert worker.dequeue_many("q", 4) == []
    assert {p.id for p in first}.isdisjoint(p.id for p in rest)
    for bad in (0, -1, 2**31):
        with pytest.raises(ValueError):
            worker.dequeue_many("q", bad)
    for wrong in (1.5, True):
        with pytest.raises(TypeError):
            worker.dequeue_many("q", wrong)  # type: ignore[arg-type]


def test_a_huge_dequeue_many_runs_in_short_chunks(
    wq: worqr.Worqr, worker: worqr.Worqr, redis_client: redis.Redis, prefix: str
) -> None:
    """dequeue_many(10**6) takes what there is in script calls of at most
    DEQUEUE_CHUNK tasks each (invariant 9), front first, under one id prefix."""
    payloads = [f"p{i}" for i in range(5 * DEQUEUE_CHUNK + 7)]
    wq.enqueue_many("q", payloads)
    worker.start_work("q")
    preload(redis_client, "dequeue")  # no loading round in the log
    saved = redis_client.config_get("slowlog-*")
    try:
        # Log every command (those the scripts run too), so the calls can be counted and timed.
        redis_client.config_set("slowlog-log-slower-than", 0)
        redis_client.config_set("slowlog-max-len", 100_000)
        redis_client.slowlog_reset()
        taken = worker.dequeue_many("q", 10**6)
        entries = redis_client.slowlog_get(100_000)
    finally:
        redis_client.config_set("slowlog-log-slower-than", saved["slowlog-log-slower-than"])
        redis_client.config_set("slowlog-max-len", saved["slowlog-max-len"])
        redis_client.slowlog_reset()

    calls = [e for e in entries if runs_script(e["command"], "dequeue")]
    assert len(entries) < 100_000  # none dropped
    assert len(calls) == math.ceil(len(payloads) / DEQUEUE_CHUNK)  # the last one ran dry
    assert all(int(c["command"].split()[-2]) <= DEQUEUE_CHUNK for c in calls)  # ARGV count
    assert max(c["duration"] for c in calls) < 50_000, "a dequeue call took over 50 ms"
    assert [p.task for p in taken] == payloads
    assert len({p.id for p in taken}) == len(payloads)
    assert len({p.id.rsplit(".", 1)[0] for p in taken}) == 1  # one prefix
    assert wq.count_tasks("q") == 0 and wq.count_processes("q") == len(payloads)
    assert wq.get_stats("q")["dequeued"] == len(payloads)
    keys = queue_keys(prefix, "q")
    assert redis_client.sismember(keys.idle, worker.worker_id or "")  # drained: wants wake-ups
    # A full last chunk leaves the worker out of the idle set (no wake-up needed).
    wq.enqueue_many("q", payloads[: 2 * DEQUEUE_CHUNK])
    assert len(worker.dequeue_many("q", 2 * DEQUEUE_CHUNK)) == 2 * DEQUEUE_CHUNK
    assert not redis_client.sismember(keys.idle, worker.worker_id or "")


def test_a_resent_dequeue_chunk_returns_what_it_took(
    wq: worqr.Worqr, worker: worqr.Worqr, redis_client: redis.Redis, prefix: str
) -> None:
    """Each chunk of a large dequeue is keyed by (prefix, first number): sending
    the same chunk again (a lost reply) returns its processes and takes nothing."""
    wq.enqueue_many("q", [f"p{i}" for i in range(10)])
    worker.start_work("q")
    keys = queue_keys(prefix, "q")
    worker_id = worker.worker_id or ""

    def chunk(first: int) -> Any:  # the script call one chunk makes (its builder's)
        return worker._execute(scripts.dequeue(keys, worker_id, "x.1.", count=3, first=first), 0)

    first = chunk(0)
    second = chunk(3)
    assert first[0::2] == [b"x.1.1", b"x.1.2", b"x.1.3"]
    assert second[0::2] == [b"x.1.4", b"x.1.5", b"x.1.6"]
    assert chunk(3) == second  # resent: same processes
    assert chunk(0) == first
    assert wq.count_tasks("q") == 4 and wq.count_processes("q") == 6
    assert [*first[1::2], *second[1::2]] == [f"p{i}".encode() for i in range(6)]


def test_a_worker_that_has_not_heard_of_a_delete_rejoins_the_queue(
    wq: worqr.Worqr, worker: worqr.Worqr, redis_client: redis.Redis, prefix: str
) -> None:
    """The queue was deleted (its members with it) before the worker heard the
    event: its lease is fine, so its next dequeue joins again and takes the new
    tasks, instead of raising a lease-lost error."""
    wq.enqueue("q", "old")
    held = worker.dequeue("q")
    assert held is not None
    keys = queue_keys(prefix, "q")
    worker_id = worker.worker_id or ""
    # What delete_queue deletes, without its "delete" event (not heard yet).
    redis_client.delete(keys.tasks, keys.processes, keys.members, keys.idle, keys.owned(worker_id))
    wq.enqueue_many("q", ["new", "newer"])
    taken = worker.dequeue_many("q", 5)
    assert [p.task for p in taken] == ["new", "newer"]
    assert worker.worker_id == worker_id  # the same registration: nothing was lost
    assert redis_client.sismember(keys.members, worker_id)
    assert worker.finish_process(held) is False  # deleted with the queue
    assert all(worker.finish_process(p) for p in taken)

    # With the real delete too, whether or not the event has arrived yet.
    wq.delete_queue("q")
    wq.enqueue("q", "after")
    again = worker.dequeue("q")
    assert again is not None and again.task == "after"

    # A worker whose lease is gone is still told so.
    kill(redis_client, worker)
    redis_client.srem(keys.members, worker_id)  # what failing it does first
    wq.enqueue("q", "late")
    with pytest.raises(worqr.LeaseLostError):
        worker.dequeue("q")
    assert wq.count_tasks("q") == 1


def test_finish_process_is_fenced_and_accepts_an_id(wq: worqr.Worqr, worker: worqr.Worqr) -> None:
    wq.enqueue_many("q", ["a", "b"])
    a, b = worker.dequeue_many("q", 2)
    assert wq.count_processes("q") == 2
    assert worker.finish_process(a) is True
    assert worker.finish_process(a) is False  # already finished
    assert worker.finish_process(b.id) is True  # by id
    assert worker.stop_process(b) is False  # finished: not requeued
    assert worker.finish_process("unknown-id") is False
    assert wq.count_processes("q") == 0
    assert wq.count_tasks("q") == 0
    assert wq.get_stats("q")["finished"] == 2
    with pytest.raises(TypeError):
        worker.finish_process(42)  # type: ignore[arg-type]


def test_complete_finishes_and_takes_the_next_in_one_call(
    wq: worqr.Worqr, worker: worqr.Worqr
) -> None:
    """(More in test_complete.py.)"""
    wq.enqueue_many("q", ["a", "b", "c"])
    first = worker.dequeue("q")
    assert first is not None
    accepted, taken = worker.complete("q", [first], 5)
    assert accepted == [True] and [p.task for p in taken] == ["b", "c"]
    assert worker.complete("q", [first, *taken], 0) == ([False, True, True], [])


def test_stop_process_puts_the_task_at_the_front(wq: worqr.Worqr, worker: worqr.Worqr) -> None:
    wq.enqueue_many("q", ["a", "b", "c", "d"])
    a, b = worker.dequeue_many("q", 2)
    assert worker.stop_process(a) is True
    assert worker.stop_process(a) is False  # the process is gone; no second copy
    assert worker.finish_process(a) is False
    assert wq.count_tasks("q") == 3
    # a is next, ahead of c and d, which stay in order.
    assert tasks(worker, "q", 1) == ["a"]
    # Stopping the newest first restores the original order at the front.
    c, d = worker.dequeue_many("q", 2)
    assert worker.stop_process(d) and worker.stop_process(c)
    assert worker.stop_process(b.id) is True
    assert tasks(worker, "q", 10) == ["b", "c", "d"]


def test_fail_process_dead_letters_and_the_failed_list_can_be_requeued_or_purged(
    wq: worqr.Worqr, worker: worqr.Worqr
) -> None:
    wq.enqueue_many("q", ["a", "b", "c"])
    a, b = worker.dequeue("q"), worker.dequeue("q")
    assert a is not None and b is not None
    assert worker.fail_process(a) is True
    assert worker.fail_process(a) is False  # fenced
    assert worker.fail_process(b.id) is True  # by id
    assert worker.get_failed("q") == ["b", "a"]  # newest first
    assert worker.count_failed("q") == 2
    assert worker.count_processes("q") == 0
    assert wq.get_failed("empty") == []
    # Dead letters go to the back, oldest first.
    assert worker.requeue_failed("q") == 2
    assert worker.count_failed("q") == 0
    assert tasks(worker, "q", 10) == ["c", "a", "b"]
    wq.enqueue("q", "d")
    d = worker.dequeue("q")
    assert d is not None and worker.fail_process(d)
    assert worker.purge_failed("q") == 1
    assert worker.get_failed("q") == []
    assert worker.count_tasks("q") == 0


def test_failed_list_is_bounded(make: Factory) -> None:
    client = make(failed_max=3)
    client.start_worker()
    client.enqueue_many("q", [str(i) for i in range(5)])
    for process in client.dequeue_many("q", 5):
        assert client.fail_process(process)
    assert client.get_failed("q") == ["4", "3", "2"]  # newest first, trimmed


# -- requeue order ------------------------------------------------------------------


@pytest.mark.parametrize("how", ["stop_work", "fail_worker", "peer_failover", "close"])
def test_held_tasks_go_back_to_the_front_oldest_first(
    make: Factory, wq: worqr.Worqr, redis_client: redis.Redis, how: str
) -> None:
    """Only the processes still held return, in their original order, ahead of
    the tasks that were never dequeued; another worker's process stays."""
    wq.enqueue_many("q", [f"t{i}" for i in range(7)])
    holder = make(start=True)
    held = [holder.dequeue("q") for _ in range(3)] + holder.dequeue_many("q", 2)  # t0..t4
    assert all(p is not None for p in held)
    assert holder.finish_process(held[1])  # type: ignore[arg-type]  # t1 is done: not back
    other = make(start=True)
    other_process = other.dequeue("q")  # t5, held by someone else: untouched
    assert other_process is not None and other_process.task == "t5"

    if how == "stop_work":
        holder.stop_work("q")
        assert holder.get_working_queues() == []
    elif how == "fail_worker":
        assert holder.fail_worker() == 4
        assert holder.get_working_queues() == ["q"]  # still works on the queue
    elif how == "peer_failover":
        kill(redis_client, holder)
        assert other.reap() == 1
        assert other.reap() == 0  # already failed and forgotten
        assert wq.get_workers() == [other.worker_id]
    else:
        holder.close()

    assert wq.count_processes("q") == 1
    assert other.processes_exist("q", [other_process.id]) == [True]
    assert tasks(other, "q", 10) == ["t0", "t2", "t3", "t4", "t6"]
    assert other.finish_process(other_process)
    if how in ("stop_work", "fail_worker"):  # it may dequeue again (stop_work: it rejoins)
        wq.enqueue("q", "again")
        again = holder.dequeue("q")
        assert again is not None and again.task == "again"


def test_fail_worker_returns_every_queue_to_the_front_and_keeps_working(
    wq: worqr.Worqr, worker: worqr.Worqr
) -> None:
    wq.enqueue_many("q1", ["a", "b", "c"])
    wq.enqueue_many("q2", ["x", "y"])
    assert len(worker.dequeue_many("q1", 2)) == 2
    assert worker.dequeue("q2") is not None
    assert worker.fail_worker() == 3
    assert worker.fail_worker() == 0
    assert wq.count_processes("q1") == wq.count_processes("q2") == 0
    # Still a member of both queues: it can dequeue at once.
    assert sorted(worker.get_working_queues()) == ["q1", "q2"]
    assert tasks(worker, "q1", 5) == ["a", "b", "c"]
    assert tasks(worker, "q2", 5) == ["x", "y"]


# -- liveness ---------------------------------------------------------------------


def test_reap_fails_only_dead_workers(
    make: Factory, wq: worqr.Worqr, redis_client: redis.Redis, prefix: str
) -> None:
    workers = [make() for _ in range(3)]
    for client in workers:
        client.start_worker()
    assert wq.reap() == 0  # a producer may reap too
    kill(redis_client, workers[0])
    kill(redis_client, workers[2])
    assert wq.reap() == 2
    assert wq.get_workers() == [workers[1].worker_id]
    assert wq.reap() == 0


def test_heartbeat_refreshes_the_lease_and_takes_the_reaper_turn(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    one, two = make(), make()
    one.start_worker()
    two.start_worker()
    mesh = MeshKeys(prefix)
    alive = mesh.alive(str(one.worker_id))
    redis_client.pexpire(alive, 5000)
    assert one.heartbeat() == "reaped"  # first of the interval: it reaps the mesh
    assert 55_000 < redis_client.pttl(alive) <= 60_000  # refreshed to the ttl
    assert two.heartbeat() == "ok"
    assert one.heartbeat() == "ok"
    assert 0 < redis_client.pttl(mesh.reaper) <= 20_000  # one turn per heartbeat interval
    assert one.lease_fresh()


def test_lease_fresh_turns_false_before_the_ttl_and_true_after_a_heartbeat(
    make: Factory,
) -> None:
    # Heartbeats every 0.8 s; "fresh" means within 2/3 of the 0.9 s ttl (0.6 s).
    worker = make(start=True, ttl=0.9, heartbeat=0.8)
    assert worker.lease_fresh()
    wait_until(lambda: not worker.lease_fresh(), timeout=2, message="stale before ttl")
    wait_until(worker.lease_fresh, timeout=2, message="fresh after the next heartbeat")


def test_lost_lease_runs_hooks_and_observers_and_re_registers(
    wq: worqr.Worqr, worker: worqr.Worqr, redis_client: redis.Redis
) -> None:
    """The heartbeat finds the lease gone: the old id's processes go back, the
    hooks and observers hear of it, and the worker registers again under a new
    id and rejoins its queues."""
    wq.enqueue_many("q", ["a", "b"])
    worker.start_work("q")
    worker.start_work("other")
    hooked: list[str] = []
    observed: list[tuple[str, dict[str, Any]]] = []
    worker.add_hooks(OnLeaseLost(hooked.append))
    worker.add_observer(lambda event, fields: observed.append((event, fields)))
    held = worker.dequeue("q")
    assert held is not None
    old = kill(redis_client, worker)

    assert worker.heartbeat() == "recovered"

    new = worker.worker_id
    assert new is not None and new != old
    assert hooked == [old]
    assert ("lease_lost", {"worker": old}) in observed
    assert ("registered", {"worker": new}) in observed
    assert wq.get_workers() == [new]
    assert wq.get_working_queues(new) == worker.get_working_queues() == ["other", "q"]
    assert worker.finish_process(held) is False  # the old id's process went back
    assert tasks(worker, "q", 5) == ["a", "b"]


def test_reconcile_leaves_the_processes_this_client_holds(
    wq: worqr.Worqr, worker: worqr.Worqr
) -> None:
    """Lost acknowledgements are covered in test_reconcile.py; here: nothing held
    is taken away, and nothing is returned when Redis lost nothing."""
    wq.enqueue_many("q", ["a", "b"])
    process = worker.dequeue("q")
    assert process is not None
    assert worker.reconcile() == 0
    assert worker.count_processes("q") == 1 and worker.finish_process(process)


def test_configure_queue_validates_and_stores_options(
    wq: worqr.Worqr, redis_client: redis.Redis, prefix: str
) -> None:
    config = queue_keys(prefix, "q").config
    wq.configure_queue("q", max_recoveries=-1)
    assert redis_client.hget(config, "max_recoveries") == b"-1"
    wq.configure_queue("q", max_recoveries=7)
    assert redis_client.hget(config, "max_recoveries") == b"7"
    wq.configure_queue("q", max_recoveries=None)
    assert redis_client.hget(config, "max_recoveries") is None
    with pytest.raises(ValueError):
        wq.configure_queue("q", max_recoveries=-2)
    for bad in ("1", 1.5, True):
        with pytest.raises(TypeError):
            wq.configure_queue("q", max_recoveries=bad)  # type: ignore[arg-type]
    assert redis_client.hget(config, "max_recoveries") is None


# -- events -------------------------------------------------------------------------


def test_on_delivers_work_cancel_and_delete_events(wq: worqr.Worqr, worker: worqr.Worqr) -> None:
    events: list[tuple[str, Any]] = []
    worker.on("q", lambda event, message: events.append((event, message)))
    with pytest.raises(TypeError):
        worker.on("q", "not callable")  # type: ignore[arg-type]
    worker.start_work("q")
    wait_until(lambda: ("work", 0) in events, message="no drain hint after subscribing")
    wq.enqueue("q", "secret-payload")
    wait_until(lambda: ("work", 1) in events)
    process = worker.dequeue("q")
    assert process is not None
    wq.cancel_tasks("q", "secret-payload")
    wait_until(lambda: ("cancel", [process.id]) in events)
    wq.delete_queue("q")
    wait_until(lambda: ("delete", None) in events, message="no delete event")
    # The payload never travels on a channel.
    assert all("secret-payload" not in repr(message) for _, message in events)


def test_a_failing_callback_does_not_stop_the_listener(
    wq: worqr.Worqr, worker: worqr.Worqr
) -> None:
    seen: list[str] = []

    def broken(event: str, message: Any) -> None:
        raise RuntimeError("listener bug")

    worker.on("q", broken)
    worker.on("q", lambda event, message: seen.append(event))
    worker.start_work("q")
    wq.enqueue("q", "a")
    wait_until(lambda: seen.count("work") >= 2)  # the drain hint, then the wake


# -- closing and repr ---------------------------------------------------------------


def test_close_leaves_the_mesh_returns_processes_and_stops_threads(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    """Leaving a ``with`` block closes the client, on an exception too: it leaves
    the mesh, returns its processes to the front (oldest first) and joins its
    heartbeat and listener threads. Closing again is harmless."""
    before = set(threading.enumerate())
    with (
        pytest.raises(RuntimeError, match="inside"),
        worqr.Worqr(redis_url, prefix=prefix, ttl=60, heartbeat=20) as worker,
    ):
        worker_id = worker.start_worker()
        worker.on("q", lambda event, message: None)
        wq.enqueue_many("q", ["a", "b", "c"])
        assert [p.task for p in worker.dequeue_many("q", 2)] == ["a", "b"]
        assert wq.get_workers() == [worker_id]
        started = set(threading.enumerate()) - before
        assert len(started) == 2  # heartbeat and listener
        assert [t.name for t in started].count("worqr-heartbeat") == 1
        raise RuntimeError("inside")
    assert set(threading.enumerate()) - before == set()
    assert worker.worker_id is None
    assert wq.get_workers() == []
    assert wq.count_processes("q") == 0
    assert wq.count_tasks("q") == 3
    worker.close()  # closing twice is harmless
    consumer = wq
    consumer.start_worker()
    assert tasks(consumer, "q", 5) == ["a", "b", "c"]  # front, oldest first


def test_repr_hides_the_url_password(prefix: str) -> None:
    for url in (
        "redis://:hunter2-secret@127.0.0.1:1/0",
        "redis://user:hunter2-secret@127.0.0.1:1/0",
        "rediss://user:hunter2-secret@example.invalid:6380/0",
    ):
        client = worqr.Worqr(url, prefix=prefix)  # connects lazily: nothing listens on :1
        try:
            assert "hunter2-secret" not in repr(client)
            assert "hunter2-secret" not in str(client)
            assert prefix in repr(client)
        finally:
            client.close()
