"""The exporter's flow metrics, read at scrape time: each job queue's outbox
(``worqr_flow_outbox``: hops waiting for a relay; ``worqr_flow_outbox_oldest_seconds``:
how long the oldest has waited past its relay lease, which stays 0 while
relays keep up). One pipelined round trip per `PIPELINE_QUEUES` queues."""

from __future__ import annotations

from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from redis.exceptions import NoScriptError

from .._core import flow_scripts
from .._core.lua import digest, source
from .._keys import MeshKeys

OUTBOX_AGE = "job_outbox_age"
PIPELINE_QUEUES = 100


def outbox_metrics(redis: Any, mesh: MeshKeys, queues: list[str]) -> list[Metric]:
    entries = GaugeMetricFamily(
        "worqr_flow_outbox", "Flow hops waiting in the queue's outbox for a relay", labels=["queue"]
    )
    oldest = GaugeMetricFamily(
        "worqr_flow_outbox_oldest_seconds",
        "Seconds the oldest flow hop of the queue waited past its relay lease (0: none late)",
        labels=["queue"],
    )
    for start in range(0, len(queues), PIPELINE_QUEUES):
        batch = queues[start : start + PIPELINE_QUEUES]
        try:
            replies = _read(redis, mesh, batch)
        except NoScriptError:
            redis.script_load(source(OUTBOX_AGE))
            replies = _read(redis, mesh, batch)
        for queue, (count, overdue_ms) in zip(batch, replies, strict=True):
            entries.add_metric([queue], float(count))
            oldest.add_metric([queue], int(overdue_ms) / 1000)
    return [entries, oldest]


def _read(redis: Any, mesh: MeshKeys, batch: list[str]) -> list[Any]:
    with redis.pipeline(transaction=False) as pipe:
        for queue in batch:
            call = flow_scripts.job_outbox_age(mesh.queue(queue))
            # The command routes by its key on a cluster (as the job counts do).
            pipe.execute_command("EVALSHA", digest(OUTBOX_AGE), 1, *call.keys)
        return list(pipe.execute())
