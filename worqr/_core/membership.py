"""Plans of a worker's membership: registering in the mesh, joining and leaving
queues, handing processes back, and leaving the mesh."""

from __future__ import annotations

import contextlib
import os
import platform
import re
import time
import uuid
from dataclasses import dataclass
from functools import partial

from .._errors import WrongQueueKindError
from .._keys import QueueKeys
from . import job_scripts, scripts
from .calls import Plan, command
from .eviction import check_eviction_policy
from .kinds import QueueKinds
from .lua import IdTakenError
from .notify import Notifications
from .relay import Relay
from .scripts import RequeueMode
from .state import CoreState


def new_worker_id() -> str:
    """``host-pid-random``: readable in `worqr status`, and never reused."""
    host = re.sub(r"[^A-Za-z0-9._-]", "_", platform.node())[:40] or "host"
    return f"{host}-{os.getpid()}-{uuid.uuid4().hex[:12]}"


@dataclass(eq=False)
class Membership:
    """The plans of a worker's membership in the mesh (``core.membership``)."""

    state: CoreState
    kinds: QueueKinds
    notifications: Notifications
    relay: Relay

    def start_worker(self) -> Plan[str]:
        state = self.state
        if state.worker_id is not None:
            return state.worker_id
        state.leaving = False
        if not state.cluster:  # CONFIG GET has no slot: redis-py's cluster clients
            yield from check_eviction_policy()  # route it to one node, or cannot at all
        worker = yield from self.register()
        state.worker_id = worker
        return worker

    def register(self) -> Plan[str]:
        """Register under a new worker id, with a fresh lease."""
        worker = new_worker_id()
        sent = time.monotonic()
        info = ("host", platform.node(), "pid", os.getpid(), "started", time.time())
        with contextlib.suppress(IdTakenError):  # a resend of our first attempt
            yield scripts.register(
                self.state.mesh, worker, ttl_ms=self.state.settings.ttl_ms, info=info
            )
        self.state.last_heartbeat = sent
        self.state.hooks.on_registered(worker)
        return worker

    def start_work(self, queue: str) -> Plan[None]:
        state = self.state
        worker = state.require_worker()
        keys = state.queue_keys(queue)
        state.joining.add(queue)
        yield from self.join(keys, queue, worker)
        state.working.add(queue)
        state.joining.discard(queue)

    def join(self, keys: QueueKeys, queue: str, worker: str) -> Plan[None]:
        """Join ``queue`` as ``worker``: the mesh registry first, so a reaper that
        fails the worker always finds the queue; then wake-ups, then membership:
        a member may be picked for a wake-up (a queue's timer holder) at once, and
        a hint published before its subscription would be lost."""
        yield scripts.add_worker_queue(self.state.mesh, worker, queue)
        self.state.registered[queue] = time.monotonic()
        yield from self.notifications.subscribe(
            queue, {keys.events: "events", keys.wake(worker): "wake"}
        )
        yield scripts.join_queue(keys, worker)

    def stop_work(self, queue: str) -> Plan[int]:
        state = self.state
        worker = state.require_worker()
        keys = state.queue_keys(queue)
        requeued, _ = yield from self.requeue_owned(queue, worker, "leave")
        yield command("SREM", state.mesh.worker_queues(worker), queue)
        state.working.discard(queue)
        yield from self.unsubscribe_wake(keys, worker)
        return requeued

    def unsubscribe_wake(self, keys: QueueKeys, worker: str) -> Plan[None]:
        yield from self.notifications.unsubscribe(keys.wake(worker))

    def requeue_owned(self, queue: str, worker: str, mode: RequeueMode) -> Plan[tuple[int, int]]:
        """Return every process of ``worker`` on one queue, chunk by chunk; returns
        (requeued, dead-lettered). A job queue's jobs go back by their own
        script (a wrong guess of the queue's kind is refused, and corrected)."""
        settings = self.state.settings
        keys = self.state.mesh.queue(queue)
        publish = yield from self.state.publishing()
        # Either kind's script takes the same arguments but one of its own.
        job_script = partial(job_scripts.job_requeue_owned, policy=settings.jobs.policy)
        task_script = partial(scripts.requeue_owned, failed_max=settings.failed_max)
        requeued = dead_lettered = 0
        switched = False
        while True:
            script = job_script if self.kinds.is_jobs(queue) else task_script
            call = script(
                keys,
                worker,
                mode=mode,
                chunk=settings.requeue_chunk,
                max_recoveries=settings.max_recoveries,
                publish=publish,
            )
            try:
                moved, poisoned, remaining, *ops = yield call
            except WrongQueueKindError as error:
                if switched:
                    raise
                switched = True
                self.kinds.learned(queue, error.queue_kind)
                continue
            if ops and ops[0]:  # a job queue's poisoned flow jobs wrote hops
                yield from self.relay.relay_written(queue, ops[0])
            requeued += int(moved)
            dead_lettered += int(poisoned)
            if int(remaining) == 0:
                return requeued, dead_lettered

    def fail_worker(self) -> Plan[int]:
        """Hand every process of this worker back to the front of its queue."""
        worker = self.state.require_worker()
        total = 0
        for queue in sorted(self.state.working):
            requeued, _ = yield from self.requeue_owned(queue, worker, "release")
            total += requeued
        return total

    def forget(self, worker: str, *, only_if_dead: bool) -> Plan[bool]:
        """Drop ``worker`` from the mesh registry (after its processes went back)."""
        reply = yield scripts.forget_worker(self.state.mesh, worker, only_if_dead=only_if_dead)
        return bool(reply == 1)

    def deregister(self) -> Plan[None]:
        """Leave the mesh cleanly: hand processes back, then forget this worker."""
        state = self.state
        worker = state.worker_id
        if worker is None:
            return
        state.leaving = True
        for queue in sorted(state.working | state.joining):
            yield from self.requeue_owned(queue, worker, "leave")
            yield from self.unsubscribe_wake(state.mesh.queue(queue), worker)
        yield from self.forget(worker, only_if_dead=False)
        state.working.clear()
        state.joining.clear()
        state.worker_id = None
