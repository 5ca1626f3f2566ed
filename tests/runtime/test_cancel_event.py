"""`CancelEvent` builds a `threading.Event` by hand (its condition on an RLock,
for speed), so it depends on what `Event.__init__` sets: these tests fail when
a Python release changes that, and prove it waits and wakes as an Event does.
And a cancel reaches a lane's run whichever thread gets there first."""

from __future__ import annotations

import threading
from collections import OrderedDict
from types import SimpleNamespace
from typing import Any

from tests.support.waiting import wait_until
from worqr._runtime.context import CancelEvent
from worqr._runtime.dispatch import Dispatcher


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


class Run:
    """What `Dispatcher.register` and `stop` use of a `Running`."""

    def __init__(self, pid: str) -> None:
        self.process = SimpleNamespace(id=pid)
        self.stops: list[str] = []

    def stop(self, reason: str) -> bool:
        self.stops.append(reason)
        return True


class LaneRegistersOnMiss(dict[str, Any]):
    """The dispatcher's ``running``: its first miss of the run's pid lets the
    lane register the run then, as its thread may between the loop's lookup of
    a cancelled pid and its mark for a start to come."""

    def __init__(self, dispatcher: Dispatcher, run: Run) -> None:
        super().__init__()
        self.dispatcher, self.run, self.missed = dispatcher, run, False

    def get(self, pid: str, default: Any = None) -> Any:
        found = super().get(pid, default)
        if found is None and not self.missed:
            self.missed = True
            self.dispatcher.register(self.run)  # type: ignore[arg-type]
        return found


def test_a_cancel_that_crosses_a_lane_registering_its_run_stops_it_once() -> None:
    dispatcher = Dispatcher.__new__(Dispatcher)  # what stop and register use of it
    run = Run("w.1")
    dispatcher.running = LaneRegistersOnMiss(dispatcher, run)
    dispatcher._cancelled_early = OrderedDict()
    dispatcher.stop("w.1", "cancel")
    assert run.stops == ["cancel"]  # not lost: the run was registered, no mark seen yet
    assert not dispatcher._cancelled_early  # no mark left to stop a later run
