"""One builder per Lua script of flows (``worqr/lua/job_flow_*.lua``,
``job_child_done``, ``job_outbox_*``, ``flow_index``), as `job_scripts` holds
the job layer's. ``policy`` is the JSON of `JobSettings.policy`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from .._keys import MeshKeys, QueueKeys
from .calls import Call

FlowItem = tuple[str, bytes, str, str]
"""One job of a `job_flow_submit` call: id, payload, options JSON, flow JSON."""

Report = tuple[str, int, int, str, str, bytes]
"""One child's report to its parent: parent id, parent life, child index,
outcome (f, x, c), result type (s, b, n, or ''), result or error text."""


def job_flow_submit(
    keys: QueueKeys, queue: str, jobs: Sequence[FlowItem], *, publish: str, policy: str
) -> Call:
    # Resend-safe: each job is created once (job_applied remembers it).
    return Call(
        "job_flow_submit",
        (
            *keys.job_keys,
            keys.processes,
            keys.members,
            keys.idle,
            keys.config,
            keys.stats,
            keys.job_applied,
            *keys.flow_keys,
        ),
        (keys.wake_prefix, publish, policy, queue, *(field for job in jobs for field in job)),
    )


def job_child_done(
    keys: QueueKeys, reports: Sequence[Report], *, publish: str, policy: str
) -> Call:
    return Call(
        "job_child_done",
        (*keys.job_keys, keys.members, keys.idle, keys.stats, *keys.flow_keys),
        (
            keys.wake_prefix,
            publish,
            keys.notify,
            policy,
            *(field for report in reports for field in report),
        ),
    )


def job_flow_cancel(keys: QueueKeys, ids: Sequence[str], *, publish: str, policy: str) -> Call:
    return Call(
        "job_flow_cancel",
        (*keys.job_keys, keys.processes, keys.stats, keys.job_applied, *keys.flow_keys),
        (keys.events, publish, keys.notify, policy, *ids),
    )


def job_flow_drop(keys: QueueKeys, *, count: int, reason: str, publish: str, policy: str) -> Call:
    # Resend-safe: a resend ends the next live flow jobs, which the caller wants.
    return Call(
        "job_flow_drop",
        (*keys.job_keys, keys.processes, keys.stats, *keys.flow_keys),
        (keys.events, publish, keys.notify, policy, count, reason),
    )


def job_outbox_claim(keys: QueueKeys, *, lease_ms: int, horizon_ms: int, count: int) -> Call:
    return Call(
        "job_outbox_claim",
        (keys.job_outbox, keys.job_outbox_data, keys.job_outbox_body),
        (lease_ms, horizon_ms, count),
    )


def job_outbox_ack(keys: QueueKeys, ops: Sequence[str]) -> Call:
    return Call(
        "job_outbox_ack",
        (keys.job_outbox, keys.job_outbox_data, keys.job_outbox_body),
        tuple(ops),
    )


def flow_index(
    keys: MeshKeys, id: str, *, mode: Literal["add", "cancel"], spec: str, ttl_ms: int
) -> Call:
    return Call("flow_index", (keys.flows, keys.flows_purge), (mode, id, spec, ttl_ms))


def job_outbox_age(keys: QueueKeys) -> Call:
    return Call("job_outbox_age", (keys.job_outbox,), ())
