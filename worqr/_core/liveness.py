"""Plans that keep the mesh alive: heartbeats, reaping dead peers, recovering a
lost lease, and reconciling what Redis says this worker holds."""

from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass

from . import job_scripts, scripts
from .calls import Plan, command
from .kinds import QueueKinds
from .membership import Membership
from .reads import MGET_BATCH
from .relay import Relay
from .state import CoreState, text
from .upkeep import Upkeep

logger = logging.getLogger("worqr")

RECONCILE_INTERVAL = 60.0  # seconds between checks that Redis holds no process we forgot
RECONCILE_BATCH = 1000  # process ids read per ZRANGE when reconciling


@dataclass(eq=False)
class Liveness:
    """The plans that keep the mesh alive (``core.liveness``)."""

    state: CoreState
    kinds: QueueKinds
    membership: Membership
    upkeep: Upkeep
    relay: Relay

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
        `last_heartbeat` and `reconcile_due` of the state, so the lease thread
        of `AsyncWorqr` can run it (and `reap`) beside the event loop."""
        state = self.state
        if state.leaving:
            return None
        worker = state.require_worker()
        sent = time.monotonic()
        settings = state.settings
        reply = int(
            (
                yield scripts.heartbeat(
                    state.mesh,
                    worker,
                    ttl_ms=settings.ttl_ms,
                    reap_ms=settings.heartbeat_ms,
                )
            )
        )
        if reply != -1:
            if sent - state.last_heartbeat > 2 * settings.heartbeat:
                # Heartbeats stopped landing (Redis down, a failover, a pause): Redis may
                # have lost our last writes, e.g. a finish. Check what we hold.
                state.reconcile_due = True
            state.last_heartbeat = sent
        return worker, reply

    def after_renew(self, worker: str, reply: int) -> Plan[str]:
        """What a renewal of ``worker``'s lease leaves to do on the client's own
        thread or loop: recover a lost lease, reconcile when due. Returns as
        `heartbeat` does."""
        if self.state.leaving:
            return "leaving"
        if reply == -1:
            if worker != self.state.worker_id:  # a renewal of an id already recovered
                return "ok"
            yield from self._recover_lease(worker)
            return "recovered"
        if self.reconcile_due():
            yield from self.reconcile()  # after reaping, which peers wait for
        return "reaped" if reply == 1 else "ok"

    def reconcile_due(self) -> bool:
        state = self.state
        return state.reconcile_due or time.monotonic() - state.reconciled >= RECONCILE_INTERVAL

    def reconcile(self) -> Plan[int]:
        """Return to the front of their queues the processes Redis says this
        worker holds but this client does not know: a finish or stop that Redis
        lost (a failover to a replica that never got it, a restart from an AOF
        fsynced every second) or a dequeue whose reply never arrived. Without
        this they would stay in process until the worker leaves or dies. Runs
        after heartbeats resume from a gap, and every `RECONCILE_INTERVAL`."""
        state = self.state
        worker = state.worker_id
        if worker is None or state.leaving:
            return 0
        publish = yield from state.publishing()
        stray = 0
        for queue in sorted(state.working):
            keys = state.mesh.queue(queue)
            held: list[str] = []
            for start in itertools.count(0, RECONCILE_BATCH):
                batch = yield command(
                    "ZRANGE", keys.owned(worker), start, start + RECONCILE_BATCH - 1
                )
                held += [text(pid) for pid in batch]
                if len(batch) < RECONCILE_BATCH:
                    break
            # Checked after the read: a dequeue whose processes the read saw is
            # either still in flight or already in state.owned by now.
            pending = tuple(state.dequeuing)
            unknown = [p for p in held if p not in state.owned and not p.startswith(pending)]
            returned = 0
            for pid in reversed(unknown):  # newest first: the oldest ends at the front
                if self.kinds.is_jobs(queue):
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
        state.reconciled = time.monotonic()
        state.reconcile_due = False
        return stray

    def reap(self) -> Plan[int]:
        """Fail every registered worker whose alive key is gone (then tidy the job
        queues no worker serves, when that is due: `Upkeep`)."""
        mesh = self.state.mesh
        workers = [text(w) for w in (yield command("SMEMBERS", mesh.workers))]
        failed = 0
        for start in range(0, len(workers), MGET_BATCH):
            batch = workers[start : start + MGET_BATCH]
            alive = yield command("MGET", *(mesh.alive(w) for w in batch))
            for worker, flag in zip(batch, alive, strict=True):
                if flag is None and (yield from self._fail_dead(worker)):
                    failed += 1
        yield from self.upkeep.tidy_job_queues()
        yield from self.relay.relay_stragglers()
        return failed

    def _fail_dead(self, worker: str) -> Plan[bool]:
        queues = yield command("SMEMBERS", self.state.mesh.worker_queues(worker))
        requeued = dead_lettered = 0
        for queue in sorted(text(q) for q in queues):
            moved, dead = yield from self.membership.requeue_owned(queue, worker, "fail")
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
        forgotten = yield from self.membership.forget(worker, only_if_dead=True)
        if forgotten:
            self.state.hooks.on_peer_failed(worker, requeued, dead_lettered)
        return forgotten

    def _recover_lease(self, old: str) -> Plan[None]:
        # Reported once per lost lease: a recovery cut short (say Redis dropped a
        # connection halfway) is redone by the next heartbeat, not reported again.
        state, membership = self.state, self.membership
        if state.reported_loss != old:
            state.reported_loss = old
            logger.warning("worker %s lost its lease; re-registering under a new id", old)
            state.hooks.on_lease_lost(old)
        queues = sorted(state.working)
        for queue in sorted(state.working | state.joining):
            yield from membership.requeue_owned(queue, old, "fail")
        yield from membership.forget(old, only_if_dead=True)
        for queue in queues:
            yield from membership.unsubscribe_wake(state.mesh.queue(queue), old)
        new = yield from membership.register()
        state.worker_id = new
        for queue in queues:
            yield from membership.join(state.mesh.queue(queue), queue, new)
