"""Plans of fair-share groups (`configure_group`, `get_groups`, a group's pause
and limits read back): the state lives in the queue's ``grp`` hash, one JSON
record per group (lua/lib/group.lua), and the take script's fair pick
(lua/lib/fair.lua) goes round robin over the groups that may start a job now.

A part of `Core`, given the client's state and what it knows of queue kinds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .._checks import count
from .._jobs import validate_group
from . import job_scripts
from .calls import Pinned, Plan, command
from .failures import checked_replies
from .kinds import QueueKinds
from .limits import UNSET, Keep, QueueLimits, max_active_field, rate_fields
from .state import CoreState


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """One fair-share group of a job queue, as `get_groups` reads it.

    ``queued``, ``delayed`` (delayed or retrying) and ``active``: its jobs now;
    ``paused``: `pause(queue, group=...)` holds it; ``rate`` and ``max_active``:
    the limits in force (its own, else the queue's group default, else None);
    ``closed_until``: epoch seconds until which its rate or a `RateLimited` keeps
    it closed (None: open); ``limited``: its limits keep a job from starting now.
    """

    name: str
    queued: int
    delayed: int
    active: int
    paused: bool
    rate: tuple[int, float] | None
    max_active: int | None
    closed_until: float | None
    limited: bool

    def as_json(self) -> dict[str, Any]:
        """The group as JSON-ready data (``rate`` as ``[n, seconds]``), for the
        command line's ``--json`` and the exporter's tests."""
        return {
            "name": self.name,
            "queued": self.queued,
            "delayed": self.delayed,
            "active": self.active,
            "paused": self.paused,
            "rate": list(self.rate) if self.rate else None,
            "max_active": self.max_active,
            "closed_until": self.closed_until,
            "limited": self.limited,
        }


def _number(raw: object) -> float | None:
    if raw is None or raw is False:
        return None
    return float(raw.decode() if isinstance(raw, bytes) else str(raw))


def _text(raw: bytes | str) -> str:
    return raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw


def group_info(name: str, rec: dict[str, Any], defaults: list[Any], now_ms: float) -> GroupInfo:
    """A `GroupInfo` from a group's record, the queue's group defaults
    (group_rate, group_per, group_max_active) and Redis's time."""
    d_rate, d_per, d_cap = (_number(value) for value in defaults)
    if rec.get("n") is not None:
        rate: tuple[int, float] | None = (int(rec["n"]), float(rec["s"]) / 1000)
    elif d_rate is not None and d_per is not None:
        rate = (int(d_rate), d_per / 1000)
    else:
        rate = None
    cap = rec.get("m")
    max_active = int(cap) if cap is not None else (None if d_cap is None else int(d_cap))
    reopen = rec.get("o") if rec.get("w") == "t" else None
    closed_until = float(reopen) / 1000 if reopen is not None and reopen > now_ms else None
    active = int(rec.get("a", 0))
    return GroupInfo(
        name=name,
        queued=int(rec.get("q", 0)),
        delayed=int(rec.get("d", 0)),
        active=active,
        paused=bool(rec.get("p")),
        rate=rate,
        max_active=max_active,
        closed_until=closed_until,
        limited=closed_until is not None or (max_active is not None and active >= max_active),
    )


@dataclass(eq=False)
class Groups:
    """The fair-share group plans of a core (``core.groups``)."""

    state: CoreState
    kinds: QueueKinds

    def configure_group(
        self,
        queue: str,
        group: str,
        *,
        rate: tuple[int, float] | Keep | None,
        max_active: int | Keep | None,
    ) -> Plan[None]:
        """One group's own limits (over the queue's group defaults); an option
        that is UNSET stays, None removes it. Checked before anything is written."""
        keys = self.state.queue_keys(queue)
        name = validate_group(group)
        starts, per = ("-", "") if rate is UNSET else rate_fields(rate)
        cap = "-" if max_active is UNSET else max_active_field(max_active)
        publish = yield from self.state.publishing()
        yield from self.kinds.claim_jobs(
            queue,
            job_scripts.job_group_limits(
                keys, name, rate=starts, per=per, max_active=cap, publish=publish
            ),
        )

    def pause_group(self, queue: str, group: str) -> Plan[None]:
        """Pause one group of a job queue (it may have no jobs yet)."""
        keys = self.state.queue_keys(queue)
        name = validate_group(group)
        yield from self.kinds.claim_jobs(queue, job_scripts.job_group_pause(keys, name))

    def resume_group(self, queue: str, group: str) -> Plan[None]:
        """Let a paused group's jobs start again, waking idle workers for them."""
        keys = self.state.queue_keys(queue)
        name = validate_group(group)
        publish = yield from self.state.publishing()
        yield job_scripts.job_group_resume(keys, name, publish=publish)

    def _record(self, queue: str, group: str) -> Plan[tuple[dict[str, Any], list[Any], float]]:
        keys = self.state.queue_keys(queue)
        reads = (
            command("HGET", keys.groups, group, key=keys.groups),
            command(
                "HMGET",
                keys.config,
                "group_rate",
                "group_per",
                "group_max_active",
                key=keys.config,
            ),
            command("TIME"),
        )
        request = Pinned(reads)
        raw, defaults, (seconds, micros) = checked_replies(request, (yield request))
        rec = json.loads(raw) if raw else {}
        return rec, list(defaults), int(seconds) * 1000 + int(micros) / 1000

    def group_defaults(self, queue: str) -> Plan[tuple[tuple[int, float] | None, int | None]]:
        """The queue's limits for every group (``group_rate``, ``group_max_active``)."""
        keys = self.state.queue_keys(queue)
        raw = yield command(
            "HMGET", keys.config, "group_rate", "group_per", "group_max_active", key=keys.config
        )
        info = group_info("", {}, list(raw), 0.0)
        return info.rate, info.max_active

    def is_group_paused(self, queue: str, group: str) -> Plan[bool]:
        """Whether ``group`` of ``queue`` is paused."""
        keys = self.state.queue_keys(queue)
        raw = yield command("HGET", keys.groups, validate_group(group))
        return bool(raw and json.loads(raw).get("p"))

    def group_limits(self, queue: str, group: str) -> Plan[QueueLimits]:
        """A group's limits in force, its active jobs, until when it is closed and
        whether it is paused (`get_limits(queue, group=...)`)."""
        name = validate_group(group)
        rec, defaults, now_ms = yield from self._record(queue, name)
        info = group_info(name, rec, defaults, now_ms)
        return QueueLimits(
            rate=info.rate,
            max_active=info.max_active,
            active=info.active,
            closed_until=info.closed_until,
            paused=info.paused,
        )

    def get_groups(
        self, queue: str, *, limit: int, cursor: str | None
    ) -> Plan[tuple[list[GroupInfo], str | None]]:
        """A page of the queue's groups and the cursor of the next (None: done)."""
        keys = self.state.queue_keys(queue)
        size = count("limit", limit, low=1, high=10_000)
        if cursor is not None and (not isinstance(cursor, str) or not cursor.isdigit()):
            raise ValueError(f"cursor must be a cursor get_groups returned, got {cursor!r}")
        groups: list[GroupInfo] = []
        at = cursor or "0"
        while True:
            reply = yield job_scripts.job_groups(keys, cursor=at, count=size)
            at, flat, defaults, now_ms = _text(reply[0]), reply[1], list(reply[2]), reply[3]
            for i in range(0, len(flat), 2):
                rec = json.loads(flat[i + 1])
                groups.append(group_info(_text(flat[i]), rec, defaults, float(now_ms)))
            if at == "0" or len(groups) >= size:
                return groups, (None if at == "0" else at)
