"""The exporter's traffic-control metrics, read at scrape time: whether a job
queue's limits (`Worqr.configure_queue`: rate, max_active; a handler's
`RateLimited`) hold back jobs that are ready to start now
(``worqr_queue_rate_limited``, 1 or 0), and whether it is paused
(``worqr_queue_paused``, 1 or 0: `Worqr.pause`). One pipelined round trip."""

from __future__ import annotations

from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric

from .._core.limits import LIMIT_FIELDS, parse_limits
from .._keys import MeshKeys


def limit_metrics(redis: Any, mesh: MeshKeys, queues: list[str]) -> list[Metric]:
    gauge = GaugeMetricFamily(
        "worqr_queue_rate_limited",
        "1 while the queue's rate limit, cap on active jobs or a RateLimited pause "
        "holds back jobs ready to start",
        labels=["queue"],
    )
    paused = GaugeMetricFamily(
        "worqr_queue_paused",
        "1 while the job queue is paused (worqr pause): no job of it starts until it is resumed",
        labels=["queue"],
    )
    if not queues:
        return [gauge, paused]
    with redis.pipeline(transaction=False) as pipe:
        pipe.execute_command("TIME")
        for queue in queues:
            keys = mesh.queue(queue)
            pipe.execute_command("HMGET", keys.config, *LIMIT_FIELDS)
            pipe.execute_command("HGET", keys.job_counts, "active")
            pipe.execute_command("LLEN", keys.tasks)
            pipe.execute_command("ZCARD", keys.job_prio)
        replies = pipe.execute()
    seconds, micros = replies[0]
    now = int(seconds) * 1_000_000 + int(micros)
    for i, queue in enumerate(queues):
        fields, active, listed, prioritised = replies[1 + 4 * i : 5 + 4 * i]
        ready = int(listed) > 0 or int(prioritised) > 0
        limits = parse_limits(fields, active, now)
        gauge.add_metric([queue], 1.0 if ready and limits.limited else 0.0)
        paused.add_metric([queue], 1.0 if limits.paused else 0.0)
    return [gauge, paused]
