"""The one observability interface: `Hooks`.

The client calls the client-life methods (registered, lease lost, a peer
failed, an outage starting and ending); the worker runtime calls the process
methods (every started process ends in exactly one of finished, failed,
retried, cancelled or fenced). Metrics (`worqr.metrics`) implement them; no
other part of worqr imports prometheus_client.

Hooks run on the thread or event loop that reports the event and must return
quickly. One that raises is logged and the others still run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

logger = logging.getLogger("worqr")


class JobRun(Protocol):
    """What the job hooks are told of one run of a job's handler (read only; the
    runtime passes its own record of the run, so telling costs no copy)."""

    @property
    def queue(self) -> str:
        """The job's queue."""

    @property
    def job_id(self) -> str:
        """The job's id."""

    @property
    def attempt(self) -> int:
        """This run's attempt, 1-based (failures, recoveries and this run)."""

    @property
    def recoveries(self) -> int:
        """How many earlier runs ended with their worker's death."""

    @property
    def id(self) -> str:
        """This run's process id (unique per run)."""

    @property
    def traceparent(self) -> str | None:
        """The W3C ``traceparent`` the job's submit left in its record, if any."""

    @property
    def tracestate(self) -> str | None:
        """Its ``tracestate``, if any."""

    @property
    def lost_by(self) -> str | None:
        """The dead worker this run follows, on the first run after a failover."""


JOB_RUN_OUTCOMES = frozenset(
    {"finished", "retried", "rate_limited", "failed", "cancelled", "returned", "fenced"}
)
"""How a run of a job ends (`Hooks.on_job_run_ended`)."""


class Hooks:
    """No-op base: subclass it and override what you need. Pass instances to
    `Worker(hooks=...)`, `Worker.add_hooks` or `Worqr.add_hooks`."""

    # -- the client's life (Worqr, AsyncWorqr, and so every Worker) -------------

    def on_registered(self, worker_id: str) -> None:
        """This client registered in the mesh (at start, and again after a lost lease)."""

    def on_lease_lost(self, worker_id: str) -> None:
        """This client learned its lease expired and peers may have failed it.
        Called with the lost id before its processes are returned and the client
        re-registers; a worker stops the handlers that ran under that id."""

    def on_peer_failed(self, worker_id: str, requeued: int, dead_lettered: int) -> None:
        """This client failed a dead peer: ``requeued`` of its tasks went back to
        the front of their queues, ``dead_lettered`` to the failed lists."""

    def on_heartbeat_failed(self, error: str) -> None:
        """A heartbeat could not reach Redis (``error`` is the exception's type name)."""

    def on_redis_down(self, what: str, error: str) -> None:
        """A loop of this client (``what``: heartbeat, listener, ...) lost Redis."""

    def on_redis_up(self, what: str, seconds: float) -> None:
        """That loop reached Redis again after ``seconds``."""

    def on_loop_blocked(self, seconds: float, culprit: str) -> None:
        """The event loop of an `AsyncWorqr` (so of a `Worker`) made no progress for
        ``seconds`` (more than a second) and runs again; ``culprit`` names what was
        running on it (e.g. "the handler of queue 'q' (app.handle)"), never a
        payload. Called on the loop once it runs again."""

    # -- processes of a Worker --------------------------------------------------

    def on_started(self, queue: str) -> None:
        """A handler started a process of ``queue``."""

    def on_finished(self, queue: str, seconds: float) -> None:
        """Its handler returned and the finish was accepted."""

    def on_failed(self, queue: str, seconds: float) -> None:
        """Its handler raised: the task went to the queue's failed list."""

    def on_retried(self, queue: str) -> None:
        """The task went back to the front (worqr.Retry, or a shutdown stopped its handler)."""

    def on_cancelled(self, queue: str) -> None:
        """The process was cancelled (by payload, a deleted queue, or it vanished)."""

    def on_fenced(self, queue: str) -> None:
        """The process was no longer ours: the worker lost its lease (a peer owns
        the task now), or Redis refused the acknowledgement for that reason."""

    def on_dropped(self, queue: str) -> None:
        """A process is not started: it came back from a dequeue under a worker
        id whose lease was already lost (the dequeue ran late, e.g. after Redis
        stalled; the peers return its task to the front), or a cancel reached it
        while it waited to start (taken ahead)."""

    def on_dequeue(self, queue: str, asked: int, got: int) -> None:
        """A dequeue asked for ``asked`` tasks and got ``got``."""

    def on_job_started(self, queue: str, waited: float) -> None:
        """A job started ``waited`` seconds after it was due or queued (Redis's
        clock): queue latency, and how precisely delayed jobs start."""

    def on_job_timeout(self, queue: str) -> None:
        """A job ran past its timeout (its attempt counts as failed)."""

    def on_job_run_started(self, run: JobRun) -> None:
        """A handler started ``run`` of a job (after `on_started` and `on_job_started`)."""

    def on_job_run_ended(
        self, run: JobRun, outcome: str, seconds: float, error: BaseException | None
    ) -> None:
        """``run`` ended after ``seconds``; ``outcome`` is one of `JOB_RUN_OUTCOMES`:
        "finished" (its finish was accepted), "retried" (it raised and the job will
        run again per its policy), "rate_limited" (it raised `worqr.RateLimited`),
        "failed" (the job ended failed), "cancelled", "returned" (back to the queue
        uncharged: its lease went stale, or a shutdown) or "fenced" (the worker no longer
        owned it). ``error`` is what the handler raised, for retried, rate_limited
        and failed (a `TimeoutError` for a run past its timeout), else None."""

    def on_wakeup(self, queue: str) -> None:
        """A wake-up arrived for ``queue`` (a pub/sub hint or the fallback poll)."""


