"""The take loop's decisions (`worqr._runtime.taking`), without Redis or
threads: each branch as the actions it yields, driven by scripted replies."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from worqr._clients.outage import OutageLog
from worqr._errors import LeaseLostError
from worqr._runtime.capacity import Capacity
from worqr._runtime.taking import Action, Pause, SendAlone, Take, TakeLoop, Taken, Took, Wake

FENCE = 0.25


class Held:
    """The shell's finishes, as `taking.Finishes` wants them."""

    def __init__(self, finishes: Iterable[str] = (), again: Callable[[], bool] = bool) -> None:
        self.finishes = list(finishes)
        self._again = again

    def carry(self) -> list[str]:
        finishes, self.finishes = self.finishes, []
        return finishes

    def keep(self, finishes: list[str]) -> None:
        self.finishes = finishes + self.finishes

    def again(self) -> bool:
        return self._again()


def taker(
    capacity: Capacity,
    *,
    fills: bool,
    stopping: Callable[[], bool] = lambda: False,
    fresh: Callable[[], bool] = lambda: True,
) -> TakeLoop[str]:
    return TakeLoop(capacity, stopping=stopping, lease_fresh=fresh, fence_wait=FENCE, fills=fills)


Reply = Taken | Exception | Callable[[Take[str]], Taken | Exception]


def drive(steps: Any, replies: Iterable[Reply] = ()) -> list[Action[str]]:
    """Every action ``steps`` yields until it ends, as a shell drives it: each
    `Take` gets the next of ``replies`` (a reply, an error, or a function of
    the take that returns one)."""
    left, done = list(replies), []
    for action in steps:
        done.append(copy.copy(action))  # as yielded (a take's reply is set below)
        if isinstance(action, Take):
            assert left, f"no reply left for {action}"
            reply = left.pop(0)
            reply = reply(action) if callable(reply) else reply
            if isinstance(reply, Exception):
                action.error = reply
            else:
                action.reply = reply
    assert not left, "replies left over"
    return done


def took(n: int, *, accepted: list[bool] | None = None, more: bool = False) -> Taken:
    processes: Any = [f"p{i}" for i in range(n)]
    return accepted or [], processes, more


def logs() -> tuple[OutageLog, OutageLog]:
    return OutageLog("take"), OutageLog("acknowledge")


# -- takes that land ---------------------------------------------------------------


def test_a_take_carries_the_finishes_reserves_every_free_slot_and_settles() -> None:
    capacity = Capacity(["q"], concurrency=3, limits={})
    held = Held(["f1", "f2"])
    steps = taker(capacity, fills=False).steps("q", held, *logs())
    done = drive(steps, [took(3, accepted=[True, False])])
    assert done == [
        Take(3, ["f1", "f2"]),
        Took(3, ["p0", "p1", "p2"], ["f1", "f2"], [True, False], []),
    ]
    assert capacity.held("q") == 3 and held.finishes == []
    assert capacity.starved("q")  # full: a lane runs them, the next freed slot serves q


def test_the_puller_fills_until_no_slot_is_free_then_sends_what_waits_alone() -> None:
    capacity = Capacity(["q"], concurrency=3, limits={})
    held = Held(["f1"])

    def full_and_one_more_finish(take: Take[str]) -> Taken:
        held.finishes.append("f2")  # a handler ended during the call
        return took(take.count, accepted=[True])

    done = drive(taker(capacity, fills=True).steps("q", held, *logs()), [full_and_one_more_finish])
    assert done == [
        Take(3, ["f1"]),
        Took(3, ["p0", "p1", "p2"], ["f1"], [True], []),
        SendAlone(["f2"]),  # no slot to fill: the finish goes alone
    ]
    assert capacity.starved("q")


def test_no_free_slot_without_finishes_ends_the_loop_quietly() -> None:
    capacity = Capacity(["q"], concurrency=1, limits={})
    capacity.reserve("q")
    assert drive(taker(capacity, fills=True).steps("q", Held(), *logs())) == []
    assert capacity.starved("q")  # the next slot that frees serves it


@pytest.mark.parametrize("fills", [True, False])
def test_a_short_take_of_a_drained_queue_ends_the_loop(fills: bool) -> None:
    capacity = Capacity(["q"], concurrency=4, limits={})
    done = drive(taker(capacity, fills=fills).steps("q", Held(), *logs()), [took(1)])
    assert done == [Take(4, []), Took(4, ["p0"], [], [], [])]
    assert capacity.held("q") == 1 and not capacity.starved("q")  # in the idle set


@pytest.mark.parametrize("why", ["more jobs", "finishes wait", "woken meanwhile"])
@pytest.mark.parametrize("fills", [True, False])
def test_a_short_take_that_may_have_left_work_takes_again_or_wakes_the_queue(
    why: str, fills: bool
) -> None:
    capacity = Capacity(["q"], concurrency=4, limits={})
    woken = [why == "woken meanwhile"]  # one wake-up came during the first take
    held = Held(again=lambda: bool(held.finishes) or bool(woken and woken.pop()))

    def short(take: Take[str]) -> Taken:
        if why == "finishes wait":
            held.finishes.append("f")
        return took(1, more=why == "more jobs")

    replies = [short, took(0)] if fills else [short]
    done = drive(taker(capacity, fills=fills).steps("q", held, *logs()), replies)
    if fills:  # the puller takes again at once, carrying what waits
        carried = ["f"] if why == "finishes wait" else []
        assert done == [
            Take(4, []),
            Took(4, ["p0"], [], [], []),
            Take(3, carried),
            Took(3, [], carried, [], []),
        ]
    else:  # a lane runs what it took and wakes the queue: another take serves it
        assert done == [Take(4, []), Took(4, ["p0"], [], [], ["q"])]


