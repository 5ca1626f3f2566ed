"""Notifications: which channels a client listens on, what a pub/sub message
(or the fallback poll) means for each queue, and who waits for a job's end."""

from __future__ import annotations

import weakref
from typing import Any

from .calls import Plan, Subscribe
from .state import Callback, CoreState, text


class Notifications:
    def __init__(self, state: CoreState) -> None:
        self.state = state
        self._listeners: dict[str, list[Callback]] = {}
        self._channels: dict[str, tuple[str, str]] = {}  # channel -> (queue, role)
        # Waiters of `result()`, by ("done", queue, job id): set by the listener.
        self._waiters: dict[tuple[str, str, str], list[weakref.ref[Any]]] = {}

    def on(self, queue: str, callback: Callback) -> Plan[None]:
        if not callable(callback):
            raise TypeError("callback must be callable")
        keys = self.state.queue_keys(queue)
        listeners = self._listeners.setdefault(queue, [])
        if callback not in listeners:  # a retry after a failed subscribe: hear events once
            listeners.append(callback)
        yield from self.subscribe(queue, {keys.events: "events"})

    def subscribe(self, queue: str, roles: dict[str, str]) -> Plan[None]:
        """Listen on channels of ``queue``: each channel with its role, "events",
        "wake" or "notify"."""
        yield from self.state.publishing()  # subscribe the way scripts will publish
        for channel, role in roles.items():
            self._channels[channel] = (queue, role)
        yield Subscribe(add=tuple(roles))

    def unsubscribe(self, channel: str) -> Plan[None]:
        if self._channels.pop(channel, None) is not None:
            yield Subscribe(remove=(channel,))

    def listening(self, channel: str) -> bool:
        return channel in self._channels

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
            self.state.working.discard(queue)
            return [(queue, "delete", None)]
        return []

    def poll_events(self) -> list[tuple[str, str, Any]]:
        """The fallback poll: a "work" hint for every worked queue."""
        return [(queue, "work", 0) for queue in sorted(self.state.working)]

    def listeners(self, queue: str) -> list[Callback]:
        return list(self._listeners.get(queue, ()))

    @property
    def subscribed(self) -> bool:
        return bool(self._channels)

    # -- waiters of a job's end ----------------------------------------------------

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
