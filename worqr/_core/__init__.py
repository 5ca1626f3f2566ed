"""The sans-I/O core: what to send to Redis and how to read the replies.

Imports no socket, thread or asyncio code (``tests/test_layers.py`` checks it):
the clients in `worqr._clients` execute its plans.
"""

from __future__ import annotations

from .._settings import Settings
from .base import Callback
from .bulk import Bulk
from .dead_letters import DeadLetters
from .deletion import QueueDeletion
from .flows import Flows
from .limits import Limits
from .liveness import Liveness
from .notify import Notifications
from .reads import Reads
from .schedules import Schedules


class Core(Liveness, DeadLetters, Flows, Schedules, QueueDeletion, Limits, Reads, Notifications):
    """State and plans of one client: every plan `Worqr` and `AsyncWorqr` run.
    Parts made of it: ``bulk``, the bulk operations and `update_job`."""

    def __init__(self, settings: Settings, *, cluster: bool = False) -> None:
        super().__init__(settings, cluster=cluster)
        self.bulk = Bulk(self)


__all__ = ["Callback", "Core"]
