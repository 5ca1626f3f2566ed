"""Peer failover: dead workers' tasks return exactly once; zombies are fenced.

A worker "dies" when its alive key is deleted (or made to expire) while it holds
processes; peers fail it with `reap()`. A real SIGKILL of a worker process is
covered once, with the background heartbeats doing the reaping.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from core_helpers import Clients, CountingRedis, kill, queue_keys, race, sha
from helpers import wait_until

import worqr
from worqr._keys import MeshKeys

Q = "jobs"


@pytest.fixture
def clients(redis_url: str, prefix: str) -> Iterator[Clients]:
    made = Clients(redis_url, prefix)
    try:
        yield made
    finally:
        made.close_all()


def queued(raw: redis.Redis, prefix: str, queue: str = Q) -> list[bytes]:
    """The queue's tasks, front (next to dequeue) first."""
    return list(reversed(raw.lrange(queue_keys(prefix, queue).tasks, 0, -1)))


@pytest.mark.parametrize("death", ["deleted", "expired"])
def test_peer_requeues_exactly_the_dead_workers_tasks(
    clients: Clients, redis_client: redis.Redis, prefix: str, death: str
) -> None:
    producer = clients.make()
    producer.enqueue_many(Q, [f"t{i}" for i in range(6)])
    producer.enqueue_many("side", ["s0", "s1"])
    dead, peer = clients.worker(Q, "side"), clients.worker(Q)
    failures: list[dict[str, Any]] = []
    peer.add_observer(lambda event, fields: event == "peer_failed" and failures.append(fields))
    dead_held = dead.dequeue_many(Q, 2)  # t0, t1
    peer_held = peer.dequeue(Q)  # t2: must stay with the peer
    side_held = dead.dequeue("side")  # s0
    assert peer_held is not None and side_held is not None
    dead_finished = dead.dequeue(Q)  # t3, finished before dying: gone for good
    assert dead_finished is not None and dead.finish_process(dead_finished)
    dead_id = str(dead.worker_id)

    if death == "deleted":
        kill(redis_client, dead)
    else:
        alive_key = MeshKeys(prefix).alive(dead_id)
        assert redis_client.pexpire(alive_key, 500)
        assert peer.reap() == 0  # a live worker is never failed
        assert producer.count_processes(Q) == 3
        wait_until(lambda: not redis_client.exists(alive_key), message="lease expires")
    assert peer.reap() == 1

    assert queued(redis_client, prefix) == [b"t0", b"t1", b"t4", b"t5"]
    assert queued(redis_client, prefix, "side") == [b"s0", b"s1"]
    assert peer.processes_exist(Q, [p.id for p in dead_held]) == [False, False]
    assert peer.processes_exist(Q, [peer_held.id]) == [True]
    assert peer.count_worker_processes(Q, str(peer.worker_id)) == 1
    assert producer.count_processes(Q) == 1
    assert producer.get_workers() == [peer.worker_id]
    assert producer.get_stats(Q)["recovered"] == 2
    assert failures == [{"worker": dead_id, "requeued": 3, "dead_lettered": 0}]
    # Nothing of the dead worker is left in the mesh registry.
    mesh = MeshKeys(prefix)
    for key in (mesh.alive(dead_id), mesh.worker_queues(dead_id), mesh.worker_info(dead_id)):
        assert not redis_client.exists(key)
    assert not redis_client.exists(queue_keys(prefix, Q).worker(dead_id))
    assert peer.finish_process(peer_held)


def test_zombie_is_fenced_then_re_registers_and_works_again(
    clients: Clients, redis_client: redis.Redis, prefix: str
) -> None:
    producer = clients.make()
    producer.enqueue_many(Q, ["a", "b", "c"])
    zombie, peer = clients.worker(Q), clients.worker(Q)
    lost: list[str] = []
    zombie.add_lease_lost_hook(lost.append)
    first, second = zombie.dequeue_many(Q, 2)
    old_id = kill(redis_client, zombie)
    assert peer.reap() == 1

    # Late acknowledgements change nothing.
    assert zombie.finish_process(first) is False
    assert zombie.stop_process(second) is False
    assert queued(redis_client, prefix) == [b"a", b"b", b"c"]  # no duplicate from the stop
    # It cannot dequeue under its old id (twice: the rejoin is refused too).
    for _ in range(2):
        with pytest.raises(worqr.LeaseLostError):
            zombie.dequeue(Q)
    assert producer.count_tasks(Q) == 3
    assert lost == []  # it has not learnt yet; its heartbeat tells it

    assert zombie.heartbeat() == "recovered"

    assert lost == [old_id]
    new_id = zombie.worker_id
    assert new_id is not None and new_id != old_id
    assert sorted(producer.get_workers()) == sorted([new_id, str(peer.worker_id)])
    again = zombie.dequeue(Q)
    assert again is not None and again.task == "a" and again.worker_id == new_id
    assert zombie.finish_process(again) is True


