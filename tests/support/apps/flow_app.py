"""Flow steps for the tests of hops that survive their relay's death
(`worqr worker flow_app:worker`).

Each start is recorded as ``"started <job id> <pid> <attempt>"`` on the Redis list
``<record>:events`` ($JOB_RECORD); a step returns its payload and ``|<queue>``.
While the key ``<record>:kill-before-relay`` exists, the first worker about to
relay a hop deletes it and SIGKILLs itself: the step's finish is stored and its
hop written to the outbox, but nobody relays it at once.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from typing import Any

import redis

import worqr
from worqr._core.calls import Plan
from worqr._core.relay import Relay

RECORD = os.environ.get("JOB_RECORD", "flow")

worker = worqr.Worker(
    settings=worqr.WorkerSettings(
        concurrency=4, client=worqr.Settings(jobs=worqr.JobSettings(relay_lease=0.5))
    )
)


def _url() -> str:
    return worker.url or os.environ["WORQR_REDIS_URL"]


_relay_ops = Relay.relay_ops


def _dying_relay(self: Relay, source: str, flat: Sequence[Any]) -> Plan[int]:
    if flat:
        with redis.Redis.from_url(_url()) as client:
            if client.delete(f"{RECORD}:kill-before-relay"):
                client.rpush(f"{RECORD}:events", f"killed {source} {os.getpid()} 0")
                os.kill(os.getpid(), signal.SIGKILL)
    return (yield from _relay_ops(self, source, flat))


Relay.relay_ops = _dying_relay  # type: ignore[method-assign]


def _step(queue: str) -> None:
    @worker.job(queue)
    def step(payload: str) -> str:
        with redis.Redis.from_url(_url()) as client:
            job = worqr.current_job()
            client.rpush(f"{RECORD}:events", f"started {job.id} {os.getpid()} {job.attempt}")
        return f"{payload}|{queue}"


for name in ("s1", "s2", "s3"):
    _step(name)
