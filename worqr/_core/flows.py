"""Plans of flows: `submit_chain`, `submit_flow`, `get_flow`, `cancel_flow`.

A flow exists atomically from its first job: one `job_flow_submit` in the first
step's (or the root's) queue creates it with what the rest needs (a chain's
next steps; a parent's children, as outbox operations). Everything after moves
hop by hop through outboxes (`relay`). The mesh's flow index (`flow_index`)
lists every job of a flow by (queue, id), so a flow is found by its id alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .. import _tracing
from .._errors import JobNotFoundError
from .._flows import (
    Encode,
    FlowInfo,
    FlowJob,
    FlowRef,
    FlowSpecs,
    Step,
    chain_specs,
    compact,
    flow_state,
    tree_specs,
)
from .._jobs import JobInfo, ms, new_job_id
from . import flow_scripts, job_scripts
from .calls import Pinned, Plan, command
from .failures import checked_replies
from .jobs_read import JobReads
from .jobs_submit import JobSubmission, job_options
from .kinds import QueueKinds
from .pinned import loaded
from .produce import Producing
from .relay import Relay
from .state import CoreState

READ_CHUNK = 500  # job reads per pinned group of get_flow

G = TypeVar("G")


@dataclass(eq=False)
class Flows:
    """The flow plans of a core (``core.flows``)."""

    state: CoreState
    kinds: QueueKinds
    producing: Producing
    submission: JobSubmission
    job_reads: JobReads
    relay: Relay

    def submit_chain(self, steps: Sequence[Step]) -> Plan[FlowRef]:
        """A chain of steps, each a job on its queue, run one after another."""
        return (yield from self._submit("submit_chain", "chain", chain_specs, steps))

    def submit_flow(self, root: FlowJob) -> Plan[FlowRef]:
        """A tree of jobs: each parent runs once its children ended."""
        return (yield from self._submit("submit_flow", "tree", tree_specs, root))

    def _submit(
        self,
        operation: str,
        kind: str,
        specs: Callable[[str, G, Encode, Callable[..., dict[str, Any]]], FlowSpecs],
        given: G,
    ) -> Plan[FlowRef]:
        """A new flow of ``kind``: ``given`` (steps, a root) laid out by ``specs``
        (`chain_specs`, `tree_specs`), traced as ``operation``."""
        flow_id = new_job_id()
        made: list[dict[str, Any]] = []
        payload, options, flow, jobs = specs(
            flow_id, given, self.producing.encode_task, _kept(made)
        )
        sending = _traced(operation, jobs, made)
        plan = self._start(flow_id, kind, jobs, payload, options, flow)
        return (yield from _tracing.around(sending, plan))

    def _start(
        self,
        flow_id: str,
        kind: str,
        jobs: list[tuple[str, str]],
        payload: bytes,
        options: dict[str, Any],
        flow: dict[str, Any],
    ) -> Plan[FlowRef]:
        queue, root_id = jobs[0]
        keys = self.state.queue_keys(queue)
        publish = yield from self.state.publishing()
        item = (root_id, payload, compact(options), compact(flow))
        created, ops = yield from self.kinds.claim_jobs(
            queue,
            flow_scripts.job_flow_submit(
                keys, queue, [item], publish=publish, policy=self.state.settings.jobs.policy
            ),
        )
        yield from self.submission.register_job_queue(queue)
        spec = compact({"k": kind, "j": [list(job) for job in jobs]})
        ttl = max(self.state.settings.jobs.failure_ttl, self.state.settings.jobs.result_ttl)
        yield flow_scripts.flow_index(
            self.state.mesh, flow_id, mode="add", spec=spec, ttl_ms=ms(ttl)
        )
        if int(created[0]) == 1:
            yield from self.relay.relay_written(queue, ops)
        else:  # a resend of the call that created it: its operations wait in the outbox
            yield from self.relay.relay_queue(queue, fresh=True)
        return FlowRef(flow_id, kind, tuple(jobs))

    def _flow_entry(self, flow_id: str) -> Plan[dict[str, Any] | None]:
        if not isinstance(flow_id, str) or not flow_id:
            raise TypeError(f"a flow id is a non-empty str, not {flow_id!r}")
        raw = yield command("HGET", self.state.mesh.flows, flow_id)
        if raw is None:
            return None
        entry: dict[str, Any] = json.loads(raw)
        return entry

    def get_flow(self, flow_id: str) -> Plan[FlowInfo]:
        entry = yield from self._flow_entry(flow_id)
        if entry is None:
            raise JobNotFoundError(f"no flow {flow_id!r} (never submitted, or forgotten)")
        infos = yield from self._read_flow_jobs([(str(q), str(i)) for q, i in entry["j"]])
        root_id = entry["j"][0][1]
        state = flow_state(entry["k"], root_id, infos, len(entry["j"]), bool(entry.get("c")))
        return FlowInfo(flow_id, entry["k"], state, infos)

    def _read_flow_jobs(self, jobs: list[tuple[str, str]]) -> Plan[list[JobInfo]]:
        """The flow's jobs that exist, in its order: per queue, the first by
        `read_job` (which loads the script where it runs), the rest as pinned
        groups of `READ_CHUNK` reads, so 1,000 children cost a few round trips."""
        by_queue: dict[str, list[str]] = {}
        for queue, id in jobs:
            by_queue.setdefault(queue, []).append(id)
        found: dict[tuple[str, str], JobInfo] = {}
        for queue, ids in by_queue.items():
            first = yield from self.job_reads.read_job(queue, ids[0])
            if first is not None:
                found[queue, ids[0]] = first
            keys = self.state.queue_keys(queue)
            for start in range(1, len(ids), READ_CHUNK):
                chunk = ids[start : start + READ_CHUNK]
                request = Pinned(
                    tuple(
                        job_scripts.job_watch(keys, id, watch=False, with_payload=True)
                        for id in chunk
                    )
                )
                replies = yield from loaded(request)  # scripts flushed meanwhile: reloaded
                for id, reply in zip(chunk, checked_replies(request, replies), strict=True):
                    if reply is not None:
                        found[queue, id] = self.job_reads.job_info_of(queue, id, reply)
        return [found[job] for job in jobs if job in found]

    def cancel_flow(self, flow_id: str) -> Plan[bool]:
        """Cancel every job of the flow that is not terminal, and block those not
        created yet; False when there is no such flow or it had ended."""
        info = yield from self.get_flow_or_none(flow_id)
        if info is None or info.state != "running":
            return False
        entry = yield from self._flow_entry(flow_id)
        assert entry is not None
        yield flow_scripts.flow_index(self.state.mesh, flow_id, mode="cancel", spec="", ttl_ms=0)
        publish = yield from self.state.publishing()
        by_queue: dict[str, list[str]] = {}
        for queue, id in entry["j"]:  # the root (or first step) first: its end cascades
            by_queue.setdefault(queue, []).append(id)
        for queue, ids in by_queue.items():
            keys = self.state.queue_keys(queue)
            for start in range(0, len(ids), 200):
                _, ops = yield flow_scripts.job_flow_cancel(
                    keys,
                    ids[start : start + 200],
                    publish=publish,
                    policy=self.state.settings.jobs.policy,
                )
                yield from self.relay.relay_written(queue, ops)
        return True

    def get_flow_or_none(self, flow_id: str) -> Plan[FlowInfo | None]:
        try:
            return (yield from self.get_flow(flow_id))
        except JobNotFoundError:
            return None


def _kept(made: list[dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """`job_options`, keeping each job's options in ``made`` (`_traced` adds to them)."""

    def options(**given: Any) -> dict[str, Any]:
        made.append(job_options(**given))
        return made[-1]

    return options


def _traced(
    operation: str, jobs: list[tuple[str, str]], made: list[dict[str, Any]]
) -> _tracing.Sending | None:
    """A flow submit's PRODUCER span (on its first job's queue): every job of the
    flow carries its context, so steps and children run in the submit's trace."""
    sending = _tracing.traced(jobs[0][0], operation)
    if sending is not None:
        sending.name([jobs[0][1]])
        for options in made:
            options.update(sending.carrier)
    return sending
