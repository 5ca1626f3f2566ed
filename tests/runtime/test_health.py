"""The health probes in the library: `WorkerSettings.health_port` (what an
embedded worker serves, and when), the checks of `worqr._runtime.progress`
(driven by hand where a real run cannot be made to stall on cue), and the
server of `worqr._runtime.probes`."""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

import worqr
from tests.support.workers import Runner, WorkerFactory
from worqr._clients.async_client import ClientProgress
from worqr._clients.outage import OutageLog
from worqr._runtime.capacity import Capacity
from worqr._runtime.probes import ProbeServer
from worqr._runtime.progress import Watched
from worqr._runtime.taking import Take, TakeLoop
from worqr.embedded import free_port


def probe(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read().decode()
    except (urllib.error.URLError, ConnectionError):
        return 0, ""


def test_the_settings_check_the_probe_options() -> None:
    with pytest.raises(TypeError, match="health_port"):
        worqr.WorkerSettings(health_port=True)
    with pytest.raises(ValueError, match="health_port"):
        worqr.WorkerSettings(health_port=65536)
    with pytest.raises(TypeError, match="health_host"):
        worqr.WorkerSettings(health_host="")
    with pytest.raises(ValueError, match="livez_after"):
        worqr.WorkerSettings(livez_after=float("nan"))
    with pytest.raises(ValueError, match=r"livez_after \(5\) must be shorter than max_blocked"):
        worqr.WorkerSettings(client=worqr.Settings(max_blocked=5), health_port=8081)
    # Without probes, a short max_blocked needs no livez_after below it.
    assert worqr.WorkerSettings(client=worqr.Settings(max_blocked=1)).livez_after == 5.0


def test_an_embedded_worker_serves_its_probes_while_it_runs(
    new_worker: WorkerFactory, runner: Runner
) -> None:
    port = free_port()
    worker = new_worker(health_port=port, livez_after=0.5)

    @worker.handler("q")
    async def handle(task: str) -> None:
        pass

    assert probe(port, "/livez") == (0, "")  # served while it runs, not before
    runner.start(worker)
    assert probe(port, "/readyz") == (200, "ok\n")
    assert probe(port, "/livez") == (200, "ok\n")
    runner.stop(worker)
    assert probe(port, "/livez") == (0, "")


def test_an_embedded_worker_refuses_a_busy_port_before_it_registers(
    new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    first = ProbeServer(Fixed(None, None), 0)
    try:
        worker = new_worker(health_port=first.port)

        @worker.handler("q")
        def handle(task: str) -> None:
            pass

        with pytest.raises(worqr.WorqrError, match=f"health probes on 127.0.0.1:{first.port}"):
            worker.run()
        assert client.get_workers() == []
    finally:
        first.close()


class Fixed:
    """Checks that say what they were told (or raise it)."""

    def __init__(self, live: str | Exception | None, ready: str | None) -> None:
        self._live, self._ready = live, ready

    def live(self) -> str | None:
        if isinstance(self._live, Exception):
            raise self._live
        return self._live

    def ready(self) -> str | None:
        return self._ready


def test_the_server_answers_in_one_line_and_says_when_a_check_fails() -> None:
    server = ProbeServer(Fixed(RuntimeError("boom\nagain"), "warming\n up"), 0)
    try:
        assert probe(server.port, "/livez") == (500, "the check failed: RuntimeError: boom again\n")
        assert probe(server.port, "/readyz") == (503, "warming up\n")
        request = urllib.request.Request(f"http://127.0.0.1:{server.port}/livez", method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=5)
        refused.value.close()
        assert refused.value.code == 501  # GET and HEAD only
    finally:
        server.close()


class Client:
    """What `Watched` reads of an `AsyncWorqr`, as a test sets it."""

    def __init__(self, **progress: Any) -> None:
        self.internals = self  # the probes read `client.internals.progress(now)`
        self.reading = ClientProgress(
            **{
                "since_heartbeat": 0.1,
                "loop_blocked": 0.0,
                "culprit": "",
                "loop_last_ran": None,
                "listening": True,
            }
            | progress
        )

    def progress(self, now: float) -> ClientProgress:
        return self.reading


def watched(client: Client, loop: TakeLoop[str] | None = None, **parts: Any) -> Watched:
    started = threading.Event()
    started.set()
    take_loops = [] if loop is None else [loop]
    return Watched(client, 1.0, take_loops, started, lambda: False, **parts)  # type: ignore[arg-type]


def take_loop() -> TakeLoop[str]:
    return TakeLoop(
        Capacity(["q"], concurrency=2, limits={}),
        stopping=lambda: False,
        lease_fresh=lambda: True,
        fence_wait=0.1,
        fills=True,
    )


class NoFinishes:
    def carry(self) -> list[str]:
        return []

    def keep(self, finishes: list[str]) -> None:
        pass

    def again(self) -> bool:
        return False


def test_a_take_in_flight_is_watched_until_its_reply_or_a_cancel() -> None:
    loop = take_loop()
    steps = loop.steps("q", NoFinishes(), OutageLog("take"), OutageLog("ack"))
    before = time.monotonic()
    take = next(steps)
    assert isinstance(take, Take)
    oldest = loop.oldest_take()
    assert oldest is not None and oldest[0] == "q" and before <= oldest[1] <= time.monotonic()
    take.reply = ([], [], False)
    list(steps)  # the reply came: the loop ends (a short take of a drained queue)
    assert loop.oldest_take() is None

    steps = loop.steps("q", NoFinishes(), OutageLog("take"), OutageLog("ack"))
    next(steps)
    assert loop.oldest_take() is not None
    steps.close()  # the shell was cancelled mid-take
    assert loop.oldest_take() is None


def test_livez_names_a_take_that_waited_too_long_and_a_take_loop_that_ended() -> None:
    loop = take_loop()
    assert watched(Client(), loop).live(2.0) is None
    loop.in_flight[1] = ("q", time.monotonic() - 3)
    reason = watched(Client(), loop).live(2.0)
    assert reason is not None and reason.startswith("a take from queue 'q' has waited 3.")

    async def ended() -> None:
        raise KeyError("a bug")

    async def main() -> str | None:
        task = asyncio.create_task(ended(), name="worqr-pull-q")
        await asyncio.gather(task, return_exceptions=True)
        return watched(Client(), pullers=[task]).live(2.0)

    assert asyncio.run(main()) == "the take loop of queue 'q' ended: KeyError: 'a bug'"

    async def lanes() -> str | None:
        task = asyncio.create_task(asyncio.sleep(0), name="worqr-lanes")
        await task
        return watched(Client(), pullers=[task]).live(2.0)

    assert asyncio.run(lanes()) == "the take loops (worqr-lanes) ended: returned"


def test_livez_counts_a_take_s_wait_only_while_the_loop_ran() -> None:
    # A handler blocked the loop 0.5 s after a take was sent: its reply waits
    # for the loop, which the loop's own check names once past livez_after.
    loop = take_loop()
    now = time.monotonic()
    loop.in_flight[1] = ("q", now - 3)
    blocking = {"loop_last_ran": now - 2.5, "culprit": "the handler of queue 'q' (app.f)"}
    assert watched(Client(loop_blocked=1.5, **blocking), loop).live(2.0) is None
    assert watched(Client(loop_blocked=2.4, **blocking), loop).live(2.0) == (
        "the event loop has made no progress for 2.4 s (blocked by the handler of queue 'q' "
        "(app.f))"
    )
    # The loop ran 0.1 s ago and the take still waits: Redis is slow.
    ran = Client(loop_blocked=0.1, loop_last_ran=now - 0.1)
    reason = watched(ran, loop).live(2.0)
    assert reason is not None and reason.startswith("a take from queue 'q' has waited 2.")


def test_livez_names_a_blocked_loop_a_missing_heartbeat_and_a_dead_listener() -> None:
    blocked = Client(loop_blocked=2.5, culprit="the handler of queue 'q' (app.f)")
    assert watched(blocked).live(2.0) == (
        "the event loop has made no progress for 2.5 s (blocked by the handler of queue 'q' "
        "(app.f))"
    )
    assert watched(blocked).live(3.0) is None
    assert watched(Client(since_heartbeat=1.5)).live(5.0) == (
        "no heartbeat has landed for 1.5 s (ttl 1 s)"
    )
    assert watched(Client(listening=False)).live(5.0) == "the pub/sub listener is not running"
