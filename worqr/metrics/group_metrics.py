"""The exporter's fair-share group metrics, read at scrape time, per job queue
and never per group (a label per group would be a series per tenant): the
groups with queued jobs (``worqr_queue_groups_waiting``), and of those the
ones their own limits hold back now (``worqr_queue_groups_limited``: at their
max_active, or closed by their rate or a `RateLimited`), by the rules
`GroupInfo` follows. A paused group waits but is not limited (the pause has
its own metric per queue, ``worqr_queue_paused``, and `worqr groups` names it).

The job scripts keep both counts in the queue's config hash (fields
``groups_waiting`` and ``groups_limited``, lua/lib/group.lua's tally_groups,
where a group's record changes), so a scrape reads them with one HMGET per
queue, all queues in one round trip, whatever their number of groups. A group
counts as limited by where the take last left it (at its max_active, or
waiting for a time: its rate's next slot or a `RateLimited`); one whose time is
due counts until the next take or timer reopens it, and a queue-wide
group_max_active changed by `configure_queue` shows once the take meets each
group."""

from __future__ import annotations

from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric

from .._clients.sync_exec import SyncExecutor
from .._core.calls import command
from .._keys import MeshKeys

FIELDS = ("groups_waiting", "groups_limited")
"""The config fields the group scripts keep (lua/lib/group.lua)."""


def _number(raw: Any) -> float:
    return 0.0 if raw is None else max(0.0, float(int(raw)))


def group_metrics(executor: SyncExecutor, mesh: MeshKeys, queues: list[str]) -> list[Metric]:
    waiting = GaugeMetricFamily(
        "worqr_queue_groups_waiting",
        "Fair-share groups of the job queue with queued jobs (ungrouped jobs are no group)",
        labels=["queue"],
    )
    limited = GaugeMetricFamily(
        "worqr_queue_groups_limited",
        "Groups with queued jobs that their own limits (max_active reached, rate, "
        "RateLimited) held back when the take last met them",
        labels=["queue"],
    )
    calls = [command("HMGET", mesh.queue(queue).config, *FIELDS) for queue in queues]
    for queue, (n_waiting, n_limited) in zip(queues, executor.batch(calls), strict=True):
        waiting.add_metric([queue], _number(n_waiting))
        limited.add_metric([queue], _number(n_limited))
    return [waiting, limited]
