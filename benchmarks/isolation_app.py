"""The worker of `benchmarks.isolation`: isolated handlers that sleep (and
report their child's pid first) or keep memory."""

from __future__ import annotations

import os
import time

import worqr

worker = worqr.Worker()
_kept: list[bytes] = []


@worker.job("sleeper", isolated=True)
def sleeper(payload: str) -> str:
    worqr.current_job().progress(str(os.getpid()))
    time.sleep(float(payload))
    return "slept"


@worker.job("leak", isolated=True)
def leak(payload: str) -> str:
    _kept.append(b"x" * (int(payload) << 20))
    return str(os.getpid())
