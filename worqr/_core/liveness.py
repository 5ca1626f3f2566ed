"""Plans that keep the mesh alive: heartbeats, reaping dead peers, recovering a
lost lease, and reconciling what Redis says this worker holds."""

from __future__ import annotations

import itertools
import logging
import time

from . import job_scripts, scripts
from .base import text
from .calls import Plan, command
from .processes import Processes
from .reads import MGET_BATCH
from .upkeep import Upkeep

logger = logging.getLogger("worqr")

RECONCILE_INTERVAL = 60.0  # seconds between checks that Redis holds no process we forgot
RECONCILE_BATCH = 1000  # process ids read per ZRANGE when reconciling


class Liveness(Upkeep, Processes):
    def heartbeat(self) -> Plan[str]:
        """One heartbeat: "ok", "reaped" (this worker reaped the mesh this
        interval), "recovered" (the lease was lost; re-registered) or "leaving"
        (the worker is deregistering: nothing to refresh)."""
        renewal = yield from self.renew()
        if renewal is None:
            return "leaving"
        worker, reply = renewal
        if reply == 1:
            yield from self.reap()
        return (yield from self.after_renew(worker, reply))

    def renew(self) -> Plan[tuple[str, int] | None]:
        """Refresh the lease: (worker id, 1) when this worker also took the
        mesh's reaper turn (it must `reap` now), (id, 0) when it did not, (id, -1)
        when the lease was lost; None while deregistering. Touches only
        `last_heartbeat` and `_reconcile_due`, so the lease thread of `AsyncWorqr`
        can run it (and `reap`) beside the event loop."""
        if self._leaving:
            return None
        worker = self.require_worker()
        sent = time.monotonic()
        settings = self.settings
        reply = int(
            (
                yield scripts.heartbeat(
                    self.mesh,
                    worker,
                    ttl_ms=settings.ttl_ms,
                    reap_ms=settings.heartbeat_ms,
                )
            )
        )
        if reply != -1:
            if sent - self.last_heartbeat > 2 * settings.heartbeat:
                # Heartbeats stopped landing (Redis down, a failover, a pause): Redis may
                # have lost our last writes, e.g. a finish. Check what we hold.
                self._reconcile_due = True
            self.last_heartbeat = sent
        return worker, reply

    def after_renew(self, worker: str, reply: int) -> Plan[str]:
        """What a renewal of ``worker``'s lease leaves to do on the client's own
        thread or loop: recover a lost lease, reconcile when due. Returns as
        `heartbeat` does."""
        if self._leaving:
            return "leaving"
        if reply == -1:
            if worker != self.worker_id:  # a renewal of an id already recovered
                return "ok"
            yield from self._recover_lease(worker)
            return "recovered"
        if self.reconcile_due():
            yield from self.reconcile()  # after reaping, which peers wait for
        return "reaped" if reply == 1 else "ok"

    def reconcile_due(self) -> bool:
        return self._reconcile_due or time.monotonic() - self._reconciled >= RECONCILE_INTERVAL

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
        publish = self.publish or (yield from self.publish_command())
        stray = 0
        for queue in sorted(self.working):
            keys = self.mesh.queue(queue)
            held: list[str] = []
            for start in itertools.count(0, RECONCILE_BATCH):
                batch = yield command(
                    "ZRANGE", keys.owned(worker), start, start + RECONCILE_BATCH - 1
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
                if self._kinds.get(queue) == "jobs":
                    returned += yield job_scripts.job_stop(keys, worker, pid, publish=publish)
                else:
                    returned += yield scripts.stop(keys, worker, pid, publish=publish)
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
        """Fail every registered worker whose alive key is gone (then tidy the job
        queues no worker serves, when that is due: `Upkeep`)."""
        workers = [text(w) for w in (yield command("SMEMBERS", self.mesh.workers))]
        failed = 0
        for start in range(0, len(workers), MGET_BATCH):
            batch = workers[start : start + MGET_BATCH]
            alive = yield command("MGET", *(self.mesh.alive(w) for w in batch))
            for worker, flag in zip(batch, alive, strict=True):
                if flag is None and (yield from self._fail_dead(worker)):
                    failed += 1
        yield from self.tidy_job_queues()
        yield from self.relay_stragglers()
        return failed

    def _fail_dead(self, worker: str) -> Plan[bool]:
        queues = yield command("SMEMBERS", self.mesh.worker_queues(worker))
        requeued = dead_lettered = 0
        for queue in sorted(text(q) for q in queues):
            moved, dead = yield from self.requeue_owned(queue, worker, "fail")
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
        forgotten = yield from self.forget(worker, only_if_dead=True)
        if forgotten:
            self.hooks.on_peer_failed(worker, requeued, dead_lettered)
        return forgotten

    def _recover_lease(self, old: str) -> Plan[None]:
        # Reported once per lost lease: a recovery cut short (say Redis dropped a
        # connection halfway) is redone by the next heartbeat, not reported again.
        if self._reported_loss != old:
            self._reported_loss = old
            logger.warning("worker %s lost its lease; re-registering under a new id", old)
            self.hooks.on_lease_lost(old)
        queues = sorted(self.working)
        for queue in sorted(self.working | self._joining):
            yield from self.requeue_owned(queue, old, "fail")
        yield from self.forget(old, only_if_dead=True)
        for queue in queues:
            yield from self.unsubscribe_wake(self.mesh.queue(queue), old)
        new = yield from self.register()
        self.worker_id = new
        for queue in queues:
            yield from self.join(self.mesh.queue(queue), queue, new)
