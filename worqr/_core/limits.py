"""Per-queue options shared by the mesh (`configure_queue`), and reading a job
queue's traffic limits back: the rate and cap `job_take.lua` enforces (lib/limit)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Final, Literal

from .._checks import count, optional_count, seconds
from . import job_scripts
from .calls import Pinned, Plan, command
from .failures import checked_replies
from .kinds import QueueKinds
from .state import CoreState


class Unset(enum.Enum):
    """The default of an option `configure_queue` leaves as it is."""

    UNSET = "UNSET"


UNSET: Final = Unset.UNSET
MIN_RATE_SECONDS: Final = 0.001
"""The shortest window of a rate: one millisecond, the unit it is kept in."""
MAX_RATE_SECONDS: Final = 30 * 24 * 3600
"""The longest window of a rate (30 days): lib/limit keeps its schedule in
microseconds, which stay exact Lua integers with a window this long."""
Keep = Literal[Unset.UNSET]


@dataclass(frozen=True, slots=True)
class QueueLimits:
    """A job queue's traffic limits and whether they hold it back now.

    ``rate``: at most ``n`` starts in any ``seconds`` (``(n, seconds)``), spaced
    ``seconds / n`` apart; ``max_active``: at most that many active jobs;
    ``active``: its active jobs now; ``closed_until``: epoch seconds until which
    the rate's spacing or a handler's `RateLimited` lets no job start (None: open);
    ``paused``: `Worqr.pause` holds every job back until `Worqr.resume`.
    """

    rate: tuple[int, float] | None
    max_active: int | None
    active: int
    closed_until: float | None
    paused: bool = False

    @property
    def limited(self) -> bool:
        """Whether the limits keep a job from starting now."""
        capped = self.max_active is not None and self.active >= self.max_active
        return capped or self.closed_until is not None

    def as_json(self) -> dict[str, Any]:
        """The limits as JSON-ready data (``rate`` as ``[n, seconds]``), for the
        command line's ``--json`` and the web view."""
        return {
            "rate": list(self.rate) if self.rate else None,
            "max_active": self.max_active,
            "active": self.active,
            "closed_until": self.closed_until,
            "limited": self.limited,
            "paused": self.paused,
        }


def rate_fields(rate: tuple[int, float] | None) -> tuple[str, str]:
    """A rate as job_limits.lua's ARGV (starts, window ms); raises on a bad one."""
    if rate is None:
        return "", ""
    if not isinstance(rate, tuple) or len(rate) != 2:
        raise TypeError(f"rate must be (starts, seconds) or None, got {rate!r}")
    # Any count over any window from 1 ms to MAX_RATE_SECONDS: lib/limit spaces
    # starts in (fractions of) microseconds and rounds each take's slots up, so
    # even a rate finer than its clock is never exceeded.
    starts = count("rate starts", rate[0], low=1)
    window = seconds("rate seconds", rate[1], low=MIN_RATE_SECONDS, high=MAX_RATE_SECONDS)
    return str(starts), str(round(window * 1000))


def max_active_field(max_active: int | None) -> str:
    if max_active is None:
        return ""
    return str(count("max_active", max_active, low=1))


LIMIT_FIELDS = ("rate", "per", "max_active", "tat", "shut", "paused")
"""The config fields lib/limit.lua keeps (rate and per ms, the cap, the next
free slot in µs, shut-until ms, the pause), in the order `parse_limits` takes them."""


def _number(raw: object) -> float | None:
    return None if raw is None else float(raw.decode() if isinstance(raw, bytes) else str(raw))


def parse_limits(fields: list[Any], active: Any, now_micros: int) -> QueueLimits:
    """A `QueueLimits` from the `LIMIT_FIELDS` of a config hash, the queue's
    active count and Redis's time (for `get_limits` and the exporter)."""
    rate, per, cap, tat, shut, paused = (_number(field) for field in fields)
    slot = tat if tat is not None and rate is not None else 0.0  # the next free slot, µs
    closed = max(slot, (shut or 0.0) * 1000)
    return QueueLimits(
        rate=None if rate is None or per is None else (int(rate), per / 1000),
        max_active=None if cap is None else int(cap),
        active=int(active or 0),
        closed_until=closed / 1_000_000 if closed > now_micros else None,
        paused=paused is not None,
    )


@dataclass(eq=False)
class Limits:
    """The queue option and limit plans of a core (``core.limits``)."""

    state: CoreState
    kinds: QueueKinds

    def configure_queue(
        self,
        queue: str,
        *,
        max_recoveries: int | Keep | None,
        rate: tuple[int, float] | Keep | None,
        max_active: int | Keep | None,
        group_rate: tuple[int, float] | Keep | None,
        group_max_active: int | Keep | None,
    ) -> Plan[None]:
        """Per-queue options, stored in Redis for every worker of the mesh; an
        option that is UNSET is left as it is, None removes it.

        ``max_recoveries`` overrides the reaper's setting for this queue; -1 means
        tasks are never dead-lettered for killing their workers (persistent tasks).
        ``rate`` and ``max_active`` limit a job queue (and make a new queue one):
        every argument is checked before anything is written. ``group_rate`` and
        ``group_max_active`` are the defaults of every group of the queue (a
        group's own, `configure_group`, come first).
        """
        keys = self.state.queue_keys(queue)
        if max_recoveries is not UNSET:
            optional_count("max_recoveries", max_recoveries, low=-1)
        starts, per = ("-", "") if rate is UNSET else rate_fields(rate)
        cap = "-" if max_active is UNSET else max_active_field(max_active)
        g_starts, g_per = ("-", "") if group_rate is UNSET else rate_fields(group_rate)
        g_cap = "-" if group_max_active is UNSET else max_active_field(group_max_active)
        if any(o is not UNSET for o in (rate, max_active, group_rate, group_max_active)):
            publish = yield from self.state.publishing()
            yield job_scripts.job_limits(
                keys,
                rate=starts,
                per=per,
                max_active=cap,
                publish=publish,
                group_rate=g_starts,
                group_per=g_per,
                group_max_active=g_cap,
            )
            self.kinds.learned(queue, "jobs")
        if max_recoveries is None:
            yield command("HDEL", keys.config, "max_recoveries")
        elif max_recoveries is not UNSET:
            yield command("HSET", keys.config, "max_recoveries", max_recoveries)

    def get_limits(self, queue: str) -> Plan[QueueLimits]:
        """The queue's limits and whether they hold it back now (Redis's clock)."""
        keys = self.state.queue_keys(queue)
        reads = (
            command("HMGET", keys.config, *LIMIT_FIELDS, "kind", key=keys.config),
            command("HGET", keys.job_counts, "active", key=keys.job_counts),
            command("TIME"),
        )
        request = Pinned(reads)
        (*fields, kind), active, (seconds, micros) = checked_replies(request, (yield request))
        limits = parse_limits(fields, active, int(seconds) * 1_000_000 + int(micros))
        if kind not in (b"jobs", "jobs") and limits.rate is None and limits.max_active is None:
            yield from self.kinds.refuse_task_queue(queue)
        return limits
