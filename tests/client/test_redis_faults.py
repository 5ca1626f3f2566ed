"""Faults against a real Redis: scripts flushed mid-run, replies lost to a
DEBUG SLEEP longer than the socket timeout, Redis down for a moment or for
good, and cancel racing dequeue and worker death.

Tests that stall or stop Redis use a private server, so nothing else waits on it.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis

import worqr
from tests.support.clients import Factory
from tests.support.mesh import queued
from tests.support.scripts import script_calls_run
from tests.support.waiting import wait_until
from worqr._keys import MeshKeys
from worqr.embedded import EmbeddedRedis

pytestmark = pytest.mark.fault

# -- scripts flushed --------------------------------------------------------------------


def test_script_flush_mid_run_is_survived(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    producer, worker = make(), make()
    worker.start_worker()
    producer.enqueue_many("q", ["a", "b", "c"])
    held = worker.dequeue("q")
    assert held is not None
    redis_client.script_flush()
    # Every kind of call reloads its script after NOSCRIPT.
    assert worker.finish_process(held) is True
    redis_client.script_flush()
    assert worker.stop_process(worker.dequeue("q")) is True  # type: ignore[arg-type]
    redis_client.script_flush()
    producer.enqueue("q", "d")
    redis_client.script_flush()
    assert worker.heartbeat() == "reaped"
    redis_client.script_flush()
    assert producer.cancel_tasks("q", "c") == 1
    redis_client.script_flush()
    assert [p.task for p in worker.dequeue_many("q", 5)] == ["b", "d"]
    redis_client.script_flush()
    assert worker.fail_worker() == 2


def run_until(
    done: Callable[[], bool], stop: threading.Event, *loops: Callable[[], None]
) -> list[BaseException]:
    """Run each of ``loops`` in a thread until ``done()`` or one of them raises
    (30 s at most), then set ``stop`` and join them; returns what they raised."""
    errors: list[BaseException] = []

    def guarded(loop: Callable[[], None]) -> None:
        try:
            loop()
        except BaseException as error:  # reported by the test, not lost in a thread
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(loop,), daemon=True) for loop in loops]
    for thread in threads:
        thread.start()
    try:
        wait_until(lambda: done() or errors, timeout=30)
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
    return errors


def test_scripts_flushed_again_and_again_under_load_lose_nothing(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    payloads = [f"t{i}" for i in range(400)]
    producer, worker = make(), make()
    worker.start_worker()
    finished: list[str | bytes] = []
    stop = threading.Event()

    def produce() -> None:
        for start in range(0, len(payloads), 10):
            producer.enqueue_many("q", payloads[start : start + 10])

    def work() -> None:
        while len(finished) < len(payloads) and not stop.is_set():
            for process in worker.dequeue_many("q", 3):
                assert worker.finish_process(process)
                finished.append(process.task)

    def flush() -> None:  # every millisecond: some land between a reload and its retry
        while not stop.wait(0.001):
            redis_client.script_flush()

    errors = run_until(lambda: len(finished) == len(payloads), stop, produce, work, flush)
    assert errors == []
    assert Counter(finished) == Counter(payloads)


# -- replies lost to DEBUG SLEEP ----------------------------------------------------------


class Stall:
    """``DEBUG SLEEP seconds`` from a separate connection, in a thread."""

    def __init__(self, url: str, seconds: float) -> None:
        self.url = url
        self.seconds = seconds
        self.thread = threading.Thread(target=self._sleep, daemon=True)

    def _sleep(self) -> None:
        with redis.Redis.from_url(self.url, socket_timeout=self.seconds + 5) as raw:
            raw.execute_command("DEBUG", "SLEEP", self.seconds)

    def __enter__(self) -> Stall:
        self.thread.start()
        # Redis is asleep once it stops answering a quick PING.
        probe = redis.Redis.from_url(self.url, socket_timeout=0.05)
        try:
            wait_until(lambda: not _answers(probe), timeout=2, message="Redis did not stall")
        finally:
            probe.close()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.thread.join(self.seconds + 5)


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


@pytest.fixture
def private_url(make_redis: Callable[..., EmbeddedRedis]) -> str:
    return make_redis().url


@pytest.mark.slow
def test_dequeue_whose_reply_was_lost_is_resent_and_hides_nothing(
    private_url: str, make: Factory, prefix: str
) -> None:
    producer = make(private_url)
    worker = make(private_url, socket_timeout=0.3, retry_deadline=5.0)
    worker.start_worker()
    worker.start_work("q")
    producer.enqueue_many("q", ["a", "b", "c"])
    with redis.Redis.from_url(private_url) as raw:
        scripts_before = _script_calls(raw)
        with Stall(private_url, 1.0):
            started = time.monotonic()
            process = worker.dequeue("q")  # sent into the stall; its reply times out
            took = time.monotonic() - started
        # Redis ran the dequeue more than once (the first attempt after the
        # stall, then the resend) ...
        assert _script_calls(raw) - scripts_before >= 2
    assert took > 0.3, "the stall did not delay the dequeue"
    assert process is not None and process.task == "a"
    # ... yet the resend returned the same process: one in process, none hidden.
    assert producer.count_processes("q") == 1
    assert producer.count_tasks("q") == 2
    assert producer.processes_exist("q", [process.id]) == [True]
    assert producer.get_stats("q")["dequeued"] == 1
    assert worker.finish_process(process) is True
    assert [p.task for p in worker.dequeue_many("q", 5)] == ["b", "c"]


def _script_calls(raw: redis.Redis) -> int:
    """How many script calls the server has run (its command statistics)."""
    return script_calls_run(raw)


@pytest.mark.slow
def test_enqueue_during_a_stall_is_ambiguous_and_never_doubled(
    private_url: str, make: Factory, prefix: str
) -> None:
    producer = make(private_url, socket_timeout=0.3, retry_deadline=5.0)
    producer.enqueue("q", "warm-up")  # registers the queue: the enqueue is one script call
    raw = redis.Redis.from_url(private_url)
    try:
        with Stall(private_url, 1.0), pytest.raises(worqr.AmbiguousResultError) as caught:
            producer.enqueue("q", "maybe")
        assert "not resent" in str(caught.value)
        wait_until(lambda: _answers(raw))
        copies = queued(raw, prefix, "q").count("maybe")
        assert copies in (0, 1)
        assert queued(raw, prefix, "q").count("warm-up") == 1
    finally:
        raw.close()


@pytest.mark.slow
def test_enqueue_many_during_a_stall_reports_what_is_certain(
    private_url: str, make: Factory, prefix: str
) -> None:
    producer = make(private_url, socket_timeout=0.3, retry_deadline=5.0)
    producer.enqueue("q", "warm-up")
    payloads = [f"t{i}" for i in range(1500)]  # two script calls: 1000, then 500
    raw = redis.Redis.from_url(private_url)
    try:
        with Stall(private_url, 1.0), pytest.raises(worqr.AmbiguousResultError) as caught:
            producer.enqueue_many("q", payloads)
        assert "0 of 1500 tasks were enqueued" in str(caught.value)
        wait_until(lambda: _answers(raw))
        counts = Counter(queued(raw, prefix, "q"))
        assert max(counts.values()) == 1  # nothing twice
        assert counts["t1000"] == 0  # the second batch was never sent
    finally:
        raw.close()


@pytest.mark.slow
def test_a_submit_kept_shorter_than_resends_go_on_is_ambiguous_and_never_doubled(
    private_url: str, make: Factory, prefix: str
) -> None:
    """A resend finds a submit's job by its nonce in the job's record, which a
    short TTL may purge first: a job kept less than retry_deadline (result_ttl=1
    < 5 s) is not resent after a lost reply but raises AmbiguousResultError,
    saying when submitting it again is safe. One kept longer is resent, and the
    resend answers as the first call did."""
    producer = make(private_url, socket_timeout=0.3, retry_deadline=5.0)
    producer.submit("q", "warm-up")  # registers the queue: a submit is one script call
    with redis.Redis.from_url(private_url) as raw:
        before = _script_calls(raw)
        with Stall(private_url, 1.0), pytest.raises(worqr.AmbiguousResultError) as caught:
            producer.submit("q", "short", id="short", result_ttl=1)
        message = str(caught.value)
        assert "job 'short' may or may not have been submitted" in message
        assert "not resent" in message and "duplicate=True" in message
        wait_until(lambda: _answers(raw))
        assert _script_calls(raw) - before == 1  # sent once: never resent
        assert producer.get_stats("q")["submitted"] in (1, 2)  # warm-up, and short at most once
        before = _script_calls(raw)
        with Stall(private_url, 1.0):  # kept 10 s at least (min_retention): resent
            ref = producer.submit("q", "long", id="long")
        assert _script_calls(raw) - before >= 2
    assert ref == worqr.JobRef("q", "long")  # created, by the first call or the resend
    info = producer.get_job("q", "long")
    assert info is not None and info.payload == "long"
    stats = producer.get_stats("q")
    assert producer.count_jobs("q")["queued"] == stats["submitted"]  # each created once
    assert stats.get("deduplicated", 0) == 0  # the resend was no duplicate submit either


# -- Redis down ------------------------------------------------------------------------


def test_calls_succeed_when_redis_comes_back_within_the_deadline(
    fresh_redis: EmbeddedRedis, make: Factory, prefix: str
) -> None:
    url = fresh_redis.url
    producer = make(url, retry_deadline=10.0)
    worker = make(url, retry_deadline=10.0)
    worker.start_worker()
    producer.enqueue_many("q", ["a", "b"])
    held = worker.dequeue("q")
    assert held is not None

    fresh_redis.stop()
    restart = threading.Timer(0.5, fresh_redis.start)  # down for half a second
    restart.start()
    try:
        started = time.monotonic()
        assert producer.count_tasks("q") == 1  # retried until Redis answered
        assert time.monotonic() - started > 0.3
        assert worker.finish_process(held) is True
        # Refused connections prove the enqueue was never sent: resending is safe.
        producer.enqueue("q", "c")
        assert [p.task for p in worker.dequeue_many("q", 5)] == ["b", "c"]
    finally:
        restart.join()


@pytest.mark.slow
def test_redis_unavailable_after_the_deadline(
    fresh_redis: EmbeddedRedis, make: Factory, prefix: str
) -> None:
    client = make(fresh_redis.url, retry_deadline=0.5)
    client.enqueue("q", "a")
    fresh_redis.stop()
    for call in (
        lambda: client.count_tasks("q"),
        lambda: client.enqueue("q", "b"),  # refused, not ambiguous: nothing was sent
        lambda: client.get_queues(),
    ):
        started = time.monotonic()
        with pytest.raises(worqr.RedisUnavailableError):
            call()
        assert 0.4 < time.monotonic() - started < 5
    fresh_redis.start()
    assert client.count_tasks("q") == 1  # the same client works again; "b" never landed


# -- cancel racing dequeue and worker death ---------------------------------------------


class Churn:
    """Worker threads that dequeue, and stop (back to the front) or finish what
    they take (targets are never finished); a killer that deletes random leases
    and reaps. Every dequeue call is logged with the time it started."""

    def __init__(self, workers: list[worqr.Worqr], reaper: worqr.Worqr, raw: redis.Redis) -> None:
        self.workers = workers
        self.reaper = reaper
        self.raw = raw
        self.mesh = MeshKeys(reaper.settings.prefix)
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.log: list[tuple[float, list[str | bytes]]] = []
        self.kills = 0
        self.lock = threading.Lock()
        self.threads = [
            threading.Thread(target=self._guard, args=(self._work, w), daemon=True) for w in workers
        ] + [threading.Thread(target=self._guard, args=(self._kill, None), daemon=True)]

    def __enter__(self) -> Churn:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(15)

    def _guard(self, target: Callable[[Any], None], arg: Any) -> None:
        try:
            target(arg)
        except BaseException as error:
            self.errors.append(error)

    def _work(self, client: worqr.Worqr) -> None:
        rng = random.Random()
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                taken = client.dequeue_many("q", rng.randint(1, 3))
            except worqr.LeaseLostError:
                self._recover(client)
                continue
            with self.lock:
                self.log.append((started, [p.task for p in taken]))
            for process in taken:
                time.sleep(rng.random() * 0.002)  # the work: a cancel may land meanwhile
                # Targets only ever go back to the front: they circulate until cancelled.
                if str(process.task).startswith("target") or rng.random() < 0.5:
                    client.stop_process(process)
                else:
                    client.finish_process(process)

    def _recover(self, client: worqr.Worqr) -> None:
        while not self.stop.is_set():
            try:
                client.heartbeat()
                return
            except worqr.LeaseLostError:  # killed again while re-registering
                continue

    def _kill(self, _: object) -> None:
        rng = random.Random()
        while not self.stop.wait(0.003):
            victim = rng.choice(self.workers).worker_id
            if victim is not None and self.raw.delete(self.mesh.alive(victim)):
                self.kills += 1
            self.reaper.reap()

    def dequeues(self) -> int:
        with self.lock:
            return len(self.log)

    def taken_since(self, moment: float) -> list[str | bytes]:
        with self.lock:
            return [task for started, tasks in self.log if started > moment for task in tasks]


def test_cancel_racing_dequeue_and_worker_death(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    workers = [make() for _ in range(3)]
    for client in workers:
        client.start_worker()
    producer = make()
    producer.configure_queue("q", max_recoveries=-1)  # no copy leaves for the failed list
    cancels: list[list[str]] = []
    producer.on("q", lambda event, message: cancels.append(message) if event == "cancel" else 0)
    targets = [f"target-{i}" for i in range(6)]
    fillers = [f"filler-{i}" for i in range(10)]
    processes = MeshKeys(prefix).queue("q").processes

    with Churn(workers, producer, redis_client) as churn:
        for target in targets:
            mixed = fillers + [target] * 5
            random.shuffle(mixed)
            producer.enqueue_many("q", mixed)
            before = churn.dequeues()
            wait_until(lambda b=before: churn.dequeues() > b + 20 or churn.errors, timeout=10)
            # Strike while a copy is (very likely still) in process.
            wait_until(lambda t=target: t.encode() in redis_client.hvals(processes), timeout=10)
            # Every copy is found, wherever the race put it: none lost, none doubled.
            assert producer.cancel_tasks("q", target) == 5
            returned = time.monotonic()
            after = churn.dequeues()
            wait_until(lambda a=after: churn.dequeues() > a + 20 or churn.errors, timeout=10)
            assert target not in churn.taken_since(returned), f"{target} came back"
    assert churn.errors == []
    assert churn.kills > 0

    # Cancelled for good: in no queue, process or dead-letter list.
    keys = MeshKeys(prefix).queue("q")
    everywhere = queued(redis_client, prefix, "q")
    everywhere += [t.decode() for t in redis_client.lrange(keys.failed, 0, -1)]
    everywhere += [t.decode() for t in redis_client.hvals(keys.processes)]
    assert not set(targets) & set(everywhere)
    # The race was real: some cancels caught copies in process.
    wait_until(lambda: any(cancels), message="no cancel ever hit a process")


def at_once(go: threading.Barrier, call: Callable[[], int]) -> int:
    """``call()`` as soon as every party of ``go`` is ready."""
    go.wait()
    return call()


def test_cancel_racing_the_reaping_of_its_dead_worker_never_brings_the_task_back(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    """The worker holding "x" is dead; a peer reaps it while a producer cancels
    "x", both at once, many rounds. Whichever script runs first, "x" ends up
    nowhere (cancelled in process, or requeued and then removed from the queue)."""
    producer, worker, peer = make(), make(), make()
    for client in (worker, peer):
        client.start_worker()
        client.start_work("q")
    keys = MeshKeys(prefix).queue("q")
    for round_ in range(15):
        producer.enqueue_many("q", ["x", f"other-{round_}"])
        held = worker.dequeue("q")
        assert held is not None and held.task == "x"
        assert worker.worker_id is not None
        assert redis_client.delete(MeshKeys(prefix).alive(worker.worker_id)) == 1
        go = threading.Barrier(2)
        with ThreadPoolExecutor(2) as pool:
            cancel = pool.submit(at_once, go, lambda: producer.cancel_tasks("q", "x"))
            reap = pool.submit(at_once, go, peer.reap)
            assert (cancel.result(30), reap.result(30)) == (1, 1)
        assert b"x" not in redis_client.lrange(keys.tasks, 0, -1)
        assert b"x" not in redis_client.hvals(keys.processes)
        assert worker.heartbeat() == "recovered"  # the same client, a new id
        assert worker.finish_process(held) is False
        other = peer.dequeue("q")
        assert other is not None and other.task == f"other-{round_}"
        assert peer.finish_process(other)
        assert peer.dequeue("q") is None
    assert producer.get_stats("q")["cancelled"] == 15
