"""The sans-I/O core: what to send to Redis and how to read the replies.

Imports no socket, thread or asyncio code (``tests/test_layers.py`` checks it):
the clients in `worqr._clients` execute its plans.
"""

from __future__ import annotations

from .._settings import Settings
from .base import Callback
from .dead_letters import DeadLetters
from .deletion import QueueDeletion
from .flows import Flows
from .limits import Limits
from .liveness import Liveness
from .notify import Notifications
from .pausing import Pausing
from .reads import Reads
from .schedules import Schedules


class Core(Liveness, DeadLetters, Flows, Schedules, QueueDeletion, Limits, Reads, Notifications):
    """State and plans of one client: every plan `Worqr` and `AsyncWorqr` run
    (a part's plans through the part: ``core.pausing.pause(queue)``)."""

    def __init__(self, settings: Settings, *, cluster: bool = False) -> None:
        super().__init__(settings, cluster=cluster)
        self.pausing = Pausing(self)


__all__ = ["Callback", "Core"]
