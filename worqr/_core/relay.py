"""The relay: applying outbox operations in their target queues.

A script that ends a flow's job writes, in its own queue's slot, an operation
for another queue (`lua/lib/flow.lua`) and replies it, so the caller relays it
at once: it applies the operation in the target's slot (`job_flow_submit`,
`job_child_done` or `job_flow_cancel`, each idempotent there), then acks it in
the source (`job_outbox_ack`). A crash between the two leaves the operation in
the outbox, visible again after `JobSettings.relay_lease`; `relay_stragglers`
(a worker's reaper turn) or `relay` applies it again, which changes nothing
twice. Operations the applies write in turn (a parent's children, a failed
parent's cancels) are relayed the same way.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import WrongQueueKindError
from .._flows import compact, unb64
from . import flow_scripts
from .calls import Plan, command
from .kinds import QueueKinds
from .state import CoreState, text

logger = logging.getLogger("worqr")

Op = tuple[str, dict[str, Any], bytes]
"""One outbox operation: its id, its header, its body."""

APPLY_CHUNK = 200  # operations per target script call
CLAIM_CHUNK = 200  # operations claimed per call
MAX_ROUNDS = 10_000  # nested applies one relay follows at most (a deep tree)


def parse_ops(flat: Sequence[Any]) -> list[Op]:
    """The flat (op id, header, body) triples a script replied."""
    ops = []
    for i in range(0, len(flat), 3):
        body = flat[i + 2]
        ops.append(
            (
                text(flat[i]),
                json.loads(flat[i + 1]),
                body.encode("utf-8", "surrogateescape") if isinstance(body, str) else body,
            )
        )
    return ops


def _chunks(items: list[Any], size: int = APPLY_CHUNK) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


@dataclass(eq=False)
class Relay:
    """Applies outbox operations; every part whose scripts write hops holds it."""

    state: CoreState
    kinds: QueueKinds

    def relay_ops(self, source: str, flat: Sequence[Any]) -> Plan[int]:
        """Apply the operations ``source``'s script wrote (flat triples) and ack
        them there, then those the applies wrote; returns how many were applied."""
        pending: list[tuple[str, list[Op]]] = [(source, parse_ops(flat))]
        applied = rounds = 0
        while pending and rounds < MAX_ROUNDS:
            rounds += 1
            queue, ops = pending.pop()
            if not ops:
                continue
            written = yield from self._apply(ops)
            yield flow_scripts.job_outbox_ack(
                self.state.queue_keys(queue), [op for op, _, _ in ops]
            )
            applied += len(ops)
            pending.extend((target, parse_ops(more)) for target, more in written if more)
        return applied

    def relay_queue(self, queue: str, *, fresh: bool = False) -> Plan[int]:
        """Relay ``queue``'s outbox: the operations past their lease (a relay
        died, or never came), or (``fresh``) every one. Returns how many."""
        keys = self.state.queue_keys(queue)
        lease = self.state.settings.jobs.relay_lease
        lease_ms = max(1, round(lease * 1000))
        total = 0
        while True:
            flat = yield flow_scripts.job_outbox_claim(
                keys, lease_ms=lease_ms, horizon_ms=lease_ms if fresh else 0, count=CLAIM_CHUNK
            )
            if not flat:
                return total
            total += yield from self.relay_ops(queue, flat)
            if len(flat) < 3 * CLAIM_CHUNK:
                return total

    def relay(self, queue: str | None = None) -> Plan[int]:
        """Relay the outbox of ``queue`` (every job queue's when None) now, fresh
        operations included; how many operations were applied."""
        if queue is not None:
            return (yield from self.relay_queue(queue, fresh=True))
        total = 0
        for name in sorted(text(q) for q in (yield command("SMEMBERS", self.state.mesh.jobqueues))):
            total += yield from self.relay_queue(name, fresh=True)
        return total

    def relay_stragglers(self) -> Plan[int]:
        """Relay every job queue's operations past their lease, at most once per
        lease for the whole mesh (a key set NX); the reaper's turn runs it."""
        queues = sorted(text(q) for q in (yield command("SMEMBERS", self.state.mesh.jobqueues)))
        if not queues:
            return 0
        interval_ms = max(1, round(self.state.settings.jobs.relay_lease * 1000 / 2))
        holder = self.state.worker_id or "client"
        if not (yield command("SET", self.state.mesh.relayer, holder, "NX", "PX", interval_ms)):
            return 0
        total = 0
        for queue in queues:
            total += yield from self.relay_queue(queue)
        if total:
            logger.info("relayed %d flow operations a relay had left behind", total)
        return total

    def relay_written(self, queue: str, flat: Sequence[Any]) -> Plan[None]:
        """Relay what a script just wrote, as the worker or client that ran it;
        a failure leaves it to the stragglers' relay (it is logged)."""
        if not flat:
            return
        try:
            yield from self.relay_ops(queue, flat)
        except Exception as error:
            logger.warning("flow hops of queue %r wait for a relay: %s", queue, error)

    # -- applying ------------------------------------------------------------------

    def _apply(self, ops: list[Op]) -> Plan[list[tuple[str, Any]]]:
        """Apply operations in their targets, grouped by kind and queue; returns
        what each apply wrote, by the queue it wrote it in."""
        submits: dict[str, list[Op]] = defaultdict(list)
        reports: dict[str, list[Op]] = defaultdict(list)
        cancels: dict[str, list[Op]] = defaultdict(list)
        by_kind = {"submit": submits, "report": reports, "cancel": cancels}
        for op in ops:
            kind = by_kind.get(str(op[1].get("k")))
            if kind is None:
                logger.error("unknown flow operation %s dropped: %r", op[0], op[1])
                continue
            kind[str(op[1]["q"])].append(op)
        written: list[tuple[str, Any]] = []
        publish = yield from self.state.publishing()
        policy = self.state.settings.jobs.policy
        for queue, group in submits.items():
            written += yield from self._submit(queue, group, publish, policy)
        for queue, group in reports.items():
            keys = self.state.queue_keys(queue)
            for chunk in _chunks(group):
                _, more = yield flow_scripts.job_child_done(
                    keys,
                    [_report(header, body) for _, header, body in chunk],
                    publish=publish,
                    policy=policy,
                )
                written.append((queue, more))
        for queue, group in cancels.items():
            keys = self.state.queue_keys(queue)
            for chunk in _chunks(group):
                ids = [str(header["i"]) for _, header, _ in chunk]
                _, more = yield flow_scripts.job_flow_cancel(
                    keys, ids, publish=publish, policy=policy
                )
                written.append((queue, more))
        return written

    def _submit(
        self, queue: str, group: list[Op], publish: str, policy: str
    ) -> Plan[list[tuple[str, Any]]]:
        keys = self.state.queue_keys(queue)
        written: list[tuple[str, Any]] = []
        for chunk in _chunks(group):
            items = [_flow_item(header, body) for _, header, body in chunk]
            try:
                _, more = yield flow_scripts.job_flow_submit(
                    keys, queue, items, publish=publish, policy=policy
                )
            except WrongQueueKindError:
                # A permanent refusal: a child reports a failure, a step ends its chain.
                written += yield from self._refused(queue, chunk, publish, policy)
                continue
            written.append((queue, more))
            yield from self.register_flow_queue(queue)
        return written

    def _refused(
        self, queue: str, chunk: list[Op], publish: str, policy: str
    ) -> Plan[list[tuple[str, Any]]]:
        written: list[tuple[str, Any]] = []
        reason = f"WrongQueueKindError: queue {queue!r} holds tasks".encode()
        for _, header, _ in chunk:
            logger.error("flow job %s not created: queue %r holds tasks", header["i"], queue)
            if "pq" in header:
                report = (str(header["pi"]), int(header["pl"]), int(header["pn"]), "x", "", reason)
                _, more = yield flow_scripts.job_child_done(
                    self.state.queue_keys(str(header["pq"])),
                    [report],
                    publish=publish,
                    policy=policy,
                )
                written.append((str(header["pq"]), more))
        return written

    def register_flow_queue(self, queue: str) -> Plan[None]:
        """A queue a relay created jobs on is a job queue of the mesh (once per client)."""
        if self.kinds.known(queue) is None:
            yield command("SADD", self.state.mesh.jobqueues, queue)
            yield command("SADD", self.state.mesh.queues, queue)
            self.kinds.learned(queue, "jobs")


def _flow_item(header: dict[str, Any], body: bytes) -> flow_scripts.FlowItem:
    payload = unb64(header["p"]) if "p" in header else body
    options = header.get("o") or {}
    flow = {
        key: header[key] for key in ("g", "nx", "pq", "pi", "pl", "pn", "f", "c") if key in header
    }
    return str(header["i"]), payload, compact(options), compact(flow)


def _report(header: dict[str, Any], body: bytes) -> flow_scripts.Report:
    outcome = str(header["s"])
    value = body if outcome == "f" else str(header.get("E") or "").encode("utf-8", "replace")
    kind = str(header.get("y") or "n") if outcome == "f" else ""
    return str(header["i"]), int(header["l"]), int(header["n"]), outcome, kind, value
