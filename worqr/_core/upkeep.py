"""The mesh's upkeep of job queues no worker serves.

A job queue's members purge its expired records and promote its due jobs as
they take (and on every fallback poll). A queue with no members would keep its
expired records, invisible to every read but holding memory, and its due jobs
unpromoted until a worker joined. The worker whose heartbeat takes the mesh's
reaper turn also tidies such queues, at most once per `UPKEEP_INTERVAL` across
the whole mesh (a key set NX).
"""

from __future__ import annotations

import dataclasses
import logging

from . import job_scripts
from .base import text
from .calls import Plan, command
from .relay import Relay

logger = logging.getLogger("worqr")

UPKEEP_INTERVAL = 30.0  # seconds between passes, mesh-wide
UPKEEP_BUDGET = 500  # records one script call purges at most (about a millisecond)
UPKEEP_CALLS = 20  # script calls one pass makes at most, over every queue


class Upkeep(Relay):
    def tidy_job_queues(self) -> Plan[int]:
        """Purge expired records and promote due jobs of the job queues that have
        no members, when the mesh's pass is due; how many records went. Bounded
        per pass (`UPKEEP_CALLS` x `UPKEEP_BUDGET`): a large backlog goes over
        several passes."""
        queues = sorted(text(q) for q in (yield command("SMEMBERS", self.mesh.jobqueues)))
        if not queues:
            return 0  # a mesh of task queues: nothing to keep, nothing written
        holder = self.worker_id or "client"
        interval_ms = int(UPKEEP_INTERVAL * 1000)
        if not (yield command("SET", self.mesh.upkeep, holder, "NX", "PX", interval_ms)):
            return 0  # another worker tidied within the interval
        publish = self.publish or (yield from self.publish_command())
        policy = dataclasses.replace(self.settings.jobs, purge_budget=UPKEEP_BUDGET).policy
        calls = purged = 0
        for queue in queues:
            keys = self.queue_keys(queue)
            if int((yield command("SCARD", keys.members))):
                continue  # its members keep it
            while calls < UPKEEP_CALLS:
                calls += 1
                _, went, _ = yield job_scripts.job_promote(keys, publish=publish, policy=policy)
                purged += int(went)
                if int(went) < UPKEEP_BUDGET:
                    break
        if purged:
            logger.debug("purged %d expired job records of queues no worker serves", purged)
        return purged
