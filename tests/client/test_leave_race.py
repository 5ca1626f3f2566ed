"""A heartbeat racing a clean shutdown (found by the Redis stall scenario: workers
stopping with SIGTERM "lost their lease" and began to re-register).

Deregistering deletes the worker's alive key; a heartbeat that lands after that
used to read the missing key as a lease lost to peers: it called the lease-lost
hooks (cancelling handlers) and registered a new worker id that nobody would
ever deregister.
"""

from __future__ import annotations

import contextlib

import worqr
from tests.support.recorders import OnLeaseLost
from worqr._core.calls import Call


def test_heartbeat_after_the_goodbye_does_not_re_register(redis_url: str, prefix: str) -> None:
    wq = worqr.Worqr(redis_url, prefix=prefix, ttl=30.0, heartbeat=20.0)  # no timer beats
    lost: list[str] = []
    wq.add_hooks(OnLeaseLost(lost.append))
    try:
        wq.start_worker()
        wq.start_work("jobs")
        plan = wq._core.membership.deregister()
        request = next(plan)
        while not (isinstance(request, Call) and request.script == "forget_worker"):
            request = plan.send(wq._execute(request, 0))
        reply = wq._execute(request, 0)  # the alive key is gone; the plan has not ended
        assert wq.heartbeat() == "leaving"
        with contextlib.suppress(StopIteration):
            plan.send(reply)
        assert lost == []
        assert wq.get_workers() == []
        assert wq.worker_id is None
        wq.enqueue("jobs", "after")
        assert wq.count_tasks("jobs") == 1
    finally:
        wq.close()
