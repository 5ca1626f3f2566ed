"""Poke and read a mesh's state in Redis, as no client would.

worqr formats key names in one place, `worqr._keys`; these helpers use it too.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Protocol

import redis
import redis.asyncio

from worqr._core.lua import digest
from worqr._keys import MeshKeys, QueueKeys

from .scripts import script_of_function


class _Member(Protocol):
    @property
    def worker_id(self) -> str | None: ...

    @property
    def settings(self) -> Any: ...


def kill(raw: redis.Redis, client: _Member) -> str:
    """Make ``client``'s worker (a `Worqr` or an `AsyncWorqr`) dead for its
    peers: delete its alive key, as if its lease had expired. Returns its id."""
    worker = client.worker_id
    assert worker is not None, "the client has no worker to kill"
    assert raw.delete(MeshKeys(client.settings.prefix).alive(worker)) == 1
    return worker


def queue_keys(prefix: str, queue: str) -> QueueKeys:
    """The key names of one queue (`worqr._keys.QueueKeys`)."""
    return MeshKeys(prefix).queue(queue)


def queued(raw: redis.Redis, prefix: str, queue: str) -> list[str]:
    """The queue's tasks as Redis holds them, front (next to dequeue) first."""
    tasks = raw.lrange(queue_keys(prefix, queue).tasks, 0, -1)
    return [task.decode() for task in reversed(tasks)]


def keys_under(raw: redis.Redis, prefix: str) -> list[bytes]:
    """Every key of the mesh ``prefix`` on the server (mesh and queue keys),
    sorted. SCAN is fine in a test; worqr itself never scans."""
    return sorted(set(raw.scan_iter(match=f"*{prefix}*", count=1000)))


def sha(script: str) -> str:
    """The SHA1 Redis knows a worqr script by (``EVALSHA``)."""
    return digest(script)


def sent_script(args: tuple[Any, ...]) -> str | None:
    """The sha of the script a command runs (``EVALSHA``, or ``FCALL`` of its
    function), else None."""
    if args and args[0] == "EVALSHA":
        return str(args[1])
    if args and args[0] == "FCALL":
        return script_of_function(str(args[1]))
    return None


class CountingRedis(redis.Redis):
    """A real client that records the script sha of every script it sends (by
    ``EVALSHA``, or as a function by ``FCALL``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scripts_sent: list[str] = []

    def execute_command(self, *args: Any, **options: Any) -> Any:
        script = sent_script(args)
        if script is not None:
            self.scripts_sent.append(script)
        return super().execute_command(*args, **options)


class CountingAsyncRedis(redis.asyncio.Redis):
    """A real asyncio client that counts the scripts it sends, by sha."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scripts: Counter[str] = Counter()

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        script = sent_script(args)
        if script is not None:
            self.scripts[script] += 1
        return await super().execute_command(*args, **options)