def test_zombie_that_notices_first_fails_its_own_old_id(
    clients: Clients, redis_client: redis.Redis, prefix: str
) -> None:
    producer = clients.make()
    producer.enqueue_many(Q, ["a", "b", "c"])
    zombie = clients.worker(Q)
    held = zombie.dequeue_many(Q, 2)
    old_id = kill(redis_client, zombie)
    assert zombie.heartbeat() == "recovered"  # before any peer reaped it
    assert zombie.processes_exist(Q, [p.id for p in held]) == [False, False]
    assert queued(redis_client, prefix) == [b"a", b"b", b"c"]
    assert producer.get_workers() == [zombie.worker_id]
    peer = clients.worker()
    assert peer.reap() == 0  # nothing left to fail: no second requeue
    assert producer.count_tasks(Q) == 3
    assert old_id not in producer.get_workers()


def test_peers_reaping_the_same_dead_worker_at_once_requeue_each_task_once(
    clients: Clients, redis_client: redis.Redis, prefix: str
) -> None:
    queues = [Q, "second"]
    tasks = {queue: [f"{queue}-{i}" for i in range(400)] for queue in queues}
    producer = clients.make()
    for queue in queues:
        producer.enqueue_many(queue, tasks[queue])
    dead = clients.worker(*queues)
    for queue in queues:
        assert len(dead.dequeue_many(queue, 400)) == 400
    peers = [clients.worker(requeue_chunk=3) for _ in range(4)]
    kill(redis_client, dead)
    results = race(*(peer.reap for peer in peers))
    assert sorted(results) == [0, 0, 0, 1]  # one peer forgot the worker
    keys = [queue_keys(prefix, queue) for queue in queues]
    for queue, key in zip(queues, keys, strict=True):
        back = [t.decode() for t in queued(redis_client, prefix, queue)]
        assert back == tasks[queue]  # each exactly once, oldest first
        assert producer.count_processes(queue) == 0
        assert producer.get_stats(queue)["recovered"] == 400
        # Each task was counted as recovered once (a double requeue counts twice).
        assert set(redis_client.hvals(key.recoveries)) == {b"1"}


def test_poison_pill_goes_to_the_failed_list_after_max_recoveries(
    clients: Clients, redis_client: redis.Redis
) -> None:
    producer = clients.make()
    producer.enqueue_many(Q, ["poison", "fine"])
    reaper = clients.worker(max_recoveries=2)
    failures: list[dict[str, Any]] = []
    reaper.add_observer(lambda event, fields: event == "peer_failed" and failures.append(fields))
    for recovery in range(3):
        victim = clients.worker(Q)
        process = victim.dequeue(Q)
        assert process is not None and process.task == "poison"
        kill(redis_client, victim)
        assert reaper.reap() == 1
        if recovery < 2:
            assert producer.count_tasks(Q) == 2  # back at the front
            assert producer.get_failed(Q) == []
    assert producer.get_failed(Q) == ["poison"]
    assert producer.count_tasks(Q) == 1
    assert [f["dead_lettered"] for f in failures] == [0, 0, 1]
    assert producer.get_stats(Q)["dead_lettered"] == 1
    survivor = clients.worker(Q)
    remaining = survivor.dequeue(Q)
    assert remaining is not None and remaining.task == "fine"


def test_finishing_resets_the_recovery_count(clients: Clients, redis_client: redis.Redis) -> None:
    producer = clients.make()
    reaper = clients.worker(max_recoveries=1)
    producer.enqueue(Q, "task")
    victim = clients.worker(Q)
    assert victim.dequeue(Q) is not None
    kill(redis_client, victim)
    assert reaper.reap() == 1  # recovered once
    done = clients.worker(Q)
    process = done.dequeue(Q)
    assert process is not None and done.finish_process(process)
    producer.enqueue(Q, "task")  # the same payload again: a fresh task
    victim = clients.worker(Q)
    assert victim.dequeue(Q) is not None
    kill(redis_client, victim)
    assert reaper.reap() == 1
    assert producer.get_failed(Q) == []
    assert producer.count_tasks(Q) == 1


