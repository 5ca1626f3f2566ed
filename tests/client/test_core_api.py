"""Every public method of `worqr.Worqr`, one behaviour at a time, against a real Redis.

Clients use a long ttl/heartbeat (no background heartbeat runs during a test);
"death" is simulated by deleting a worker's alive key, and tests call `reap()` and
`heartbeat()` themselves.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

import worqr
from tests.support.clients import Clients
from tests.support.mesh import keys_under, kill, queue_keys
from tests.support.recorders import Events, OnLeaseLost
from tests.support.waiting import wait_until

Q = "jobs"


@pytest.fixture
def clients(redis_url: str, prefix: str) -> Iterator[Clients]:
    made = Clients(redis_url, prefix)
    try:
        yield made
    finally:
        made.close_all()


def drain(client: worqr.Worqr, queue: str = Q) -> list[str | bytes]:
    """Dequeue and finish everything queued; the tasks in dequeue order."""
    seen: list[str | bytes] = []
    while (process := client.dequeue(queue)) is not None:
        assert client.finish_process(process)
        seen.append(process.task)
    return seen


# -- the public surface --------------------------------------------------------------


def test_every_public_method_of_worqr_is_exercised_in_this_file() -> None:
    """Guards the coverage promise of this file: a new public method of Worqr
    makes this test fail until a test here calls it."""
    source = Path(__file__).read_text("utf-8")
    public = [name for name in dir(worqr.Worqr) if not name.startswith("_")]
    missing = [name for name in public if not re.search(rf"\.{name}\b", source)]
    assert not missing, f"untested public methods of Worqr: {missing}"


# -- producing and FIFO ---------------------------------------------------------------


def test_tasks_come_out_in_the_order_they_went_in(clients: Clients) -> None:
    producer = clients.make()
    for task in ["a", "b", "c", "d"]:
        producer.enqueue(Q, task)
    assert producer.count_tasks(Q) == 4
    worker = clients.worker(Q)
    assert drain(worker) == ["a", "b", "c", "d"]
    assert worker.dequeue(Q) is None


def test_enqueue_many_keeps_order_across_script_batches(clients: Clients) -> None:
    producer = clients.make()
    tasks = [f"t{i}" for i in range(2500)]  # more than one enqueue batch (1000)
    assert producer.enqueue_many(Q, (task for task in tasks)) == 2500  # any iterable
    assert producer.count_tasks(Q) == 2500
    worker = clients.worker(Q)
    taken = worker.dequeue_many(Q, 3000)
    assert [p.task for p in taken] == tasks
    assert len({p.id for p in taken}) == 2500


def test_enqueue_many_of_nothing_writes_nothing(
    clients: Clients, redis_client: redis.Redis, prefix: str
) -> None:
    producer = clients.make()
    assert producer.enqueue_many(Q, []) == 0
    assert keys_under(redis_client, prefix) == []
    with pytest.raises(TypeError):
        producer.enqueue_many(Q, "abc")  # one str is not an iterable of tasks
    assert keys_under(redis_client, prefix) == []


def test_dequeue_many_takes_up_to_count_and_validates_count(clients: Clients) -> None:
    producer = clients.make()
    producer.enqueue_many(Q, ["a", "b", "c"])
    worker = clients.worker(Q)
    assert [p.task for p in worker.dequeue_many(Q, 2)] == ["a", "b"]
    assert [p.task for p in worker.dequeue_many(Q, 5)] == ["c"]
    assert worker.dequeue_many(Q, 5) == []
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError):
            worker.dequeue_many(Q, bad)  # type: ignore[arg-type]


# -- processes: finish, stop, fencing ----------------------------------------------------


def test_finish_process_is_fenced(clients: Clients) -> None:
    producer = clients.make()
    producer.enqueue_many(Q, ["a", "b"])
    worker = clients.worker(Q)
    first, second = worker.dequeue(Q), worker.dequeue(Q)
    assert first is not None and second is not None
    assert first.queue == Q and first.worker_id == worker.worker_id
    assert worker.count_processes(Q) == 2
    assert worker.finish_process(first) is True  # by Process
    assert worker.finish_process(first) is False  # already finished
    assert worker.finish_process(second.id) is True  # by id
    assert worker.stop_process(second) is False  # finished: not requeued
    assert worker.finish_process("no-such-process") is False
    assert worker.count_processes(Q) == 0
    assert worker.count_tasks(Q) == 0
    assert worker.get_stats(Q)["finished"] == 2


def test_complete_finishes_and_takes_the_next_in_one_call(clients: Clients) -> None:
    """(More in test_core_complete.py.)"""
    clients.make().enqueue_many(Q, ["a", "b", "c"])
    worker = clients.worker(Q)
    first = worker.dequeue(Q)
    assert first is not None
    accepted, taken = worker.complete(Q, [first], 5)
    assert accepted == [True] and [p.task for p in taken] == ["b", "c"]
    assert worker.complete(Q, [first, *taken], 0) == ([False, True, True], [])


def test_stop_process_puts_the_task_back_at_the_front(clients: Clients) -> None:
    producer = clients.make()
    producer.enqueue_many(Q, ["a", "b", "c"])
    worker = clients.worker(Q)
    process = worker.dequeue(Q)
    assert process is not None and process.task == "a"
    assert worker.stop_process(process) is True
    assert worker.stop_process(process) is False  # fenced: no second copy
    assert worker.finish_process(process) is False
    assert worker.count_tasks(Q) == 3
    assert drain(worker) == ["a", "b", "c"]


def test_fail_process_dead_letters_and_failed_list_can_be_requeued_or_purged(
    clients: Clients,
) -> None:
    producer = clients.make()
    producer.enqueue_many(Q, ["a", "b", "c"])
    worker = clients.worker(Q)
    a, b = worker.dequeue(Q), worker.dequeue(Q)
    assert a is not None and b is not None
    assert worker.fail_process(a) is True
    assert worker.fail_process(a) is False  # fenced
    assert worker.fail_process(b.id) is True
    assert worker.get_failed(Q) == ["b", "a"]  # newest first
    assert worker.count_failed(Q) == 2
    assert worker.count_processes(Q) == 0
    # Dead letters go to the back, oldest first.
    assert worker.requeue_failed(Q) == 2
    assert worker.count_failed(Q) == 0
    assert drain(worker) == ["c", "a", "b"]
    producer.enqueue(Q, "d")
    d = worker.dequeue(Q)
    assert d is not None and worker.fail_process(d)
    assert worker.purge_failed(Q) == 1
    assert worker.get_failed(Q) == []
    assert worker.count_tasks(Q) == 0


@pytest.mark.parametrize("how", ["stop_work", "fail_worker", "peer_failover", "close"])
def test_held_tasks_go_back_to_the_front_oldest_first(
    clients: Clients, redis_client: redis.Redis, how: str
) -> None:
    """Only the processes still held return, in their original order, ahead of
    the tasks that were never dequeued."""
    producer = clients.make()
    producer.enqueue_many(Q, [f"t{i}" for i in range(7)])
    holder = clients.worker(Q)
    held = [holder.dequeue(Q) for _ in range(3)] + holder.dequeue_many(Q, 2)  # t0..t4
    assert all(p is not None for p in held)
    assert holder.finish_process(held[1])  # t1 is done: it must not come back
    other = clients.worker(Q)
    other_process = other.dequeue(Q)  # t5, held by someone else: untouched
    assert other_process is not None and other_process.task == "t5"

    if how == "stop_work":
        holder.stop_work(Q)
        assert holder.get_working_queues() == []
    elif how == "fail_worker":
        assert holder.fail_worker() == 4
        assert holder.get_working_queues() == [Q]  # still works on the queue
    elif how == "peer_failover":
        kill(redis_client, holder)
        assert other.reap() == 1
    else:
        holder.close()

    assert other.count_processes(Q) == 1
    assert other.processes_exist(Q, [other_process.id]) == [True]
    assert drain(other) == ["t0", "t2", "t3", "t4", "t6"]
    assert other.finish_process(other_process)
    if how == "fail_worker":  # the worker stays a member and may dequeue again
        producer.enqueue(Q, "again")
        again = holder.dequeue(Q)
        assert again is not None and again.task == "again"


# -- reading ----------------------------------------------------------------------------


def test_get_queues_get_workers_and_working_queues(clients: Clients) -> None:
    producer = clients.make()
    assert producer.get_queues() == []
    assert producer.get_workers() == []
    producer.enqueue(Q, "x")
    producer.enqueue("another", "y")
    assert producer.get_queues() == ["another", Q]

    first = clients.make()
    assert first.worker_id is None
    with pytest.raises(worqr.NotStartedError):
        first.get_working_queues()
    worker_id = first.start_worker()
    assert first.worker_id == worker_id
    assert first.start_worker() == worker_id  # idempotent
    first.start_work("a")
    first.start_work("b")
    second = clients.worker("c")
    assert producer.get_workers() == sorted([worker_id, str(second.worker_id)])
    assert first.get_working_queues() == ["a", "b"]
    assert producer.get_working_queues(worker_id) == ["a", "b"]
    assert producer.get_working_queues(second.worker_id) == ["c"]
    assert "c" in producer.get_queues()  # working on a queue registers it
    first.stop_work("a")
    assert producer.get_working_queues(worker_id) == ["b"]
    first.close()
    assert producer.get_workers() == [second.worker_id]
    assert producer.get_working_queues(worker_id) == []


def test_counts_per_queue_and_per_worker(clients: Clients) -> None:
    producer = clients.make()
    producer.enqueue_many(Q, ["a", "b", "c", "d"])
    producer.enqueue("other", "z")
    one, two = clients.worker(Q), clients.worker(Q)
    p1 = one.dequeue_many(Q, 2)
    p2 = two.dequeue(Q)
    assert p2 is not None
    assert producer.count_tasks(Q) == 1
    assert producer.count_tasks("other") == 1
    assert producer.count_processes(Q) == 3
    assert producer.count_processes("other") == 0
    assert producer.count_worker_processes(Q, str(one.worker_id)) == 2
    assert producer.count_worker_processes(Q, str(two.worker_id)) == 1
    assert producer.processes_exist(Q, [p1[0].id, "nope", p2.id]) == [True, False, True]
    assert producer.processes_exist(Q, []) == []
    assert producer.count_tasks("never-used") == 0


def test_get_stats_counts_lifetime_events(clients: Clients, redis_client: redis.Redis) -> None:
    producer = clients.make()
    producer.enqueue_many(Q, ["a", "b", "c", "d", "e", "x"])
    worker = clients.worker(Q)
    a, b, c, d = (worker.dequeue(Q) for _ in range(4))
    assert a and b and c and d
    worker.finish_process(a)
    worker.stop_process(b)
    worker.fail_process(c)
    assert producer.cancel_tasks(Q, "x") == 1
    kill(redis_client, worker)
    peer = clients.worker()
    assert peer.reap() == 1  # d recovered
    assert producer.get_stats(Q) == {
        "enqueued": 6,
        "dequeued": 4,
        "finished": 1,
        "stopped": 1,
        "failed": 1,
        "cancelled": 1,
        "recovered": 1,
    }


def test_get_worker_info_and_workers_alive(clients: Clients, redis_client: redis.Redis) -> None:
    worker, peer = clients.worker(), clients.worker()
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


# -- cancel and delete -------------------------------------------------------------------


def test_cancel_tasks_removes_queued_copies_and_ends_in_process_ones(clients: Clients) -> None:
    producer = clients.make()
    producer.enqueue_many(Q, ["x", "y", "x", "z", "x"])
    worker = clients.worker(Q)
    events = Events()
    producer.on(Q, events)
    held = worker.dequeue(Q)
    assert held is not None and held.task == "x"
    assert producer.cancel_tasks(Q, "x") == 3  # 2 queued + 1 in process
    assert producer.cancel_tasks(Q, "x") == 0
    assert producer.cancel_tasks(Q, "never-there") == 0
    assert worker.finish_process(held) is False  # the cancelled process is gone
    assert worker.stop_process(held) is False  # and never requeued
    assert drain(worker) == ["y", "z"]
    wait_until(lambda: ("cancel", [held.id]) in events.snapshot(), message="cancel event")


def test_delete_queue_fences_processes_and_tells_listeners(
    clients: Clients, redis_client: redis.Redis, prefix: str
) -> None:
    producer = clients.make()
    producer.enqueue_many(Q, ["a", "b", "c"])
    producer.enqueue("kept", "k")
    worker = clients.worker(Q)
    events = Events()
    worker.on(Q, events)
    held, poisoned = worker.dequeue_many(Q, 2)
    assert worker.fail_process(poisoned)  # one dead letter too

    producer.delete_queue(Q)

    wait_until(lambda: ("delete", None) in events.snapshot(), message="delete event")
    assert worker.finish_process(held) is False
    assert worker.stop_process(held) is False  # nothing comes back
    assert producer.count_tasks(Q) == 0
    assert producer.count_processes(Q) == 0
    assert producer.get_failed(Q) == []
    assert producer.get_queues() == ["kept"]
    tag = queue_keys(prefix, Q).tag.encode()
    assert [k for k in keys_under(redis_client, prefix) if k.startswith(tag)] == []
    assert producer.count_tasks("kept") == 1  # other queues untouched
    # The queue can be used again from scratch.
    producer.enqueue(Q, "new")
    again = worker.dequeue(Q)
    assert again is not None and again.task == "new"


# -- events -------------------------------------------------------------------------------


def test_on_delivers_work_cancel_and_delete_events(clients: Clients) -> None:
    producer = clients.make()
    worker = clients.worker()
    events = Events()
    worker.on(Q, events)
    with pytest.raises(TypeError):
        worker.on(Q, "not callable")  # type: ignore[arg-type]
    worker.start_work(Q)
    wait_until(lambda: ("work", 0) in events.snapshot(), message="drain hint on subscribe")
    producer.enqueue(Q, "task")
    wait_until(lambda: ("work", 1) in events.snapshot(), message="work event")
    process = worker.dequeue(Q)
    assert process is not None
    producer.cancel_tasks(Q, "task")
    wait_until(lambda: ("cancel", [process.id]) in events.snapshot(), message="cancel event")
    producer.delete_queue(Q)
    wait_until(lambda: ("delete", None) in events.snapshot(), message="delete event")
    # The payload never travels on a channel.
    assert all("task" not in repr(message) for _, message in events.snapshot())


def test_a_failing_callback_does_not_stop_the_others(clients: Clients) -> None:
    producer, listener = clients.make(), clients.make()
    good = Events()

    def bad(event: str, message: Any) -> None:
        raise RuntimeError("callback bug")

    listener.on(Q, bad)
    listener.on(Q, good)
    producer.delete_queue(Q)
    wait_until(lambda: ("delete", None) in good.snapshot())
    producer.delete_queue(Q)
    wait_until(lambda: good.snapshot().count(("delete", None)) == 2, message="listener alive")


# -- liveness steps -------------------------------------------------------------------------


def test_reconcile_leaves_the_processes_this_client_holds(clients: Clients) -> None:
    """Lost acknowledgements are covered in test_reconcile.py; here: nothing held
    is taken away, and nothing is returned when Redis lost nothing."""
    clients.make().enqueue_many(Q, ["a", "b"])
    worker = clients.worker(Q)
    process = worker.dequeue(Q)
    assert process is not None
    assert worker.reconcile() == 0
    assert worker.count_processes(Q) == 1 and worker.finish_process(process)


def test_heartbeat_takes_the_reaper_turn_once_per_interval(clients: Clients) -> None:
    first, second = clients.worker(), clients.worker()
    assert first.heartbeat() == "reaped"
    assert first.heartbeat() == "ok"
    assert second.heartbeat() == "ok"
    assert first.lease_fresh()


def test_lease_fresh_turns_false_before_the_ttl_and_true_after_a_heartbeat(
    clients: Clients,
) -> None:
    # Heartbeats every 0.8 s; "fresh" means within 2/3 of the 0.9 s ttl (0.6 s).
    worker = clients.worker(ttl=0.9, heartbeat=0.8)
    assert worker.lease_fresh()
    wait_until(lambda: not worker.lease_fresh(), timeout=2, message="stale before ttl")
    wait_until(worker.lease_fresh, timeout=2, message="fresh after the next heartbeat")


def test_lost_lease_runs_hooks_and_observers_and_re_registers(
    clients: Clients, redis_client: redis.Redis
) -> None:
    producer = clients.make()
    producer.enqueue_many(Q, ["a", "b"])
    worker = clients.worker(Q, "other")
    hooked: list[str] = []
    observed: list[tuple[str, dict[str, Any]]] = []
    worker.add_hooks(OnLeaseLost(hooked.append))
    worker.add_observer(lambda event, fields: observed.append((event, fields)))
    held = worker.dequeue(Q)
    assert held is not None
    old = kill(redis_client, worker)

    assert worker.heartbeat() == "recovered"

    new = worker.worker_id
    assert new is not None and new != old
    assert hooked == [old]
    assert ("lease_lost", {"worker": old}) in observed
    assert ("registered", {"worker": new}) in observed
    assert producer.get_workers() == [new]
    assert producer.get_working_queues(new) == [Q, "other"]
    assert worker.finish_process(held) is False  # the old id's process went back
    assert drain(worker) == ["a", "b"]


def test_reap_fails_every_dead_worker_and_returns_how_many(
    clients: Clients, redis_client: redis.Redis
) -> None:
    dead = [clients.worker(Q) for _ in range(3)]
    live = clients.worker(Q)
    for client in dead[:2]:
        kill(redis_client, client)
    assert live.reap() == 2
    assert live.reap() == 0
    assert sorted(live.get_workers()) == sorted([str(dead[2].worker_id), str(live.worker_id)])


def test_worker_only_methods_need_start_worker(clients: Clients) -> None:
    client = clients.make()
    for call in (
        lambda: client.dequeue(Q),
        lambda: client.dequeue_many(Q, 2),
        lambda: client.start_work(Q),
        lambda: client.stop_work(Q),
        client.fail_worker,
        client.heartbeat,
    ):
        with pytest.raises(worqr.NotStartedError):
            call()
    assert client.worker_id is None


# -- configuration, context manager, repr -------------------------------------------------


def test_configure_queue_overrides_max_recoveries_for_the_mesh(
    clients: Clients, redis_client: redis.Redis
) -> None:
    producer = clients.make()
    producer.configure_queue(Q, max_recoveries=0)  # the first failover dead-letters
    producer.enqueue(Q, "poison")
    victim = clients.worker(Q)
    assert victim.dequeue(Q) is not None
    kill(redis_client, victim)
    reaper = clients.worker(max_recoveries=5)
    assert reaper.reap() == 1
    assert producer.get_failed(Q) == ["poison"]
    producer.configure_queue(Q, max_recoveries=None)  # back to the reaper's setting
    with pytest.raises(ValueError):
        producer.configure_queue(Q, max_recoveries=-2)
    with pytest.raises(TypeError):
        producer.configure_queue(Q, max_recoveries="1")  # type: ignore[arg-type]


def test_context_manager_leaves_the_mesh_and_returns_tasks(clients: Clients) -> None:
    producer = clients.make()
    producer.enqueue_many(Q, ["a", "b"])

    def heartbeat_threads() -> int:
        return sum(t.name == "worqr-heartbeat" for t in threading.enumerate())

    before = heartbeat_threads()
    with (
        pytest.raises(RuntimeError, match="inside"),
        worqr.Worqr(clients.url, prefix=clients.prefix, ttl=60, heartbeat=20) as wq,
    ):
        worker_id = wq.start_worker()
        assert heartbeat_threads() == before + 1
        process = wq.dequeue(Q)
        assert process is not None and process.task == "a"
        assert producer.get_workers() == [worker_id]
        raise RuntimeError("inside")
    assert heartbeat_threads() == before  # close() joined its threads
    assert wq.worker_id is None
    assert producer.get_workers() == []
    assert producer.count_processes(Q) == 0
    assert producer.count_tasks(Q) == 2
    worker = clients.worker(Q)
    assert drain(worker) == ["a", "b"]  # "a" went back to the front


def test_repr_hides_the_password_and_payloads(clients: Clients) -> None:
    secret = "hunter2-very-secret"
    client = clients.make(url=f"redis://:{secret}@127.0.0.1:1/0")  # never connects
    assert secret not in repr(client)
    assert secret not in str(client)
    assert clients.prefix in repr(client)
    clients.make().enqueue(Q, "payload-secret")
    worker = clients.worker(Q)
    process = worker.dequeue(Q)
    assert process is not None
    assert "payload-secret" not in repr(process)
    assert process.id in repr(process)
