"""The exporter's flow metrics, read at scrape time: each job queue's outbox
(``worqr_flow_outbox``: hops waiting for a relay; ``worqr_flow_outbox_oldest_seconds``:
how long the oldest has waited past its relay lease, which stays 0 while
relays keep up). One pipelined round trip per `PIPELINE_QUEUES` queues."""

from __future__ import annotations

from prometheus_client.core import GaugeMetricFamily, Metric

from .._clients.sync_exec import SyncExecutor
from .._core import flow_scripts
from .._keys import MeshKeys

PIPELINE_QUEUES = 100


def outbox_metrics(executor: SyncExecutor, mesh: MeshKeys, queues: list[str]) -> list[Metric]:
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
        # One round trip; NOSCRIPT loads the script and sends the batch again.
        replies = executor.batch([flow_scripts.job_outbox_age(mesh.queue(q)) for q in batch])
        for queue, (count, overdue_ms) in zip(batch, replies, strict=True):
            entries.add_metric([queue], float(count))
            oldest.add_metric([queue], int(overdue_ms) / 1000)
    return [entries, oldest]
