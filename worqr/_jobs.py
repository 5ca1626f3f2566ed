"""What the job layer hands out and takes in, without I/O: `JobRef`, `JobInfo`,
`Backoff`, `JobSettings`, job ids, and reading a job's record."""

from __future__ import annotations

import itertools
import json
import os
import random
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ._checks import count, number, optional_seconds, seconds
from ._process import Process, decode_task

if TYPE_CHECKING:
    from ._flows import ChildOutcome

JobState = Literal[
    "delayed", "queued", "active", "retrying", "waiting", "finished", "failed", "cancelled"
]

STATES: tuple[JobState, ...] = (
    "delayed",
    "queued",
    "active",
    "retrying",
    "finished",
    "failed",
    "cancelled",
)
"""Every state, in lifecycle order."""

LISTED_STATES: tuple[JobState, ...] = (
    "delayed",
    "queued",
    "active",
    "retrying",
    "waiting",
    "finished",
    "failed",
    "cancelled",
)
"""The states `get_jobs` lists and bulk cancels take: `STATES` and "waiting"
(flow parents until their children end, keep_last follow-ups until the run
ends), which `count_jobs` counts only once a queue has such jobs."""

STATE_CODES: dict[str, JobState] = {
    "d": "delayed",
    "q": "queued",
    "a": "active",
    "r": "retrying",
    "w": "waiting",  # a flow parent, until its children end (not one of STATES)
    "f": "finished",
    "x": "failed",
    "c": "cancelled",
}
TERMINAL: frozenset[JobState] = frozenset({"finished", "failed", "cancelled"})

MAX_ID_CHARS = 256
APPLIED_TTL_MS = 24 * 3600 * 1000  # how long a target remembers a flow hop it applied
IDLE_PURGE = 500  # records a take that finishes nothing (a poll) purges at most: ~1 ms
MAX_ERROR_CHARS = 1024
MAX_BACKOFF_FACTOR = 1000.0  # the delay grows by at most this each failure (1000x: hours in 3)
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


_SEQUENCE = itertools.count()  # next() is atomic: ids of one process stay in order


def new_job_id() -> str:
    """26 Crockford base-32 characters, like a ULID: 48 bits of milliseconds,
    16 bits of a per-process sequence, 64 random bits. Ids sort by creation
    time (and, from one process, by creation); the client's clock only orders
    ids, it decides nothing."""
    millis = time.time_ns() // 1_000_000
    value = millis << 80 | (next(_SEQUENCE) & 0xFFFF) << 64 | int.from_bytes(os.urandom(8), "big")
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def validate_job_id(id: object) -> str:
    if not isinstance(id, str):
        raise TypeError(f"job id must be str, not {type(id).__name__}")
    if not id or len(id) > MAX_ID_CHARS:
        raise ValueError(f"job id must be 1 to {MAX_ID_CHARS} characters, got {len(id)}")
    if any(ord(char) < 32 or ord(char) == 127 for char in id):
        raise ValueError(f"job id {id!r} contains a control character")
    if any(0xD800 <= ord(char) <= 0xDFFF for char in id):
        raise ValueError(f"job id {id!r} contains a lone surrogate, which UTF-8 cannot hold")
    return id


def validate_like_id(what: str, value: object) -> str:
    """A name that follows the job-id rules (a `str` of 1 to 256 characters, no
    control characters), its errors naming it ``what``."""
    try:
        return validate_job_id(value)
    except TypeError:
        raise TypeError(f"{what} must be str, not {type(value).__name__}") from None
    except ValueError as error:
        raise ValueError(str(error).replace("job id", what, 1)) from None


def validate_group(group: object) -> str:
    """A job's fair-share group: the job-id rules."""
    return validate_like_id("group", group)


