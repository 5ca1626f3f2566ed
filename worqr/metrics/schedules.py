"""The schedules' figures the collector exports: how many each job queue has,
and how many are stalled, by Redis's clock."""

from __future__ import annotations

from typing import Any

from .._keys import MeshKeys

STALL_AFTER = 60.0
"""Seconds past its next fire after which a schedule counts as stalled, unless
the exporter is told otherwise (``--stall-after``): its cron buffer ran out (no
worker could compute fire times) or no member of its queue fires it."""
STALLED_HELP = (
    "Schedules past their next fire by more than the exporter's --stall-after "
    "(default a minute): out of fire times, or no member of the queue to fire them"
)


def read_schedules(
    redis: Any, mesh: MeshKeys, queues: list[str], stall_after: float = STALL_AFTER
) -> dict[str, tuple[int, int]]:
    """queue -> (schedules, stalled) for each of ``queues`` (job queues): one
    ``TIME`` and one pipelined round trip, O(log N) per queue."""
    if not queues:
        return {}
    seconds, micros = redis.time()
    late = int(seconds) * 1000 + int(micros) // 1000 - round(stall_after * 1000)
    with redis.pipeline(transaction=False) as pipe:
        for queue in queues:
            keys = mesh.queue(queue)
            pipe.hlen(keys.job_sched)
            pipe.zcount(keys.job_sched_next, "-inf", late)
        flat = pipe.execute()
    return {q: (int(flat[2 * i]), int(flat[2 * i + 1])) for i, q in enumerate(queues)}
