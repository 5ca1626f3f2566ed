"""The mesh's upkeep of job queues no worker serves.

A job queue's members purge its expired records and promote its due jobs as
they take (and on every fallback poll). A queue with no members would keep its
expired records, invisible to every read but holding memory, and its due jobs
unpromoted until a worker joined. The worker whose heartbeat takes the mesh's
reaper turn also tidies such queues, at most once per `UPKEEP_INTERVAL` across
the whole mesh (a key set NX). A pass visits a slice of the job queues, round
robin (an SSCAN whose cursor the mesh keeps), so its cost does not grow with
the number of job queues: a mesh of up to `UPKEEP_SLICE` job queues is swept
every pass, a larger one every ``queues / UPKEEP_SLICE`` passes. The pass also
finishes the sweeps of deleted queues' groups their deleters left (`graves`).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

from . import job_scripts
from .calls import Plan, command
from .graves import sweep_left_graves
from .state import CoreState, text

logger = logging.getLogger("worqr")

UPKEEP_INTERVAL = 2.0  # seconds between passes, mesh-wide
UPKEEP_SLICE = 100  # job queues one pass visits (SSCAN's COUNT: a small set comes whole)
UPKEEP_BUDGET = 500  # records one script call purges at most (about a millisecond)
UPKEEP_RECORDS = 10_000  # records one pass purges before it stops (a backlog goes over passes)
CURSOR_TTL_MS = 60_000  # the sweep's cursor outlives the last pass by this much


@dataclass(eq=False)
class Upkeep:
    """The upkeep of job queues no worker serves (``core.upkeep``)."""

    state: CoreState

    def tidy_job_queues(self) -> Plan[int]:
        """Purge expired records and promote due jobs of the job queues without
        members in this pass's slice, when the mesh's pass is due; how many
        records went. Bounded per pass: `UPKEEP_SLICE` membership checks, one
        `job_promote` call per memberless queue of the slice, a few more for a
        backlog, and about `UPKEEP_RECORDS` records (each call at most
        `UPKEEP_BUDGET`): a large backlog goes over several passes."""
        state = self.state
        jobqueues = int((yield command("SCARD", state.mesh.jobqueues)))
        graves = int((yield command("SCARD", state.mesh.graves)))
        if not (jobqueues or graves):
            return 0  # a mesh of task queues: nothing to keep, nothing written
        holder = state.worker_id or "client"
        interval_ms = int(UPKEEP_INTERVAL * 1000)
        if not (yield command("SET", state.mesh.upkeep, holder, "NX", "PX", interval_ms)):
            return 0  # another worker tidied within the interval
        if graves:
            yield from sweep_left_graves(state)
        if not jobqueues:
            return 0
        queues = yield from self._next_slice()
        publish = yield from state.publishing()
        policy = dataclasses.replace(state.settings.jobs, purge_budget=UPKEEP_BUDGET).policy
        purged = 0
        for queue in queues:
            if purged >= UPKEEP_RECORDS:
                break  # a large backlog: the rest of this slice waits for the next round
            keys = state.queue_keys(queue)
            if int((yield command("SCARD", keys.members))):
                continue  # its members keep it
            went = UPKEEP_BUDGET
            while went >= UPKEEP_BUDGET and purged < UPKEEP_RECORDS:
                _, went_now, _ = yield job_scripts.job_promote(keys, publish=publish, policy=policy)
                went = int(went_now)
                purged += went
        if purged:
            logger.debug("purged %d expired job records of queues no worker serves", purged)
        return purged

    def _next_slice(self) -> Plan[list[str]]:
        """The job queues this pass visits, and the cursor moved past them first
        (a pass that fails half way does not hold the sweep on its slice)."""
        mesh = self.state.mesh
        saved = yield command("GET", mesh.upkeep_cursor)
        cursor, found = yield command(
            "SSCAN", mesh.jobqueues, text(saved or b"0"), "COUNT", UPKEEP_SLICE
        )
        yield command("SET", mesh.upkeep_cursor, str(int(cursor)), "PX", CURSOR_TTL_MS)
        return sorted({text(queue) for queue in found})  # SSCAN may repeat a member
