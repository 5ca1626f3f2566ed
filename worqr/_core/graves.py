"""Sweeping the group keys of deleted queues (``lua/job_sweep_graves.lua``).

`delete_queue` costs the same with 10 or a million fair-share groups: it renames
the queue's ``grp`` hash to a grave named by the groups' epoch instead of
walking it, and the groups' ready keys (named with that epoch, so a queue made
again never sees them) go afterwards, `GRAVES_CHUNK` groups per script call.
The deleter sweeps right away, so its call returns with the keys gone. The
mesh's ``graves`` set lists the queues with a grave (added before the delete
and again after it), and the upkeep pass finishes a sweep its deleter left (a
crash, a lost connection), a few calls per pass, so no key outlives its queue
for good even when nobody serves or deletes that queue again.
"""

from __future__ import annotations

from . import job_scripts
from .calls import Plan, command
from .state import CoreState, text

GRAVES_CHUNK = 500  # groups per call: 14 µs each measured on the loaded 2-core VM, 7 ms a call
UPKEEP_GRAVES = 10  # queues with a grave one upkeep pass visits at most
UPKEEP_GRAVE_CALLS = 20  # sweep calls per queue in one upkeep pass (a backlog goes over passes)


def sweep_graves(state: CoreState, queue: str, calls: int | None = None) -> Plan[bool]:
    """Sweep ``queue``'s graves until none is left (True) or ``calls`` calls were
    made (False). With none left it leaves the mesh's ``graves`` set, unless a
    delete made a grave meanwhile (that delete's own sweep takes it)."""
    keys = state.queue_keys(queue)
    made = 0
    while calls is None or made < calls:
        left, _ = yield job_scripts.job_sweep_graves(keys, count=GRAVES_CHUNK)
        made += 1
        if not int(left):
            yield command("SREM", state.mesh.graves, queue)
            if int((yield command("EXISTS", keys.group_graves))):
                yield command("SADD", state.mesh.graves, queue)
            return True
    return False


def sweep_left_graves(state: CoreState) -> Plan[int]:
    """The upkeep's share: a bounded sweep of up to `UPKEEP_GRAVES` queues of the
    mesh's ``graves`` set; how many of them were swept to the end."""
    found = yield command("SRANDMEMBER", state.mesh.graves, UPKEEP_GRAVES)
    done = 0
    for queue in sorted({text(name) for name in found}):
        done += bool((yield from sweep_graves(state, queue, UPKEEP_GRAVE_CALLS)))
    return done
