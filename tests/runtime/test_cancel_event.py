"""`CancelEvent` builds a `threading.Event` by hand (its condition on an RLock,
for speed), so it depends on what `Event.__init__` sets: these tests fail when
a Python release changes that, and prove it waits and wakes as an Event does."""

from __future__ import annotations

import threading

from tests.support.waiting import wait_until
from worqr._runtime.context import CancelEvent


def test_it_sets_every_field_an_event_has() -> None:
    assert set(vars(CancelEvent())) == set(vars(threading.Event())) == {"_cond", "_flag"}


def test_it_waits_wakes_and_clears_as_an_event_does() -> None:
    event = CancelEvent()
    assert not event.is_set() and event.wait(0.01) is False
    woke: list[bool] = []
    waiter = threading.Thread(target=lambda: woke.append(event.wait(10)))
    waiter.start()
    wait_until(lambda: event._cond._waiters, message="the waiter waiting")  # type: ignore[attr-defined]
    event.set()
    waiter.join(10)
    assert woke == [True] and event.is_set() and event.wait(0)
    event.clear()
    assert not event.is_set()
