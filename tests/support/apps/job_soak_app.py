"""The job soak's worker (`worqr worker job_soak_app:worker`): jobs kept 5 s after
they end, so a steady stream holds a bounded number of records.

Queue "soak", payload ``"<n>:<millis>:<fail>"``: sleeps ``millis`` ms; ``fail``
"1" raises on the first attempt (the job retries once and finishes), "2" on every
attempt (it fails for good); returns ``n`` as text.
"""

from __future__ import annotations

import asyncio

import worqr

SETTINGS = worqr.WorkerSettings(
    client=worqr.Settings(
        jobs=worqr.JobSettings(result_ttl=5, failure_ttl=5, cancelled_ttl=5, min_retention=1)
    )
)

worker = worqr.Worker(concurrency=8, settings=SETTINGS)


@worker.job("soak", retries=1, backoff=worqr.Backoff(0.2, factor=1.0))
async def soak(payload: str) -> str:
    number, millis, fail = payload.split(":")
    await asyncio.sleep(int(millis) / 1000)
    if fail == "2" or (fail == "1" and worqr.current_job().attempt == 1):
        raise RuntimeError("planned failure")
    return number
