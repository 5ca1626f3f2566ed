"""The demo's closing account: the fate of every task it enqueued, checked against
the lifetime counters the Lua scripts keep in Redis."""

from __future__ import annotations

import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import redis as redis_py

from .._clients.sync_client import Worqr
from . import handlers

QUEUES = (handlers.JOBS, handlers.SESSIONS)


@dataclass
class Tally:
    """What the demo did, per payload."""

    jobs: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    cancelled_queued: set[str] = field(default_factory=set)
    cancelled_running: set[str] = field(default_factory=set)

    @property
    def enqueued(self) -> list[str]:
        return self.jobs + self.sessions


def _text(value: str | bytes) -> str:
    return value if isinstance(value, str) else value.decode("utf-8", "replace")


def fates(client: Worqr, raw: redis_py.Redis, run_id: str, tally: Tally) -> dict[str, str]:
    """Each enqueued payload's one fate. A cancel that hit (returned >= 1) wins:
    its process ended there, even if the handler had just returned."""
    done = {_text(m) for m in raw.smembers(handlers.key(run_id, "done"))}
    failed = {_text(t) for t in client.get_failed(handlers.JOBS)}
    cancelled = tally.cancelled_queued | tally.cancelled_running
    result = {}
    for task in tally.enqueued:
        if task in cancelled:
            result[task] = "cancelled"
        elif task in failed:
            result[task] = "failed"
        elif task in done:
            result[task] = "finished"
        else:
            result[task] = "lost"
    return result


def account(
    client: Worqr, raw: redis_py.Redis, run_id: str, tally: Tally, out: Callable[[str], None]
) -> bool:
    """Print the summary; True if every task is accounted for."""
    count = Counter(fates(client, raw, run_id, tally).values())
    stats = [client.get_stats(q) for q in QUEUES]
    counted = {
        name: sum(s.get(name, 0) for s in stats)
        for name in ("enqueued", "finished", "cancelled", "failed", "dead_lettered")
    }
    runs = raw.hgetall(handlers.key(run_id, "runs"))
    twice = sum(1 for task, n in runs.items() if _text(task).startswith("job-") and int(n) > 1)
    leftover = sum(client.count_tasks(q) + client.count_processes(q) for q in QUEUES)
    enqueued = len(tally.enqueued)

    out("")
    out("summary")
    out(f"  enqueued   {enqueued:>6}  ({len(tally.jobs)} jobs, {len(tally.sessions)} sessions)")
    out(f"  finished   {count['finished']:>6}")
    out(
        f"  cancelled  {count['cancelled']:>6}  ({len(tally.cancelled_queued)} queued, "
        f"{len(tally.cancelled_running)} running)"
    )
    out(f"  failed     {count['failed']:>6}  (handlers raised: on the dead-letter list)")
    out(f"  lost       {count['lost']:>6}")
    out(
        f"  {twice} job{'s' if twice != 1 else ''} ran twice: started on the killed worker, "
        "then run by a peer (execution is at-least-once)"
    )
    # Redis's own counters must tell the same story as the per-payload view.
    checks = {
        "finished + cancelled + failed = enqueued": (
            count["finished"] + count["cancelled"] + count["failed"] == enqueued
        ),
        "nothing lost": count["lost"] == 0,
        "nothing left queued or in process": leftover == 0,
        "Redis's counters agree": (
            counted["enqueued"] == enqueued
            and counted["finished"] == count["finished"]
            and counted["cancelled"] == count["cancelled"]
            and counted["failed"] + counted["dead_lettered"] == count["failed"]
        ),
    }
    for check, ok in checks.items():
        out(f"  {'ok  ' if ok else 'FAIL'} {check}")
    if not checks["Redis's counters agree"]:
        out(f"       Redis's counters: {counted}")
    return all(checks.values())


def metrics_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/metrics"


def scrape(url: str, metric: str) -> float | None:
    """Sum of one metric's samples at ``url``, or None if it cannot be read."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            text = response.read().decode("utf-8", "replace")
    except OSError:
        return None
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(metric + "{") or line.startswith(metric + " ")
    )


def metrics_line(url: str, redis_finished: int) -> str:
    finished = scrape(url, "worqr_tasks_finished_total")
    if finished is None:
        return f"  metrics  could not be scraped from {url}"
    line = f"  metrics  worqr_tasks_finished_total = {finished:.0f} (scraped from {url})"
    if round(finished) != redis_finished:
        # Metrics are what each process saw: one SIGKILLed between acknowledging a
        # task and counting it misses that one. Redis's counter is the truth.
        line += f"; Redis counted {redis_finished}"
    return line
