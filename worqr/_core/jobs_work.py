"""Plans a worker runs on job queues: take (carrying finishes and their
results), fail, stop, progress, promote; and the job queues' side of
dead-letter management (retrying them is `Bulk.retry_jobs`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from .. import _checks as checks
from .._flows import ChildOutcome, child_outcome
from .._jobs import Backoff, JobProcess
from .._process import decode_task
from . import job_scripts
from .calls import Plan, command
from .job_scripts import Finish
from .kinds import QueueKinds
from .lua import NotMemberError
from .membership import Membership
from .processes import COMPLETE_BATCH, DEQUEUE_CHUNK
from .relay import Relay
from .sched_refill import ScheduleRefill
from .state import CoreState, text

JobFinish = tuple[JobProcess, str, bytes]
"""A finish the worker carries: the process, the result type (s, b, n), the result."""

PURGE_CHUNK = 200  # failed jobs dropped per script call (purge_failed)
_RECORD = json.JSONDecoder()  # a take's hot path skips json.loads's checks


@dataclasses.dataclass(eq=False)
class JobWork:
    """The plans of a worker's jobs: taking them and ending them (``core.job_work``)."""

    state: CoreState
    kinds: QueueKinds
    membership: Membership
    relay: Relay
    refill: ScheduleRefill

    def mark_job_queue(self, queue: str) -> Plan[None]:
        """Make ``queue`` a job queue (a worker with a job handler joins it);
        `WrongQueueKindError` when it holds tasks."""
        yield from self.kinds.claim_jobs(queue, job_scripts.job_kind(self.state.queue_keys(queue)))
        yield command("SADD", self.state.mesh.jobqueues, queue)

    def take_jobs(
        self, queue: str, finished: Sequence[JobFinish], count: int, *, full: bool = False
    ) -> Plan[tuple[list[bool], list[JobProcess], bool]]:
        """Finish ``finished`` (storing each result) and take up to ``count`` jobs,
        in one script call when they all belong to this worker's current id.
        Returns a flag per finish (False: fenced), the jobs taken, and whether
        the take stopped early with jobs maybe left (call again). ``full``: a
        call with ``count`` 0 because the worker has no room (at its concurrency,
        or stopping) takes it out of the queue's idle set, so the wake-up for
        work its finishes make ready goes to a worker that wants it; a call that
        only finishes (sent alone) keeps the wake-up its last take asked for."""
        checks.count("count", count)
        state = self.state
        keys = state.queue_keys(queue)
        worker = state.require_worker()
        mine, accepted = yield from self._finish_others(queue, worker, finished)
        if count and queue not in state.working:
            yield from self.membership.start_work(queue)
        publish = yield from state.publishing()
        policy = state.settings.jobs.policy
        taken: list[JobProcess] = []
        more = False
        refill: list[Any] = []
        written: list[object] = []  # outbox operations the finishes wrote (flows)
        for start in range(0, max(1, len(mine)), COMPLETE_BATCH):
            chunk = mine[start : start + COMPLETE_BATCH]
            take = min(count, DEQUEUE_CHUNK) if start == 0 else 0
            if not chunk and not take:
                break
            pid_prefix = state.new_prefix(worker) if take else ""
            try:
                try:
                    flags, reply, stopped, asked, ops, now = yield job_scripts.job_take(
                        keys,
                        worker,
                        pid_prefix,
                        count=take,
                        publish=publish,
                        policy=policy,
                        finishes=[_finish(finished[i]) for i in chunk],
                        full=full and start == 0,
                    )
                except NotMemberError:
                    state.working.discard(queue)  # rejoin on the next call
                    raise
                written += ops
                for i, flag in zip(chunk, flags, strict=True):
                    state.owned.pop(finished[i][0].id, None)
                    accepted[i] = int(flag) in (1, 2)
                refill.extend(asked)
                if take:
                    taken = self._took_jobs(queue, worker, reply, int(now))
                    more = int(stopped) == 1
            finally:
                state.dequeuing.discard(pid_prefix)
        yield from self.relay.relay_written(queue, written)  # the next step, a parent's report
        if refill:  # cron schedules low on fire times; their due fires wake us
            yield from self.refill.refill_schedules(queue, refill)
        if any(process.child_policy for process in taken):
            taken = yield from self._with_children(taken)
        return accepted, taken, more

    def _finish_others(
        self, queue: str, worker: str, finished: Sequence[JobFinish]
    ) -> Plan[tuple[list[int], list[bool]]]:
        """Finish alone, with no take, the processes a take on ``queue`` under
        ``worker`` cannot carry (our former id's: its processes are peers' now).
        Returns the indices of the ones it carries, and a flag per finish: for
        those finished here, whether it was accepted; False for the others until
        the take sets it."""
        accepted = [False] * len(finished)
        mine: list[int] = []
        for i, (process, _, _) in enumerate(finished):
            if process.worker_id == worker and process.queue == queue:
                mine.append(i)
            else:
                accepted[i] = yield from self._finish_as(process.worker_id, [finished[i]])
        return mine, accepted

    def _finish_as(self, worker: str, finishes: Sequence[JobFinish]) -> Plan[bool]:
        process = finishes[0][0]
        flags, _, _, _, ops, _ = yield job_scripts.job_take(
            self.state.queue_keys(process.queue),
            worker,
            "",
            count=0,
            publish=(yield from self.state.publishing()),
            policy=self.state.settings.jobs.policy,
            finishes=[_finish(finish) for finish in finishes],
        )
        self.state.owned.pop(process.id, None)
        yield from self.relay.relay_written(process.queue, ops)
        return int(flags[0]) in (1, 2)

    def _took_jobs(self, queue: str, worker: str, reply: list[Any], now: int) -> list[JobProcess]:
        """The jobs a take returned: pid, entry, payload, the record's JSON field
        (lib/jobs) and the attempt of each; ``now`` is the server's ms the take ran at."""
        jobs = []
        decode = self.state.settings.decode_tasks
        owned = self.state.owned
        for i in range(0, len(reply), 5):
            pid, entry, data = text(reply[i]), text(reply[i + 1]), reply[i + 2]
            meta = _RECORD.raw_decode(text(reply[i + 3]))[0]
            backoff = meta.get("B")
            timeout = meta.get("T")
            child_queues = meta.get("cq")
            owned[pid] = (queue, worker)
            jobs.append(
                JobProcess(
                    pid,
                    queue,
                    decode_task(data, decode),
                    data,
                    worker,
                    job_id=entry.rpartition("#")[0],
                    entry=entry,
                    attempt=int(reply[i + 4]),
                    failures=int(meta["f"]),
                    recoveries=int(meta["r"]),
                    waited=max(0, now - int(meta.get("v", now))) / 1000,
                    retries=meta.get("R"),
                    backoff=None if backoff is None else Backoff.from_wire(backoff),
                    timeout=None if timeout is None else int(timeout) / 1000,
                    children=()
                    if not child_queues
                    else tuple(
                        ChildOutcome(i, "", str(q), "cancelled", None, None)
                        for i, q in enumerate(child_queues)
                    ),
                    child_policy=meta.get("cf"),
                    traceparent=meta.get("tp"),
                    tracestate=meta.get("ts"),
                    lost_by=_lost_by(meta, int(reply[i + 4])),
                )
            )
        return jobs

    def _with_children(self, taken: list[JobProcess]) -> Plan[list[JobProcess]]:
        """Flow parents get their children's outcomes (one HMGET each), which
        `current_job().children()` hands their handlers."""
        ready = []
        for process in taken:
            if process.child_policy and process.children:
                queues = [child.queue for child in process.children]
                fields = [f"{process.entry}|{i}" for i in range(len(queues))]
                raw = yield command("HMGET", self.state.queue_keys(process.queue).job_flow, *fields)
                outcomes = tuple(
                    child_outcome(process.job_id, i, queue, value)
                    for i, (queue, value) in enumerate(zip(queues, raw, strict=True))
                )
                process = dataclasses.replace(process, children=outcomes)
            ready.append(process)
        return ready

    def fail_job(
        self, process: JobProcess, *, mode: str, delay: float, retries: int, error: str
    ) -> Plan[tuple[bool, str]]:
        """Report a failed attempt (``mode`` "error": retried while failures <=
        ``retries``, after ``delay`` seconds) or fail it now ("fail"). Returns
        whether it was accepted (False: fenced) and the state, "r" or "x"."""
        publish = yield from self.state.publishing()
        accepted, state, *written = yield job_scripts.job_fail(
            self.state.queue_keys(process.queue),
            process.worker_id,
            process.id,
            process.entry,
            mode=mode,
            delay_ms=max(0, round(delay * 1000)),
            retries=retries,
            error_text=error,
            publish=publish,
            policy=self.state.settings.jobs.policy,
        )
        self.state.owned.pop(process.id, None)
        if written:  # it failed for good: its flow hears of it
            yield from self.relay.relay_written(process.queue, written[0])
        return int(accepted) == 1, text(state)

    def stop_job(self, process: str | JobProcess) -> Plan[bool]:
        """Put a job back at the front of its priority, no counter charged."""
        state = self.state
        owner = state.owner(process)
        if owner is None:
            return False
        pid, queue, worker = owner
        publish = yield from state.publishing()
        reply = yield job_scripts.job_stop(state.mesh.queue(queue), worker, pid, publish=publish)
        state.owned.pop(pid, None)
        return bool(reply == 1)

    def report_progress(self, process: JobProcess, value: bytes) -> Plan[bool]:
        publish = yield from self.state.publishing()
        reply = yield job_scripts.job_progress(
            self.state.queue_keys(process.queue), process.id, process.entry, value, publish=publish
        )
        return bool(reply == 1)

    def promote_due(self, queue: str) -> Plan[int]:
        """Make due jobs ready and wake idle members for them (the timer holder
        with no free slot)."""
        publish = yield from self.state.publishing()
        promoted, _, refill = yield job_scripts.job_promote(
            self.state.queue_keys(queue), publish=publish, policy=self.state.settings.jobs.policy
        )
        created = 0
        if refill:
            created = yield from self.refill.refill_schedules(queue, refill)
        return int(promoted) + created

    # -- the failed jobs of a job queue (get_failed and friends dispatch here) ----

    def purge_failed_jobs(self, queue: str) -> Plan[int]:
        keys = self.state.queue_keys(queue)
        dropped_total = 0
        while True:
            dropped, remaining = yield job_scripts.job_purge_failed(keys, count=PURGE_CHUNK)
            dropped_total += int(dropped)
            if int(remaining) == 0 or int(dropped) == 0:
                return dropped_total


def _lost_by(meta: dict[str, Any], attempt: int) -> str | None:
    """The worker a failover took the job from, when this run is the first after it."""
    worker = meta.get("lw")
    return worker if worker is not None and meta.get("la") == attempt - 1 else None


def _finish(finish: JobFinish) -> Finish:
    process, kind, result = finish
    return process.id, process.entry, kind, result
