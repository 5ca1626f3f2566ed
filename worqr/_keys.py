"""Every key and channel name worqr uses, and the validation of user-chosen names.

Nobody else formats a key. Per-queue keys share the hash tag ``{P:Q}``; mesh-wide
keys share ``{P}``, so each per-queue script touches one Redis Cluster slot.
Names are data: nothing ever parses a queue or worker name back out of a key.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

MAX_NAME_CHARS = 256
"""Longest queue name or prefix accepted, in characters."""

_FORBIDDEN = frozenset("{}")


def validate_name(name: object, what: str = "queue name") -> str:
    """Return ``name`` if it is a usable queue name or prefix, else raise.

    Rejected: non-``str``, empty, longer than `MAX_NAME_CHARS`, containing ``{`` or
    ``}`` (they would change the Redis Cluster hash tag) or control characters.
    Colons, spaces, ``*``, ``?`` and any printable unicode are fine.
    """
    if not isinstance(name, str):
        raise TypeError(f"{what} must be str, not {type(name).__name__}")
    _check_name(name, what)
    return name


@lru_cache(maxsize=4096)  # names repeat on every call of the hot path
def _check_name(name: str, what: str) -> None:
    if not name:
        raise ValueError(f"{what} must not be empty")
    if len(name) > MAX_NAME_CHARS:
        raise ValueError(f"{what} is {len(name)} characters long; the limit is {MAX_NAME_CHARS}")
    for char in name:
        if char in _FORBIDDEN:
            raise ValueError(f"{what} {name!r} contains {char!r}, which would break key hash tags")
        if unicodedata.category(char) in ("Cc", "Cs"):
            raise ValueError(f"{what} {name!r} contains the control character {char!r}")


@dataclass(frozen=True, slots=True)
class QueueKeys:
    """Keys and channels of one queue; all in the slot of ``{P:Q}``."""

    tag: str

    @property
    def tasks(self) -> str:
        return f"{self.tag}:tasks"

    @property
    def processes(self) -> str:
        return f"{self.tag}:processes"

    @property
    def members(self) -> str:
        return f"{self.tag}:members"

    @property
    def idle(self) -> str:
        return f"{self.tag}:idle"

    @property
    def recoveries(self) -> str:
        return f"{self.tag}:recoveries"

    @property
    def failed(self) -> str:
        return f"{self.tag}:failed"

    @property
    def stats(self) -> str:
        """Lifetime counters by event. A task queue's: enqueued, dequeued,
        finished, stopped, released, recovered, dead_lettered, failed, cancelled,
        redriven. A job queue's: submitted, deduplicated, promoted, started,
        finished, retried, failed, poisoned, cancelled, recovered, released,
        stopped, redriven, purged, purged_by_cap, cron_fired, cron_skipped, rate_limited."""
        return f"{self.tag}:stats"

    @property
    def config(self) -> str:
        return f"{self.tag}:config"

    @property
    def seq(self) -> str:
        return f"{self.tag}:seq"

    @property
    def events(self) -> str:
        """Broadcast channel: cancel and delete events."""
        return f"{self.tag}:events"

    @property
    def wake_prefix(self) -> str:
        """Per-worker wake channels are this prefix plus the worker id."""
        return f"{self.tag}:wake:"

    def wake(self, worker_id: str) -> str:
        return f"{self.wake_prefix}{worker_id}"

    def owned(self, worker_id: str) -> str:
        """Sorted set of the worker's in-process ids on this queue, by dequeue order."""
        return f"{self.tag}:worker:{worker_id}"

    # -- job queues (a job queue's ready entries, in `tasks` and `job_prio`, are
    # `id#life`; everything else about a job lives in these hashes and sets) ----

    @property
    def jobs(self) -> str:
        """Hash: job id -> record (JSON: state, life, times, counters, options)."""
        return f"{self.tag}:job"

    @property
    def job_data(self) -> str:
        """Hash: job id -> payload, kept until the record is purged."""
        return f"{self.tag}:job:data"

    @property
    def job_result(self) -> str:
        """Hash: job id -> result of a finished job."""
        return f"{self.tag}:job:result"

    @property
    def job_progress(self) -> str:
        """Hash: job id -> the last progress value its handler reported."""
        return f"{self.tag}:job:progress"

    @property
    def job_logs(self) -> str:
        """Hash: job id -> bytes in its log; the jobs with a log (``lua/lib/job_log.lua``)."""
        return f"{self.tag}:job:logs"

    def job_log(self, id: str) -> str:
        """List: a job's log lines, oldest first, while `job_logs` holds its id."""
        return f"{self.tag}:job:log:{id}"

    @property
    def job_prio(self) -> str:
        """Zset: `id#life` of ready jobs with a priority, by -priority * 2**32 + order."""
        return f"{self.tag}:job:prio"

    @property
    def job_seq(self) -> str:
        """Counter: job lives, and the order of prioritised ready jobs."""
        return f"{self.tag}:job:seq"

    @property
    def job_delayed(self) -> str:
        """Zset: `id#life` of delayed jobs, by due time (server ms)."""
        return f"{self.tag}:job:delayed"

    @property
    def job_retrying(self) -> str:
        """Zset: `id#life` of jobs waiting out a backoff, by due time (server ms)."""
        return f"{self.tag}:job:retrying"

    @property
    def job_finished(self) -> str:
        """Zset: ids of finished jobs, by purge time (server ms)."""
        return f"{self.tag}:job:finished"

    @property
    def job_failed(self) -> str:
        """Zset: ids of failed jobs, by purge time (server ms)."""
        return f"{self.tag}:job:failed"

    @property
    def job_cancelled(self) -> str:
        """Zset: ids of cancelled jobs, by purge time (server ms)."""
        return f"{self.tag}:job:cancelled"

    @property
    def job_unique(self) -> str:
        """Hash: unique marker (a payload digest) -> `id#life` of the live job
        holding it; dedup markers, ``<mode>:<key>`` -> `id#life` (a throttle's:
        ``id#life|<until ms>``, lua/lib/dedup.lua)."""
        return f"{self.tag}:job:unique"

    @property
    def job_throttle(self) -> str:
        """Zset: throttle dedup keys -> when their marker expires (server ms)."""
        return f"{self.tag}:job:throttle"

    @property
    def dedup_keys(self) -> tuple[str, ...]:
        """The keys job_submit takes for dedup keys (``lua/lib/dedup.lua``)."""
        return (self.job_waiting, self.job_throttle)

    @property
    def job_counts(self) -> str:
        """Hash: state -> number of jobs in it (terminal ones until purged)."""
        return f"{self.tag}:job:counts"

    @property
    def job_timer(self) -> str:
        """Hash with a TTL: the member told to wake the queue next (`w`), and when (`at`)."""
        return f"{self.tag}:job:timer"

    # -- flows (an outbox of operations for other queues, and flow parents) ------

    @property
    def job_outbox(self) -> str:
        """Zset: operation id -> when a relay may take it (server ms): work this
        queue's scripts left for other queues (submit a step or child, report to a
        parent, cancel a child)."""
        return f"{self.tag}:job:outbox"

    @property
    def job_outbox_data(self) -> str:
        """Hash: operation id -> its header (JSON: kind, target queue and id, ...)."""
        return f"{self.tag}:job:outbox:data"

    @property
    def job_outbox_body(self) -> str:
        """Hash: operation id -> its body (a step's or child's result, raw bytes)."""
        return f"{self.tag}:job:outbox:body"

    @property
    def job_applied(self) -> str:
        """Zset: operations applied here (``s:<id>``: a flow job created or
        blocked) -> when to forget them (server ms)."""
        return f"{self.tag}:job:applied"

    @property
    def job_waiting(self) -> str:
        """Zset: ids of flow parents waiting for their children -> created ms."""
        return f"{self.tag}:job:waiting"

    @property
    def job_flow(self) -> str:
        """Hash: ``parent#life|i`` -> child i's outcome (JSON header, newline,
        result or error bytes), kept until the parent's life ends."""
        return f"{self.tag}:job:flow"

    @property
    def job_flow_live(self) -> str:
        """Zset: ids of this queue's live flow jobs -> created ms: added when a flow
        job is created, removed when it ends, so deleting the queue ends each one."""
        return f"{self.tag}:job:flow:live"

    @property
    def flow_keys(self) -> tuple[str, ...]:
        """The flow keys every script that can end a job takes after its own."""
        return (
            self.job_outbox,
            self.job_outbox_data,
            self.job_outbox_body,
            self.job_flow,
            self.job_waiting,
            self.job_flow_live,
        )

    @property
    def job_sched(self) -> str:
        """Hash: schedule name -> its spec (JSON: cron or every, tz, job options,
        buffered fire times, the last fire and its job id)."""
        return f"{self.tag}:job:sched"

    @property
    def job_sched_next(self) -> str:
        """Zset: schedule names by their next fire time (server ms)."""
        return f"{self.tag}:job:sched:next"

    @property
    def job_sched_data(self) -> str:
        """Hash: schedule name -> the payload of the jobs it creates."""
        return f"{self.tag}:job:sched:data"

    @property
    def sched_keys(self) -> tuple[str, ...]:
        """A queue's schedule keys, in the order scripts that fire take them."""
        return (self.job_sched, self.job_sched_next, self.job_sched_data)

    @property
    def create_keys(self) -> tuple[str, ...]:
        """The keys the scripts that create jobs take after the job keys
        (``lua/lib/create.lua``): the kind's claim, the wake, the counters."""
        return (self.processes, self.members, self.idle, self.config, self.stats)

    @property
    def job_keys(self) -> tuple[str, ...]:
        """The keys every job script takes first, in order (``lua/lib/job_keys.lua``)."""
        return (
            self.tasks,
            self.job_prio,
            self.job_seq,
            self.jobs,
            self.job_data,
            self.job_result,
            self.job_progress,
            self.job_delayed,
            self.job_retrying,
            self.job_finished,
            self.job_failed,
            self.job_cancelled,
            self.job_unique,
            self.job_counts,
            self.job_timer,
        )

    # -- fair-share groups (lua/lib/group.lua): the scripts name these by data,
    # from `tasks` (the tag), so each lies in the queue's slot.

    @property
    def groups(self) -> str:
        """Hash: group -> its record (counts, where it is, own limits, pause)."""
        return f"{self.tag}:grp"

    @property
    def group_ring(self) -> str:
        """List: the groups that may start a job now; the right end is the front."""
        return f"{self.tag}:grp:ring"

    @property
    def group_timed(self) -> str:
        """Zset: groups closed by time -> the ms they reopen."""
        return f"{self.tag}:grp:timed"

    @property
    def group_graves(self) -> str:
        """Hash: epoch -> HSCAN cursor of the `groups` hash of each deleted
        incarnation (renamed ``grp:<epoch>``), whose ready keys are yet to go."""
        return f"{self.tag}:grp:graves"

    def group_ready(self, epoch: str, group: str) -> str:
        """List: a group's ready entries at priority 0 (as `tasks`), in the
        groups' epoch (the config's ``groups`` field)."""
        return f"{self.tag}:grp:{epoch}:r:{group}"

    def group_prio(self, epoch: str, group: str) -> str:
        """Zset: a group's ready entries with a priority (as `job_prio`)."""
        return f"{self.tag}:grp:{epoch}:p:{group}"

    @property
    def notify(self) -> str:
        """Channel of job notifications for waiters: `done:<id>`, `progress:<id>`."""
        return f"{self.tag}:notify"

    def history(self, block: str) -> str:
        """Hash: one block of the metrics history (``<step>:<start>``, e.g. the
        minutes of one hour), field = the point's index in the block; expires by
        its own TTL (`worqr._core.history`)."""
        return f"{self.tag}:history:{block}"


