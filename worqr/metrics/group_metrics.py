"""The exporter's fair-share group metrics, read at scrape time, per job queue
and never per group (a label per group would be a series per tenant): the
groups with queued jobs (``worqr_queue_groups_waiting``), and of those the
ones their own limits hold back now (``worqr_queue_groups_limited``: at their
max_active, or closed by their rate or a `RateLimited`), by the rules
`GroupInfo` follows. A paused group waits but is not limited (the pause has
its own metric per queue, ``worqr_queue_paused``, and `worqr groups` names it).

Each queue's group records are read page by page (`job_groups`, the plan
`get_groups` pages with), one round trip per page for every queue still
scanning: a queue without groups costs one script call, a queue with G groups
about G / `PAGE` calls."""

from __future__ import annotations

import json
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric

from .._clients.sync_exec import SyncExecutor
from .._core import job_scripts
from .._core.groups import group_info
from .._keys import MeshKeys

PAGE = 1000
"""Groups read per script call (HSCAN's COUNT)."""


def _count(reply: list[Any]) -> tuple[int, int]:
    """Groups with queued jobs, and those of them held back by their limits, in one page."""
    flat, defaults, now_ms = reply[1], list(reply[2]), float(reply[3])
    waiting = limited = 0
    for i in range(0, len(flat), 2):
        info = group_info("", json.loads(flat[i + 1]), defaults, now_ms)
        if info.queued:
            waiting += 1
            limited += info.limited
    return waiting, limited


def group_metrics(executor: SyncExecutor, mesh: MeshKeys, queues: list[str]) -> list[Metric]:
    waiting = GaugeMetricFamily(
        "worqr_queue_groups_waiting",
        "Fair-share groups of the job queue with queued jobs (ungrouped jobs are no group)",
        labels=["queue"],
    )
    limited = GaugeMetricFamily(
        "worqr_queue_groups_limited",
        "Groups with queued jobs that their own limits (max_active reached, rate, "
        "RateLimited) hold back now",
        labels=["queue"],
    )
    totals = {queue: [0, 0] for queue in queues}
    cursors = {queue: "0" for queue in queues}
    while cursors:
        scanning = list(cursors)
        calls = [
            job_scripts.job_groups(mesh.queue(q), cursor=cursors[q], count=PAGE) for q in scanning
        ]
        for queue, reply in zip(scanning, executor.batch(calls), strict=True):
            page_waiting, page_limited = _count(reply)
            totals[queue][0] += page_waiting
            totals[queue][1] += page_limited
            cursor = reply[0].decode() if isinstance(reply[0], bytes) else str(reply[0])
            if cursor == "0":
                del cursors[queue]
            else:
                cursors[queue] = cursor
    for queue, (n_waiting, n_limited) in totals.items():
        waiting.add_metric([queue], float(n_waiting))
        limited.add_metric([queue], float(n_limited))
    return [waiting, limited]
