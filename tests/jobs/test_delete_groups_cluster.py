"""Deleting queues with fair-share groups on a real 3-master Redis Cluster: the
grave, its sweep and the ready keys of every epoch lie in the queue's slot (a
cross-slot call would fail with CROSSSLOT), the mesh's `graves` set in the
mesh's; test_delete_groups's tests that read no per-server stats run here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import worqr
from worqr._core import graves
from worqr._keys import MeshKeys

from .test_cluster import make, redis_client, redis_cluster, redis_cluster_url
from .test_delete_groups import (
    queue_keys_left,
    submit_groups,
    test_a_queue_made_again_never_sees_the_old_jobs_and_the_upkeep_ends_the_sweep,
    test_the_upkeep_sweeps_a_large_grave_over_passes_with_no_job_queue_left,
)

pytestmark = pytest.mark.cluster

__all__ = [  # borrowed, collected here with the cluster's fixtures
    "make",
    "redis_client",
    "redis_cluster",
    "redis_cluster_url",
    "test_a_queue_made_again_never_sees_the_old_jobs_and_the_upkeep_ends_the_sweep",
    "test_the_upkeep_sweeps_a_large_grave_over_passes_with_no_job_queue_left",
]


def test_queues_with_groups_on_every_master_are_deleted_and_made_again(
    make: Callable[..., worqr.Worqr],
    redis_client: Any,
    prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(graves, "GRAVES_CHUNK", 100)  # several sweep calls per queue
    producer, worker = make(), make(start=True)
    by_master: dict[str, str] = {}  # a queue on each master
    for name in (f"groups-{i}" for i in range(100)):
        node = redis_client.get_node_from_key(MeshKeys(prefix).queue(name).tasks)
        by_master.setdefault(node.name, name)
    queues = sorted(by_master.values())
    assert len(queues) == 3
    for queue in queues:
        submit_groups(producer, queue, 520)
    for queue in queues:
        producer.delete_queue(queue)
        assert queue_keys_left(redis_client, prefix, queue) == []
        producer.submit(queue, "again", group="g1")
        _, taken, _ = worker.internals.take_jobs(queue, [], 10)
        assert [str(p.task) for p in taken] == ["again"]  # not the old g1
        worker.internals.take_jobs(queue, [(p, "s", b"ok") for p in taken], 0)
        producer.delete_queue(queue)
        assert queue_keys_left(redis_client, prefix, queue) == []
    assert not redis_client.exists(MeshKeys(prefix).graves)
