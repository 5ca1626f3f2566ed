"""Plans that read and act on jobs by id: `get_job`, `result` (waiting for the
end without polling), `cancel_job`, `retry_job`, `count_jobs`, `get_jobs`,
`server_time`."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from .._checks import count, optional_seconds
from .._errors import JobCancelledError, JobFailedError, JobNotFoundError
from .._jobs import (
    LISTED_STATES,
    STATE_CODES,
    STATES,
    TERMINAL,
    JobInfo,
    decode_result,
    job_info,
    validate_group,
    validate_job_id,
)
from .._keys import QueueKeys
from . import job_scripts
from .calls import Listen, Pinned, Plan, Wait, command
from .failures import checked_replies
from .job_record import hot_field, merge_record
from .kinds import QueueKinds
from .notify import Notifications
from .queued_pages import MAX_OFFSET, queued_page
from .relay import Relay
from .state import CoreState, text

MAX_PAGE = 1000
MAX_CURSOR_DIGITS = 19  # below 2**64: every such number is a cursor HSCAN takes


def _state_of(state: object) -> str:
    if state not in LISTED_STATES:
        raise ValueError(f"unknown job state {state!r}; one of {', '.join(LISTED_STATES)}")
    return str(state)


@dataclass(eq=False)
class JobReads:
    """Reading jobs, waiting for their end, and acting on one by id."""

    state: CoreState
    kinds: QueueKinds
    notifications: Notifications
    relay: Relay

    def get_job(self, queue: str, id: str) -> Plan[JobInfo | None]:
        found = yield from self.read_job(queue, id)
        if found is None:
            yield from self.kinds.refuse_task_queue(queue)
        return found

    def read_job(self, queue: str, id: str) -> Plan[JobInfo | None]:
        """The job, or None (on any kind of queue: a flow's job not created yet)."""
        keys = self.state.queue_keys(queue)
        validate_job_id(id)
        reply = yield job_scripts.job_watch(keys, id, watch=False, with_payload=True)
        return None if reply is None else self.job_info_of(queue, id, reply)

    def job_info_of(self, queue: str, id: str, reply: Any) -> JobInfo:
        """The `JobInfo` of a `job_watch` reply (with its payload)."""
        raw, payload, result, progress, _ = reply
        return job_info(
            queue,
            id,
            json.loads(raw),
            payload=payload or None,
            result=result or None,
            progress=progress or None,
            decode=self.state.settings.decode_tasks,
        )

    def result(self, queue: str, id: str, timeout: float | None = None) -> Plan[str | bytes | None]:
        """The job's result once it is finished: waits (without polling Redis)
        until it ends or ``timeout`` seconds pass (None: no limit; 0: read once)."""
        keys = self.state.queue_keys(queue)
        validate_job_id(id)
        optional_seconds("timeout", timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        waiter = None
        if timeout != 0:
            # Listen before the first read: an end between the read and the wait
            # still wakes us. Pub/sub is a hint: every wait ends by poll_interval.
            yield from self.watch_notify(queue, keys)
            waiter = yield Listen(("done", queue, id))
        while True:
            reply = yield job_scripts.job_watch(
                keys, id, watch=waiter is not None, with_payload=False
            )
            if reply is None:
                yield from self.kinds.refuse_task_queue(queue)
                raise JobNotFoundError(f"no job {id!r} on queue {queue!r} (or it was purged)")
            record = json.loads(reply[0])
            state = STATE_CODES[record["s"]]
            if state == "finished":
                return decode_result(record.get("y"), reply[2] or None)
            if state == "failed":
                error = record.get("E")
                raise JobFailedError(f"job {id!r} on queue {queue!r} failed: {error}", error=error)
            if state == "cancelled":
                raise JobCancelledError(f"job {id!r} on queue {queue!r} was cancelled")
            left = None if deadline is None else deadline - time.monotonic()
            if waiter is None or (left is not None and left <= 0):
                raise TimeoutError(
                    f"job {id!r} on queue {queue!r} is still {state} after {timeout:g} s"
                )
            wait = (
                self.state.settings.poll_interval
                if left is None
                else min(left, self.state.settings.poll_interval)
            )
            yield Wait(waiter, wait)

    def watch_notify(self, queue: str, keys: QueueKeys) -> Plan[None]:
        """Listen on the queue's notify channel (once per client and queue)."""
        if not self.notifications.listening(keys.notify):
            yield from self.notifications.subscribe(queue, {keys.notify: "notify"})

    def cancel_job(self, queue: str, id: str) -> Plan[bool]:
        keys = self.state.queue_keys(queue)
        validate_job_id(id)
        publish = yield from self.state.publishing()
        nonce = uuid.uuid4().hex[:16]  # a resend answers True, as the first call did
        cancelled, _, *written = yield job_scripts.job_cancel(
            keys, id, nonce, publish=publish, policy=self.state.settings.jobs.policy
        )
        if written:  # a flow's job: its parent hears of it, its children are cancelled
            yield from self.relay.relay_written(queue, written[0])
        if int(cancelled) != 1:
            yield from self.kinds.refuse_task_queue(queue)
        return int(cancelled) == 1

    def retry_job(self, queue: str, id: str) -> Plan[bool]:
        keys = self.state.queue_keys(queue)
        validate_job_id(id)
        publish = yield from self.state.publishing()
        retried, _ = yield job_scripts.job_retry(keys, id, uuid.uuid4().hex[:16], publish=publish)
        if int(retried) != 1:
            yield from self.kinds.refuse_task_queue(queue)
        return int(retried) == 1

    def count_tasks(self, queue: str) -> Plan[int]:
        """Tasks waiting in ``queue``; on a job queue, its queued jobs (its list
        alone would miss prioritised jobs and count cancelled ones' leftovers).
        The kind is read in the same round trip until the queue is known."""
        keys = self.state.queue_keys(queue)
        if not self.kinds.is_jobs(queue):
            reads = (
                command("LLEN", keys.tasks, key=keys.tasks),
                command("HGET", keys.config, "kind", key=keys.config),
            )
            request = Pinned(reads)
            length, kind = checked_replies(request, (yield request))
            if kind not in (b"jobs", "jobs"):
                return int(length)
            self.kinds.learned(queue, "jobs")
        return (yield from self.count_jobs(queue))["queued"]

    def count_jobs(self, queue: str) -> Plan[dict[str, int]]:
        counts = yield from self.job_counts(queue)
        counts.pop("overdue", None)
        return counts

    def job_counts(self, queue: str) -> Plan[dict[str, int]]:
        """Jobs per state (all seven, zeros included), and "overdue": delayed and
        retrying jobs already due but not yet promoted."""
        reply = yield job_scripts.job_counts(self.state.queue_keys(queue))
        counts: dict[str, int] = dict.fromkeys(STATES, 0)
        for i in range(0, len(reply), 2):
            counts[text(reply[i])] = max(0, int(reply[i + 1]))
        if not any(counts.values()):
            yield from self.kinds.refuse_task_queue(queue)
        return counts

    def server_time(self) -> Plan[float]:
        seconds, micros = yield command("TIME")
        return int(seconds) + int(micros) / 1_000_000

    def get_jobs(
        self,
        queue: str,
        state: str,
        *,
        limit: int,
        cursor: str | None,
        group: str | None,
    ) -> Plan[tuple[list[JobInfo], str | None]]:
        """One page of the jobs in ``state``: queued in run order (the ungrouped
        ones, then group by group: `queued_pages`), delayed and retrying by due
        time, active unordered, waiting (flow parents, keep_last follow-ups) by
        creation, terminal latest first. With ``group``, that
        group's jobs only (queued: its own ready keys; the other states: the
        pages above with other groups' jobs left out, so a page may be empty
        before the end). A page may be short; iteration ends when the cursor
        comes back None."""
        keys = self.state.queue_keys(queue)
        _state_of(state)
        count("limit", limit, low=1, high=MAX_PAGE)
        position = cursor_position(cursor)
        name = None if group is None else validate_group(group)
        now_ms = round((yield from self.server_time()) * 1000)
        if state == "queued":
            entries, at = yield from queued_page(keys, limit, position, name)
            after = None if at is None else str(at)
        elif state == "active":
            entries, after = yield from self._active_page(keys, limit, position)
        else:
            entries, after = yield from self._ranked_page(keys, state, limit, position, now_ms)
        if cursor is None and (not entries or state == "queued"):
            # Nothing found, or queued entries that may be a task queue's payloads.
            yield from self.kinds.refuse_task_queue(queue)
        jobs = yield from self._read_jobs(queue, keys, entries, state, now_ms)
        if name is not None:
            jobs = [job for job in jobs if job.group == name]
        return jobs, after

    def _ranked_page(
        self, keys: QueueKeys, state: str, limit: int, offset: int, now_ms: int
    ) -> Plan[tuple[list[str], str | None]]:
        """Delayed and retrying entries by due time; waiting ids by creation;
        terminal ids latest first (those past their purge time left out)."""
        if offset >= MAX_OFFSET:
            return [], None  # past any end (and past what Redis takes as an offset)
        if state in ("delayed", "retrying", "waiting"):
            zset = {"delayed": keys.job_delayed, "retrying": keys.job_retrying}.get(
                state, keys.job_waiting
            )
            found = yield command("ZRANGE", zset, offset, offset + limit - 1)
        else:
            zset = {"finished": keys.job_finished, "failed": keys.job_failed}.get(
                state, keys.job_cancelled
            )
            found = yield command(
                "ZREVRANGEBYSCORE", zset, "+inf", f"({now_ms}", "LIMIT", offset, limit
            )
        after = str(offset + limit) if len(found) == limit else None
        return [text(entry) for entry in found], after

    def _active_page(
        self, keys: QueueKeys, limit: int, position: int
    ) -> Plan[tuple[list[str], str | None]]:
        """Active entries, unordered: HSCAN of the processes from ``position``
        (any value below 2**64 is a cursor HSCAN takes)."""
        after, found = yield command("HSCAN", keys.processes, position, "COUNT", limit)
        values = found.values() if isinstance(found, dict) else found[1::2]
        return [text(entry) for entry in values], None if int(after) == 0 else str(int(after))

    def _read_jobs(
        self, queue: str, keys: QueueKeys, entries: list[str], state: str, now_ms: int
    ) -> Plan[list[JobInfo]]:
        """The jobs of ``entries`` (`id#life`, or ids) still in ``state``."""
        if not entries:
            return []
        if state in TERMINAL or state == "waiting":  # ids
            wanted = [(entry, "", "") for entry in entries]
        else:  # id#life: the life tells a live entry from a stale one
            wanted = [entry.rpartition("#") for entry in entries]
        ids = [id for id, _, _ in wanted]
        fields = [field for id in ids for field in (id, hot_field(id))]
        both = yield command("HMGET", keys.jobs, *fields)
        records = [(both[2 * k], both[2 * k + 1]) for k in range(len(ids))]
        payloads = yield command("HMGET", keys.job_data, *ids)
        results = yield command("HMGET", keys.job_result, *ids)
        progress = yield command("HMGET", keys.job_progress, *ids)
        jobs = []
        for (id, _, life), (raw, hot), payload, result, value in zip(
            wanted, records, payloads, results, progress, strict=True
        ):
            if raw is None:
                continue
            record = merge_record(raw, hot)
            if STATE_CODES[record["s"]] != state or (life and str(record["l"]) != life):
                continue  # a tombstone, an older life, or it moved on meanwhile
            if record.get("X") is not None and record["X"] <= now_ms:
                continue  # past its purge time
            jobs.append(
                job_info(
                    queue,
                    id,
                    record,
                    payload=payload,
                    result=result,
                    progress=value,
                    decode=self.state.settings.decode_tasks,
                )
            )
        return jobs


def cursor_position(cursor: object) -> int:
    """A cursor of `get_jobs` as the number it stands for (0: the first page).
    A cursor is decimal digits below 10**19, valid for every state (one past
    the end gives an empty last page); anything else is refused before it
    reaches Redis, whose error reply would read as an outage."""
    if cursor is None:
        return 0
    if not isinstance(cursor, str):
        raise TypeError(f"cursor must be a str from get_jobs, not {type(cursor).__name__}")
    if not (cursor.isascii() and cursor.isdigit() and len(cursor) <= MAX_CURSOR_DIGITS):
        raise ValueError(f"not a cursor from get_jobs: {cursor!r}")
    return int(cursor)
