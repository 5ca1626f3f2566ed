"""A worker module with job handlers for the job commands' tests
(`worqr worker job_app:worker`).

Jobs of "work" say what to do in their payload:

==================  =========================================================
``text:<s>``        return ``<s>`` (a str result)
``none``            return None
``fail:<message>``  raise ``ValueError(<message>)``
``sleep:<seconds>`` sleep that long (async: a timeout cancels it), return "slept"
``hold``            report progress "holding", then run until cancelled
==================  =========================================================

Jobs of "raw" return their payload as bytes (a bytes result, byte for byte).
Failures are retried at once (backoff 0) and, unless a job says otherwise, not
at all (retries=0), so a failing job fails within milliseconds.
"""

from __future__ import annotations

import asyncio

import worqr

worker = worqr.Worker(concurrency=8)


@worker.job("work", retries=0, backoff=0.0)
async def work(payload: str) -> str | None:
    kind, _, rest = payload.partition(":")
    if kind == "text":
        return rest
    if kind == "fail":
        raise ValueError(rest)
    if kind == "sleep":
        await asyncio.sleep(float(rest))
        return "slept"
    if kind == "hold":
        worqr.current_job().progress("holding")
        await asyncio.Event().wait()  # never set: held until cancelled
    return None


@worker.job("raw", retries=0, backoff=0.0)
async def raw(payload: str | bytes) -> bytes:
    return payload.encode() if isinstance(payload, str) else payload