class HookList(Hooks):
    """Calls every registered `Hooks` in turn; a hook that raises is logged and
    skipped. What the client and the runtime call.

    Each event keeps the list of the bound methods that override it, so an event
    no registered hook listens to costs a lookup and an empty loop (the runtime
    reports several events per job)."""

    def __init__(self) -> None:
        self._hooks: list[Hooks] = []
        self._listeners: dict[str, list[tuple[Hooks, Callable[..., object]]]] = {}

    def add(self, hooks: Hooks) -> None:
        if not isinstance(hooks, Hooks):
            raise TypeError(f"hooks must be a worqr.Hooks, not {type(hooks).__name__}")
        if hooks in self._hooks:
            return
        self._hooks.append(hooks)
        for name in _EVENTS:
            method = getattr(hooks, name)
            if getattr(method, "__func__", None) is not getattr(Hooks, name):  # overridden
                self._listeners.setdefault(name, []).append((hooks, method))

    def remove(self, hooks: Hooks) -> None:
        """Stop calling ``hooks`` (nothing happens when it was not added)."""
        if hooks not in self._hooks:
            return
        self._hooks.remove(hooks)
        for listeners in self._listeners.values():
            listeners[:] = [entry for entry in listeners if entry[0] is not hooks]

    def __bool__(self) -> bool:
        return bool(self._hooks)

    def _each(self, event: str, *args: Any) -> None:
        for hooks, method in self._listeners.get(event, ()):
            try:
                method(*args)
            except Exception:
                logger.exception("hook %s failed", type(hooks).__name__)

    def on_registered(self, worker_id: str) -> None:
        self._each("on_registered", worker_id)

    def on_lease_lost(self, worker_id: str) -> None:
        self._each("on_lease_lost", worker_id)

    def on_peer_failed(self, worker_id: str, requeued: int, dead_lettered: int) -> None:
        self._each("on_peer_failed", worker_id, requeued, dead_lettered)

    def on_heartbeat_failed(self, error: str) -> None:
        self._each("on_heartbeat_failed", error)

    def on_redis_down(self, what: str, error: str) -> None:
        self._each("on_redis_down", what, error)

    def on_redis_up(self, what: str, seconds: float) -> None:
        self._each("on_redis_up", what, seconds)

    def on_loop_blocked(self, seconds: float, culprit: str) -> None:
        self._each("on_loop_blocked", seconds, culprit)

    def on_started(self, queue: str) -> None:
        self._each("on_started", queue)

    def on_finished(self, queue: str, seconds: float) -> None:
        self._each("on_finished", queue, seconds)

    def on_failed(self, queue: str, seconds: float) -> None:
        self._each("on_failed", queue, seconds)

    def on_retried(self, queue: str) -> None:
        self._each("on_retried", queue)

    def on_cancelled(self, queue: str) -> None:
        self._each("on_cancelled", queue)

    def on_fenced(self, queue: str) -> None:
        self._each("on_fenced", queue)

    def on_dropped(self, queue: str) -> None:
        self._each("on_dropped", queue)

    def on_dequeue(self, queue: str, asked: int, got: int) -> None:
        self._each("on_dequeue", queue, asked, got)

    def on_job_started(self, queue: str, waited: float) -> None:
        self._each("on_job_started", queue, waited)

    def on_job_timeout(self, queue: str) -> None:
        self._each("on_job_timeout", queue)

    def on_job_run_started(self, run: JobRun) -> None:
        self._each("on_job_run_started", run)

    def on_job_run_ended(
        self, run: JobRun, outcome: str, seconds: float, error: BaseException | None
    ) -> None:
        self._each("on_job_run_ended", run, outcome, seconds, error)

    def on_wakeup(self, queue: str) -> None:
        self._each("on_wakeup", queue)


_EVENTS = tuple(name for name in vars(Hooks) if name.startswith("on_"))


Observer = Callable[[str, dict[str, Any]], object]
"""``observer(event, fields)``: the client-life hooks as an event name and its
arguments by name (`Worqr.add_observer`)."""


class ObserverHooks(Hooks):
    """Adapts an `Observer` function to `Hooks`: each client-life hook becomes
    ``observer(name, fields)``, e.g. ``("peer_failed", {"worker": ..., "requeued":
    3, "dead_lettered": 0})``."""

    def __init__(self, observer: Observer) -> None:
        if not callable(observer):
            raise TypeError("observer must be callable")
        self.observer = observer

    def __eq__(self, other: object) -> bool:  # one adapter per function: added once
        return isinstance(other, ObserverHooks) and other.observer == self.observer

    def __hash__(self) -> int:
        return hash(self.observer)

    def on_registered(self, worker_id: str) -> None:
        self.observer("registered", {"worker": worker_id})

    def on_lease_lost(self, worker_id: str) -> None:
        self.observer("lease_lost", {"worker": worker_id})

    def on_peer_failed(self, worker_id: str, requeued: int, dead_lettered: int) -> None:
        fields = {"worker": worker_id, "requeued": requeued, "dead_lettered": dead_lettered}
        self.observer("peer_failed", fields)

    def on_heartbeat_failed(self, error: str) -> None:
        self.observer("heartbeat_failed", {"error": error})

    def on_redis_down(self, what: str, error: str) -> None:
        self.observer("redis_down", {"what": what, "error": error})

    def on_redis_up(self, what: str, seconds: float) -> None:
        self.observer("redis_up", {"what": what, "seconds": seconds})

    def on_loop_blocked(self, seconds: float, culprit: str) -> None:
        self.observer("loop_blocked", {"seconds": seconds, "culprit": culprit})
