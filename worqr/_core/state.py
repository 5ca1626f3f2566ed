"""What every part of the sans-I/O core shares: settings, key names, the
client's own state (its worker id, the queues it works, the processes it
holds), and the hooks it reports to.

`Core` (in `worqr._core`) owns one `CoreState` and the parts that build
*plans* over it, each in its own module: generators that yield the Redis calls
to make (`calls.Call`, `calls.Subscribe`, `calls.Pinned`) and read the replies.
The clients only execute what plans yield, so the logic exists once for both
colours.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from .._errors import NotStartedError
from .._hooks import HookList
from .._keys import MeshKeys, QueueKeys, validate_name
from .._process import Process
from .._settings import Settings
from .calls import Plan
from .pubmode import CLASSIC, SHARDED, cluster_publish_command

Callback = Any
"""A listener: ``callback(event, message)`` (see `Notifications.parse_message`);
with `AsyncWorqr` it may be a coroutine function."""


def text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


class CoreState:
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
        self.joining: set[str] = set()
        self.last_heartbeat = 0.0  # monotonic time the last successful heartbeat was sent
        self.owned: dict[str, tuple[str, str]] = {}  # pid -> (queue, worker id)
        self.registered: dict[str, float] = {}  # queue -> when it was last added to registry
        self._calls = itertools.count(1)
        # Dequeue calls in flight (their pid prefixes): their processes exist in
        # Redis before this client knows them, so reconciling must not touch them.
        self.dequeuing: set[str] = set()
        # Set while deregistering: a heartbeat that finds the alive key gone then
        # sees our own goodbye, not a lease lost to peers, and must not re-register.
        self.leaving = False
        self.reported_loss: str | None = None  # the last worker id reported as lost
        self.reconciled = time.monotonic()  # when reconcile() last completed
        self.reconcile_due = False  # set when heartbeats stopped landing for a while

    @property
    def sharded(self) -> bool:
        """Notifications travel over sharded pub/sub (SPUBLISH/SSUBSCRIBE)."""
        return self.publish == SHARDED

    def publishing(self) -> Plan[str]:
        """The command scripts publish with (asks the server once, on a cluster).
        Subscribing plans run it too, to subscribe the way scripts will publish."""
        if self.publish is None:
            self.publish = yield from cluster_publish_command()
        return self.publish

    def require_worker(self) -> str:
        if self.worker_id is None:
            raise NotStartedError("call start_worker() first")
        return self.worker_id

    def queue_keys(self, queue: str) -> QueueKeys:
        return self.mesh.queue(validate_name(queue))

    def new_prefix(self, worker: str) -> str:
        """A process id prefix no call of this client used before, held in
        `dequeuing` until its processes are in `owned` (see `Liveness.reconcile`)."""
        prefix = f"{worker}.{next(self._calls)}."
        self.dequeuing.add(prefix)
        return prefix

    def owner(self, process: str | Process) -> tuple[str, str, str] | None:
        """(pid, queue, worker id) of one of this client's processes, else None."""
        pid = process.id if isinstance(process, Process) else process
        if not isinstance(pid, str):
            raise TypeError(f"process must be a Process or its id, not {type(pid).__name__}")
        entry = self.owned.get(pid)
        return None if entry is None else (pid, *entry)

    def lease_fresh(self) -> bool:
        """False once the worker has not heartbeat for most of its TTL: it should
        stop starting work before its peers may fail it."""
        return time.monotonic() - self.last_heartbeat < self.settings.ttl * 2 / 3
