"""Deleting a queue, flows included.

A job queue's live flow jobs are ended first, as cancelled ("queue deleted"),
by `job_flow_drop` in chunks, each through the ordinary terminal path, so each
writes its hop (a child reports to its parent, a parent cancels its children,
a chain ends) and this plan relays them before anything goes. `delete_queue`
then drops the queue's keys in one script, which refuses while a flow job is
live (a relay created one meanwhile): the plan ends it too and tries again.
The outbox outlives the script until relayed; `job_applied` expires a day
later, so a late resend of a hop that created a job here creates nothing.
The queue's fair-share groups go in O(1) (their hash renamed to a grave), and
their ready keys after the script, a bounded chunk per call (`graves`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import _checks as checks
from .._errors import QueueBusyError, WorqrError
from .._jobs import APPLIED_TTL_MS
from . import flow_scripts, scripts
from .calls import Plan, command
from .graves import sweep_graves
from .kinds import QueueKinds
from .relay import Relay
from .state import CoreState, text

DROP_CHUNK = 200  # live flow jobs ended per script call
MAX_ATTEMPTS = 100  # delete scripts refused (flow jobs created meanwhile) before giving up
QUEUE_DELETED = "QueueDeleted: the job's queue was deleted"


@dataclass(eq=False)
class QueueDeletion:
    """The plan that deletes a queue (``core.deletion``)."""

    state: CoreState
    kinds: QueueKinds
    relay: Relay

    def delete_queue(self, queue: str, *, if_idle: bool = False) -> Plan[None]:
        """Drop the queue; with ``if_idle``, `QueueBusyError` and nothing
        deleted while it has a job (or task) in process, which the deleting
        script checks. A queue with live flow jobs has them ended first (they
        report to their flows), after a first check: a job taken between that
        check and the script leaves them ended and the queue in place."""
        state = self.state
        keys = state.queue_keys(queue)
        checks.flag("if_idle", if_idle)
        publish = yield from state.publishing()
        if if_idle:
            if int((yield command("HLEN", keys.processes))):
                raise _busy(queue)
        else:
            # Schedules first, in one command: none can fire into the queue after it
            # went. (With if_idle the script drops them, only when it deletes.)
            yield command("UNLINK", *keys.sched_keys)
        # Listed before the script makes a grave: a crash after it leaves the
        # sweep to the upkeep (graves); again after, should a sweep have just
        # taken the queue out.
        yield command("SADD", state.mesh.graves, queue)
        for _ in range(MAX_ATTEMPTS):
            yield from self._end_flow_jobs(queue, publish)
            members = [text(member) for member in (yield command("SMEMBERS", keys.members))]
            deleted = yield scripts.delete_queue(
                keys, members, publish=publish, applied_ttl_ms=APPLIED_TTL_MS, if_idle=if_idle
            )
            if int(deleted) == -2:
                yield from sweep_graves(state, queue)  # out of `graves` again (one call)
                raise _busy(queue)
            if int(deleted) >= 0:
                break
        else:
            raise WorqrError(f"queue {queue!r} kept getting flow jobs while it was deleted")
        yield command("SADD", state.mesh.graves, queue)
        yield from sweep_graves(state, queue)
        # Hops written before (a step that finished just now) still leave.
        yield from self.relay.relay_queue(queue, fresh=True)
        yield command("SREM", state.mesh.queues, queue)
        if not (yield command("ZCARD", keys.job_outbox)):
            yield command("SREM", state.mesh.jobqueues, queue)  # else stragglers relay it
        state.registered.pop(queue, None)
        self.kinds.forget(queue)

    def _end_flow_jobs(self, queue: str, publish: str) -> Plan[None]:
        """End the queue's live flow jobs as cancelled and relay what they wrote;
        mark their flows cancelled in the mesh's index (their records go with the
        queue, so `get_flow` could not see how they ended)."""
        keys = self.state.queue_keys(queue)
        flows: set[str] = set()
        while True:
            left, ended, ops = yield flow_scripts.job_flow_drop(
                keys,
                count=DROP_CHUNK,
                reason=QUEUE_DELETED,
                publish=publish,
                policy=self.state.settings.jobs.policy,
            )
            flows.update(text(flow_id) for flow_id in ended)
            if ops:
                yield from self.relay.relay_ops(queue, ops)
            if not int(left):
                break
        for flow_id in sorted(flows):
            yield flow_scripts.flow_index(
                self.state.mesh, flow_id, mode="cancel", spec="", ttl_ms=0
            )


def _busy(queue: str) -> QueueBusyError:
    return QueueBusyError(f"queue {queue!r} has jobs in process: nothing was deleted")
