"""Taking ahead: a worker holds up to three times `concurrency` processes more
than it runs while handlers are short (fewer as they get longer, so none waits
in the line much longer than `TAKE_AHEAD_BELOW`), runs what it took oldest first, never takes ahead
for slow handlers or for a queue with its own limit, and gives back what it
holds when it stops. Each worker test runs twice: sync handlers (lanes) and
async ones (the loop's dispatcher)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest

import worqr
from tests.support.waiting import wait_until
from tests.support.workers import Runner, WorkerFactory
from worqr._process import Process
from worqr._runtime.capacity import Capacity
from worqr._runtime.line import Line
from worqr._runtime.pace import MOST_AHEAD, TAKE_AHEAD_BELOW, HandlerPace, ahead_factor


@pytest.fixture(params=["lanes", "loop"])
def path(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def on(
    worker: worqr.Worker,
    queue: str,
    path: str,
    body: Callable[[str], object],
    blocks: Callable[[str], bool] = lambda task: True,
) -> None:
    """``body`` as the handler of ``queue``: itself (sync, on lanes), or called by
    an async handler (the loop's path), in a thread for the tasks that ``blocks``
    says block (a thread hop costs more than the take-ahead's 2 ms on a loaded
    machine, so quick tasks that must look quick run inline)."""
    if path == "lanes":
        worker.handler(queue)(body)
        return

    @worker.handler(queue)
    async def handle(task: str) -> None:
        if blocks(task):
            await asyncio.to_thread(body, task)
        else:
            body(task)


def held_by_worker(
    client: worqr.Worqr, worker: worqr.Worker, queue: str, highest: list[int], path: str
) -> worqr.Worker:
    """``worker`` with a handler on ``queue`` that notes, in ``highest``, the most
    processes its worker held in Redis at any start."""
    worker_id = [""]

    def note(task: str) -> None:
        held = client.count_worker_processes(queue, worker_id[0])
        highest[0] = max(highest[0], held)

    if path == "lanes":

        @worker.handler(queue)
        def handle(task: str) -> None:
            worker_id[0] = worqr.current_process().worker_id
            note(task)

    else:

        @worker.handler(queue)
        async def handle_async(task: str) -> None:
            worker_id[0] = worqr.current_process().worker_id
            await asyncio.to_thread(note, task)

    return worker


def most_held_in_a_drain(
    runner: Runner, client: worqr.Worqr, worker: worqr.Worker, path: str
) -> int:
    """Drain 300 tasks of "q" with ``worker``; the most processes it held at any start."""
    highest = [0]
    held_by_worker(client, worker, "q", highest, path)
    client.enqueue_many("q", [str(i) for i in range(300)])
    runner.start(worker)
    wait_until(lambda: client.get_stats("q").get("finished") == 300)
    return highest[0]


@pytest.mark.serial
def test_quick_handlers_take_ahead_up_to_three_times_the_concurrency(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr, path: str
) -> None:
    highest = most_held_in_a_drain(runner, client, new_worker(concurrency=2), path)
    assert 2 < highest <= 2 + 2 * MOST_AHEAD, highest


def test_without_take_ahead_a_worker_holds_at_most_its_concurrency(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr, path: str
) -> None:
    highest = most_held_in_a_drain(
        runner, client, new_worker(concurrency=2, take_ahead=False), path
    )
    assert highest == 2


def test_slow_handlers_never_take_ahead(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr, path: str
) -> None:
    highest = [0]
    worker = new_worker(concurrency=2)

    def handle(task: str) -> None:
        highest[0] = max(highest[0], client.count_worker_processes("q", worker.worker_id or ""))
        time.sleep(TAKE_AHEAD_BELOW * 3)  # a handler slower than taking ahead is for

    on(worker, "q", path, handle)

    client.enqueue_many("q", [str(i) for i in range(40)])
    runner.start(worker)
    wait_until(lambda: client.get_stats("q").get("finished") == 40)
    assert highest[0] == 2


def test_a_queue_with_its_own_limit_is_never_taken_ahead(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr, path: str
) -> None:
    highest = most_held_in_a_drain(
        runner, client, new_worker(concurrency=4, queue_limits={"q": 2}), path
    )
    assert highest == 2


def test_what_was_taken_ahead_runs_oldest_first(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr, path: str
) -> None:
    started: list[str] = []
    if path == "lanes":  # one lane: its starts are in order only if its line is
        worker = new_worker(concurrency=1)
        worker.handler("q")(started.append)
    else:  # two at a time, four held: the loop starts them in its line's order
        worker = new_worker(concurrency=2)

        @worker.handler("q")
        async def handle(task: str) -> None:
            started.append(task)
            await asyncio.sleep(0)

    client.enqueue_many("q", [f"{i:03d}" for i in range(200)])
    runner.start(worker)
    wait_until(lambda: len(started) == 200)
    # A process taken ahead starts before the ones the next take brings, so the
    # queue's order holds.
    assert started == [f"{i:03d}" for i in range(200)]


def test_a_stopping_worker_gives_back_what_it_took_ahead(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr, path: str
) -> None:
    ran: list[str] = []
    enough = threading.Event()
    worker = new_worker(concurrency=2)

    def handle(task: str) -> None:
        ran.append(task)
        if len(ran) >= 100:
            enough.set()

    on(worker, "q", path, handle)

    client.enqueue_many("q", [str(i) for i in range(5000)])
    runner.start(worker)
    assert enough.wait(30)
    runner.stop(worker)
    # Every task ran once or is queued again; none is held by anybody.
    stats = client.get_stats("q")
    assert client.count_tasks("q") + stats.get("finished", 0) == 5000
    assert client.count_processes("q") == 0
    assert len(ran) == len(set(ran)) == stats.get("finished", 0)


def pace_of(worker: worqr.Worker) -> HandlerPace:
    """The pace that sets how far ``worker`` takes ahead: its lanes' (sync
    handlers), or its dispatcher's (the loop's)."""
    lanes, dispatch = worker._lanes, worker._dispatch
    pace = lanes._pace if lanes is not None else dispatch.pace if dispatch else None
    assert pace is not None, "this worker does not take ahead"
    return pace


def warm_until_ahead(
    worker: worqr.Worker, send: Callable[[int], object], finished: Callable[[], int]
) -> int:
    """Send rounds of 50 quick tasks or jobs (``send(50)``) until the worker's
    pace takes the most ahead, and return how many it ran. The take-ahead
    follows measured handler times, so a loaded machine may need more rounds;
    one round usually does."""
    sent = 0
    deadline = time.monotonic() + 60
    while True:
        send(50)
        sent += 50
        wait_until(lambda: finished() == sent)  # noqa: B023 (waited for at once)
        if ahead_factor(pace_of(worker).mean) == MOST_AHEAD:
            return sent
        assert time.monotonic() < deadline, f"no take-ahead after {sent} quick handlers"


def gated(ran: list[str], gate: threading.Event) -> Callable[[str], str]:
    """A handler that notes each payload, and on "gate" holds until ``gate`` is set."""

    def handle(payload: str) -> str:
        ran.append(payload)
        if payload == "gate":
            assert gate.wait(30)
        return payload

    return handle


def hears_one_cancel(worker: worqr.Worker) -> None:
    """Wait until ``worker`` heard a cancel for a process it does not run."""
    dispatch = worker._dispatch
    assert dispatch is not None
    wait_until(lambda: len(dispatch._cancelled_early) == 1, message="the worker heard the cancel")


def test_a_process_cancelled_while_it_waits_in_the_line_never_starts(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr, path: str
) -> None:
    ran: list[str] = []
    gate = threading.Event()
    worker = new_worker(concurrency=1)
    on(worker, "q", path, gated(ran, gate), blocks=lambda task: task == "gate")
    runner.start(worker)
    warm = warm_until_ahead(
        worker,
        lambda n: client.enqueue_many("q", [f"warm{i}" for i in range(n)]),
        lambda: client.get_stats("q").get("finished", 0),
    )
    client.enqueue_many("q", ["gate", "a", "b", "c"])
    wait_until(
        lambda: ran[-1:] == ["gate"] and client.count_processes("q") == 4,
        message="a, b and c wait in the line behind the gate",
    )
    assert client.cancel_tasks("q", "b") == 1
    hears_one_cancel(worker)
    gate.set()
    wait_until(lambda: client.get_stats("q").get("finished") == warm + 3)
    assert ran[warm:] == ["gate", "a", "c"]  # b never started
    assert client.count_processes("q") == 0 and client.count_tasks("q") == 0
    assert client.get_stats("q").get("cancelled") == 1


def test_a_job_cancelled_while_it_waits_in_the_line_never_starts(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr, path: str
) -> None:
    ran: list[str] = []
    gate = threading.Event()
    worker = new_worker(concurrency=1)
    handle = gated(ran, gate)
    if path == "lanes":
        worker.job("j")(handle)
    else:

        @worker.job("j")
        async def handle_async(payload: str) -> str:
            if payload == "gate":  # it blocks; the quick ones must look quick (see `on`)
                return await asyncio.to_thread(handle, payload)
            return handle(payload)

    runner.start(worker)
    warm = warm_until_ahead(
        worker,
        lambda n: client.submit_many("j", [f"warm{i}" for i in range(n)]),
        lambda: client.count_jobs("j")["finished"],
    )
    _, first, second = client.submit_many("j", ["gate", "a", "b"])
    wait_until(
        lambda: ran[-1:] == ["gate"] and client.count_jobs("j")["active"] == 3,
        message="a and b wait in the line behind the gate",
    )
    assert client.cancel_job("j", first.id)
    hears_one_cancel(worker)
    gate.set()
    assert client.result("j", second.id, timeout=10) == "b"
    assert ran[warm:] == ["gate", "b"]  # a never started
    assert client.get_job("j", first.id).state == "cancelled"  # type: ignore[union-attr]
    counts = client.count_jobs("j")
    assert (counts["finished"], counts["cancelled"], counts["active"]) == (warm + 2, 1, 0)


def test_the_slots_taken_ahead_shrink_as_handlers_get_longer() -> None:
    # A process in the line waits about (factor x the mean handler time): never
    # much more than TAKE_AHEAD_BELOW.
    assert ahead_factor(0.00001) == MOST_AHEAD
    for mean in (0.00001, 0.0005, 0.0008, 0.0012, 0.0019):
        factor = ahead_factor(mean)
        assert 1 <= factor <= MOST_AHEAD
        assert factor * mean <= TAKE_AHEAD_BELOW
        assert (factor + 1) * mean > TAKE_AHEAD_BELOW or factor == MOST_AHEAD
    assert ahead_factor(TAKE_AHEAD_BELOW) == 0
    assert ahead_factor(1.0) == 0


def test_pace_takes_ahead_while_handlers_are_quick() -> None:
    capacity = Capacity(["q"], concurrency=2, limits={})
    pace = HandlerPace(capacity, concurrency=2)
    assert capacity.free("q") == 2  # nothing timed yet: not ahead
    pace.ended(0.0001)  # the mean is just under TAKE_AHEAD_BELOW: one more each
    assert capacity.free("q") == 4
    for _ in range(60):  # a run of quick ones: the most
        pace.ended(0.0001)
    assert capacity.free("q") == 2 + 2 * MOST_AHEAD
    pace.ended(TAKE_AHEAD_BELOW * 20)  # one slow handler stops it at once
    assert capacity.free("q") == 2
    for _ in range(60):  # and a run of quick ones starts it again
        pace.ended(0.0001)
    assert pace.mean < TAKE_AHEAD_BELOW
    assert capacity.free("q") == 2 + 2 * MOST_AHEAD


def test_slots_taken_ahead_skip_capped_and_persistent_queues() -> None:
    capacity = Capacity(
        ["free", "capped", "kept"], concurrency=3, limits={"capped": 1}, persistent=["kept"]
    )
    capacity.set_ahead(3)
    assert capacity.free("free") == 6
    assert capacity.free("capped") == 1
    assert capacity.free("kept") == 3  # a persistent queue's cap: concurrency
    assert capacity.reserve("free") == 6
    assert capacity.free("capped") == 0  # the shared slots are all held
    capacity.set_ahead(0)  # held beyond the lowered limit: kept until they end
    capacity.settle("free", 6, 6)
    assert capacity.free("free") == 0
    for _ in range(3):
        capacity.release("free")
    assert capacity.free("free") == 0  # still 3 held: the plain concurrency
    capacity.release("free")
    assert capacity.free("free") == 1


def test_the_line_serves_queues_in_turn_each_oldest_first() -> None:
    def process(queue: str, n: int) -> Process:
        return Process(f"{queue}{n}", queue, "", b"", "w")

    line = Line()
    line.extend([process("a", i) for i in range(3)])
    line.extend([process("b", 0)])
    line.extend([process("a", 3), process("c", 0), process("b", 1)])
    taken = []
    while line:
        taken.append(line.pop().id)
    # A busy queue's take cannot hold the others back: one of its own, then
    # one of each other queue's.
    assert taken == ["a0", "b0", "c0", "a1", "b1", "a2", "a3"]