@dataclass(frozen=True, slots=True)
class Backoff:
    """The delay before a failed job's next attempt: ``min(max, base *
    factor ** (failures - 1))``, less up to ``jitter`` of it at random ("equal
    jitter" at 0.5: at least half the delay, never zero, so retries of many jobs
    that failed together spread out instead of storming back together)."""

    base: float = 1.0
    factor: float = 2.0
    max: float = 600.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        seconds("Backoff.base", self.base)
        number("Backoff.factor", self.factor, low=1.0, high=MAX_BACKOFF_FACTOR)
        seconds("Backoff.max", self.max)
        number("Backoff.jitter", self.jitter, low=0.0, high=1.0)

    def delay(self, failures: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after the ``failures``-th failure (1-based)."""
        exponent = max(0, failures - 1)
        try:
            raw = min(self.max, self.base * self.factor**exponent)
        except OverflowError:
            raw = self.max
        return raw * (1.0 - self.jitter * (rng or random).random())

    def as_wire(self) -> list[float]:
        return [self.base, self.factor, self.max, self.jitter]

    @classmethod
    def from_wire(cls, value: Any) -> Backoff | float:
        """A record's backoff: the four numbers, or fixed seconds."""
        if isinstance(value, list) and len(value) == 4:
            return cls(*(float(v) for v in value))
        return float(value)


def backoff_delay(backoff: Backoff | float, failures: int) -> float:
    """Seconds before the next attempt: a `Backoff`, or fixed seconds (no jitter)."""
    return backoff.delay(failures) if isinstance(backoff, Backoff) else float(backoff)


@dataclass(frozen=True, slots=True)
class JobSettings:
    """How the job layer behaves: defaults for jobs, retention and budgets.

    Attributes:
        retries: handler failures retried per job (a job's own ``retries`` and
            its handler's override it).
        backoff: delay between them: a `Backoff`, or fixed seconds.
        timeout: seconds a handler may run (None: no limit).
        result_ttl, failure_ttl, cancelled_ttl: seconds finished, failed and
            cancelled jobs are kept after they end (their records, payloads,
            results), exactly: from ``ended + ttl`` on every read treats the job
            as gone, and a take, an idle member's poll or the mesh's upkeep
            purges its record within seconds. A job's own ``result_ttl``
            overrides the first. A submit whose job may be kept less than
            ``Settings.retry_deadline`` (the least of its result TTL, the other
            two and ``min_retention``) is not resent after an ambiguous failure:
            it raises `AmbiguousResultError` instead.
        max_retained: terminal jobs per queue past which the earliest to expire
            go first (never one that ended less than ``min_retention`` ago).
        min_retention: seconds a job that a `result()` call waits on is kept at
            least after it ends, whatever its TTL, so the woken waiter can read
            it; and the least time the ``max_retained`` cap keeps a terminal job.
        max_result_bytes: largest result a handler may return; a larger one fails
            the job.
        promote_chunk, purge_budget, skip_budget, submit_chunk: jobs promoted per
            script call, least records purged per take, cancelled entries a take
            skips at most, jobs per `submit_many` script call.
        timer_grace: seconds the timer holder's key outlives its wake time.
        misfire_grace: seconds a schedule's missed fires stay owed: when the
            oldest fire due is at most this late, each due fire creates its
            job; later than that (every worker was down), only the latest does.
        relay_lease: seconds before a flow's hop no relay applied is relayed by
            another worker (the one that wrote it relays it at once).
    """

    retries: int = 3
    backoff: Backoff | float = field(default_factory=Backoff)
    timeout: float | None = None
    result_ttl: float = 3600.0
    failure_ttl: float = 7 * 24 * 3600.0
    cancelled_ttl: float = 3600.0
    max_retained: int = 100_000
    min_retention: float = 10.0
    max_result_bytes: int = 16 * 1024 * 1024
    promote_chunk: int = 1000
    purge_budget: int = 16
    skip_budget: int = 1000
    submit_chunk: int = 500
    timer_grace: float = 1.0
    misfire_grace: float = 5.0
    relay_lease: float = 10.0
    policy: str = field(init=False, repr=False, compare=False)
    """What scripts need of these settings, as their JSON argument (ms)."""

    def __post_init__(self) -> None:
        count("retries", self.retries)
        check_backoff(self.backoff)
        optional_seconds("timeout", self.timeout, above=True)
        for name in (
            "result_ttl",
            "failure_ttl",
            "cancelled_ttl",
            "min_retention",
            "timer_grace",
            "misfire_grace",
            "relay_lease",
        ):
            seconds(name, getattr(self, name))
        for name in (
            "max_retained",
            "max_result_bytes",
            "promote_chunk",
            "purge_budget",
            "skip_budget",
            "submit_chunk",
        ):
            count(name, getattr(self, name), low=1)
        policy = json.dumps(
            {
                "result_ttl": ms(self.result_ttl),
                "failure_ttl": ms(self.failure_ttl),
                "cancelled_ttl": ms(self.cancelled_ttl),
                "min_retention": ms(self.min_retention),
                "max_retained": self.max_retained,
                "purge_budget": self.purge_budget,
                "promote_chunk": self.promote_chunk,
                "skip_budget": self.skip_budget,
                "timer_grace": ms(self.timer_grace),
                "misfire_grace": ms(self.misfire_grace),
                "relay_lease": ms(self.relay_lease),
                "applied_ttl": APPLIED_TTL_MS,
                "idle_purge": max(self.purge_budget, IDLE_PURGE),
            },
            separators=(",", ":"),
        )
        object.__setattr__(self, "policy", policy)


def check_backoff(backoff: object) -> Backoff | float:
    if isinstance(backoff, Backoff):
        return backoff
    return seconds("backoff", backoff)


def ms(seconds: float) -> int:
    return max(0, round(seconds * 1000))


@dataclass(frozen=True, slots=True)
class JobRef:
    """What `submit` returns: the job's queue and id. ``duplicate``: a live job
    with this id (or, with ``unique=True``, this payload) was found, and nothing
    was created; ``id`` is then that job's."""

    queue: str
    id: str
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class JobInfo:
    """A job as `get_job` and `get_jobs` read it. Times are Redis server seconds."""

    id: str
    queue: str
    state: JobState
    payload: str | bytes | None = field(repr=False)
    attempts: int
    result: str | bytes | None = field(repr=False)
    error: str | None
    created: float
    started: float | None
    ended: float | None
    due: float | None
    progress: str | bytes | None = field(repr=False)
    group: str | None = None
    priority: int = 0


def _seconds(record: dict[str, Any], key: str) -> float | None:
    value = record.get(key)
    return None if value is None else float(value) / 1000


def decode_result(kind: str | None, value: bytes | None) -> str | bytes | None:
    """A stored result as the handler returned it: ``str``, ``bytes`` or None."""
    if kind == "n" or value is None:
        return None
    return value.decode("utf-8", "surrogateescape") if kind == "s" else value


def job_info(
    queue: str,
    id: str,
    record: dict[str, Any],
    *,
    payload: bytes | None,
    result: bytes | None,
    progress: bytes | None,
    decode: bool,
) -> JobInfo:
    """A `JobInfo` from a job's record (the JSON the scripts keep) and values."""
    state = STATE_CODES[record["s"]]
    return JobInfo(
        id=id,
        queue=queue,
        state=state,
        payload=None if payload is None else decode_task(payload, decode),
        attempts=int(record.get("a", 0)),
        result=decode_result(record.get("y"), result) if state == "finished" else None,
        error=record.get("E"),
        created=float(record["c"]) / 1000,
        started=_seconds(record, "t"),
        ended=_seconds(record, "e") if state in TERMINAL else None,
        due=_seconds(record, "v") if state in ("delayed", "retrying") else None,
        progress=None if progress is None else decode_task(progress, decode),
        group=record.get("G"),
        priority=int(record.get("P", 0)),
    )


def error_text(error: BaseException) -> str:
    """``"<ExceptionType>: <message>"``, at most 1 KB: what a failed job keeps."""
    message = " ".join(str(error).split())
    text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 3] + "..."


@dataclass(frozen=True, slots=True)
class JobProcess(Process):
    """A job being worked on: its process (``id`` is the pid) and what its
    handler runs with. ``entry`` is ``job_id#life``; ``waited`` the seconds from
    when it was available (due) to its start, by Redis's clock."""

    job_id: str
    entry: str
    attempt: int
    failures: int
    recoveries: int
    waited: float
    retries: int | None
    backoff: Backoff | float | None
    timeout: float | None
    children: tuple[ChildOutcome, ...] | None = None
    """A flow parent's children as they ended (`current_job().children()`)."""
    child_policy: str | None = None
    traceparent: str | None = None
    """The W3C trace context its submit left in the record (worqr.tracing)."""
    tracestate: str | None = None
    lost_by: str | None = None
    """The worker whose death returned the job, on the first run after that failover."""
