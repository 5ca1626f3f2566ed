"""Refilling cron schedules' fire times: the caller of a script that fired a
cron schedule (a take, a promote, a schedule upsert) computes the next fire
times in Python and sends them back (Lua never parses cron)."""

from __future__ import annotations

import logging
from typing import Any

from .._schedules import cron_fires
from . import job_scripts
from .calls import Plan
from .state import CoreState, text

logger = logging.getLogger("worqr")

REFILL_FIELDS = 6  # name, version, cron, tz, last buffered ms, now ms


class ScheduleRefill:
    def __init__(self, state: CoreState) -> None:
        self.state = state
        self._cron_missing = False  # warned once that cronsim is not installed

    def refill_schedules(self, queue: str, requests: list[Any]) -> Plan[int]:
        """Compute and send the fire times the scripts asked for (six fields per
        schedule, flat); returns the jobs their due fires created. Never raises:
        a refill that fails is asked for again by the next call that fires."""
        created = 0
        for i in range(0, len(requests) - REFILL_FIELDS + 1, REFILL_FIELDS):
            name, version, cron, tz = (text(field) for field in requests[i : i + 4])
            after, now = int(requests[i + 4]), int(requests[i + 5])
            try:
                fires = cron_fires(cron, tz, after, now)
            except ImportError as error:
                if not self._cron_missing:
                    self._cron_missing = True
                    logger.warning("schedule %r of queue %r: %s", name, queue, error)
                return created
            except Exception as error:  # a stored spec this host cannot read
                logger.warning("schedule %r of queue %r: no fire times: %r", name, queue, error)
                continue
            try:
                _, fired = yield job_scripts.job_sched_refill(
                    self.state.queue_keys(queue),
                    name,
                    version,
                    fires,
                    publish=(yield from self.state.publishing()),
                    policy=self.state.settings.jobs.policy,
                )
            except Exception as error:  # asked for again while the buffer is low
                logger.debug("refilling schedule %r of %r failed: %r", name, queue, error)
                continue
            created += int(fired)
        return created
