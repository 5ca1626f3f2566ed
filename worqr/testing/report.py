"""What a `drain` saw: every job run's outcome, told by the worker's hooks."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

from .._hooks import Hooks, JobRun


@dataclass(frozen=True)
class RunRecord:
    """One run of a job's handler during a drain."""

    queue: str
    id: str
    attempt: int
    outcome: str  # one of `worqr.JOB_RUN_OUTCOMES`
    error: BaseException | None  # what the handler raised (retried, rate_limited, failed)
    seconds: float


@dataclass
class DrainReport:
    """What happened during a `drain`: ``runs`` in the order they ended; the
    ids per outcome (each id once, in order); ``errors``, the last error each
    job's handler raised; ``tasks``, task queues' outcomes counted per queue
    (task hooks carry no id); ``left_for_later``, jobs delayed or retrying that
    were not due when the drain ended (none with ``skip_delays``)."""

    runs: list[RunRecord] = field(default_factory=list)
    counted: dict[str, Counter[str]] = field(default_factory=dict, repr=False)
    left_for_later: int = 0
    seconds: float = 0.0

    def ids(self, outcome: str) -> list[str]:
        """The ids of the jobs with a run that ended ``outcome``, each once."""
        return list(dict.fromkeys(run.id for run in self.runs if run.outcome == outcome))

    @property
    def finished(self) -> list[str]:
        return self.ids("finished")

    @property
    def failed(self) -> list[str]:
        return self.ids("failed")

    @property
    def retried(self) -> list[str]:
        return self.ids("retried")

    @property
    def cancelled(self) -> list[str]:
        return self.ids("cancelled")

    @property
    def tasks(self) -> dict[str, Counter[str]]:
        # A job's run fires the task hooks too: a queue with job runs holds jobs.
        jobs = {run.queue for run in self.runs}
        return {queue: counts for queue, counts in self.counted.items() if queue not in jobs}

    @property
    def errors(self) -> dict[str, BaseException]:
        return {run.id: run.error for run in self.runs if run.error is not None}

    def attempts(self, id: str) -> int:
        """How many runs job ``id`` had during the drain."""
        return sum(1 for run in self.runs if run.id == id)


class Collector(Hooks):
    """Installed once on a worker (hooks cannot be removed); records into the
    report of the drain under way, if any. Hooks come from handler threads and
    the loop alike: appends take a lock."""

    def __init__(self) -> None:
        self.report: DrainReport | None = None
        self._lock = threading.Lock()

    def on_job_run_ended(
        self, run: JobRun, outcome: str, seconds: float, error: BaseException | None
    ) -> None:
        report = self.report
        if report is not None:
            record = RunRecord(run.queue, run.job_id, run.attempt, outcome, error, seconds)
            with self._lock:
                report.runs.append(record)

    def _task(self, queue: str, outcome: str) -> None:
        report = self.report
        if report is not None:
            with self._lock:
                report.counted.setdefault(queue, Counter())[outcome] += 1

    def on_finished(self, queue: str, seconds: float) -> None:
        self._task(queue, "finished")

    def on_failed(self, queue: str, seconds: float) -> None:
        self._task(queue, "failed")

    def on_retried(self, queue: str) -> None:
        self._task(queue, "retried")

    def on_cancelled(self, queue: str) -> None:
        self._task(queue, "cancelled")
