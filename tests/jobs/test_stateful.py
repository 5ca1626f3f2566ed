"""The job state machine under random operations, checked after every step.

A `hypothesis` state machine drives a producer and two worker clients of one
job queue: submit (own ids from a small pool, so duplicates and new lives
happen; unique payloads; priorities; jobs due now or far in the future),
take, finish, fail (retried or not), fail now, cancel, retry_job, stop, a
worker's death and its reaping. A plain model predicts every reply, and after
every step Redis must agree:

- counts are exact: `count_jobs` equals the model's per-state counts;
- no loss, one index each: every live job is in exactly the index its state
  names (the ready list or priority zset, the delayed or retrying zset, one
  process) and in no other; every terminal one in its state's zset;
- fencing: a finish or failure for a process the model says is gone changes
  nothing and is refused.

No timer fires during an example (long ttl and heartbeat); a worker dies when
the test deletes its alive key, and `reap()` fails it.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field

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
from worqr._core.job_record import HOT_SUFFIX, hot_field, merge_record
from worqr._jobs import STATE_CODES, STATES, JobProcess
from worqr._keys import MeshKeys

QUEUE = "q"
IDS = [f"job-{i}" for i in range(6)]
PAYLOADS = ["a", "b", "c"]
FAR = 3600.0  # a delay no example outlives: delayed jobs stay delayed
LIVE = {"delayed", "queued", "active", "retrying"}


@dataclass
class Job:
    state: str
    payload: str
    unique: bool
    retries: int
    priority: int = 0
    failures: int = 0
    pid: str | None = None
    order: int = 0  # a prioritised job's place among its priority, kept when it returns
    taken: int = 0  # when it was taken (failover returns the newest first)


@dataclass
class WorkerModel:
    client: worqr.Worqr
    worker_id: str
    dead: bool = False
    held: dict[str, JobProcess] = field(default_factory=dict)  # pid -> process


class JobMachine(RuleBasedStateMachine):
    def __init__(self, redis_url: str, prefix_maker: object) -> None:
        super().__init__()
        self.redis_url = redis_url
        self.raw = redis.Redis.from_url(redis_url)
        # A fresh prefix per example: id(self) is reused once an example is collected,
        # and a reused prefix would start an example on the jobs of an earlier one.
        self.prefix = f"js{uuid.uuid4().hex[:12]}{prefix_maker}"
        self.jobs: dict[str, Job] = {}
        self.ready0: list[str] = []  # queued jobs of priority 0, front first
        self.counter = 0
        self.workers: list[WorkerModel] = []
        self.stale: list[tuple[worqr.Worqr, JobProcess]] = []  # processes of failed workers

    def client(self) -> worqr.Worqr:
        settings = worqr.Settings(prefix=self.prefix, ttl=600.0, heartbeat=300.0)
        return worqr.Worqr(self.redis_url, settings=settings)

    @initialize()
    def setup(self) -> None:
        self.producer = self.client()
        for _ in range(2):
            client = self.client()
            self.workers.append(WorkerModel(client, client.start_worker()))

    def _tick(self) -> int:
        self.counter += 1
        return self.counter

    def _ready(self, job_id: str, *, front: bool) -> None:
        """The job is queued: at the back of its priority, or back where it was."""
        job = self.jobs[job_id]
        job.state, job.pid = "queued", None
        if job.priority == 0:
            if front:
                self.ready0.insert(0, job_id)
            else:
                self.ready0.append(job_id)
        elif not front:
            job.order = self._tick()

    def _unready(self, job_id: str) -> None:
        if job_id in self.ready0:
            self.ready0.remove(job_id)

    def run_order(self) -> list[str]:
        prioritised = sorted(
            (job_id for job_id, job in self.jobs.items() if job.state == "queued" and job.priority),
            key=lambda job_id: (-self.jobs[job_id].priority, self.jobs[job_id].order),
        )
        high = [i for i in prioritised if self.jobs[i].priority > 0]
        low = [i for i in prioritised if self.jobs[i].priority < 0]
        return high + self.ready0 + low

    def teardown(self) -> None:
        for model in self.workers:
            model.client.close()
        self.producer.close()
        self.raw.close()

    # -- rules -----------------------------------------------------------------

    def _unique_holder(self, payload: str) -> str | None:
        for job_id, job in self.jobs.items():
            if job.unique and job.payload == payload and job.state in LIVE:
                return job_id
        return None

    @rule(
        id=st.sampled_from(IDS),
        payload=st.sampled_from(PAYLOADS),
        unique=st.booleans(),
        later=st.booleans(),
        priority=st.sampled_from([0, 0, 0, 3, -2]),
        retries=st.integers(0, 2),
    )
    def submit(
        self, id: str, payload: str, unique: bool, later: bool, priority: int, retries: int
    ) -> None:
        ref = self.producer.submit(
            QUEUE,
            payload,
            id=id,
            unique=unique,
            delay=FAR if later else None,
            priority=priority,
            retries=retries,
        )
        existing = self.jobs.get(id)
        if existing is not None and existing.state in LIVE:
            assert ref == worqr.JobRef(QUEUE, id, duplicate=True)
            return
        holder = self._unique_holder(payload) if unique else None
        if holder is not None:
            assert ref == worqr.JobRef(QUEUE, holder, duplicate=True)
            return
        assert ref == worqr.JobRef(QUEUE, id, duplicate=False)
        self.jobs[id] = Job("delayed", payload, unique, retries, priority)
        if not later:
            self._ready(id, front=False)

    @rule(index=st.integers(0, 1), count=st.integers(1, 4))
    def take(self, index: int, count: int) -> None:
        model = self.workers[index]
        if model.dead:
            return
        _, taken, more = model.client.internals.take_jobs(QUEUE, [], count)
        assert not more
        expected = self.run_order()[:count]
        assert [process.job_id for process in taken] == expected  # priorities, then order
        for process in taken:
            job = self.jobs[process.job_id]
            assert process.task == job.payload
            self._unready(process.job_id)
            job.state, job.pid, job.taken = "active", process.id, self._tick()
            model.held[process.id] = process

    def _held(self) -> list[tuple[WorkerModel, JobProcess]]:
        return [(m, p) for m in self.workers if not m.dead for p in m.held.values()]

    def _end(self, data: st.DataObject, outcome: str) -> None:
        model, process = data.draw(st.sampled_from(self._held()))
        job = self.jobs[process.job_id]
        live = job.state == "active" and job.pid == process.id
        client = model.client
        if outcome == "finish":
            flags, _, _ = client.internals.take_jobs(QUEUE, [(process, "s", b"r")], 0)
            accepted = flags[0]
            new = "finished"
        elif outcome == "stop":
            accepted = client.internals.stop_job(process)
            new = "queued"
        else:
            accepted, code = client.internals.fail_job(
                process, mode=outcome, delay=FAR, retries=job.retries, error="E: x"
            )
            job.failures += accepted
            retry = outcome == "error" and job.failures <= job.retries
            new = "retrying" if retry else "failed"
            if accepted:
                assert STATE_CODES[code] == new
        assert accepted == live, (outcome, job, process.id)
        if live and new == "queued":
            self._ready(process.job_id, front=True)  # a stop: back where it was
        elif live:
            job.state, job.pid = new, None
        del model.held[process.id]

    @precondition(lambda self: self._held())
    @rule(data=st.data())
    def finish(self, data: st.DataObject) -> None:
        self._end(data, "finish")

    @precondition(lambda self: self._held())
    @rule(data=st.data())
    def stop(self, data: st.DataObject) -> None:
        """A graceful stop: back to the front of its priority, no failure counted."""
        self._end(data, "stop")

    @precondition(lambda self: self._held())
    @rule(data=st.data(), now=st.booleans())
    def fail(self, data: st.DataObject, now: bool) -> None:
        self._end(data, "fail" if now else "error")

    @rule(id=st.sampled_from(IDS))
    def cancel(self, id: str) -> None:
        job = self.jobs.get(id)
        expected = job is not None and job.state in LIVE
        assert self.producer.cancel_job(QUEUE, id) == expected
        if job is not None and expected:
            self._unready(id)
            job.state, job.pid = "cancelled", None

    @rule(id=st.sampled_from(IDS))
    def retry(self, id: str) -> None:
        job = self.jobs.get(id)
        expected = job is not None and job.state in ("failed", "cancelled")
        if expected and job is not None and job.unique:
            holder = self._unique_holder(job.payload)
            expected = holder is None
        assert self.producer.retry_job(QUEUE, id) == expected
        if job is not None and expected:
            job.failures = 0
            self._ready(id, front=False)

    @precondition(lambda self: any(not m.dead for m in self.workers))
    @rule(index=st.integers(0, 1))
    def kill_and_reap(self, index: int) -> None:
        """The worker dies (its alive key goes) and the producer fails it: its
        jobs go back to the front (a recovery, within max_recoveries)."""
        model = self.workers[index]
        if model.dead:
            return
        self.raw.delete(MeshKeys(self.prefix).alive(model.worker_id))
        assert self.producer.reap() == 1
        model.dead = True
        returned = [
            process
            for pid, process in model.held.items()
            if self.jobs[process.job_id].state == "active" and self.jobs[process.job_id].pid == pid
        ]
        # Newest first to the front of its priority, so the oldest ends up next.
        for process in sorted(returned, key=lambda p: self.jobs[p.job_id].taken, reverse=True):
            self._ready(process.job_id, front=True)
        self.stale += [(model.client, process) for process in model.held.values()]
        model.held.clear()
        # A new worker takes its place (the dead one's client stays open, fenced).
        client = self.client()
        self.workers[index] = WorkerModel(client, client.start_worker())
        self.workers.append(model)  # closed at teardown; never chosen again

    @precondition(lambda self: self.stale)
    @rule(data=st.data())
    def late_finish(self, data: st.DataObject) -> None:
        """A failed worker's late finish is refused and changes nothing."""
        client, process = data.draw(st.sampled_from(self.stale))
        flags, _, _ = client.internals.take_jobs(QUEUE, [(process, "s", b"late")], 0)
        assert flags == [False]

    # -- invariants ------------------------------------------------------------

    @invariant()
    def counts_are_exact(self) -> None:
        if not hasattr(self, "producer"):
            return
        expected = Counter({state: 0 for state in STATES})
        expected.update(job.state for job in self.jobs.values())
        assert self.producer.count_jobs(QUEUE) == dict(expected)

    @invariant()
    def every_job_is_in_exactly_its_index(self) -> None:
        if not hasattr(self, "producer"):
            return
        keys = MeshKeys(self.prefix).queue(QUEUE)
        raw = self.raw
        fields = {k.decode(): v for k, v in raw.hgetall(keys.jobs).items()}
        records = {
            id: merge_record(value, fields.get(hot_field(id)))
            for id, value in fields.items()
            if not id.endswith(HOT_SUFFIX)
        }
        assert len(fields) == 2 * len(records)  # every record has both fields
        assert set(records) == set(self.jobs)

        def live(entries: list[bytes]) -> set[str]:  # entries of a record's current life
            found = set()
            for entry in entries:
                id, _, life = entry.decode().rpartition("#")
                if id in records and records[id]["l"] == int(life):
                    found.add(id)
            return found

        ready_list = live(raw.lrange(keys.tasks, 0, -1))
        prio = live(raw.zrange(keys.job_prio, 0, -1))
        indexes = {
            "queued": ready_list | prio,
            "delayed": live(raw.zrange(keys.job_delayed, 0, -1)),
            "retrying": live(raw.zrange(keys.job_retrying, 0, -1)),
            "active": live(raw.hvals(keys.processes)),
            "finished": {i.decode() for i in raw.zrange(keys.job_finished, 0, -1)},
            "failed": {i.decode() for i in raw.zrange(keys.job_failed, 0, -1)},
            "cancelled": {i.decode() for i in raw.zrange(keys.job_cancelled, 0, -1)},
        }
        # A queued entry of the current life can sit in the list as a tombstone
        # only if the job left the queued state (cancelled): takes skip it.
        for job_id, job in self.jobs.items():
            assert STATE_CODES[records[job_id]["s"]] == job.state, (job_id, job)
            holding = {state for state, ids in indexes.items() if job_id in ids}
            if job.state == "cancelled":
                holding.discard("queued")  # its tombstone
            assert holding == {job.state}, (job_id, job, holding)
        assert not ready_list & prio
        # Unique markers name live jobs only: every ending released its own.
        for marker, holder in raw.hgetall(keys.job_unique).items():
            id, _, life = holder.decode().rpartition("#")
            assert id in records and records[id]["l"] == int(life), (marker, holder)
            assert self.jobs[id].state in LIVE and self.jobs[id].unique

    @invariant()
    def queued_jobs_run_in_order(self) -> None:
        if not hasattr(self, "producer"):
            return
        page, cursor = self.producer.get_jobs(QUEUE, "queued", limit=100)
        assert cursor is None
        assert [job.id for job in page] == self.run_order()


def test_random_operations_keep_the_job_state_machine(redis_url: str, prefix: str) -> None:
    run_state_machine_as_test(
        lambda: JobMachine(redis_url, prefix),
        settings=settings(max_examples=60, stateful_step_count=30, deadline=None),
    )
