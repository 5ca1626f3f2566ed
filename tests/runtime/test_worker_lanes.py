"""Lanes: a worker whose handlers are all sync runs them on threads that take,
run and finish their own work. Idle lanes still serve new work at once while
others are busy, a finish rides on the lane's next take, a mixed worker keeps
the loop's path, and the bookkeeping hands a freed slot on without a race."""

from __future__ import annotations

import contextvars
import threading
import uuid

import redis

import worqr
from tests.support.recorders import HookCounter
from tests.support.scripts import script_calls_run
from tests.support.waiting import wait_until
from tests.support.workers import Runner, WorkerFactory
from worqr._clients.sync_exec import SyncExecutor
from worqr._runtime.capacity import Capacity
from worqr._runtime.lane_calls import LaneCalls

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="unset")


def test_an_idle_lane_starts_new_work_while_another_is_busy(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    release = threading.Event()
    started: list[str] = []
    worker = new_worker({"poll_interval": 60}, concurrency=2)

    @worker.handler("q")
    def handle(task: str) -> None:
        started.append(task)
        if task == "slow":
            assert release.wait(10)

    runner.start(worker)
    try:
        client.enqueue("q", "slow")
        wait_until(lambda: started == ["slow"])
        # The worker has a free lane: it stays in the idle set, so this one
        # is started by a wake-up now, not after "slow" ends (nor by a poll).
        client.enqueue("q", "fast")
        wait_until(lambda: started == ["slow", "fast"], timeout=2.0)
    finally:
        release.set()
    wait_until(lambda: client.get_stats("q").get("finished") == 2)


def test_a_finish_sent_alone_keeps_the_wake_up_of_its_job_queue(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    """A lane whose job of "a" ends while "b" waits for a slot serves "b" and
    sends the finish of "a" alone: the worker must stay in the idle set of "a"
    (its take of "a" came back short), so the next job of "a" wakes it at once,
    not at the next poll (a flow's next step waited 5 s on a loaded machine)."""
    worker = new_worker({"poll_interval": 60}, concurrency=2, take_ahead=False)
    ran: list[str] = []
    holding, release = threading.Event(), threading.Event()

    @worker.job("a")
    def run_a(payload: str) -> None:
        if payload == "first":  # its take asked for 2: short, the worker is idle on "a"
            client.submit("c", "hold")
            assert holding.wait(10)  # "c" holds the other slot
            client.submit("b", "next")  # woken with no slot free: "b" is starved
            capacity = worker._dispatch.capacity  # type: ignore[union-attr]
            wait_until(lambda: capacity.starved("b"), message="the wake-up of b")
        ran.append(f"a {payload}")

    @worker.job("b")
    def run_b(payload: str) -> None:
        ran.append(f"b {payload}")

    @worker.job("c")
    def run_c(payload: str) -> None:
        holding.set()
        assert release.wait(20)

    runner.start(worker)
    try:
        client.submit("a", "first")
        wait_until(lambda: ran == ["a first", "b next"], message="a, then b on its slot")
        client.submit("a", "second")
        wait_until(lambda: len(ran) == 3, timeout=5.0, message="a wake-up, not a 60 s poll")
        assert ran[2] == "a second"
    finally:
        release.set()


def test_lane_handlers_run_on_lane_threads_with_their_context(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    seen: list[tuple[str, str | bytes, str]] = []
    worker = new_worker(concurrency=3)

    @worker.handler("q")
    def handle(task: str) -> None:
        seen.append(
            (threading.current_thread().name, worqr.current_process().task, request_id.get())
        )
        request_id.set(task)  # must not leak into the next task run by this lane

    runner.start(worker)
    client.enqueue_many("q", [f"t{i}" for i in range(30)])
    wait_until(lambda: len(seen) == 30)
    assert {name.rsplit("_", 1)[0] for name, _, _ in seen} == {"worqr-handler"}
    assert sorted(task for _, task, _ in seen) == sorted(f"t{i}" for i in range(30))
    assert {value for _, _, value in seen} == {"unset"}


def test_a_finish_rides_on_the_lanes_next_take(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    recorder = HookCounter()
    done: list[str] = []
    worker = new_worker({"poll_interval": 60}, concurrency=1, hooks=[recorder])
    worker.handler("q")(done.append)
    runner.start(worker)
    wait_until(lambda: any(entry[0] == "q" for entry in recorder.dequeues))  # joined, drained
    calls_before = script_calls(client)
    client.enqueue_many("q", [str(i) for i in range(20)])
    wait_until(lambda: client.get_stats("q").get("finished") == 20)
    # One lane, 20 tasks: each take carries the finish before it, so there is
    # one take per task and one more that finds the queue empty, and no finish
    # of its own.
    takes = [entry for entry in recorder.dequeues if entry[0] == "q"]
    assert sum(got for _, _, got in takes) == 20
    assert len(takes) <= 22, takes
    # In Redis: the enqueue, about 21 takes and a heartbeat or two. Finishes
    # sent on their own would add 20 more script calls.
    calls = script_calls(client) - calls_before
    assert calls <= 28, calls


def script_calls(client: worqr.Worqr) -> int:
    """How many script calls the server has run (its command statistics)."""
    return script_calls_run(client._redis)


def test_a_worker_with_an_async_handler_keeps_the_loops_path(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    names: list[str] = []
    worker = new_worker(concurrency=2)

    @worker.handler("sync")
    def handle(task: str) -> None:
        names.append(threading.current_thread().name)

    @worker.handler("async")
    async def handle_async(task: str) -> None:
        names.append("loop")

    runner.start(worker)
    client.enqueue("sync", "a")
    client.enqueue("async", "b")
    wait_until(lambda: len(names) == 2)
    assert worker._lanes is None
    assert sorted(names) == ["loop", "worqr-handler_0"]


def test_pass_on_keeps_the_freed_slot_and_serves_a_starved_queue_first() -> None:
    capacity = Capacity(["a", "b"], concurrency=2, limits={})
    assert capacity.reserve("a") == 2
    capacity.settle("a", 2, 2)  # full: a is starved, both slots held
    assert not capacity.wanted("b")  # woken with no slot free: starved, no lane now
    assert capacity.pass_on("a") == ("b", 1)  # round robin: b gets the freed slot
    assert capacity.free("a") == capacity.free("b") == 0  # nobody else can take it
    assert not capacity.starved("b")  # being served: the take's answer decides
    capacity.settle("b", 1, 0)  # b came back short: in the idle set again
    # a's last process ends: a (still starved) gets every free slot back.
    assert capacity.pass_on("a") == ("a", 2)


def test_combined_reservations_are_cut_to_the_batch() -> None:
    capacity = Capacity(["a", "b"], concurrency=6, limits={}, batch=2)
    assert capacity.reserve("a") == 2
    assert capacity.reserve("a") == 2
    assert capacity.reserve("b") == 2  # every slot held; b's take is in flight
    capacity.settle("b", 2, 2)  # full: b is starved
    # Two lanes' finishes of a ride one take: their 4 slots are cut to the batch,
    # and the 2 given back serve the starved queue.
    assert capacity.cap("a", 4) == (2, ["b"])
    assert capacity.free("b") == 2
    assert capacity.cap("a", 2) == (2, [])


def test_the_lanes_connection_closes_only_after_the_lanes_exit(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """A worker that stops while a lane's call is in flight: the call ends
    normally (before, the connection was closed under it and the lane logged a
    failed take), and the connection closes once the lane has exited."""
    name = f"lane-{uuid.uuid4().hex[:8]}"
    twin = redis.Redis.from_url(redis_url, client_name=name)
    calls = LaneCalls(None, SyncExecutor(twin, worqr.Settings()), frozenset(), None, None)  # type: ignore[arg-type]
    got: list[object] = []
    lane = threading.Thread(target=lambda: got.append(twin.blpop(name, timeout=20)))
    lane.start()

    def clients(command: str | None = None) -> list[dict[str, str]]:
        found = [c for c in redis_client.client_list() if c["name"] == name]
        return [c for c in found if command is None or c["cmd"] == command]

    wait_until(lambda: clients("blpop"), message="the lane's call in flight")
    calls.close_after([lane])  # as `Lanes.shutdown` does
    redis_client.rpush(name, "x")
    lane.join(20)
    assert got == [(name.encode(), b"x")]  # answered, not cut off
    wait_until(lambda: not clients(), message="the connection closed after the lane")