@dataclass(frozen=True, slots=True)
class MeshKeys:
    """Mesh-wide keys; all in the slot of ``{P}``."""

    prefix: str

    @property
    def tag(self) -> str:
        return "{" + self.prefix + "}"

    @property
    def workers(self) -> str:
        return f"{self.tag}:workers"

    @property
    def queues(self) -> str:
        return f"{self.tag}:queues"

    @property
    def reaper(self) -> str:
        return f"{self.tag}:reaper"

    @property
    def jobqueues(self) -> str:
        """Set: the names of the mesh's job queues."""
        return f"{self.tag}:jobqueues"

    @property
    def upkeep(self) -> str:
        """String, held for one interval by the worker that tidies job queues no
        worker serves (`Upkeep`)."""
        return f"{self.tag}:upkeep"

    @property
    def graves(self) -> str:
        """Set: queues deleted with groups whose keys are still being swept
        (`QueueKeys.group_graves`); upkeep finishes a sweep its deleter left."""
        return f"{self.tag}:graves"

    @property
    def upkeep_cursor(self) -> str:
        """String: where the next upkeep pass resumes its sweep of `jobqueues`
        (an SSCAN cursor); expires when passes stop, and the sweep starts over."""
        return f"{self.tag}:upkeep:cursor"

    @property
    def flows(self) -> str:
        """Hash: flow id -> its jobs (JSON: kind, (queue, id) of every job)."""
        return f"{self.tag}:flows"

    @property
    def flows_purge(self) -> str:
        """Zset: flow id -> when its entry in `flows` is forgotten (server ms)."""
        return f"{self.tag}:flows:purge"

    @property
    def relayer(self) -> str:
        """String, held for a relay lease by the worker that relays stragglers
        of every job queue's outbox."""
        return f"{self.tag}:relayer"

    def alive(self, worker_id: str) -> str:
        return f"{self.tag}:alive:{worker_id}"

    def worker_queues(self, worker_id: str) -> str:
        return f"{self.tag}:worker:{worker_id}:queues"

    def worker_info(self, worker_id: str) -> str:
        return f"{self.tag}:worker:{worker_id}:info"

    def queue(self, queue: str) -> QueueKeys:
        return QueueKeys("{" + self.prefix + ":" + queue + "}")
