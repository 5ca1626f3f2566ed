"""A worker module for the burst tests (`worqr worker burst_app:worker --burst`,
with this folder on PYTHONPATH): jobs of "burst" return their payload; tasks of
"burst-tasks" do nothing."""

from __future__ import annotations

import worqr

worker = worqr.Worker(concurrency=4)


@worker.job("burst", retries=0)
def burst(payload: str) -> str:
    return payload


@worker.handler("burst-tasks")
def burst_task(task: str) -> None:
    return None


persistent_worker = worqr.Worker()  # bursting it is a usage error: its handler never ends


@persistent_worker.handler("feeds", persistent=True)
def follow(feed: str) -> None:
    return None
