"""Bulk operations on a job queue and `update_job`: cancel, retry, promote or
purge many jobs at once, change one waiting job.

Each bulk operation is a loop of bounded script calls (`BULK_CHUNK` jobs at
most each, ``lua/job_*_many.lua``): no call blocks Redis however many jobs the
queue holds, and since every call moves its jobs and their counts together,
`count_jobs` is exact at every moment, read by any client between two calls.
A loop goes on from where the last call left (a cursor, or how many were
passed over) and stops after as many entries as the index held when it began,
so jobs that keep arriving (a busy producer) cannot keep it running; a job that
arrives or changes state meanwhile may or may not be included.

`Bulk` is a part of the core, given the state and the parts it calls (queue
kinds, the relay of flow hops, producing's task encoding). `cancel_jobs` takes
a group filter (fair-share groups): queued jobs are read from that group's own
ready keys, the other states' indexes walked with the other groups' entries
passed over.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from .. import _checks as checks
from .._jobs import ms, validate_group, validate_job_id
from .._keys import QueueKeys
from . import bulk_scripts
from .calls import Call, Plan
from .jobs_submit import MAX_PRIORITY
from .kinds import QueueKinds
from .limits import UNSET, Keep
from .produce import Producing
from .relay import Relay
from .state import CoreState, text

BULK_CHUNK = 1000
"""Jobs (index entries) one script call of a bulk operation handles at most."""

CANCELLABLE = {"waiting": "w", "delayed": "d", "retrying": "r", "queued": "q", "active": "a"}
"""The live states by code, in the order `cancel_jobs` visits them with no state: the
ones jobs come from first (a delayed job may become queued, a queued one active).
Waiting comes first: cancelling a retrying or active keep_last job places its
waiting follow-up, delayed or queued, so a follow-up left for later would outlive
a cancel of every state (a cancelled follow-up is placed by nothing)."""
RETRYABLE = {"failed": "x", "cancelled": "c"}
PURGEABLE = {"finished": "f", "failed": "x", "cancelled": "c"}


def _state(name: str, value: object, allowed: dict[str, str]) -> str:
    """The code of state ``value`` among ``allowed``; raises naming the choices."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return allowed[value]


def _states(value: object, allowed: dict[str, str]) -> list[str]:
    """The codes `state=value` stands for: every allowed state when None."""
    return list(allowed.values()) if value is None else [_state("state", value, allowed)]


def _limit(limit: object) -> int | None:
    return checks.optional_count("limit", limit, low=1)


def _want(limit: int | None, done: int) -> int:
    return BULK_CHUNK if limit is None else min(BULK_CHUNK, limit - done)


def _chunks(most: int | None, chunk: Callable[[int, int], Call]) -> Plan[int]:
    """Call a bulk script chunk after chunk until ``most`` jobs are done (None:
    no bound), the index is passed, or as many entries as it held at the first
    call were looked at; how many were done. ``chunk(want, skip)`` is the call
    for the next chunk: ``want`` jobs at most, after ``skip`` entries the last
    calls passed over. Its reply is (done, skipped, seen, left), or (done,
    seen, left) from a script whose jobs all leave the index (none is skipped)."""
    done = skip = looked = 0
    bound: int | None = None
    while most is None or done < most:
        reply = yield chunk(_want(most, done), skip)
        count, skipped, seen, left = reply if len(reply) == 4 else (reply[0], 0, *reply[1:])
        done += int(count)
        skip += int(skipped)
        looked += int(seen)
        if bound is None:
            bound = int(seen) + int(left)
        if not int(left) or not int(seen) or looked >= bound:
            break
    return done


def update_changes(
    priority: int | Keep | None, delay: float | Keep | None, at: float | Keep | None
) -> dict[str, int]:
    """The changes of `update_job` but the payload, checked, as the script takes
    them (None: back to the default, priority 0 or due now)."""
    if delay is not UNSET and at is not UNSET:
        raise ValueError("give delay or at, not both")
    changes: dict[str, int] = {}
    if priority is not UNSET:
        changes["P"] = checks.count(
            "priority", 0 if priority is None else priority, low=-MAX_PRIORITY, high=MAX_PRIORITY
        )
    if delay is not UNSET:
        changes["d"] = ms(checks.seconds("delay", 0 if delay is None else delay))
    if at is not UNSET and at is not None:
        changes["A"] = ms(checks.seconds("at", at, high=checks.MAX_EPOCH_SECONDS))
    elif at is None:
        changes["d"] = 0
    return changes


