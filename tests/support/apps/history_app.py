"""A worker module for the metrics history's tests (`worqr worker history_app:worker`).

A job of "timed" says ``<seconds>:<failures>``: each run sleeps ``seconds``, then
raises while its attempt is at most ``failures``. The job is retried once
(backoff 0), so ``1`` fails a run then finishes, ``2`` fails the job. Each run
appends ``<outcome> <seconds it measured>`` to the file $HISTORY_RUNS. The
handler is sync: the history's hooks are called from handler threads.
"""

from __future__ import annotations

import os
import time

import worqr

worker = worqr.Worker(concurrency=8)
RETRIES = 1


@worker.job("timed", retries=RETRIES, backoff=0.0)
def timed(payload: str) -> None:
    seconds, _, failures = payload.partition(":")
    attempt = worqr.current_job().attempt
    start = time.perf_counter()
    time.sleep(float(seconds))
    fails = attempt <= int(failures)
    outcome = ("retried" if attempt <= RETRIES else "failed") if fails else "finished"
    with open(os.environ["HISTORY_RUNS"], "a") as runs:
        runs.write(f"{outcome} {time.perf_counter() - start:.6f}\n")
    if fails:
        raise ValueError(f"attempt {attempt} fails")
