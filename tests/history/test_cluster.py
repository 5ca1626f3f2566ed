"""The metrics history on a real 3-master Redis Cluster: a worker's flushes and
the reads touch only each queue's slot (a key outside it would fail with
CROSSSLOT), with the queues on three different masters."""

from __future__ import annotations

import asyncio

import pytest

import worqr
from tests.cluster.test_flows import queues  # noqa: F401  (three queues, three masters)
from tests.support.cluster import LocalCluster, redis_cluster  # noqa: F401  (the fixture)
from tests.support.waiting import async_wait_until
from worqr._core.history_model import totals

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_the_history_on_a_cluster(
    redis_cluster: LocalCluster,  # noqa: F811
    prefix: str,
    queues: list[str],  # noqa: F811
) -> None:
    url = redis_cluster.url
    worker = worqr.Worker(url, prefix=prefix, cluster=True)
    for queue in queues:

        @worker.job(queue, retries=0)
        async def handle(payload: str) -> None:
            if payload == "fail":
                raise ValueError("this one fails")

    async def main() -> None:
        async with worqr.AsyncWorqr(url, prefix=prefix, cluster=True) as wq:
            for queue in queues:
                await wq.submit_many(queue, ["ok"] * 5 + ["fail"] * 2)
            wanted = {"started": 7, "finished": 5, "retried": 0, "failed": 2, "cancelled": 0}

            async def written() -> bool:
                for queue in queues:
                    got = totals(await wq.get_history(queue, since=300))
                    if {name: got[name] for name in wanted} != wanted:
                        return False
                return True

            async with worker:
                await async_wait_until(written, timeout=20, message="the histories")
            for queue in queues:  # the ten-minute points, from the same flushes
                coarse = totals(await wq.get_history(queue, since=72 * 3600))
                assert {name: coarse[name] for name in wanted} == wanted

    asyncio.run(main())
