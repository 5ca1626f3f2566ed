"""Sentinel: clients, the worker runtime and the CLI find the master through real
sentinels; WAIT-based durable enqueues; sentinel URLs never leak passwords."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
import redis

import worqr
from tests.support.cli import cli_env, run_cli
from tests.support.sentinel import SentinelGroup
from tests.support.waiting import async_wait_until, wait_until
from worqr._clients.sentinel import SentinelTarget, cli_url, parse_sentinel_url
from worqr.embedded import free_port
from worqr.metrics.collector import MeshCollector

pytestmark = pytest.mark.sentinel

SECRET = "s3cret-Pw"


def test_sync_client_through_sentinels(sentinel_group: SentinelGroup, prefix: str) -> None:
    """Keyword form: every operation reaches the master the sentinels name, and
    the replica holds the writes (it is a real master/replica pair)."""
    # The keyword form takes no password: this group needs one, so use the URL.
    with (
        pytest.raises(redis.AuthenticationError),
        worqr.Worqr(
            sentinels=sentinel_group.addresses, service_name="mymaster", prefix=prefix
        ) as bare,
    ):
        bare.enqueue("q", "x")
    with worqr.Worqr(sentinel_group.url(), prefix=prefix) as wq:
        wq.enqueue_many("q", ["a", "b"])
        wq.start_worker()
        process = wq.dequeue("q")
        assert process is not None and process.task == "a"
        assert wq.finish_process(process) is True
        assert wq.count_tasks("q") == 1
        assert SECRET not in repr(wq)
    master = sentinel_group.master_port()
    replica = next(s.port for s in sentinel_group.servers if s.port != master)
    with sentinel_group.client(replica) as client:
        key = "{" + prefix + ":q}:tasks"
        assert client.info("replication")["role"] == "slave"
        wait_until(lambda: client.llen(key) == 1, message="replicated")


@pytest.mark.slow
def test_keyword_form_without_password(
    make_sentinel_group: Callable[..., SentinelGroup], prefix: str
) -> None:
    group = make_sentinel_group()
    with worqr.Worqr(sentinels=group.addresses, service_name="mymaster", prefix=prefix) as wq:
        wq.enqueue("q", "x")
        assert wq.count_tasks("q") == 1


def test_async_client_and_listener_through_sentinels(
    sentinel_group: SentinelGroup, prefix: str
) -> None:
    async def main() -> None:
        url = sentinel_group.url()
        async with (
            worqr.AsyncWorqr(url, prefix=prefix) as producer,
            worqr.AsyncWorqr(url, prefix=prefix) as consumer,
        ):
            await consumer.start_worker()
            heard: list[tuple[str, object]] = []
            await consumer.on("q", lambda event, message: heard.append((event, message)))
            await consumer.start_work("q")
            await producer.enqueue("q", "hello")
            await async_wait_until(lambda: ("work", 1) in heard, message="wake-up")
            process = await consumer.dequeue("q")
            assert process is not None and process.task == "hello"
            assert await consumer.finish_process(process)

    asyncio.run(main())


def test_worker_runtime_through_sentinels(sentinel_group: SentinelGroup, prefix: str) -> None:
    done: list[str] = []
    worker = worqr.Worker(sentinel_group.url(), prefix=prefix)

    @worker.handler("jobs")
    async def handle(task: str) -> None:
        done.append(task)

    async def main() -> None:
        async with worker:
            with worqr.Worqr(sentinel_group.url(), prefix=prefix) as wq:
                wq.enqueue_many("jobs", ["1", "2", "3"])
            await async_wait_until(lambda: sorted(done) == ["1", "2", "3"], timeout=10)

    asyncio.run(main())


def test_exporter_reads_through_sentinels(sentinel_group: SentinelGroup, prefix: str) -> None:
    with worqr.Worqr(sentinel_group.url(), prefix=prefix) as wq:
        wq.enqueue_many("q", ["a", "b"])
    collector = MeshCollector.from_url(sentinel_group.url(), prefix)
    try:
        found = {m.name: m.samples for m in collector.collect()}
    finally:
        collector.redis.close()
    assert [s.value for s in found["worqr_collector_up"]] == [1.0]
    assert [(s.labels, s.value) for s in found["worqr_queue_tasks"]] == [({"queue": "q"}, 2.0)]


def test_wait_replicas_acknowledged(sentinel_group: SentinelGroup, prefix: str) -> None:
    """With wait_replicas=1 an enqueue returns once the replica holds it."""
    settings = worqr.Settings(prefix=prefix, wait_replicas=1, wait_timeout=2.0)
    master = sentinel_group.master_port()
    replica = next(s.port for s in sentinel_group.servers if s.port != master)
    with (
        worqr.Worqr(sentinel_group.url(), settings=settings) as wq,
        sentinel_group.client(replica) as client,
    ):
        key = "{" + prefix + ":q}:tasks"
        for n in range(1, 21):
            wq.enqueue("q", f"t{n}")
            assert client.llen(key) == n  # no wait: WAIT already saw it replicated
        assert wq.enqueue_many("q", [f"m{i}" for i in range(2500)]) == 2500  # 3 batches
        assert client.llen(key) == 2520


def test_wait_replicas_timeout_says_enqueued(sentinel_group: SentinelGroup, prefix: str) -> None:
    """Asking for more replicas than exist: the task IS on the master, and the
    error says so (and is not an AmbiguousResultError)."""
    settings = worqr.Settings(prefix=prefix, wait_replicas=2, wait_timeout=0.2)

    async def main() -> None:
        async with worqr.AsyncWorqr(sentinel_group.url(), settings=settings) as wq:
            with pytest.raises(worqr.ReplicationTimeoutError) as caught:
                await wq.enqueue("q", "async")
            assert caught.value.replicas == 1 and caught.value.required == 2

    with worqr.Worqr(sentinel_group.url(), settings=settings) as wq:
        with pytest.raises(worqr.ReplicationTimeoutError) as caught:
            wq.enqueue("q", "sync")
        message = str(caught.value)
        assert "ARE enqueued on the master" in message and "only 1 of 2" in message
        assert (caught.value.enqueued, caught.value.unconfirmed) == (1, 1)
        with pytest.raises(worqr.ReplicationTimeoutError) as caught:
            wq.enqueue_many("q", [f"m{i}" for i in range(1500)])
        assert (caught.value.enqueued, caught.value.unconfirmed) == (1000, 1000)
        assert "the other 500 were not enqueued" in str(caught.value)
        asyncio.run(main())
        assert wq.count_tasks("q") == 1 + 1000 + 1


def test_wait_reloads_a_flushed_script(redis_url: str, prefix: str) -> None:
    """The pinned EVALSHA + WAIT pair handles NOSCRIPT itself (no replica here, so
    the wait times out, after the task was pushed exactly once)."""
    settings = worqr.Settings(prefix=prefix, wait_replicas=1, wait_timeout=0.05)
    with worqr.Worqr(redis_url, settings=settings) as wq, redis.Redis.from_url(redis_url) as raw:
        raw.script_flush()
        with pytest.raises(worqr.ReplicationTimeoutError):
            wq.enqueue("q", "x")
        assert wq.count_tasks("q") == 1


@pytest.mark.slow
def test_cli_through_sentinels(sentinel_group: SentinelGroup, prefix: str) -> None:
    flags = [f"--sentinel=127.0.0.1:{p}" for _, p in sentinel_group.addresses]
    url = sentinel_group.url()
    env = cli_env(WORQR_REDIS_URL=url)  # the password comes with the URL form
    result = run_cli("enqueue", "q", "a", "b", "--prefix", prefix, env=env)
    assert result.returncode == 0, result.stderr
    result = run_cli("status", "--json", "--prefix", prefix, "--url", url)
    assert result.returncode == 0 and SECRET not in result.stdout + result.stderr
    # --sentinel flags reach the sentinels, which need no password; the master does.
    result = run_cli("status", "--prefix", prefix, *flags, "--service-name", "mymaster")
    assert result.returncode == 1 and "auth" in result.stderr.lower()
    for bad, says in [
        ([*flags], "--service-name"),
        (["--service-name", "m"], "--sentinel"),
        ([*flags, "--service-name", "m", "--url", "redis://x"], "not both"),
        (["--sentinel", "nohost", "--service-name", "m"], "HOST:PORT"),
    ]:
        result = run_cli("status", *bad)
        assert result.returncode == 2 and says in result.stderr, (bad, result.stderr)


def test_url_forms_and_no_password_leaks() -> None:
    target = parse_sentinel_url("redis+sentinel://:pw%40x@h1:1,[::1]:2/my%2Fsvc/3")
    assert target.sentinels == (("h1", 1), ("::1", 2))
    assert (target.service_name, target.db, target.password) == ("my/svc", 3, "pw@x")
    assert "pw@x" not in repr(target) and "pw" not in target.url()
    assert parse_sentinel_url(target.url()).sentinels == target.sentinels
    target = parse_sentinel_url(
        "redis+sentinel://u:p@h:1/m?sentinel_password=sp&sentinel_username=su"
    )
    assert (target.username, target.password) == ("u", "p")
    assert (target.sentinel_username, target.sentinel_password) == ("su", "sp")
    assert "sp" not in repr(target).replace("sentinel", "")
    for bad, says in [
        ("redis+sentinel://:hunter2@/m", "names no sentinel"),
        ("redis+sentinel://:hunter2@h:1", "names no service"),
        ("redis+sentinel://:hunter2@h:1/m/x", "database must be a number"),
        ("redis+sentinel://:hunter2@h:99999/m", "bad port"),
        ("redis+sentinel://:hunter2@h:1/m?sentinel_pass=hunter2", "unknown options"),
        ("redis+sentinel://:hunter2@h:1/m/0/9", "path must be"),
    ]:
        with pytest.raises(ValueError, match=says) as caught:
            parse_sentinel_url(bad)
        assert "hunter2" not in str(caught.value)
    with pytest.raises(ValueError, match="not both"):
        worqr.Worqr("redis://x", sentinels=[("h", 1)], service_name="m")
    with pytest.raises(ValueError, match="needs service_name"):
        worqr.Worqr(sentinels=[("h", 1)])
    with pytest.raises(ValueError, match="needs sentinels"):
        worqr.Worqr(service_name="m")
    with pytest.raises(ValueError, match="at least one"):
        worqr.Worqr(sentinels=[], service_name="m")
    with pytest.raises(ValueError, match="host, port"):
        worqr.Worker(sentinels=[("h", "1")], service_name="m")  # type: ignore[list-item]
    assert cli_url(["a:1", "b:2"], "m", None) == "redis+sentinel://a:1,b:2/m/0"
    assert SentinelTarget((("h", 1),), "m").url() == "redis+sentinel://h:1/m/0"


def test_wait_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="wait_replicas"):
        worqr.Settings(wait_replicas=-1)
    with pytest.raises(ValueError, match="wait_timeout"):
        worqr.Settings(wait_replicas=1, wait_timeout=20.0)  # past socket_timeout
    with pytest.raises(TypeError, match="wait_timeout"):
        worqr.Settings(wait_timeout="1")  # type: ignore[arg-type]


def test_unreachable_sentinels_fail_clearly(prefix: str) -> None:
    """No sentinel answers: RedisUnavailableError, never an ambiguous enqueue."""
    settings = worqr.Settings(prefix=prefix, retry_deadline=0.3)
    url = f"redis+sentinel://:{SECRET}@127.0.0.1:{free_port()}/mymaster"
    with worqr.Worqr(url, settings=settings) as wq:
        with pytest.raises(worqr.RedisUnavailableError) as caught:
            wq.enqueue("q", "x")
        assert "No master found" in str(caught.value) and SECRET not in str(caught.value)


@pytest.mark.slow
def test_sentinel_and_cluster_together_are_refused_before_connecting() -> None:
    """A cluster fails over by itself; asking for both is a mistake, refused at
    construction, before any connection is made (the sentinel does not exist)."""
    nowhere = [("127.0.0.1", free_port())]
    for kind in (worqr.Worqr, worqr.AsyncWorqr):
        with pytest.raises(ValueError, match="Sentinel and cluster=True"):
            kind(sentinels=nowhere, service_name="mymaster", cluster=True)
        with pytest.raises(ValueError, match="Sentinel and cluster=True"):
            kind(f"redis+sentinel://127.0.0.1:{nowhere[0][1]}/mymaster", cluster=True)
