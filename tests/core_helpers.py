"""Shared pieces of the core tests (test_core_api, test_core_complete, test_worker_acks).

`Clients` opens `worqr.Worqr` clients on one prefix and closes every one of them
at teardown. "Manual" clients have a heartbeat so long that their background
thread never runs during a test: the test drives heartbeats and reaping itself.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Any

import redis

import worqr
from worqr._core.lua import source
from worqr._keys import MeshKeys, QueueKeys  # the one place key names are formatted

# Long enough that no background heartbeat (nor reaping) happens during a test.
MANUAL = {"ttl": 60.0, "heartbeat": 20.0}


class Clients:
    """Factory of clients of one mesh; `close_all()` closes them."""

    def __init__(self, url: str, prefix: str) -> None:
        self.url = url
        self.prefix = prefix
        self.opened: list[worqr.Worqr] = []

    def make(self, *, url: str | None = None, **settings: Any) -> worqr.Worqr:
        """A client; ``settings`` are `worqr.Settings` fields (defaults: MANUAL
        timing), plus ``redis=`` to bring a command client of one's own."""
        values: dict[str, Any] = {"prefix": self.prefix, **MANUAL, **settings}
        redis_client = values.pop("redis", None)
        client = worqr.Worqr(url or self.url, redis=redis_client, settings=worqr.Settings(**values))
        self.opened.append(client)
        return client

    def worker(self, *queues: str, **settings: Any) -> worqr.Worqr:
        """A started worker that works on ``queues``."""
        client = self.make(**settings)
        client.start_worker()
        for queue in queues:
            client.start_work(queue)
        return client

    def close_all(self) -> None:
        """Close every client, all at once: each close waits for its listener
        thread (up to a quarter second), so one by one would add up."""
        errors: list[BaseException] = []

        def close(client: worqr.Worqr) -> None:
            try:
                client.close()
            except Exception as error:  # close the others anyway
                errors.append(error)

        threads = [threading.Thread(target=close, args=(c,)) for c in self.opened]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        self.opened.clear()
        if errors:
            raise errors[0]


class Recorder:
    """A thread-safe `on()` callback that keeps every (event, message) it gets."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[tuple[str, Any]] = []

    def __call__(self, event: str, message: Any) -> None:
        with self._lock:
            self.events.append((event, message))

    def snapshot(self) -> list[tuple[str, Any]]:
        with self._lock:
            return list(self.events)

    def clear(self) -> None:
        with self._lock:
            self.events.clear()

    def matching(self, predicate: Callable[[str, Any], bool]) -> list[tuple[str, Any]]:
        return [(e, m) for e, m in self.snapshot() if predicate(e, m)]


def kill(raw: redis.Redis, client: worqr.Worqr) -> str:
    """Make ``client``'s worker dead for its peers: delete its alive key, as if it
    had expired. Returns the dead worker id."""
    worker = client.worker_id
    assert worker is not None
    assert raw.delete(MeshKeys(client.settings.prefix).alive(worker)) == 1
    return worker


def keys_under(raw: redis.Redis, prefix: str) -> list[bytes]:
    """Every key of the mesh ``prefix`` (mesh keys and per-queue keys)."""
    found = set(raw.scan_iter(match=f"{{{prefix}}}*", count=1000))
    found |= set(raw.scan_iter(match=f"{{{prefix}:*", count=1000))
    return sorted(found)


def queue_keys(prefix: str, queue: str) -> QueueKeys:
    """The key names of one queue (`worqr._keys.QueueKeys`)."""
    return MeshKeys(prefix).queue(queue)


class CountingRedis(redis.Redis):
    """A real client that records the script sha of every EVALSHA it sends."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scripts_sent: list[str] = []

    def execute_command(self, *args: Any, **options: Any) -> Any:
        if args and args[0] == "EVALSHA":
            self.scripts_sent.append(str(args[1]))
        return super().execute_command(*args, **options)


def sha(script: str) -> str:
    """The SHA1 Redis knows a worqr script by."""
    return hashlib.sha1(source(script).encode("utf-8")).hexdigest()
