"""Notifications: which channels a client listens on, and what a pub/sub message
(or the fallback poll) means for each queue."""

from __future__ import annotations

from typing import Any

from .base import Callback, CoreBase, text
from .calls import Plan, Subscribe


class Notifications(CoreBase):
    def on(self, queue: str, callback: Callback) -> Plan[None]:
        if not callable(callback):
            raise TypeError("callback must be callable")
        keys = self.queue_keys(queue)
        listeners = self._listeners.setdefault(queue, [])
        if callback not in listeners:  # a retry after a failed subscribe: hear events once
            listeners.append(callback)
        yield from self.publish_command()  # subscribe the way scripts will publish
        self._channels.setdefault(keys.events, (queue, "events"))
        yield Subscribe(add=(keys.events,))

    def parse_message(self, message: dict[str, Any]) -> list[tuple[str, str, Any]]:
        """Turn one pub/sub message into ``(queue, event, message)`` triples.

        Events: ``("work", n)`` where n is a hint of how many tasks arrived (0:
        unknown, e.g. after a (re)subscribe, when the queue must be drained);
        ``("due", ms)``: this worker holds the queue's timer, and delayed work is
        due in ``ms`` (by Redis's clock); ``("cancel", [pid, ...])``;
        ``("delete", None)``. A job queue's notify channel wakes the waiters of
        `result` instead and yields no event.
        """
        kind = message.get("type")
        channel = text(message.get("channel") or b"")
        entry = self._channels.get(channel)
        if entry is None:
            return []
        queue, role = entry
        if kind in ("subscribe", "ssubscribe"):
            if role == "notify":  # a (re)subscribe: waiters read again
                self.wake_waiters(queue)
            return [(queue, "work", 0)] if role == "wake" else []
        if kind not in ("message", "smessage"):
            return []
        data = text(message.get("data") or b"")
        name, _, rest = data.partition(":")
        if role == "notify":
            self._notified(queue, name, rest)
            return []
        return self._event(queue, name, rest)

    def _notified(self, queue: str, name: str, rest: str) -> None:
        """A job queue's notify channel: a job ended (``rest``: its id), and its
        waiters read again; or the queue was deleted, and every waiter of it does."""
        if name == "done":
            self.wake_waiters(queue, rest)
        elif name == "deleted":
            self.wake_waiters(queue)

    def _event(self, queue: str, name: str, rest: str) -> list[tuple[str, str, Any]]:
        """A queue's events channel: what the message ``name:rest`` means."""
        if name == "work":
            return [(queue, "work", int(rest or 0))]
        if name == "due":
            return [(queue, "due", int(rest or 0))]
        if name == "cancel":
            return [(queue, "cancel", rest.split())]
        if name == "delete":
            self.working.discard(queue)
            return [(queue, "delete", None)]
        return []

    def poll_events(self) -> list[tuple[str, str, Any]]:
        """The fallback poll: a "work" hint for every worked queue."""
        return [(queue, "work", 0) for queue in sorted(self.working)]

    def listeners(self, queue: str) -> list[Callback]:
        return list(self._listeners.get(queue, ()))

    @property
    def subscribed(self) -> bool:
        return bool(self._channels)
