"""`Settings(wait_replicas=N)` on a real Redis Cluster (3 masters with a replica
each): every enqueue's ``WAIT`` runs on the connection of the master that owns
the queue's slot, right after the script, and so counts that master's replicas.

The proofs stop one replica (SIGSTOP): an enqueue into its master's queue must
time out with the task on the master exactly once, while queues on the other
masters are confirmed. A ``WAIT`` sent to any other master, or to all of them,
would be confirmed by a live replica instead. The slot of a queue is then moved
under an idle client (``MOVED``) and moved back with an enqueue in the middle
(``ASK``): the ``WAIT`` follows it each time. Sync and asyncio clients.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from redis.crc import key_slot

import worqr
from tests.support.cli import run_cli
from tests.support.cluster import LocalCluster, needs_asyncio_cluster
from tests.support.waiting import wait_until
from worqr._keys import MeshKeys
from worqr.embedded_cluster import node_client

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


@pytest.fixture(scope="module")
def replicated() -> Iterator[LocalCluster]:
    """3 masters with a replica each (the default 5 s node timeout: a replica
    stopped for a moment is not failed)."""
    cluster = LocalCluster(3, replicas=1)
    try:
        yield cluster.start()
    finally:
        cluster.close()


class Producer:
    """A `worqr.Worqr`, or a `worqr.AsyncWorqr` run on its own event loop, both
    on the cluster, behind the same blocking methods."""

    def __init__(self, kind: str, url: str, settings: worqr.Settings) -> None:
        self.runner = asyncio.Runner() if kind == "async" else None
        if self.runner is None:
            self.client: Any = worqr.Worqr(url, cluster=True, settings=settings)
        else:
            self.client = self.runner.run(self._async_client(url, settings))

    @staticmethod
    async def _async_client(url: str, settings: worqr.Settings) -> worqr.AsyncWorqr:
        return worqr.AsyncWorqr(url, cluster=True, settings=settings)

    def _result(self, call: Any) -> Any:
        return call if self.runner is None else self.runner.run(call)

    def enqueue(self, queue: str, task: str) -> None:
        self._result(self.client.enqueue(queue, task))

    def enqueue_many(self, queue: str, tasks: list[str]) -> int:
        return int(self._result(self.client.enqueue_many(queue, tasks)))

    def close(self) -> None:
        if self.runner is None:
            self.client.close()
        else:
            self.runner.run(self.client.aclose())
            self.runner.close()


@pytest.fixture(params=["sync", pytest.param("async", marks=needs_asyncio_cluster)])
def make(
    request: pytest.FixtureRequest, replicated: LocalCluster, prefix: str
) -> Iterator[Callable[..., Producer]]:
    """``make(**settings)``: a cluster client of the test's mesh with
    ``wait_replicas=1``, sync or asyncio (the test runs once with each)."""
    made: list[Producer] = []

    def build(**changes: Any) -> Producer:
        settings = worqr.Settings(prefix=prefix, wait_replicas=1, **changes)
        made.append(Producer(request.param, replicated.url, settings))
        return made[-1]

    yield build
    for producer in made:
        producer.close()


def tasks_key(prefix: str, queue: str) -> str:
    return MeshKeys(prefix).queue(queue).tasks


def queue_slot(prefix: str, queue: str) -> int:
    return key_slot(tasks_key(prefix, queue).encode())


def queue_per_master(cluster: LocalCluster, prefix: str) -> dict[int, str]:
    """A queue name for each master, in a slot that master owns."""
    with node_client(cluster.ports[0]) as client:
        ranges = client.execute_command("CLUSTER", "SLOTS")
    found: dict[int, str] = {}
    for i in range(1000):
        slot = queue_slot(prefix, f"q{i}")
        owner = next(int(m[1]) for start, end, m, *_ in ranges if start <= slot <= end)
        found.setdefault(owner, f"q{i}")
        if len(found) == len(cluster.ports):
            return found
    raise AssertionError("no queue name for every master")


def replica_of(master: int) -> int:
    with node_client(master) as client:
        return int(client.info("replication")["slave0"]["port"])


def on_master(master: int, key: str) -> list[bytes]:
    with node_client(master) as client:
        return list(client.lrange(key, 0, -1))


def on_replica(master: int, key: str) -> list[bytes]:
    """The list ``key`` as the replica of ``master`` holds it now (READONLY, on
    the same connection as the read)."""
    with node_client(replica_of(master)) as client:
        pipe = client.pipeline(transaction=False)
        pipe.execute_command("READONLY")
        pipe.lrange(key, 0, -1)
        return list(pipe.execute()[1])


def in_sync(master: int) -> bool:
    """The replica of ``master`` has acknowledged everything the master wrote."""
    with node_client(master) as client:
        info = client.info("replication")
    return int(info["slave0"]["offset"]) == int(info["master_repl_offset"])


def stopped(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] == "T"


@contextmanager
def replica_stopped(cluster: LocalCluster, master: int) -> Iterator[None]:
    """SIGSTOP the replica of ``master`` (it acknowledges nothing) for the block;
    after it, wait until the replica has caught up."""
    server = cluster.server(replica_of(master))
    pid = server.pid
    assert pid is not None
    server.pause()
    try:
        wait_until(lambda: stopped(pid), message="the replica did not stop")
        yield
    finally:
        server.resume()
    wait_until(lambda: in_sync(master), message="the replica did not catch up")


def test_enqueue_returns_with_the_task_on_the_queues_replica(
    replicated: LocalCluster, make: Callable[..., Producer], prefix: str
) -> None:
    """On each master's queue: when enqueue returns, the replica of that master
    holds the task (read at once, no waiting); enqueue_many waits per batch."""
    producer = make(wait_timeout=2.0)
    for master, queue in queue_per_master(replicated, prefix).items():
        key = tasks_key(prefix, queue)
        for n in range(1, 4):
            producer.enqueue(queue, f"t{n}")
            assert len(on_replica(master, key)) == n
        assert producer.enqueue_many(queue, [f"m{i}" for i in range(1500)]) == 1500  # 2 batches
        assert len(on_replica(master, key)) == 1503
        assert len(on_master(master, key)) == 1503


def test_a_stopped_replica_times_out_only_its_own_masters_queues(
    replicated: LocalCluster, make: Callable[..., Producer], prefix: str
) -> None:
    """With one master's replica stopped, an enqueue into that master's queue
    raises ReplicationTimeoutError (0 of 1 replicas) and the task is on the master
    exactly once; queues of the other masters are confirmed meanwhile. Done for
    each master in turn."""
    producer = make(wait_timeout=0.3)
    queues = queue_per_master(replicated, prefix)
    expected = {master: [] for master in queues}  # what each queue holds, oldest first
    for stalled, queue in queues.items():
        with replica_stopped(replicated, stalled):
            with pytest.raises(worqr.ReplicationTimeoutError) as caught:
                producer.enqueue(queue, f"unconfirmed-{stalled}")
            assert (caught.value.replicas, caught.value.required) == (0, 1)
            assert (caught.value.enqueued, caught.value.unconfirmed) == (1, 1)
            assert "ARE enqueued on the master" in str(caught.value)
            expected[stalled].append(f"unconfirmed-{stalled}")
            for master, other in queues.items():
                if master != stalled:
                    producer.enqueue(other, f"confirmed-{stalled}")
                    expected[master].append(f"confirmed-{stalled}")
                    assert on_replica(master, tasks_key(prefix, other))[0] == (
                        f"confirmed-{stalled}".encode()
                    )
    for master, queue in queues.items():
        held = [task.decode() for task in reversed(on_master(master, tasks_key(prefix, queue)))]
        assert held == expected[master]  # each task once, in order
        assert on_replica(master, tasks_key(prefix, queue)) == on_master(
            master, tasks_key(prefix, queue)
        )


def test_a_flushed_script_is_loaded_on_the_queues_master(
    replicated: LocalCluster, make: Callable[..., Producer], prefix: str
) -> None:
    """NOSCRIPT on the queue's master: the script is loaded on that connection and
    sent again, with its WAIT; the task is pushed once and replicated."""
    producer = make(wait_timeout=2.0)
    master, queue = next(iter(queue_per_master(replicated, prefix).items()))
    producer.enqueue(queue, "first")
    with node_client(master) as client:
        client.script_flush()
    producer.enqueue(queue, "after-flush")
    key = tasks_key(prefix, queue)
    assert on_master(master, key) == on_replica(master, key) == [b"after-flush", b"first"]


def test_the_wait_follows_the_queues_slot_when_it_moves(
    replicated: LocalCluster, make: Callable[..., Producer], prefix: str
) -> None:
    """The queue's slot moves to another master while the client is idle: its next
    enqueue meets MOVED, goes again to the new owner, and WAITs there (that
    owner's stopped replica makes it time out). Moved back, an enqueue made while
    the keys are already on the importing master meets ASK and WAITs on the
    importing master. Every task is in the queue once."""
    producer = make(wait_timeout=0.3, retry_deadline=3.0)
    queues = queue_per_master(replicated, prefix)
    home, queue = next(iter(queues.items()))
    away = next(master for master in queues if master != home)
    slot = queue_slot(prefix, queue)
    key = tasks_key(prefix, queue)
    producer.enqueue(queue, "before")  # the client maps the slot to home
    moved = replicated.redirects()["MOVED"]
    replicated.migrate_slot(slot, away)
    with replica_stopped(replicated, away), pytest.raises(worqr.ReplicationTimeoutError):
        producer.enqueue(queue, "moved")
    assert replicated.redirects()["MOVED"] > moved
    producer.enqueue(queue, "confirmed")
    assert on_master(away, key) == [b"confirmed", b"moved", b"before"]

    # An idle member, so that all four keys of the enqueue script exist (tasks,
    # idle, stats, and config, which the first enqueue marks as a task queue's):
    # the importing node runs a multi-key command under ASKING only if it holds
    # every key (else TRYAGAIN until the slot is moved; resent, as any TRYAGAIN).
    queue_keys = MeshKeys(prefix).queue(queue)
    with node_client(away) as client:
        client.sadd(queue_keys.idle, "ghost")
        in_slot = set(client.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100))
    # Another test's queue may hash to the same slot: its keys move too.
    enqueue_keys = {queue_keys.tasks, queue_keys.idle, queue_keys.stats, queue_keys.config}
    assert {key.decode() for key in in_slot if key.startswith(queue_keys.tag.encode())} == (
        enqueue_keys
    )
    asked = replicated.redirects()["ASK"]
    outcomes: list[BaseException | None] = []

    def between() -> None:  # once every key is on home, the slot not yet: ASK
        with node_client(away) as client:
            if outcomes or client.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot):
                return
        with replica_stopped(replicated, home):
            try:
                producer.enqueue(queue, "mid-move")
            except Exception as error:  # judged after the move, which must complete
                outcomes.append(error)
            else:
                outcomes.append(None)

    assert replicated.migrate_slot(slot, home, between=between) == len(in_slot)
    assert isinstance(outcomes[0], worqr.ReplicationTimeoutError), outcomes
    assert replicated.redirects()["ASK"] > asked
    producer.enqueue(queue, "home")
    assert on_master(home, key) == [b"home", b"mid-move", b"confirmed", b"moved", b"before"]


def test_cli_enqueue_waits_for_the_replica_of_the_queues_master(
    replicated: LocalCluster, prefix: str
) -> None:
    """`worqr enqueue --cluster --wait-replicas 1`: exit 0 with the task already on
    the replica of each queue's master; exit 3 with it on the master once while
    that replica is stopped."""
    target = ["--cluster", "--url", replicated.url, "--prefix", prefix, "--wait-replicas", "1"]
    for master, queue in queue_per_master(replicated, prefix).items():
        done = run_cli("enqueue", queue, "held", *target)
        assert done.returncode == 0, done.stderr
        assert on_replica(master, tasks_key(prefix, queue)) == [b"held"]
        with replica_stopped(replicated, master):
            late = run_cli("enqueue", queue, "late", *target, "--wait-timeout", "0.2")
        assert late.returncode == 3, late.stderr
        assert "1 task is enqueued" in late.stderr
        assert on_master(master, tasks_key(prefix, queue)) == [b"late", b"held"]
