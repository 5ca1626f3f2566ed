"""Plans that create jobs: `submit` and `submit_many`."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from .. import _tracing
from .._checks import MAX_EPOCH_SECONDS, count, flag, optional_count, optional_seconds
from .._dedup import Dedup
from .._errors import AmbiguousResultError, WorqrError, WrongQueueKindError
from .._jobs import (
    JobRef,
    JobSettings,
    check_backoff,
    ms,
    new_job_id,
    validate_group,
    validate_job_id,
)
from . import job_scripts
from .calls import Call, Plan, command
from .job_scripts import SubmitItem
from .kinds import QueueKinds
from .produce import REGISTRY_REFRESH, Producing
from .state import CoreState

MAX_PRIORITY = 1_000_000


def job_options(
    *,
    delay: object = None,
    at: object = None,
    priority: object = 0,
    unique: object = False,
    retries: object = None,
    backoff: object = None,
    timeout: object = None,
    result_ttl: object = None,
    group: object = None,
) -> dict[str, Any]:
    """The options of `submit`, checked, as the record's short keys (without the
    unique marker, which depends on each payload). Raises before anything is sent."""
    if delay is not None and at is not None:
        raise ValueError("give delay or at, not both")
    options: dict[str, Any] = {}
    wait = optional_seconds("delay", delay)
    if wait:
        options["d"] = ms(wait)
    due = optional_seconds("at", at, high=MAX_EPOCH_SECONDS)  # epoch seconds, Redis's clock
    if due is not None:
        options["A"] = ms(due)
    rank = count("priority", priority, low=-MAX_PRIORITY, high=MAX_PRIORITY)
    if rank:
        options["P"] = rank
    flag("unique", unique)
    tries = optional_count("retries", retries)
    if tries is not None:
        options["R"] = tries
    if backoff is not None:
        checked = check_backoff(backoff)
        options["B"] = checked if isinstance(checked, float) else checked.as_wire()
    limit = optional_seconds("timeout", timeout, above=True)
    if limit is not None:
        options["T"] = ms(limit)
    ttl = optional_seconds("result_ttl", result_ttl)
    if ttl is not None:
        options["k"] = ms(ttl)
    if group is not None:
        options["G"] = validate_group(group)
    return options


def dedup_options(dedup: object, ids: list[str | None], *, unique: bool) -> dict[str, Any]:
    """A single submit's dedup key as the record's short keys (none for None):
    refused with ``unique`` or an explicit id, which decide duplicates their own way."""
    if dedup is None:
        return {}
    if not isinstance(dedup, Dedup):
        raise TypeError(f"dedup must be a worqr.Dedup, not {type(dedup).__name__}")
    if unique:
        raise ValueError("give dedup or unique=True, not both")
    if len(ids) != 1 or ids[0] is not None:
        raise ValueError("dedup takes no id: the key names the job (give one or the other)")
    return dedup.as_options()


def shortest_retention(jobs: JobSettings, own_ttl_ms: int | None) -> float:
    """Seconds a job is surely kept after it ends, however it ends: its result
    TTL (``own_ttl_ms``, else the default), failure_ttl, cancelled_ttl, and
    min_retention (past max_retained, the cap may purge it from then on)."""
    result_ttl = jobs.result_ttl if own_ttl_ms is None else own_ttl_ms / 1000
    return min(result_ttl, jobs.failure_ttl, jobs.cancelled_ttl, jobs.min_retention)


def _ambiguous(chunk: list[SubmitItem], done: int, total: int, kept: float, resends: float) -> str:
    """What a submit call that may or may not have applied says: which jobs,
    why it was not resent, and when submitting them again is safe."""
    which = f"job {chunk[0][0]!r}" if len(chunk) == 1 else f"{len(chunk)} jobs"
    before = f"{done} of {total} jobs were submitted; " if total > len(chunk) else ""
    return (
        f"{before}{which} may or may not have been submitted: the connection failed after "
        f"the call was sent. It was not resent: a job kept only {kept:g} s after it ends "
        f"(result_ttl, failure_ttl, cancelled_ttl, min_retention) can be purged before "
        f"resends (for up to {resends:g} s, Settings.retry_deadline) would find it, and a "
        "resend would then create it twice. Submitting again with the same id is safe "
        "while the first is still queued or running (it answers duplicate=True), but "
        "runs the job again if the first already ended"
    )


def _items(
    data: list[bytes], ids: list[str | None], recorded: dict[str, Any], *, unique: bool
) -> list[SubmitItem]:
    """The jobs of a submit: each one's id (a new one when None), the nonce a
    resend finds it by, its payload, and its options with, when ``unique``, the
    hash of its payload."""
    items: list[SubmitItem] = []
    for payload, id in zip(data, ids, strict=True):
        own = dict(recorded)
        if unique:
            own["u"] = hashlib.sha256(payload).hexdigest()
        job_id = new_job_id() if id is None else validate_job_id(id)
        nonce = uuid.uuid4().hex[:16]
        items.append((job_id, nonce, payload, json.dumps(own, separators=(",", ":"))))
    return items


def _chunks(items: list[SubmitItem], size: int) -> Iterator[list[SubmitItem]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class JobSubmission:
    """Creating jobs: the checks and the replication wait of `Producing`, the
    job queue's own script."""

    def __init__(self, state: CoreState, kinds: QueueKinds, producing: Producing) -> None:
        self.state = state
        self.kinds = kinds
        self.producing = producing

    def submit_many(
        self,
        queue: str,
        payloads: Iterable[object],
        *,
        ids: Iterable[str | None] | None = None,
        unique: bool = False,
        dedup: Dedup | None = None,
        **options: Any,
    ) -> Plan[list[JobRef]]:
        """Create jobs in calls of at most `JobSettings.submit_chunk`; each call is
        atomic and resend-safe, the calls are not atomic together. ``dedup``: one
        job (`submit`) without an id. Traced as one PRODUCER span (worqr.tracing)."""
        if isinstance(payloads, str | bytes):
            raise TypeError("submit_many takes an iterable of payloads, not one payload")
        data = [self.producing.encode_task(payload) for payload in payloads]  # all checked first
        wanted: list[str | None] = [None] * len(data) if ids is None else list(ids)
        if len(wanted) != len(data):
            raise ValueError("give one id (or None) per payload")
        recorded = job_options(unique=unique, **options)
        recorded.update(dedup_options(dedup, wanted, unique=unique))
        sending = _tracing.traced(queue, "submit_many" if ids is None else "submit")
        return (
            yield from _tracing.around(
                sending, self._submit(queue, data, wanted, recorded, unique, sending)
            )
        )

    def _submit(
        self,
        queue: str,
        data: list[bytes],
        wanted: list[str | None],
        recorded: dict[str, Any],
        unique: bool,
        sending: _tracing.Sending | None,
    ) -> Plan[list[JobRef]]:
        state = self.state
        keys = state.queue_keys(queue)
        if sending is not None:  # the trace context: a record field, never the payload
            recorded.update(sending.carrier)
        items = _items(data, wanted, recorded, unique=unique)
        if sending is not None:
            sending.name([item[0] for item in items])
        if not items:
            return []
        publish = yield from state.publishing()
        policy = state.settings.jobs.policy
        # A resend finds what the first call created by its nonce, in the job's
        # record: only while the record lasts. A job that may be purged before
        # resends stop is not resent after an ambiguous failure (invariant 5).
        kept = shortest_retention(state.settings.jobs, recorded.get("k"))
        resendable = kept >= state.settings.retry_deadline
        refs: list[JobRef] = []
        for chunk in _chunks(items, state.settings.jobs.submit_chunk):
            call = job_scripts.job_submit(
                keys, chunk, publish=publish, policy=policy, resendable=resendable
            )
            reply = yield from self._submit_call(queue, call, chunk, len(refs), len(items), kept)
            if not refs:  # registered once the queue surely is a job queue
                self.kinds.learned(queue, "jobs")
                yield from self.register_job_queue(queue)
            for id, created, _state in reply:
                refs.append(JobRef(queue, _text(id), duplicate=int(created) == 0))
        return refs

    def _submit_call(
        self, queue: str, call: Call, chunk: list[SubmitItem], done: int, total: int, kept: float
    ) -> Plan[Any]:
        """One call of a submit (``chunk``, after ``done`` of ``total`` jobs); a
        failure says what it means for the whole submit."""
        try:
            return (
                yield from self.producing.replicated(
                    call,
                    len(chunk),
                    done,
                    total,
                    what="job(s)",
                    verb="submitted",
                    again="submitting them again with the same ids creates nothing while "
                    "they are queued or running, but runs again any that already ended",
                )
            )
        except WrongQueueKindError as error:
            raise WrongQueueKindError(
                f"queue {queue!r}: {error}", queue_kind=error.queue_kind
            ) from None
        except AmbiguousResultError as error:
            raise AmbiguousResultError(
                _ambiguous(chunk, done, total, kept, self.state.settings.retry_deadline)
            ) from error
        except Exception as error:
            if not done:
                raise
            raise WorqrError(
                f"{done} of {total} jobs were submitted, the rest were not: {error}"
            ) from error

    def register_job_queue(self, queue: str) -> Plan[None]:
        """Add ``queue`` to the mesh's registries of queues and job queues, at
        most once per `REGISTRY_REFRESH` (as `register_queue`)."""
        state = self.state
        if time.monotonic() - state.registered.get(queue, -REGISTRY_REFRESH) >= REGISTRY_REFRESH:
            yield command("SADD", state.mesh.jobqueues, queue)  # back after a delete, too
        yield from self.producing.register_queue(queue)


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
