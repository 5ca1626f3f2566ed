"""What each queue holds, "jobs" or "tasks", as far as this client knows.

Task plans of a job queue (and job plans of a task queue) are refused by their
scripts; the plans then switch over and remember the answer here. A job queue
stays one until it is deleted, so that answer is kept; an empty task queue may
become a job queue any time, so it is never assumed.
"""

from __future__ import annotations

from typing import Any

from .._errors import WrongQueueKindError
from .calls import Pinned, Plan, command
from .failures import checked_replies
from .state import CoreState


class QueueKinds:
    def __init__(self, state: CoreState) -> None:
        self.state = state
        self._known: dict[str, str] = {}

    def known(self, queue: str) -> str | None:
        """What this client last learned ``queue`` holds; None: nothing yet."""
        return self._known.get(queue)

    def is_jobs(self, queue: str) -> bool:
        return self._known.get(queue) == "jobs"

    def learned(self, queue: str, kind: str) -> None:
        """A script (or a read) said what ``queue`` holds."""
        self._known[queue] = kind

    def claim_jobs(self, queue: str, request: Any) -> Plan[Any]:
        """Send a script that makes ``queue`` a job queue (or needs one) and
        remember that it is; its `WrongQueueKindError` names the queue."""
        try:
            reply = yield request
        except WrongQueueKindError as error:
            raise WrongQueueKindError(
                f"queue {queue!r}: {error}", queue_kind=error.queue_kind
            ) from None
        self._known[queue] = "jobs"
        return reply

    def forget(self, queue: str) -> None:
        """``queue`` was deleted: it may come back as either kind."""
        self._known.pop(queue, None)

    def of(self, queue: str) -> Plan[str]:
        """What ``queue`` holds, "jobs" or "tasks". A job queue's answer is
        remembered; a task queue's is read again next time."""
        if self.is_jobs(queue):
            return "jobs"
        found = yield command("HGET", self.state.queue_keys(queue).config, "kind")
        if found in (b"jobs", "jobs"):
            self._known[queue] = "jobs"
            return "jobs"
        return "tasks"

    def refuse_task_queue(self, queue: str) -> Plan[None]:
        """Raise `WrongQueueKindError` when ``queue`` holds tasks: a job read that
        found nothing there asked the wrong queue. Read only after a miss, so a
        found job costs nothing more; an emptied task queue may become a job
        queue, so finding nothing there is an answer."""
        if self.is_jobs(queue):
            return
        keys = self.state.queue_keys(queue)
        reads = (
            command("HGET", keys.config, "kind", key=keys.config),
            command("LLEN", keys.tasks, key=keys.tasks),
            command("HLEN", keys.processes, key=keys.processes),
        )
        request = Pinned(reads)
        kind, queued, running = checked_replies(request, (yield request))
        if kind in (b"jobs", "jobs"):
            self._known[queue] = "jobs"
        elif kind in (b"tasks", "tasks") and (int(queued) or int(running)):
            raise WrongQueueKindError(
                f"queue {queue!r} holds tasks (it is a task queue), not jobs",
                queue_kind="tasks",
            )