def test_a_wake_up_is_read_after_the_take_settles() -> None:
    capacity = Capacity(["q"], concurrency=2, limits={})
    seen: list[bool] = []

    def woken() -> bool:  # the settle cleared the starved mark; a wake-up sets it again
        seen.append(capacity.starved("q"))
        return True

    done = drive(taker(capacity, fills=False).steps("q", Held(again=woken), *logs()), [took(1)])
    assert seen == [False] and done[-1] == Took(2, ["p0"], [], [], ["q"])


def test_slots_a_lane_holds_already_are_cut_to_the_batch_and_the_rest_wake_others() -> None:
    capacity = Capacity(["q", "other"], concurrency=4, limits={}, batch=2)
    capacity.reserve("q")  # 2
    capacity.reserve("q")  # 2 more: a lane combined two reservations
    assert capacity.reserve("other") == 0  # starved
    done = drive(taker(capacity, fills=False).steps("q", Held(), *logs(), reserved=4), [took(2)])
    assert done == [Wake(["other"]), Take(2, []), Took(2, ["p0", "p1"], [], [], [])]


# -- stopping and fencing -------------------------------------------------------------


def test_stopping_ends_the_loop_leaving_the_finishes_and_freeing_held_slots() -> None:
    capacity = Capacity(["q", "other"], concurrency=1, limits={})
    assert capacity.reserve("q") == 1  # held for the loop (a lane's)
    assert capacity.reserve("other") == 0  # starved
    held = Held(["f"])
    steps = taker(capacity, fills=False, stopping=lambda: True).steps(
        "q", held, *logs(), reserved=1
    )
    assert drive(steps) == [Wake(["other"])]
    assert held.finishes == ["f"]  # the shell settles them
    assert capacity.held("q") == 0


def test_a_stale_lease_sends_the_finishes_alone_and_waits_for_a_heartbeat() -> None:
    capacity = Capacity(["q"], concurrency=2, limits={})
    fresh = iter([False, False, True])
    held = Held(["f"])
    steps = taker(capacity, fills=False, fresh=lambda: next(fresh)).steps("q", held, *logs())
    done = drive(steps, [took(2)])
    assert done == [
        SendAlone(["f"]),  # the work was ours: its finish goes out
        Pause(FENCE),
        Pause(FENCE),  # nothing left to send
        Take(2, []),
        Took(2, ["p0", "p1"], [], [], []),
    ]


def test_a_stale_lease_gives_back_the_slots_a_lane_held() -> None:
    capacity = Capacity(["q"], concurrency=2, limits={})
    capacity.reserve("q")
    fresh = iter([False, True])
    steps = taker(capacity, fills=False, fresh=lambda: next(fresh)).steps(
        "q", Held(), *logs(), reserved=2
    )
    assert drive(steps, [took(0)]) == [Pause(FENCE), Take(2, []), Took(2, [], [], [], [])]
    assert capacity.held("q") == 0


# -- takes that fail ------------------------------------------------------------------


def test_a_refused_lease_gives_the_take_back_and_resends_its_finishes_alone() -> None:
    capacity = Capacity(["q", "other"], concurrency=2, limits={})
    held = Held(["f"])

    def refused(take: Take[str]) -> BaseException:
        assert capacity.reserve("other") == 0  # starved while the take holds the slots
        return LeaseLostError("refused")

    done = drive(taker(capacity, fills=False).steps("q", held, *logs()), [refused, took(0)])
    assert done == [
        Take(2, ["f"]),
        Wake(["other"]),
        SendAlone(["f"], refused=True),
        Pause(FENCE),
        Take(2, []),  # the finish is not carried again
        Took(2, [], [], [], ["other"]),  # (the shell did not act on the wake-up)
    ]


@pytest.mark.parametrize("carrying", [True, False])
def test_redis_away_keeps_the_finishes_and_the_queue_logs_once_and_backs_off(
    carrying: bool,
) -> None:
    capacity = Capacity(["q"], concurrency=2, limits={})
    outage, ack_outage = logs()
    held = Held(["f"] if carrying else [])
    down = RedisConnectionError("down")
    steps = taker(capacity, fills=False).steps("q", held, outage, ack_outage)
    carried = ["f"] if carrying else []
    done = drive(steps, [down, down, took(1, accepted=[True] if carrying else None)])
    assert done == [
        Take(2, carried),
        Pause(0.1),
        Take(2, carried),  # kept: the next take carries them again
        Pause(0.2),
        Take(2, carried),
        Took(2, ["p0"], carried, [True] if carrying else [], []),
    ]
    assert outage.since is ack_outage.since is None  # both over once a take lands
    assert capacity.held("q") == 1


def test_an_outage_that_holds_finishes_is_the_acknowledgements_outage() -> None:
    capacity = Capacity(["q"], concurrency=1, limits={})
    outage, ack_outage = logs()
    steps = taker(capacity, fills=False).steps("q", Held(["f"]), outage, ack_outage)
    take = next(steps)
    assert take == Take(1, ["f"])
    take.error = RedisConnectionError("down")
    assert next(steps) == Pause(0.1)
    assert ack_outage.failures == 1 and outage.failures == 0
    assert capacity.held("q") == 0 and capacity.starved("q")


def test_a_shell_that_stops_driving_frees_the_slots_and_keeps_the_finishes() -> None:
    capacity = Capacity(["q", "other"], concurrency=1, limits={})
    held = Held(["f"])
    steps = taker(capacity, fills=True).steps("q", held, *logs())
    assert next(steps) == Take(1, ["f"])
    capacity.reserve("other")  # starved: a cancel wakes nobody (the loop is going away)
    steps.close()  # as the shell does when its take is cancelled
    assert held.finishes == ["f"] and capacity.held("q") == 0
