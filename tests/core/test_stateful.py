"""Random operations against a real Redis, checked after every step against a model.

A `hypothesis` state machine drives one producer and 2-3 worker clients of
`worqr.Worqr` on one queue: enqueue, dequeue, finish, stop, dead-letter, cancel,
kill a worker (delete its alive key), reap, heartbeat (of live and dead workers),
start/stop work, fail_worker. A plain-Python model predicts every reply, and
after every step the whole queue state in Redis must equal the model's:

- no loss: every accepted task is in exactly one of the queue, one process,
  finished, cancelled or the failed list (payloads are unique per enqueue);
- FIFO: the queue matches the model, including front requeues in original order;
- fencing: finish/stop return False exactly when the model says the process is gone;
- membership: only live (or not yet reaped) workers may dequeue.

Timers would make runs nondeterministic, so the clients get a long ttl and
heartbeat (no timer fires during an example) and the test calls heartbeat() and
reap() itself; a worker "dies" when the test deletes its alive key.
"""

from __future__ import annotations

import itertools
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest
import redis
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import worqr
from worqr._keys import MeshKeys  # the one place key names are formatted

QUEUE = "q"

ALIVE, ZOMBIE, FAILED = "alive", "zombie", "failed"
"""A worker client's state: ZOMBIE = its alive key is gone but nobody failed it
yet; FAILED = peers (or the reaper) failed it; it learns so on its next heartbeat."""


@dataclass
class Held:
    """One process in the model."""

    payload: str
    worker: str  # the worker id that dequeued it
    seq: int  # dequeue order across the queue


@dataclass
class WorkerModel:
    client: worqr.Worqr
    worker_id: str
    state: str = ALIVE
    working: bool = False  # the client believes it works on QUEUE
    handles: list[str] = field(default_factory=list)  # every pid it was handed


@dataclass
class Model:
    queue: list[str] = field(default_factory=list)  # front first
    processes: dict[str, Held] = field(default_factory=dict)
    finished: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # as LRANGE shows it: newest first
    recoveries: Counter[str] = field(default_factory=Counter)

    def requeue(self, worker: str, mode: str, max_recoveries: int) -> None:
        """requeue_owned.lua: newest first to the front, so the oldest is next."""
        mine = sorted(
            (pid for pid, held in self.processes.items() if held.worker == worker),
            key=lambda pid: self.processes[pid].seq,
            reverse=True,
        )
        for pid in mine:
            payload = self.processes.pop(pid).payload
            if mode == "fail" and max_recoveries >= 0:
                self.recoveries[payload] += 1
                if self.recoveries[payload] > max_recoveries:
                    del self.recoveries[payload]
                    self.failed.insert(0, payload)
                    continue
            self.queue.insert(0, payload)

    def copy(self) -> Model:
        return Model(
            list(self.queue),
            dict(self.processes),
            list(self.finished),
            list(self.cancelled),
            list(self.failed),
            Counter(self.recoveries),
        )


def _text(value: bytes) -> str:
    return value.decode()