@dataclass(eq=False)
class Bulk:
    """The bulk plans of a core (``core.bulk``)."""

    state: CoreState
    kinds: QueueKinds
    relay: Relay
    producing: Producing

    def _job_queue(self, queue: str) -> Plan[bool]:
        """Whether ``queue`` is a job queue; `WrongQueueKindError` when it holds tasks."""
        if (yield from self.kinds.of(queue)) == "jobs":
            return True
        yield from self.kinds.refuse_task_queue(queue)
        return False

    # -- cancel --------------------------------------------------------------------

    def cancel_jobs(
        self, queue: str, *, state: str | None = None, group: str | None = None
    ) -> Plan[int]:
        """Cancel the jobs in ``state`` (every live state when None), of
        ``group`` only when given, as `cancel_job` does; how many."""
        keys = self.state.queue_keys(queue)
        codes = _states(state, CANCELLABLE)
        name = None if group is None else validate_group(group)
        if not (yield from self._job_queue(queue)):
            return 0
        publish = yield from self.state.publishing()
        cancelled = 0
        for code in codes:
            cancelled += yield from self._cancel_state(queue, keys, code, publish, name)
        return cancelled

    def _cancel_state(
        self, queue: str, keys: QueueKeys, code: str, publish: str, group: str | None
    ) -> Plan[int]:
        cancelled = looked = 0
        bound: int | None = None
        cursor = "0"
        while True:
            done, seen, left, after, ops = yield bulk_scripts.job_cancel_many(
                keys,
                state=code,
                count=BULK_CHUNK,
                cursor=cursor,
                publish=publish,
                policy=self.state.settings.jobs.policy,
                group=group,
            )
            yield from self.relay.relay_written(queue, ops)  # parents hear, children go
            cancelled += int(done)
            looked += int(seen)
            cursor = text(after)
            if bound is None:
                bound = int(seen) + int(left)
            if code == "a":  # a scan: over when its cursor comes back to 0
                if cursor == "0":
                    return cancelled
            elif code == "q" and cursor != "0":  # the groups' scan goes on
                if looked >= bound:
                    return cancelled
            elif not int(left) or not int(seen) or looked >= bound:
                return cancelled

    # -- retry ---------------------------------------------------------------------

    def retry_jobs(
        self, queue: str, *, state: str | None = None, limit: int | None = None
    ) -> Plan[int]:
        """Give failed or cancelled jobs (both when ``state`` is None; failed
        first) a new life, queued again, attempts kept; at most ``limit``. Jobs
        whose unique marker another live job holds are left. How many."""
        keys = self.state.queue_keys(queue)
        codes = _states(state, RETRYABLE)
        most = _limit(limit)
        if not (yield from self._job_queue(queue)):
            return 0
        publish = yield from self.state.publishing()

        def chunk(code: str, want: int, skip: int) -> Call:
            return bulk_scripts.job_retry_many(
                keys, state=code, count=want, skip=skip, publish=publish
            )

        moved = 0
        for code in codes:
            left = None if most is None else most - moved
            moved += yield from _chunks(left, partial(chunk, code))
        return moved

    # -- promote -------------------------------------------------------------------

    def promote_jobs(self, queue: str, *, limit: int | None = None) -> Plan[int]:
        """Queue delayed jobs now, soonest due first, at most ``limit``; how many."""
        keys = self.state.queue_keys(queue)
        most = _limit(limit)
        if not (yield from self._job_queue(queue)):
            return 0
        publish = yield from self.state.publishing()
        return (
            yield from _chunks(
                most,
                lambda want, _: bulk_scripts.job_promote_many(keys, count=want, publish=publish),
            )
        )

    # -- purge ---------------------------------------------------------------------

    def purge_jobs(
        self, queue: str, state: str, *, older_than: float = 0.0, limit: int | None = None
    ) -> Plan[int]:
        """Forget at most ``limit`` records of terminal ``state`` that ended
        ``older_than`` seconds ago or more (Redis's clock); how many."""
        keys = self.state.queue_keys(queue)
        code = _state("state", state, PURGEABLE)
        older_ms = ms(checks.seconds("older_than", older_than))
        most = _limit(limit)
        if not (yield from self._job_queue(queue)):
            return 0
        return (
            yield from _chunks(
                most,
                lambda want, skip: bulk_scripts.job_purge_many(
                    keys, state=code, count=BULK_CHUNK, want=want, skip=skip, older_than_ms=older_ms
                ),
            )
        )

    # -- update --------------------------------------------------------------------

    def update_job(
        self,
        queue: str,
        id: str,
        *,
        payload: str | bytes | Keep,
        priority: int | Keep | None,
        delay: float | Keep | None,
        at: float | Keep | None,
    ) -> Plan[bool]:
        """Change a delayed, queued or retrying job; False (nothing changed) for
        any other, a flow's job, or when another live job holds the new
        payload's unique marker."""
        keys = self.state.queue_keys(queue)
        validate_job_id(id)
        changes: dict[str, Any] = dict(update_changes(priority, delay, at))
        data = b""
        if payload is not UNSET:
            data = self.producing.encode_task(payload)
            changes["u"] = hashlib.sha256(data).hexdigest()  # as submit's unique marker
        publish = yield from self.state.publishing()
        updated, why = yield bulk_scripts.job_update(
            keys,
            id,
            json.dumps(changes, separators=(",", ":")),
            data,
            publish=publish,
            policy=self.state.settings.jobs.policy,
        )
        if int(updated) != 1 and text(why) == "unknown":
            yield from self.kinds.refuse_task_queue(queue)
        return int(updated) == 1
