"""The sans-I/O core shared by `Worqr` and `AsyncWorqr`.

`Core` holds one client's state (its worker id, the queues it works on, the
processes it holds) and builds *plans*: generators that yield the Redis calls to
make and read the replies. The clients only execute what the plans yield, so the
logic exists once for both colours.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
import socket
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from redis.exceptions import NoScriptError, ResponseError

from .._errors import AmbiguousResultError, ReplicationTimeoutError, WorqrError
from .._keys import QueueKeys
from .._process import Process, decode_task
from .._settings import Settings
from .calls import Call, Pinned, Plan, Subscribe, command, script
from .eviction import check_eviction_policy
from .lua import IdTakenError, NotMemberError, source, translate
from .reads import MGET_BATCH, Reads, text

logger = logging.getLogger("worqr")

Callback = Callable[[str, Any], object]
"""A listener: ``callback(event, message)``; see `Core.parse_message`."""

Observer = Callable[[str, dict[str, Any]], object]
"""Sees the client's own life: ``observer(event, fields)``. Events: "registered"
(worker), "lease_lost" (worker), "peer_failed" (worker, requeued, dead_lettered),
"heartbeat_failed" (error), "redis_down" (what, error), "redis_up" (what, seconds).
Metrics subscribe here; the core never imports them."""

ENQUEUE_BATCH = 1000  # tasks per enqueue script call: keeps each script short
COMPLETE_BATCH = 500  # processes finished per complete script call: keeps it short
DEQUEUE_CHUNK = 500  # most tasks per dequeue script call (invariant 9): ~3 ms each
REGISTRY_REFRESH = 30.0  # seconds between re-adding a queue to the registry
RECONCILE_INTERVAL = 60.0  # seconds between checks that Redis holds no process we forgot
RECONCILE_BATCH = 1000  # process ids read per ZRANGE when reconciling


def _with_count(error: Exception, done: int, total: int) -> Exception:
    """``error`` (same type when possible) saying how much of an enqueue_many applied."""
    message = f"{done} of {total} tasks were enqueued, the rest were not: {error}"
    try:
        return type(error)(message)
    except Exception:  # a constructor that wants other arguments
        return WorqrError(message)


def _worker_id() -> str:
    host = re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname())[:40] or "host"
    return f"{host}-{os.getpid()}-{uuid.uuid4().hex[:12]}"


class Core(Reads):
    """State and plans of one client. Not thread-safe beyond what the GIL gives;
    the sync client confines each plan to one thread at a time per state change."""

    def __init__(self, settings: Settings, *, cluster: bool = False) -> None:
        super().__init__(settings, cluster=cluster)
        self.working: set[str] = set()
        # Queues whose join began but has not completed (its plan may have been
        # abandoned, e.g. a cancelled task): leaving must cover them too.
        self._joining: set[str] = set()
        self.last_heartbeat = 0.0  # monotonic time the last successful heartbeat was sent
        self.lease_lost_hooks: list[Callable[[str], object]] = []
        self._reported_loss: str | None = None  # the last worker id reported as lost
        self.observers: list[Observer] = []
        self._owned: dict[str, tuple[str, str]] = {}  # pid -> (queue, worker id)
        self._listeners: dict[str, list[Callback]] = {}
        self._channels: dict[str, tuple[str, str]] = {}  # channel -> (queue, "events"|"wake")
        self._registered: dict[str, float] = {}  # queue -> when it was last added to registry
        self._calls = itertools.count(1)
        # Dequeue calls in flight (their pid prefixes): their processes exist in
        # Redis before this client knows them, so reconciling must not touch them.
        self._dequeuing: set[str] = set()
        self._reconciled = time.monotonic()  # when reconcile() last completed
        self._reconcile_due = False  # set when heartbeats stopped landing for a while
        # Set while deregistering: a heartbeat that finds the alive key gone then
        # sees our own goodbye, not a lease lost to peers, and must not re-register.
        self._leaving = False

    def emit(self, event: str, **fields: Any) -> None:
        for observer in self.observers:
            try:
                observer(event, fields)
            except Exception:
                logger.exception("observer failed on %r", event)

    # -- validation ------------------------------------------------------------

    def encode_task(self, task: object) -> bytes:
        if isinstance(task, str):
            try:
                data = task.encode("utf-8")
            except UnicodeEncodeError as error:
                raise ValueError(f"task is not encodable as UTF-8: {error.reason}") from None
        elif isinstance(task, bytes | bytearray | memoryview):
            data = bytes(task)
        else:
            raise TypeError(f"task must be str or bytes, not {type(task).__name__}")
        if len(data) > self.settings.max_task_bytes:
            raise ValueError(
                f"task is {len(data)} bytes; the limit is {self.settings.max_task_bytes} "
                "(Settings.max_task_bytes)"
            )
        return data

    def lease_fresh(self) -> bool:
        """False once the worker has not heartbeat for most of its TTL: it should
        stop starting work before its peers may fail it."""
        return time.monotonic() - self.last_heartbeat < self.settings.ttl * 2 / 3

    # -- producing -------------------------------------------------------------

    def enqueue_many(self, queue: str, tasks: Iterable[object]) -> Plan[int]:
        keys = self.queue_keys(queue)
        if isinstance(tasks, str | bytes):
            raise TypeError("enqueue_many takes an iterable of tasks, not one task")
        payloads = [self.encode_task(task) for task in tasks]  # all checked before any write
        if not payloads:
            return 0
        if time.monotonic() - self._registered.get(queue, -REGISTRY_REFRESH) >= REGISTRY_REFRESH:
            yield from self._register_queue(queue)
        publish = self.publish or (yield from self.publish_command())
        done = 0
        for start in range(0, len(payloads), ENQUEUE_BATCH):
            batch = payloads[start : start + ENQUEUE_BATCH]
            try:
                yield from self._push(keys, publish, batch, done, len(payloads))
            except ReplicationTimeoutError:
                raise
            except AmbiguousResultError:
                if len(payloads) == 1:
                    raise
                raise AmbiguousResultError(
                    f"{done} of {len(payloads)} tasks were enqueued; the next "
                    f"{len(batch)} may or may not have been"
                ) from None
            except Exception as error:
                if done == 0:
                    raise
                # Earlier batches stay enqueued: say so, or a caller that retries
                # the whole call enqueues them twice (e.g. Redis filled up meanwhile).
                raise _with_count(error, done, len(payloads)) from error
            done += len(batch)
        return done

    def _push(
        self, keys: QueueKeys, publish: str, batch: list[bytes], done: int, total: int
    ) -> Plan[None]:
        """One enqueue script call; with ``wait_replicas``, followed on the same
        connection by ``WAIT``, and a `ReplicationTimeoutError` if too few
        replicas acknowledged in time."""
        call = script(
            "enqueue",
            (keys.tasks, keys.idle, keys.stats),
            (keys.wake_prefix, publish, *batch),
            idempotent=False,
        )
        required = self.settings.wait_replicas
        if not required:
            yield call
            return
        wait = command("WAIT", required, self.settings.wait_timeout_ms)
        reply, acked = yield Pinned((call, wait))
        if isinstance(reply, NoScriptError):  # the script did not run: send it again after
            # loading it on the same connection (on a cluster: the node that said NOSCRIPT)
            load = command("SCRIPT", "LOAD", source("enqueue"))
            _, reply, acked = yield Pinned((load, call, wait))
        if isinstance(reply, ResponseError):
            raise translate(reply)
        if isinstance(acked, ResponseError):
            raise acked
        if int(acked) < required:
            applied = done + len(batch)
            rest = f"; the other {total - applied} were not enqueued" if applied < total else ""
            raise ReplicationTimeoutError(
                f"{len(batch)} task(s) ARE enqueued on the master, but only {acked} of "
                f"{required} replicas acknowledged them within {self.settings.wait_timeout:g}s "
                f"(Settings.wait_replicas/wait_timeout): they are lost if the master fails "
                f"before replicating them; enqueueing them again would run them twice{rest}",
                enqueued=applied,
                unconfirmed=len(batch),
                replicas=int(acked),
                required=required,
            )

    def _register_queue(self, queue: str) -> Plan[None]:
        now = time.monotonic()
        if now - self._registered.get(queue, -REGISTRY_REFRESH) >= REGISTRY_REFRESH:
            yield command("SADD", self.mesh.queues, queue)
            self._registered[queue] = now

    def cancel_tasks(self, queue: str, task: object) -> Plan[int]:
        keys = self.queue_keys(queue)
        data = self.encode_task(task)
        publish = self.publish or (yield from self.publish_command())
        reply = yield script(
            "cancel",
            (keys.tasks, keys.processes, keys.recoveries, keys.stats),
            (data, keys.events, publish),
        )
        return int(reply[0]) + len(reply) - 1

    def delete_queue(self, queue: str) -> Plan[None]:
        keys = self.queue_keys(queue)
        members = yield command("SMEMBERS", keys.members)
        owned = [keys.worker(text(member)) for member in members]
        everything = (
            keys.tasks,
            keys.processes,
            keys.members,
            keys.idle,
            keys.recoveries,
            keys.failed,
            keys.config,
            keys.stats,
            keys.seq,
            *owned,
        )
        publish = self.publish or (yield from self.publish_command())
        yield script("delete_queue", everything, (keys.events, publish))
        yield command("SREM", self.mesh.queues, queue)
        self._registered.pop(queue, None)

    # -- membership ------------------------------------------------------------

    def start_worker(self) -> Plan[str]:
        if self.worker_id is not None:
            return self.worker_id
        self._leaving = False
        if not self.cluster:  # CONFIG GET has no slot: redis-py's cluster clients
            yield from check_eviction_policy()  # route it to one node, or cannot at all
        worker = yield from self._register()
        self.worker_id = worker
        return worker

    def _register(self) -> Plan[str]:
        worker = _worker_id()
        sent = time.monotonic()
        info = ("host", socket.gethostname(), "pid", os.getpid(), "started", time.time())
        with contextlib.suppress(IdTakenError):  # a resend of our first attempt
            yield script(
                "register",
                (self.mesh.workers, self.mesh.alive(worker), self.mesh.worker_info(worker)),
                (worker, self.settings.ttl_ms, *info),
            )
        self.last_heartbeat = sent
        self.emit("registered", worker=worker)
        return worker

    def start_work(self, queue: str) -> Plan[None]:
        worker = self.require_worker()
        keys = self.queue_keys(queue)
        self._joining.add(queue)
        yield from self._join(keys, queue, worker)
        self.working.add(queue)
        self._joining.discard(queue)

    def _join(self, keys: QueueKeys, queue: str, worker: str) -> Plan[None]:
        # Mesh registry first, so a reaper that fails the worker always finds the queue.
        yield script(
            "add_worker_queue",
            (self.mesh.alive(worker), self.mesh.worker_queues(worker), self.mesh.queues),
            (queue,),
        )
        self._registered[queue] = time.monotonic()
        yield script("join_queue", (keys.members, keys.idle), (worker,))
        yield from self.publish_command()  # subscribe the way scripts will publish
        self._channels[keys.events] = (queue, "events")
        self._channels[keys.wake(worker)] = (queue, "wake")
        yield Subscribe(add=(keys.events, keys.wake(worker)))

    def stop_work(self, queue: str) -> Plan[int]:
        worker = self.require_worker()
        keys = self.queue_keys(queue)
        requeued, _ = yield from self._requeue_owned(keys, worker, "leave")
        yield command("SREM", self.mesh.worker_queues(worker), queue)
        self.working.discard(queue)
        yield from self._unsubscribe_wake(keys, worker)
        return requeued

    def _unsubscribe_wake(self, keys: QueueKeys, worker: str) -> Plan[None]:
        channel = keys.wake(worker)
        if self._channels.pop(channel, None) is not None:
            yield Subscribe(remove=(channel,))

    # -- processes -------------------------------------------------------------

    def dequeue(self, queue: str, count: int = 1) -> Plan[list[Process]]:
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"count must be a positive integer, got {count!r}")
        keys = self.queue_keys(queue)
        worker = self.require_worker()
        if queue not in self.working:
            yield from self.start_work(queue)
        # One prefix per dequeue; a large count runs as several short script calls
        # numbering their processes on from each other, each safe to resend.
        pid_prefix = f"{worker}.{next(self._calls)}."
        self._dequeuing.add(pid_prefix)
        try:
            processes: list[Process] = []
            rejoined = False
            numbered = 0  # processes numbered under this prefix so far
            while len(processes) < count:
                chunk = min(DEQUEUE_CHUNK, count - len(processes))
                try:
                    reply = yield script(
                        "dequeue",
                        (
                            keys.tasks,
                            keys.processes,
                            keys.worker(worker),
                            keys.members,
                            keys.idle,
                            keys.seq,
                            keys.stats,
                        ),
                        (worker, pid_prefix, chunk, numbered),
                    )
                except NotMemberError as error:
                    self.working.discard(queue)
                    # Not a member: failed by peers, or the queue was deleted (with its
                    # members) before this worker heard of it. A lease that still exists
                    # was never failed (peers fail only expired leases, which never come
                    # back): join the queue again and carry on. Processes taken by
                    # earlier chunks went with the membership (deleted or requeued).
                    if rejoined or not (yield from self._lease_exists(worker)):
                        raise error
                    rejoined = True
                    processes.clear()
                    yield from self.start_work(queue)
                    continue
                except Exception as error:
                    if not processes:
                        raise
                    # Earlier chunks are ours: hand them over rather than strand them.
                    logger.warning(
                        "dequeue from %r stopped after %d of %d tasks: %s",
                        queue,
                        len(processes),
                        count,
                        type(error).__name__,
                    )
                    break
                numbered += chunk
                processes += self._took(queue, worker, reply)
                if len(reply) < 2 * chunk:  # the queue ran dry
                    break
            return processes
        finally:  # after the processes are in self._owned (see reconcile)
            self._dequeuing.discard(pid_prefix)

    def _lease_exists(self, worker: str) -> Plan[bool]:
        return bool((yield command("EXISTS", self.mesh.alive(worker))))

    def _took(self, queue: str, worker: str, reply: list[Any]) -> list[Process]:
        """The processes a dequeue reply ``{pid1, task1, ...}`` hands out."""
        processes = []
        decode = self.settings.decode_tasks
        owned = self._owned
        for i in range(0, len(reply), 2):
            pid, data = text(reply[i]), reply[i + 1]
            owned[pid] = (queue, worker)
            processes.append(Process(pid, queue, decode_task(data, decode), data, worker))
        return processes

    def complete(
        self, queue: str, finished: Iterable[str | Process], count: int = 0
    ) -> Plan[tuple[list[bool], list[Process]]]:
        """Finish ``finished`` (processes of ``queue``) and take up to ``count`` more
        tasks, in one script call when they all belong to this worker's current id.

        Returns one flag per finished process, in order (True only if it still
        existed: fenced like `finish_process`), and the new processes.
        """
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"count must be a non-negative integer, got {count!r}")
        keys = self.queue_keys(queue)
        worker = self.require_worker()
        wanted = [self._owner(process) for process in finished]
        accepted = [False] * len(wanted)
        batch: list[int] = []  # indexes finished by the script call(s)
        for i, owner in enumerate(wanted):
            if owner is None:
                continue  # not ours (or already acknowledged): fenced
            if owner[1] == queue and owner[2] == worker:
                batch.append(i)
            else:  # another queue, or our former id (its processes are peers' now)
                accepted[i] = yield from self.finish_process(owner[0])
        if count and queue not in self.working:
            yield from self.start_work(queue)
        taken: list[Process] = []
        # The dequeue rides on the first chunk: a refused one (not a member) then
        # finished nothing yet, and the caller can resend every finish with count 0.
        for start in range(0, max(1, len(batch)), COMPLETE_BATCH):
            chunk = batch[start : start + COMPLETE_BATCH]
            take = min(count, DEQUEUE_CHUNK) if start == 0 else 0  # bounded, as dequeue
            if not chunk and not take:
                break
            pids = [wanted[i][0] for i in chunk]  # type: ignore[index]
            pid_prefix = f"{worker}.{next(self._calls)}." if take else ""
            if take:  # its processes exist before we know them (see reconcile)
                self._dequeuing.add(pid_prefix)
            try:
                try:
                    flags, reply = yield script(
                        "complete",
                        (
                            keys.tasks,
                            keys.processes,
                            keys.worker(worker),
                            keys.members,
                            keys.idle,
                            keys.seq,
                            keys.recoveries,
                            keys.stats,
                        ),
                        (worker, pid_prefix, take, *pids),
                    )
                except NotMemberError:
                    self.working.discard(queue)  # rejoin on the next call, as dequeue does
                    raise
                for i, pid, flag in zip(chunk, pids, flags, strict=True):
                    self._owned.pop(pid, None)
                    accepted[i] = flag == 1
                if take:
                    taken = self._took(queue, worker, reply)
            finally:  # after the processes are in self._owned
                self._dequeuing.discard(pid_prefix)
        return accepted, taken

    def _owner(self, process: str | Process) -> tuple[str, str, str] | None:
        pid = process.id if isinstance(process, Process) else process
        if not isinstance(pid, str):
            raise TypeError(f"process must be a Process or its id, not {type(pid).__name__}")
        entry = self._owned.get(pid)
        return None if entry is None else (pid, *entry)

    def _end_process(
        self, process: str | Process, build: Callable[[QueueKeys, str, str], Call]
    ) -> Plan[bool]:
        """End one of this client's processes with the call ``build(keys, pid,
        worker)`` makes; True only if the process still existed (fencing)."""
        owner = self._owner(process)
        if owner is None:
            return False
        pid, queue, worker = owner
        reply = yield build(self.mesh.queue(queue), pid, worker)
        self._owned.pop(pid, None)
        return bool(reply == 1)

    def finish_process(self, process: str | Process) -> Plan[bool]:
        return self._end_process(
            process,
            lambda keys, pid, worker: script(
                "finish", (keys.processes, keys.worker(worker), keys.recoveries, keys.stats), (pid,)
            ),
        )

    def stop_process(self, process: str | Process) -> Plan[bool]:
        publish = self.publish or (yield from self.publish_command())
        return (
            yield from self._end_process(
                process,
                lambda keys, pid, worker: script(
                    "stop",
                    (keys.tasks, keys.processes, keys.worker(worker), keys.idle, keys.stats),
                    (pid, keys.wake_prefix, publish),
                ),
            )
        )

    def fail_process(self, process: str | Process) -> Plan[bool]:
        """Dead-letter a process whose task failed: the task goes to the failed list."""
        failed_max = self.settings.failed_max
        return self._end_process(
            process,
            lambda keys, pid, worker: script(
                "dead_letter",
                (keys.processes, keys.worker(worker), keys.failed, keys.recoveries, keys.stats),
                (pid, failed_max),
            ),
        )

    def processes_exist(self, queue: str, pids: Iterable[str]) -> Plan[list[bool]]:
        """Whether each process still exists (not finished, cancelled or failed over)."""
        keys = self.queue_keys(queue)
        wanted = list(pids)
        if not wanted:
            return []
        tasks = yield command("HMGET", keys.processes, *wanted)
        return [task is not None for task in tasks]

    def configure_queue(self, queue: str, *, max_recoveries: int | None) -> Plan[None]:
        """Per-queue options, stored in Redis for every worker of the mesh.

        ``max_recoveries`` overrides the reaper's setting for this queue; -1 means
        tasks are never dead-lettered for killing their workers (persistent tasks);
        None removes the override.
        """
        keys = self.queue_keys(queue)
        if max_recoveries is None:
            yield command("HDEL", keys.config, "max_recoveries")
            return
        if isinstance(max_recoveries, bool) or not isinstance(max_recoveries, int):
            raise TypeError("max_recoveries must be an int or None")
        if max_recoveries < -1:
            raise ValueError(f"max_recoveries must be >= -1, got {max_recoveries}")
        yield command("HSET", keys.config, "max_recoveries", max_recoveries)

    def _requeue_owned(self, keys: QueueKeys, worker: str, mode: str) -> Plan[tuple[int, int]]:
        """Return every process of ``worker`` on one queue, chunk by chunk."""
        settings = self.settings
        publish = self.publish or (yield from self.publish_command())
        requeued = dead_lettered = 0
        while True:
            moved, poisoned, remaining = yield script(
                "requeue_owned",
                (
                    keys.tasks,
                    keys.processes,
                    keys.worker(worker),
                    keys.members,
                    keys.idle,
                    keys.recoveries,
                    keys.failed,
                    keys.config,
                    keys.stats,
                ),
                (
                    worker,
                    mode,
                    settings.requeue_chunk,
                    settings.max_recoveries,
                    settings.failed_max,
                    keys.wake_prefix,
                    publish,
                ),
            )
            requeued += int(moved)
            dead_lettered += int(poisoned)
            if int(remaining) == 0:
                return requeued, dead_lettered

    def fail_worker(self) -> Plan[int]:
        """Hand every process of this worker back to the front of its queue."""
        worker = self.require_worker()
        total = 0
        for queue in sorted(self.working):
            requeued, _ = yield from self._requeue_owned(self.mesh.queue(queue), worker, "release")
            total += requeued
        return total

    # -- liveness --------------------------------------------------------------

    def heartbeat(self) -> Plan[str]:
        """One heartbeat: "ok", "reaped" (this worker reaped the mesh this
        interval), "recovered" (the lease was lost; re-registered) or "leaving"
        (the worker is deregistering: nothing to refresh)."""
        if self._leaving:
            return "leaving"
        worker = self.require_worker()
        sent = time.monotonic()
        reply = yield script(
            "heartbeat",
            (self.mesh.alive(worker), self.mesh.reaper),
            (worker, self.settings.ttl_ms, self.settings.heartbeat_ms),
        )
        if reply == -1:
            if self._leaving:  # deregistering deleted the alive key meanwhile
                return "leaving"
            yield from self._recover_lease(worker)
            return "recovered"
        if sent - self.last_heartbeat > 2 * self.settings.heartbeat:
            # Heartbeats stopped landing (Redis down, a failover, a pause): Redis may
            # have lost our last writes, e.g. a finish. Check what we hold.
            self._reconcile_due = True
        self.last_heartbeat = sent
        if reply == 1:
            yield from self.reap()
        if self._reconcile_due or sent - self._reconciled >= RECONCILE_INTERVAL:
            yield from self.reconcile()  # after reaping, which peers wait for
        return "reaped" if reply == 1 else "ok"

    def reconcile(self) -> Plan[int]:
        """Return to the front of their queues the processes Redis says this
        worker holds but this client does not know: a finish or stop that Redis
        lost (a failover to a replica that never got it, a restart from an AOF
        fsynced every second) or a dequeue whose reply never arrived. Without
        this they would stay in process until the worker leaves or dies. Runs
        after heartbeats resume from a gap, and every `RECONCILE_INTERVAL`."""
        worker = self.worker_id
        if worker is None or self._leaving:
            return 0
        stray = 0
        for queue in sorted(self.working):
            keys = self.mesh.queue(queue)
            held: list[str] = []
            for start in itertools.count(0, RECONCILE_BATCH):
                batch = yield command(
                    "ZRANGE", keys.worker(worker), start, start + RECONCILE_BATCH - 1
                )
                held += [text(pid) for pid in batch]
                if len(batch) < RECONCILE_BATCH:
                    break
            # Checked after the read: a dequeue whose processes the read saw is
            # either still in flight or already in self._owned by now.
            pending = tuple(self._dequeuing)
            unknown = [p for p in held if p not in self._owned and not p.startswith(pending)]
            returned = 0
            for pid in reversed(unknown):  # newest first: the oldest ends at the front
                returned += yield script(
                    "stop",
                    (keys.tasks, keys.processes, keys.worker(worker), keys.idle, keys.stats),
                    (pid, keys.wake_prefix),
                )
            if returned:
                logger.warning(
                    "worker %s held %d processes of queue %r that it no longer runs "
                    "(acknowledgements Redis lost); returned their tasks to the front",
                    worker,
                    returned,
                    queue,
                )
            stray += int(returned)
        self._reconciled = time.monotonic()
        self._reconcile_due = False
        return stray

    def reap(self) -> Plan[int]:
        """Fail every registered worker whose alive key is gone."""
        workers = [text(w) for w in (yield command("SMEMBERS", self.mesh.workers))]
        failed = 0
        for start in range(0, len(workers), MGET_BATCH):
            batch = workers[start : start + MGET_BATCH]
            alive = yield command("MGET", *(self.mesh.alive(w) for w in batch))
            for worker, flag in zip(batch, alive, strict=True):
                if flag is None and (yield from self._fail_dead(worker)):
                    failed += 1
        return failed

    def _fail_dead(self, worker: str) -> Plan[bool]:
        queues = yield command("SMEMBERS", self.mesh.worker_queues(worker))
        requeued = dead_lettered = 0
        for queue in sorted(text(q) for q in queues):
            moved, dead = yield from self._requeue_owned(self.mesh.queue(queue), worker, "fail")
            if moved or dead:
                logger.warning(
                    "worker %s is dead: returned %d tasks to queue %r, dead-lettered %d",
                    worker,
                    moved,
                    queue,
                    dead,
                )
            requeued += moved
            dead_lettered += dead
        forgotten = yield from self._forget(worker, only_if_dead=True)
        if forgotten:
            self.emit("peer_failed", worker=worker, requeued=requeued, dead_lettered=dead_lettered)
        return forgotten

    def _forget(self, worker: str, *, only_if_dead: bool) -> Plan[bool]:
        mesh = self.mesh
        reply = yield script(
            "forget_worker",
            (
                mesh.workers,
                mesh.alive(worker),
                mesh.worker_queues(worker),
                mesh.worker_info(worker),
            ),
            (worker, "1" if only_if_dead else "0"),
        )
        return bool(reply == 1)

    def _recover_lease(self, old: str) -> Plan[None]:
        # Reported once per lost lease: a recovery cut short (say Redis dropped a
        # connection halfway) is redone by the next heartbeat, not reported again.
        if self._reported_loss != old:
            self._reported_loss = old
            logger.warning("worker %s lost its lease; re-registering under a new id", old)
            self.emit("lease_lost", worker=old)
            for hook in self.lease_lost_hooks:
                hook(old)
        queues = sorted(self.working)
        for queue in sorted(self.working | self._joining):
            yield from self._requeue_owned(self.mesh.queue(queue), old, "fail")
        yield from self._forget(old, only_if_dead=True)
        for queue in queues:
            yield from self._unsubscribe_wake(self.mesh.queue(queue), old)
        new = yield from self._register()
        self.worker_id = new
        for queue in queues:
            yield from self._join(self.mesh.queue(queue), queue, new)

    def deregister(self) -> Plan[None]:
        """Leave the mesh cleanly: hand processes back, then forget this worker."""
        worker = self.worker_id
        if worker is None:
            return
        self._leaving = True
        for queue in sorted(self.working | self._joining):
            yield from self._requeue_owned(self.mesh.queue(queue), worker, "leave")
            yield from self._unsubscribe_wake(self.mesh.queue(queue), worker)
        yield from self._forget(worker, only_if_dead=False)
        self.working.clear()
        self._joining.clear()
        self.worker_id = None

    # -- notifications ---------------------------------------------------------

    def on(self, queue: str, callback: Callback) -> Plan[None]:
        if not callable(callback):
            raise TypeError("callback must be callable")
        keys = self.queue_keys(queue)
        listeners = self._listeners.setdefault(queue, [])
        if callback not in listeners:  # a retry after a failed subscribe: hear events once
            listeners.append(callback)
        yield from self.publish_command()  # subscribe the way scripts will publish
        self._channels.setdefault(keys.events, (queue, "events"))
        yield Subscribe(add=(keys.events,))

    def parse_message(self, message: dict[str, Any]) -> list[tuple[str, str, Any]]:
        """Turn one pub/sub message into ``(queue, event, message)`` triples.

        Events: ``("work", n)`` where n is a hint of how many tasks arrived (0:
        unknown, e.g. after a (re)subscribe, when the queue must be drained);
        ``("cancel", [pid, ...])``; ``("delete", None)``.
        """
        kind = message.get("type")
        channel = text(message.get("channel") or b"")
        entry = self._channels.get(channel)
        if entry is None:
            return []
        queue, role = entry
        if kind in ("subscribe", "ssubscribe"):
            return [(queue, "work", 0)] if role == "wake" else []
        if kind not in ("message", "smessage"):
            return []
        data = text(message.get("data") or b"")
        name, _, rest = data.partition(":")
        if name == "work":
            return [(queue, "work", int(rest or 0))]
        if name == "cancel":
            return [(queue, "cancel", rest.split())]
        if name == "delete":
            self.working.discard(queue)
            return [(queue, "delete", None)]
        return []

    def poll_events(self) -> list[tuple[str, str, Any]]:
        """The fallback poll: a "work" hint for every worked queue."""
        return [(queue, "work", 0) for queue in sorted(self.working)]

    def listeners(self, queue: str) -> list[Callback]:
        return list(self._listeners.get(queue, ()))

    @property
    def subscribed(self) -> bool:
        return bool(self._channels)