class MeshMachine(RuleBasedStateMachine):
    def __init__(self, url: str, closer: Callable[[Callable[[], None]], object]) -> None:
        super().__init__()
        self.closer = closer
        self.prefix = f"s{uuid.uuid4().hex[:10]}"  # fresh per example
        self.raw = redis.Redis.from_url(url)
        # ttl/heartbeat far beyond an example's length: no timer ever fires.
        self.settings = worqr.Settings(
            prefix=self.prefix,
            ttl=60.0,
            heartbeat=20.0,
            poll_interval=60.0,
            requeue_chunk=2,  # failing a worker takes several script calls
        )
        self.url = url
        self.producer = worqr.Worqr(url, settings=self.settings)
        self.workers: list[WorkerModel] = []
        self.model = Model()
        self.accepted: list[str] = []
        self.names = itertools.count()
        self.dequeues = itertools.count(1)
        self.reaper_lock_taken = False
        self.max_recoveries = 0  # the queue's, drawn in start_workers
        self.mesh = MeshKeys(self.prefix)
        self.keys = self.mesh.queue(QUEUE)

    # -- helpers ---------------------------------------------------------------

    def worker(self, index: int) -> WorkerModel:
        return self.workers[index % len(self.workers)]

    def new_payload(self) -> str:
        return f"task-{next(self.names)}"

    def handle(self, index: int) -> tuple[WorkerModel, str]:
        pairs = [(w, pid) for w in self.workers for pid in w.handles]
        return pairs[index % len(pairs)]

    def has_handles(self) -> bool:
        return any(w.handles for w in self.workers)

    def took(self, w: WorkerModel, processes: list[worqr.Process], count: int) -> None:
        """Check a dequeue's reply against the model's queue front, then apply it."""
        expected = self.model.queue[:count]
        assert [p.task for p in processes] == expected
        assert len({p.id for p in processes}) == len(processes)
        del self.model.queue[: len(processes)]
        for process in processes:
            assert process.worker_id == w.worker_id
            assert process.queue == QUEUE
            assert process.data == process.task.encode()  # type: ignore[union-attr]
            assert process.id not in self.model.processes
            held = Held(str(process.task), w.worker_id, next(self.dequeues))
            self.model.processes[process.id] = held
            w.handles.append(process.id)
        w.working = True

    def reap_all(self, zombies: list[WorkerModel]) -> None:
        """Fail every zombie. Redis reaps them in its set's order, which the test
        cannot know: accept the order whose result matches what Redis holds."""
        queue, failed = self.read_queue(), self.read_failed()
        for order in itertools.permutations(zombies):
            candidate = self.model.copy()
            for w in order:
                candidate.requeue(w.worker_id, "fail", self.max_recoveries)
            if candidate.queue == queue and candidate.failed == failed:
                self.model = candidate
                break
        else:
            raise AssertionError(
                f"no reaping order of {len(zombies)} dead workers explains "
                f"queue={queue} failed={failed}; model queue={self.model.queue}"
            )
        for w in zombies:
            w.state = FAILED

    def read_queue(self) -> list[str]:
        return [_text(t) for t in reversed(self.raw.lrange(self.keys.tasks, 0, -1))]

    def read_failed(self) -> list[str]:
        return [_text(t) for t in self.raw.lrange(self.keys.failed, 0, -1)]

    # -- setup -----------------------------------------------------------------

    @initialize(
        takes=st.lists(st.integers(0, 3), min_size=2, max_size=3),
        backlog=st.integers(0, 10),
        max_recoveries=st.sampled_from([1, 0, -1]),
    )
    def start_workers(self, takes: list[int], backlog: int, max_recoveries: int) -> None:
        """2-3 workers; a backlog, and each worker holding some of it, so that most
        steps act on a mesh with processes in flight."""
        # The queue's own setting (0: the first failover dead-letters, -1: never).
        self.producer.configure_queue(QUEUE, max_recoveries=max_recoveries)
        self.max_recoveries = max_recoveries
        self.enqueue(backlog)
        for count in takes:
            client = worqr.Worqr(self.url, settings=self.settings)
            self.workers.append(WorkerModel(client, client.start_worker()))
            if count:
                self.take(len(self.workers) - 1, count)

    def teardown(self) -> None:
        # Closing a client joins its listener thread (up to a quarter second), so
        # clients close in the background while the next example runs; the test
        # waits for every close before it returns.
        self.closer(self.close_all)

    def close_all(self) -> None:
        for client in [self.producer] + [w.client for w in self.workers]:
            client.close()
        keys = list(self.raw.scan_iter(match=f"{{{self.prefix}[:}}]*", count=1000))
        if keys:
            self.raw.delete(*keys)
        self.raw.close()

    # -- producing -------------------------------------------------------------

    @rule(count=st.integers(0, 4))
    def enqueue(self, count: int) -> None:
        payloads = [self.new_payload() for _ in range(count)]
        if count == 1:
            self.producer.enqueue(QUEUE, payloads[0])
        else:
            assert self.producer.enqueue_many(QUEUE, payloads) == count
        self.accepted += payloads
        self.model.queue += payloads

    @rule(index=st.integers(0, 100), unknown=st.booleans())
    def cancel(self, index: int, unknown: bool) -> None:
        if unknown or not self.accepted:
            payload = "never-enqueued"
        else:
            payload = self.accepted[index % len(self.accepted)]
        expected = 0
        if payload in self.model.queue:
            self.model.queue.remove(payload)
            expected += 1
        for pid in [p for p, held in self.model.processes.items() if held.payload == payload]:
            del self.model.processes[pid]
            expected += 1
        self.model.recoveries.pop(payload, None)
        if expected:
            self.model.cancelled.append(payload)
        assert self.producer.cancel_tasks(QUEUE, payload) == expected

    # -- working ---------------------------------------------------------------

    @rule(index=st.integers(0, 2), count=st.integers(1, 3))
    def take(self, index: int, count: int) -> None:
        """dequeue (count 1) or dequeue_many."""
        w = self.worker(index)
        # A failed worker may not dequeue; nor may a dead one that must rejoin first.
        if w.state == FAILED or (w.state == ZOMBIE and not w.working):
            with pytest.raises(worqr.LeaseLostError):
                if count == 1:
                    w.client.dequeue(QUEUE)
                else:
                    w.client.dequeue_many(QUEUE, count)
            w.working = False  # the client forgets the queue it was expelled from
            return
        if count == 1:
            process = w.client.dequeue(QUEUE)
            self.took(w, [] if process is None else [process], 1)
        else:
            self.took(w, w.client.dequeue_many(QUEUE, count), count)

    @precondition(lambda self: self.has_handles())
    @rule(index=st.integers(0, 100), how=st.sampled_from(["finish", "stop", "dead_letter"]))
    def acknowledge(self, index: int, how: str) -> None:
        """finish_process, stop_process or fail_process of any process a client was
        ever handed: True exactly when the model still has the process."""
        w, pid = self.handle(index)
        held = self.model.processes.pop(pid, None)
        if held is not None:
            if how == "stop":
                self.model.queue.insert(0, held.payload)
            else:
                self.model.recoveries.pop(held.payload, None)
                if how == "finish":
                    self.model.finished.append(held.payload)
                else:
                    self.model.failed.insert(0, held.payload)
        acknowledge = {
            "finish": w.client.finish_process,
            "stop": w.client.stop_process,
            "dead_letter": w.client.fail_process,
        }[how]
        assert acknowledge(pid) is (held is not None)

    @rule(index=st.integers(0, 2), start=st.booleans())
    def work(self, index: int, start: bool) -> None:
        """start_work, or stop_work (its processes go back to the front)."""
        w = self.worker(index)
        if not start:
            w.client.stop_work(QUEUE)
            self.model.requeue(w.worker_id, "leave", self.max_recoveries)
            w.working = False
        elif w.state != ALIVE:
            with pytest.raises(worqr.LeaseLostError):
                w.client.start_work(QUEUE)
        else:
            w.client.start_work(QUEUE)
            w.working = True

    @rule(index=st.integers(0, 2))
    def fail_worker(self, index: int) -> None:
        w = self.worker(index)
        before = len(self.model.queue)
        if w.working:
            self.model.requeue(w.worker_id, "release", self.max_recoveries)
        assert w.client.fail_worker() == len(self.model.queue) - before

    # -- liveness --------------------------------------------------------------

    @rule(index=st.integers(0, 2), then=st.sampled_from(["", "reap", "heartbeat"]))
    def kill(self, index: int, then: str) -> None:
        """The worker stops heartbeating; its lease is gone. ``then``: right after,
        a peer reaps, or the worker's own next heartbeat finds out."""
        w = self.worker(index)
        self.raw.delete(self.mesh.alive(w.worker_id))
        if w.state == ALIVE:
            w.state = ZOMBIE
        if then == "reap":
            self.reap(index + 1)
        elif then == "heartbeat":
            self.heartbeat(index, new_turn=False)

    @rule(index=st.integers(0, 3))
    def reap(self, index: int) -> None:
        reaper = [self.producer, *(w.client for w in self.workers)][index % (len(self.workers) + 1)]
        zombies = [w for w in self.workers if w.state == ZOMBIE]
        assert reaper.reap() == len(zombies)
        self.reap_all(zombies)

    @rule(index=st.integers(0, 2), new_turn=st.booleans())
    def heartbeat(self, index: int, new_turn: bool) -> None:
        """One heartbeat; ``new_turn``: the mesh's reaper lock expired before it."""
        if new_turn:
            self.raw.delete(self.mesh.reaper)
            self.reaper_lock_taken = False
        w = self.worker(index)
        old = w.worker_id
        result = w.client.heartbeat()
        if w.state == ALIVE:
            if self.reaper_lock_taken:
                assert result == "ok"
            else:
                assert result == "reaped"
                self.reaper_lock_taken = True
                self.reap_all([z for z in self.workers if z.state == ZOMBIE])
            return
        # The lease is gone: the worker fails its old id itself and re-registers.
        assert result == "recovered"
        if w.working:
            self.model.requeue(old, "fail", self.max_recoveries)
        assert w.client.worker_id not in (None, old)
        w.worker_id = str(w.client.worker_id)
        w.state = ALIVE

    # -- the checks --------------------------------------------------------------

    @invariant()
    def redis_matches_model(self) -> None:
        keys, model = self.keys, self.model
        queue = self.read_queue()
        failed = self.read_failed()
        processes = {_text(k): _text(v) for k, v in self.raw.hgetall(keys.processes).items()}

        # No loss: every accepted task in exactly one place.
        places = Counter(queue) + Counter(processes.values()) + Counter(failed)
        places += Counter(model.finished) + Counter(model.cancelled)
        assert places == Counter(self.accepted), "a task was lost or duplicated"

        assert queue == model.queue, "queue order differs from the model"
        assert failed == model.failed
        assert processes == {pid: held.payload for pid, held in model.processes.items()}

        # Each worker's own process set, in dequeue order (cancelled pids linger in
        # it until the worker acknowledges them, so only live processes count).
        for w in self.workers:
            owned = [_text(p) for p in self.raw.zrange(keys.owned(w.worker_id), 0, -1)]
            mine = sorted(
                (pid for pid, held in model.processes.items() if held.worker == w.worker_id),
                key=lambda pid: model.processes[pid].seq,
            )
            assert [pid for pid in owned if pid in processes] == mine

        # Membership: who may dequeue, who is registered, whose lease exists.
        def ids(*states: str, working: bool | None = None) -> set[str]:
            return {
                w.worker_id
                for w in self.workers
                if w.state in states and (working is None or w.working == working)
            }

        members = {_text(m) for m in self.raw.smembers(keys.members)}
        assert members == ids(ALIVE, ZOMBIE, working=True)
        assert {_text(m) for m in self.raw.smembers(keys.idle)} <= members
        assert {_text(m) for m in self.raw.smembers(self.mesh.workers)} == ids(ALIVE, ZOMBIE)
        for w in self.workers:
            assert bool(self.raw.exists(self.mesh.alive(w.worker_id))) is (w.state == ALIVE)
            registry = {_text(q) for q in self.raw.smembers(self.mesh.worker_queues(w.worker_id))}
            expected = {QUEUE} if w.working and w.state != FAILED else set()
            assert registry == expected

        stats = {_text(k): int(v) for k, v in self.raw.hgetall(keys.stats).items()}
        assert stats.get("finished", 0) == len(model.finished)
        assert stats.get("cancelled", 0) == len(model.cancelled)
        assert stats.get("enqueued", 0) == len(self.accepted)
        recoveries = {_text(k): int(v) for k, v in self.raw.hgetall(keys.recoveries).items()}
        assert recoveries == {k: v for k, v in model.recoveries.items() if v}


# A passing run takes seconds; a failing one shrinks for minutes before it prints
# the minimal failing sequence, which the default timeout would swallow.
@pytest.mark.timeout(900)
@pytest.mark.slow
def test_random_operations_keep_every_invariant(redis_url: str) -> None:
    closes: list[Future[None]] = []
    with ThreadPoolExecutor(8) as pool:
        run_state_machine_as_test(
            lambda: MeshMachine(redis_url, lambda close: closes.append(pool.submit(close))),
            settings=settings(max_examples=40, stateful_step_count=30, deadline=None),
        )
    for close in closes:
        close.result()  # a close that failed fails the test
