"""What every part of the sans-I/O core shares: settings, key names, the
client's own state, and the hooks it reports to.

`Core` (in `worqr._core`) is built from one class per concern, each in its own
module (`produce`, `membership`, `processes`, `liveness`, `notify`, `reads`),
all on top of `CoreBase`. A part builds *plans*: generators that yield the
Redis calls to make (`calls.Call`, `calls.Subscribe`, `calls.Pinned`) and read
the replies. The clients only execute what plans yield, so the logic exists
once for both colours.
"""

from __future__ import annotations

import itertools
import time
import weakref
from typing import Any

from .._errors import NotStartedError
from .._hooks import HookList
from .._keys import MeshKeys, QueueKeys, validate_name
from .._settings import Settings
from .calls import Plan, command
from .pubmode import CLASSIC, SHARDED, cluster_publish_command

Callback = Any
"""A listener: ``callback(event, message)`` (see `Notifications.parse_message`);
with `AsyncWorqr` it may be a coroutine function."""


def text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


class CoreBase:
    """State of one client. Not thread-safe beyond what the GIL gives; the sync
    client confines each plan to one thread at a time per state change."""

    def __init__(self, settings: Settings, *, cluster: bool = False) -> None:
        self.settings = settings
        self.mesh = MeshKeys(settings.prefix)
        self.cluster = cluster
        self.hooks = HookList()
        # The command scripts publish with; on a cluster decided on first use.
        self.publish: str | None = None if cluster else CLASSIC
        self.worker_id: str | None = None
        self.working: set[str] = set()
        # Queues whose join began but has not completed (its plan may have been
        # abandoned, e.g. a cancelled task): leaving must cover them too.
        self._joining: set[str] = set()
        self.last_heartbeat = 0.0  # monotonic time the last successful heartbeat was sent
        self._owned: dict[str, tuple[str, str]] = {}  # pid -> (queue, worker id)
        self._registered: dict[str, float] = {}  # queue -> when it was last added to registry
        self._calls = itertools.count(1)
        # Dequeue calls in flight (their pid prefixes): their processes exist in
        # Redis before this client knows them, so reconciling must not touch them.
        self._dequeuing: set[str] = set()
        # Set while deregistering: a heartbeat that finds the alive key gone then
        # sees our own goodbye, not a lease lost to peers, and must not re-register.
        self._leaving = False
        self._listeners: dict[str, list[Callback]] = {}
        self._channels: dict[str, tuple[str, str]] = {}  # channel -> (queue, "events"|"wake")
        self._reported_loss: str | None = None  # the last worker id reported as lost
        self._reconciled = time.monotonic()  # when reconcile() last completed
        self._reconcile_due = False  # set when heartbeats stopped landing for a while
        # What each queue holds, "jobs" or "tasks", once known: task plans of a job
        # queue (and job plans of a task queue) are refused and switch over.
        self._kinds: dict[str, str] = {}
        # Waiters of `result()`, by ("done", queue, job id): set by the listener.
        self._waiters: dict[tuple[str, str, str], list[weakref.ref[Any]]] = {}

    @property
    def sharded(self) -> bool:
        """Notifications travel over sharded pub/sub (SPUBLISH/SSUBSCRIBE)."""
        return self.publish == SHARDED

    def publish_command(self) -> Plan[str]:
        """The command scripts publish with (asks the server once on a cluster)."""
        if self.publish is None:
            self.publish = yield from cluster_publish_command()
        return self.publish

    def require_worker(self) -> str:
        if self.worker_id is None:
            raise NotStartedError("call start_worker() first")
        return self.worker_id

    def queue_keys(self, queue: str) -> QueueKeys:
        return self.mesh.queue(validate_name(queue))

    def add_waiter(self, key: tuple[str, str, str], waiter: Any) -> None:
        """Register ``waiter`` (it has ``set()``) for ``key``, for as long as its
        plan holds it (a weak reference: an abandoned plan leaves nothing)."""
        alive = [ref for ref in self._waiters.get(key, ()) if ref() is not None]
        alive.append(weakref.ref(waiter))
        self._waiters[key] = alive

    def wake_waiters(self, queue: str, id: str | None = None) -> None:
        """Set the waiters of one job of ``queue`` (every job's when ``id`` is None)."""
        if id is not None:
            keys = [("done", queue, id)]
        else:  # list(): the sync client's listener thread runs this beside plans
            keys = [key for key in list(self._waiters) if key[1] == queue]
        for key in keys:
            refs = list(self._waiters.get(key, ()))
            for ref in refs:
                waiter = ref()
                if waiter is not None:
                    waiter.set()
            if refs and all(ref() is None for ref in refs):
                self._waiters.pop(key, None)

    def kind_of(self, queue: str) -> Plan[str]:
        """What ``queue`` holds, "jobs" or "tasks". A job queue stays one until it
        is deleted, so that answer is remembered; an empty task queue may become a
        job queue any time, so that one is read again next time."""
        if self._kinds.get(queue) == "jobs":
            return "jobs"
        found = yield command("HGET", self.queue_keys(queue).config, "kind")
        if found in (b"jobs", "jobs"):
            self._kinds[queue] = "jobs"
            return "jobs"
        return "tasks"

    def lease_fresh(self) -> bool:
        """False once the worker has not heartbeat for most of its TTL: it should
        stop starting work before its peers may fail it."""
        return time.monotonic() - self.last_heartbeat < self.settings.ttl * 2 / 3
