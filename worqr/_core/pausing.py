"""Plans of durable pauses: a job queue's (`pause`, `resume`, `is_paused`) and a
schedule's (`pause_schedule`, `resume_schedule`).

A queue's pause is its config hash's ``paused`` field, read by the take script
in the same ``HMGET`` as the queue's limits (lib/limit's ``read_limits``), so no
take on any worker starts a job of a paused queue from the moment `pause`
returns, and an unpaused queue pays no extra command. A schedule's pause is its
spec's ``p`` (lib/schedule), kept by the upsert every worker makes at start.

A part of `Core`, given the client's state and what it knows of queue kinds; a
group's pause, when groups come, is one more plan here and one more reason in
lib/limit's ``allowance``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._schedules import validate_schedule_name
from . import job_scripts
from .calls import Plan, command
from .jobs_submit import JobSubmission
from .kinds import QueueKinds
from .state import CoreState


@dataclass(eq=False)
class Pausing:
    """The pause plans of queues and schedules (``core.pausing``)."""

    state: CoreState
    kinds: QueueKinds
    submission: JobSubmission  # registers a queue paused before it had jobs

    def pause(self, queue: str) -> Plan[None]:
        """Pause a job queue (a new queue becomes one) on every worker until
        `resume`; raises `WrongQueueKindError` on a queue that holds tasks. The
        queue is registered, so a pause made before any job is listed (status,
        metrics, the web view) like the queue's jobs will be."""
        state = self.state
        keys = state.queue_keys(queue)
        yield from self.kinds.claim_jobs(queue, job_scripts.job_pause(keys))
        yield from self.submission.register_job_queue(queue)

    def resume(self, queue: str) -> Plan[None]:
        """Let a paused queue's jobs start again, waking as many idle workers as
        it has ready jobs; a queue that is not paused is left as it is."""
        state = self.state
        keys = state.queue_keys(queue)
        publish = yield from state.publishing()
        yield job_scripts.job_resume(keys, publish=publish)

    def is_paused(self, queue: str) -> Plan[bool]:
        """Whether ``queue`` is paused (False for a task queue or an unknown one)."""
        keys = self.state.queue_keys(queue)
        return bool((yield command("HEXISTS", keys.config, "paused")))

    def pause_schedule(self, queue: str, name: str) -> Plan[bool]:
        """Pause the schedule ``name`` of ``queue``; False when there is none."""
        keys = self.state.queue_keys(queue)
        found = yield job_scripts.job_sched_pause(keys, validate_schedule_name(name))
        return int(found) == 1

    def resume_schedule(self, queue: str, name: str) -> Plan[bool]:
        """Let a paused schedule fire again (its missed fires owed once); False
        when there is none."""
        state = self.state
        keys = state.queue_keys(queue)
        validate_schedule_name(name)
        publish = yield from state.publishing()
        found = yield job_scripts.job_sched_resume(
            keys, name, publish=publish, policy=state.settings.jobs.policy
        )
        return int(found) == 1
