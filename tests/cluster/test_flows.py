"""Flows on a real 3-master Redis Cluster, each queue of a flow on a different
master: no hop is one script across slots (that would fail with CROSSSLOT), yet
chains pass their results along, a fan-out of 100 fans in once, a failed child
fails its parent, and cancel_flow reaches every master."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from redis.cluster import RedisCluster

import worqr
from tests.jobs.conftest import QUIET, Running
from tests.support.cluster import LocalCluster
from tests.support.waiting import wait_until

pytestmark = pytest.mark.cluster


@pytest.fixture
def queues(redis_cluster: LocalCluster, prefix: str) -> list[str]:
    """Three queue names whose keys live on three different masters."""
    client = RedisCluster.from_url(redis_cluster.url)
    try:
        by_node: dict[str, str] = {}
        for i in range(200):
            name = f"q{i}"
            node = client.get_node_from_key(f"{{{prefix}:{name}}}:tasks").name
            by_node.setdefault(node, name)
            if len(by_node) == 3:
                return list(by_node.values())
    finally:
        client.close()
    raise AssertionError("no three masters")


@pytest.fixture
def running() -> Iterator[Running]:
    made = Running()
    try:
        yield made
    finally:
        made.stop()


@pytest.fixture
def wq(redis_cluster_url: str, prefix: str) -> Iterator[worqr.Worqr]:
    client = worqr.Worqr(
        redis_cluster_url, settings=worqr.Settings(prefix=prefix, **QUIET), cluster=True
    )
    try:
        yield client
    finally:
        client.close()


def cluster_worker(url: str, prefix: str) -> worqr.Worker:
    client = worqr.Settings(prefix=prefix, ttl=1.0, heartbeat=0.2, poll_interval=0.5)
    return worqr.Worker(
        url,
        settings=worqr.WorkerSettings(client=client, concurrency=8, grace_period=2.0),
        cluster=True,
    )


def serve(worker: worqr.Worker, queues: list[str], handler: Callable[[str, str], Any]) -> None:
    for queue in queues:

        def run(payload: str, queue: str = queue) -> Any:
            return handler(queue, payload)

        worker.job(queue, retries=0)(run)


def test_flows_across_three_masters(
    running: Running, wq: worqr.Worqr, redis_cluster_url: str, prefix: str, queues: list[str]
) -> None:
    first, second, third = queues
    parents: list[dict[str, str | bytes | None]] = []
    release = threading.Event()

    def handler(queue: str, payload: str) -> str:
        if payload == "fail":
            raise worqr.Fail("broken")
        if payload == "hold":
            release.wait(10)
        if queue == first and payload.startswith("parent"):
            parents.append(worqr.current_job().children())
            return f"{payload}: {len(parents[-1])}"
        return f"{payload}|{queue}"

    worker = cluster_worker(redis_cluster_url, prefix)
    serve(worker, queues, handler)
    running.start(worker)

    chain = wq.submit_chain([worqr.Step(first, "x"), worqr.Step(second), worqr.Step(third)])
    wait_until(lambda: wq.get_flow(chain.id).state != "running", 20, message="the chain")
    assert wq.result(third, f"{chain.id}.2", timeout=0) == f"x|{first}|{second}|{third}"

    fan = wq.submit_flow(
        worqr.FlowJob(
            first,
            "parent",
            children=[worqr.FlowJob((second, third)[i % 2], str(i)) for i in range(100)],
        )
    )
    assert wq.result(first, fan.id, timeout=30) == "parent: 100"
    assert parents == [{f"{fan.id}.{i}": f"{i}|{(second, third)[i % 2]}" for i in range(100)}]

    failing = wq.submit_flow(
        worqr.FlowJob(
            first,
            "parent-f",
            children=[worqr.FlowJob(second, "fail"), worqr.FlowJob(third, "hold")],
        )
    )
    with pytest.raises(worqr.JobFailedError, match="ChildFailed"):
        wq.result(first, failing.id, timeout=20)
    wait_until(lambda: wq.get_job(third, f"{failing.id}.1").state == "cancelled", 10)
    release.set()

    release.clear()  # before the submit: its child may start at once
    held = wq.submit_flow(worqr.FlowJob(first, "parent-c", children=[worqr.FlowJob(third, "hold")]))
    wait_until(lambda: wq.get_job(third, f"{held.id}.0").state == "active", 10)
    assert wq.cancel_flow(held.id)
    states = [job.state for job in wq.get_flow(held.id).jobs]
    assert states == ["cancelled", "cancelled"]
    release.set()
    assert len(parents) == 1  # no parent ran but the one whose children all finished


def test_deleting_a_queue_reports_its_flow_jobs_across_masters(
    wq: worqr.Worqr, redis_cluster_url: str, queues: list[str]
) -> None:
    """No worker: every job waits where it is. Deleting a queue ends its flow jobs
    as cancelled, and their hops reach the other masters at once."""
    first, second, third = queues
    tree = wq.submit_flow(
        worqr.FlowJob(
            first,
            children=[worqr.FlowJob(second, "a"), worqr.FlowJob(third, "b")],
        )
    )
    chain = wq.submit_chain([worqr.Step(second, "x"), worqr.Step(third)])
    above = wq.submit_flow(worqr.FlowJob(third, children=[worqr.FlowJob(first, "c")]))
    wq.delete_queue(second)
    # The child on `second` failed its parent (policy fail), which cancelled the other.
    assert wq.get_job(first, tree.id).state == "failed"
    assert wq.get_job(third, f"{tree.id}.1").state == "cancelled"
    assert wq.get_flow(tree.id).state == "failed"
    assert wq.get_flow(chain.id).state == "cancelled"
    assert wq.get_job(third, f"{chain.id}.1") is None
    wq.delete_queue(third)  # a waiting parent's queue: its child on `first` is cancelled
    assert wq.get_job(first, f"{above.id}.0").state == "cancelled"
    assert wq.get_flow(above.id).state == "cancelled"
    client = RedisCluster.from_url(redis_cluster_url)
    try:
        for queue in (second, third):
            keys = wq._core.state.queue_keys(queue)
            for key in (*keys.job_keys, *keys.flow_keys, keys.config, keys.stats):
                assert not client.exists(key), key
            assert client.pttl(keys.job_applied) > 0
    finally:
        client.close()