def test_persistent_queue_never_dead_letters(clients: Clients, redis_client: redis.Redis) -> None:
    producer = clients.make()
    producer.configure_queue(Q, max_recoveries=-1)
    producer.enqueue(Q, "connection")
    reaper = clients.worker(max_recoveries=0)
    for _ in range(3):
        victim = clients.worker(Q)
        assert victim.dequeue(Q) is not None
        kill(redis_client, victim)
        assert reaper.reap() == 1
        assert producer.count_tasks(Q) == 1
    assert producer.get_failed(Q) == []


def test_reaping_runs_once_per_interval_for_the_mesh(
    clients: Clients, redis_client: redis.Redis, prefix: str
) -> None:
    """Only the heartbeat that takes the mesh's reaper lock reaps; the lock lasts
    one heartbeat interval."""
    workers = [clients.worker(Q) for _ in range(4)]
    first, second, third, victim = workers
    producer = clients.make()
    producer.enqueue(Q, "held")
    assert victim.dequeue(Q) is not None
    kill(redis_client, victim)

    assert first.heartbeat() == "reaped"
    assert producer.count_tasks(Q) == 1  # that heartbeat reaped the dead worker
    reaper_key = MeshKeys(prefix).reaper
    lock_ms = redis_client.pttl(reaper_key)
    assert 0 < lock_ms <= first.settings.heartbeat * 1000
    assert redis_client.get(reaper_key) == str(first.worker_id).encode()

    late = clients.worker(Q)
    assert late.dequeue(Q) is not None
    kill(redis_client, late)
    assert [second.heartbeat(), third.heartbeat(), first.heartbeat()] == ["ok"] * 3
    assert producer.count_processes(Q) == 1  # nobody reaped within the interval
    redis_client.delete(reaper_key)  # the interval ends
    assert second.heartbeat() == "reaped"
    assert producer.count_processes(Q) == 0
    assert producer.count_tasks(Q) == 1


def test_failing_a_worker_with_5000_processes_works_in_chunks(
    clients: Clients, redis_client: redis.Redis, prefix: str, redis_url: str
) -> None:
    tasks = [f"t{i}" for i in range(5000)]
    producer = clients.make()
    producer.enqueue_many(Q, tasks)
    dead = clients.worker(Q)
    assert len(dead.dequeue_many(Q, 5000)) == 5000
    kill(redis_client, dead)
    counting = CountingRedis.from_url(redis_url)
    try:
        reaper = clients.worker(redis=counting, requeue_chunk=100)
        counting.scripts_sent.clear()
        assert reaper.reap() == 1
        assert counting.scripts_sent.count(sha("requeue_owned")) == 50  # 5000 / 100
    finally:
        counting.close()
    assert [t.decode() for t in queued(redis_client, prefix)] == tasks
    assert producer.count_processes(Q) == 0


WORKER_SCRIPT = textwrap.dedent(
    """
    import sys, time, worqr
    wq = worqr.Worqr(sys.argv[1], prefix=sys.argv[2], ttl=0.6, heartbeat=0.2)
    wq.start_worker()
    held = wq.dequeue_many("jobs", 2)
    print(" ".join(p.id for p in held), flush=True)
    time.sleep(60)
    """
)


def test_sigkilled_worker_is_failed_by_a_peer_within_ttl_plus_heartbeat(
    clients: Clients, redis_url: str, prefix: str, redis_client: redis.Redis
) -> None:
    """The timers, for real: a worker process is SIGKILLed while it holds two
    tasks; a peer's own heartbeats notice and return them within about
    ttl + heartbeat."""
    producer = clients.make()
    producer.enqueue_many(Q, ["a", "b", "c"])
    peer = clients.worker(ttl=0.6, heartbeat=0.2)
    child = subprocess.Popen(
        [sys.executable, "-c", WORKER_SCRIPT, redis_url, prefix],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        pids = child.stdout.readline().split()
        assert len(pids) == 2
        assert producer.count_processes(Q) == 2
        child.kill()
        child.wait(10)
        killed = time.monotonic()
        wait_until(lambda: producer.count_tasks(Q) == 3, timeout=5, message="peer failover")
        took = time.monotonic() - killed
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    assert took <= 0.6 + 2 * 0.2 + 0.5, took  # ttl + heartbeat (+ a reaper turn) + slack
    assert queued(redis_client, prefix) == [b"a", b"b", b"c"]
    assert producer.get_workers() == [peer.worker_id]
