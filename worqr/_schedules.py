"""What the schedules hand out and take in, without I/O: `ScheduleInfo`, the
checked spec of a schedule, and cron fire times.

Lua never parses cron: fire times of a cron schedule are computed here, with
`cronsim` (the ``worqr[cron]`` extra) and the standard library's `zoneinfo`,
and stored with the schedule as a buffer that workers and producers refill.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ._checks import flag, seconds

BUFFER = 8
"""Fire times of a cron schedule computed ahead (the scripts ask for more when
three are left)."""

MISSED_LIMIT = 100
"""Missed fire times a resync sends at most (the latest ones)."""

MAX_SCHEDULE_NAME = 200
"""Longest schedule name, in characters (its jobs' ids are ``cron:<name>:<ms>``)."""

_SCHEDULE_OPTIONS = frozenset({"priority", "retries", "backoff", "timeout", "result_ttl"})


@dataclass(frozen=True, slots=True)
class ScheduleInfo:
    """A schedule of a queue. ``cron`` (with ``tz``) or ``every`` (seconds);
    ``next_run``: when it next fires, in Redis server seconds (None while a cron
    schedule waits for fire times, which workers compute, and while it is
    paused); ``overlap``: False skips a fire while the previous fire's job is
    live; ``paused``: `Worqr.pause_schedule` holds it."""

    queue: str
    name: str
    cron: str | None
    every: float | None
    tz: str
    next_run: float | None
    overlap: bool = True
    last_run: float | None = None
    last_job: str | None = None
    paused: bool = False


@dataclass(frozen=True, slots=True)
class ScheduleArgs:
    """A schedule as `Worqr.schedule` takes it after its queue and name, not
    checked yet: what `Worker.cron` keeps until the worker starts, and what the
    core's plan checks (`schedule_spec`). ``options``: its jobs' options, by
    the names `submit` takes."""

    cron: str | None
    every: float | None
    tz: str
    payload: str | bytes
    overlap: bool
    options: dict[str, Any]

    def keywords(self) -> dict[str, Any]:
        """The keyword arguments of `Worqr.schedule` that declare this schedule."""
        return {
            "cron": self.cron,
            "every": self.every,
            "tz": self.tz,
            "payload": self.payload,
            "overlap": self.overlap,
            **self.options,
        }


@dataclass(frozen=True, slots=True)
class ScheduleSpec:
    """A checked schedule, ready for `job_sched_set`."""

    name: str
    cron: str | None
    every_ms: int | None
    tz: str
    overlap: bool
    options: dict[str, Any]
    payload: bytes

    @property
    def version(self) -> str:
        """A digest of everything the user asked: equal specs, equal versions."""
        text = json.dumps(
            [
                self.cron,
                self.every_ms,
                self.tz,
                self.overlap,
                self.options,
                hashlib.sha256(self.payload).hexdigest(),
            ],
            sort_keys=True,
            separators=(",", ":"),
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def wire(self) -> str:
        spec: dict[str, Any] = {
            "v": self.version,
            "z": self.tz,
            "o": 1 if self.overlap else 0,
            "j": self.options,
        }
        if self.cron is not None:
            spec["c"] = self.cron
        else:
            spec["e"] = self.every_ms
        return json.dumps(spec, separators=(",", ":"))


def validate_schedule_name(name: object) -> str:
    if not isinstance(name, str):
        raise TypeError(f"schedule name must be str, not {type(name).__name__}")
    if not name or len(name) > MAX_SCHEDULE_NAME:
        raise ValueError(
            f"schedule name must be 1 to {MAX_SCHEDULE_NAME} characters, got {len(name)}"
        )
    if any(ord(char) < 32 or ord(char) == 127 for char in name):
        raise ValueError(f"schedule name {name!r} contains a control character")
    return name


def check_tz(tz: object) -> ZoneInfo:
    if not isinstance(tz, str):
        raise TypeError(f"tz must be an IANA time zone name (str), not {type(tz).__name__}")
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {tz!r} (an IANA name, like 'Europe/Berlin')") from None


def _cronsim() -> Any:
    try:
        import cronsim  # optional: the worqr[cron] extra
    except ImportError:
        raise ImportError(
            "cron schedules need the cronsim package: pip install 'worqr[cron]'"
        ) from None
    return cronsim


def check_cron(expression: object, tz: ZoneInfo) -> str:
    if not isinstance(expression, str):
        raise TypeError(f"cron must be a str, not {type(expression).__name__}")
    cronsim = _cronsim()
    try:
        it = cronsim.CronSim(expression, datetime.now(tz))
        next(it)
    except cronsim.CronSimError as error:
        raise ValueError(f"bad cron expression {expression!r}: {error}") from None
    except StopIteration:
        raise ValueError(f"cron expression {expression!r} never fires") from None
    return expression


def check_every(every: object) -> int:
    every_ms = round(seconds("every", every, above=True) * 1000)
    if every_ms < 1:
        raise ValueError(f"every must be at least 0.001 seconds, got {every!r}")
    return every_ms


def schedule_spec(
    name: object, args: ScheduleArgs, *, payload: bytes, options: dict[str, Any]
) -> ScheduleSpec:
    """Check a schedule's arguments (``payload`` encoded, ``options`` as
    `job_options` made them); raises `ValueError`/`TypeError` naming the problem."""
    validate_schedule_name(name)
    assert isinstance(name, str)
    if (args.cron is None) == (args.every is None):
        raise ValueError("give cron or every, exactly one of them")
    zone = check_tz(args.tz)
    overlaps = flag("overlap", args.overlap)
    if args.cron is not None:
        cron = check_cron(args.cron, zone)
        return ScheduleSpec(name, cron, None, args.tz, overlaps, options, payload)
    return ScheduleSpec(name, None, check_every(args.every), args.tz, overlaps, options, payload)


def check_schedule_options(options: dict[str, Any]) -> None:
    unknown = sorted(set(options) - _SCHEDULE_OPTIONS)
    if unknown:
        raise TypeError(
            f"schedule() got unexpected option(s) {', '.join(unknown)}; "
            f"a schedule's jobs take {', '.join(sorted(_SCHEDULE_OPTIONS))}"
        )


def cron_fires(cron: str, tz: str, after_ms: int, now_ms: int) -> list[int]:
    """Fire times (epoch ms, ascending) to buffer: the missed ones after
    ``after_ms`` up to ``now_ms`` (at most the latest `MISSED_LIMIT`), then the
    next `BUFFER` after both. DST as `cronsim` (Debian cron's rules): a time
    skipped by a spring-forward fires once the clock jumps, a repeated hour's
    daily time fires once."""
    cronsim = _cronsim()
    zone = ZoneInfo(tz)
    fires: list[int] = []
    if after_ms < now_ms:
        start = datetime.fromtimestamp(now_ms / 1000 + 0.001, UTC).astimezone(zone)
        for moment in cronsim.CronSim(cron, start, reverse=True):
            at = _ms(moment)
            if at <= after_ms or len(fires) >= MISSED_LIMIT:
                break
            if at <= now_ms:
                fires.append(at)
        fires.reverse()
    origin = max(after_ms, now_ms)
    start = datetime.fromtimestamp(origin / 1000, UTC).astimezone(zone)
    upcoming = 0
    for moment in cronsim.CronSim(cron, start):
        at = _ms(moment)
        if at > origin:
            fires.append(at)
            upcoming += 1
            if upcoming >= BUFFER:
                break
    return fires


def _ms(moment: datetime) -> int:
    return round(moment.timestamp() * 1000)


def schedule_info(queue: str, name: str, spec: dict[str, Any]) -> ScheduleInfo:
    """A schedule as `get_schedules` reads its stored spec."""
    every = spec.get("e")
    paused = bool(spec.get("p"))
    nxt = None if paused else spec.get("n")
    last = spec.get("L")
    return ScheduleInfo(
        queue=queue,
        name=name,
        cron=spec.get("c"),
        every=None if every is None else int(every) / 1000,
        tz=str(spec.get("z", "UTC")),
        next_run=None if nxt is None else int(nxt) / 1000,
        overlap=spec.get("o", 1) != 0,
        last_run=None if last is None else int(last) / 1000,
        last_job=spec.get("i"),
        paused=paused,
    )
