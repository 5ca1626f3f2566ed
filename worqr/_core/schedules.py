"""Plans of the schedules: `schedule` (an idempotent upsert), `unschedule`,
`get_schedules`. Firing is no plan of its own: the scripts that promote due
jobs fire due schedules too (lib/schedule.lua)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from .._schedules import (
    ScheduleArgs,
    ScheduleInfo,
    ScheduleSpec,
    check_schedule_options,
    cron_fires,
    schedule_info,
    schedule_spec,
)
from . import job_scripts
from .calls import Plan, command
from .jobs_submit import JobSubmission, job_options
from .kinds import QueueKinds
from .produce import Producing
from .state import CoreState, text


def checked_schedule(
    name: object, args: ScheduleArgs, encode: Callable[[str | bytes], bytes]
) -> ScheduleSpec:
    """The schedule ``name`` that ``args`` declare, checked, its jobs' options
    as `submit` records them and its payload as ``encode`` makes it; raises
    `ValueError` or `TypeError` naming the problem."""
    check_schedule_options(args.options)
    options = job_options(**args.options)
    return schedule_spec(name, args, payload=encode(args.payload), options=options)


@dataclass(eq=False)
class Schedules:
    """The schedule plans of a core (``core.schedules``)."""

    state: CoreState
    kinds: QueueKinds
    producing: Producing
    submission: JobSubmission

    def schedule(self, queue: str, name: str, args: ScheduleArgs) -> Plan[ScheduleInfo]:
        """Create or replace the schedule ``name`` of ``queue``; an equal spec
        changes nothing. Every argument is checked before anything is sent."""
        keys = self.state.queue_keys(queue)
        spec = checked_schedule(name, args, self.producing.encode_task)
        fires: list[int] = []
        if spec.cron is not None:  # computed from Redis's clock, never ours
            seconds, micros = yield command("TIME")
            now = int(seconds) * 1000 + int(micros) // 1000
            fires = cron_fires(spec.cron, spec.tz, now, now)
        publish = yield from self.state.publishing()
        _, next_ms, paused = yield from self.kinds.claim_jobs(
            queue,
            job_scripts.job_sched_set(
                keys,
                spec.name,
                spec.wire(),
                spec.payload,
                fires,
                publish=publish,
                policy=self.state.settings.jobs.policy,
            ),
        )
        yield from self.submission.register_job_queue(queue)
        nxt = int(next_ms)
        return ScheduleInfo(
            queue=queue,
            name=spec.name,
            cron=spec.cron,
            every=None if spec.every_ms is None else spec.every_ms / 1000,
            tz=spec.tz,
            next_run=None if nxt < 0 else nxt / 1000,
            overlap=spec.overlap,
            paused=bool(int(paused)),
        )

    def unschedule(self, queue: str, name: str) -> Plan[bool]:
        keys = self.state.queue_keys(queue)
        if not isinstance(name, str):
            raise TypeError(f"schedule name must be str, not {type(name).__name__}")
        removed = yield job_scripts.job_sched_remove(keys, name)
        return int(removed) == 1

    def get_schedules(self, queue: str) -> Plan[list[ScheduleInfo]]:
        keys = self.state.queue_keys(queue)
        raw = yield command("HGETALL", keys.job_sched)
        pairs = raw.items() if isinstance(raw, dict) else zip(raw[::2], raw[1::2], strict=True)
        found = [schedule_info(queue, text(name), json.loads(spec)) for name, spec in pairs]
        return sorted(found, key=lambda info: info.name)
