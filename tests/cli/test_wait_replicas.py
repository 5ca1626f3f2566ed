"""`worqr enqueue --wait-replicas/--wait-timeout`: durable enqueues from the shell,
against a real master with a real replica (plain URL with a password) and
through real sentinels (`--sentinel` flags)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
import redis

import worqr
from tests.support.cli import assert_one_line_error, run_cli, start_cli
from tests.support.processes import stop
from tests.support.sentinel import SentinelGroup
from tests.support.server_versions import server_binary
from tests.support.waiting import wait_until
from worqr._cli.produce import not_replicated
from worqr._core.lua import source
from worqr._keys import MeshKeys
from worqr.embedded import EmbeddedRedis

SECRET = "w4it-Pw"
WAIT = ("--wait-replicas", "1", "--wait-timeout", "0.2")


@dataclass
class Pair:
    """A password-protected master and its one replica."""

    master: EmbeddedRedis
    replica: EmbeddedRedis

    @property
    def url(self) -> str:
        return f"redis://:{SECRET}@127.0.0.1:{self.master.port}/0"

    def client(self, server: EmbeddedRedis) -> redis.Redis:
        return redis.Redis(port=server.port, password=SECRET, socket_timeout=5)

    def wait_in_sync(self) -> None:
        with self.client(self.master) as master, self.client(self.replica) as replica:
            wait_until(
                lambda: (
                    replica.info("replication").get("master_link_status") == "up"
                    and master.info("replication").get("slave0", {}).get("state") == "online"
                ),
                timeout=30,
                message="replica in sync",
            )


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    auth = ["--requirepass", SECRET, "--masterauth", SECRET]
    fast_sync = ["--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"]
    binary = server_binary()
    with EmbeddedRedis(binary=binary, extra_args=[*auth, *fast_sync]) as master:
        replicaof = ["--replicaof", "127.0.0.1", str(master.port)]
        with EmbeddedRedis(binary=binary, extra_args=[*auth, *replicaof]) as replica:
            found = Pair(master, replica)
            found.wait_in_sync()
            # Load the enqueue script now: a NOSCRIPT inside the pinned EVALSHA+WAIT
            # pair costs one whole wait before the pair is sent again.
            with found.client(master) as client:
                client.script_load(source("enqueue"))
            yield found


@pytest.fixture
def paused_replica(pair: Pair) -> Iterator[Pair]:
    """The pair with its replica frozen (SIGSTOP): connected, but acknowledging nothing."""
    pair.wait_in_sync()
    pair.replica.pause()
    try:
        yield pair
    finally:
        pair.replica.resume()


def tasks_key(prefix: str, queue: str) -> str:
    return MeshKeys(prefix).queue(queue).tasks


def lines(count: int) -> bytes:
    return b"".join(b"t%d\n" % n for n in range(count))


def blocked_in_wait(client: redis.Redis) -> bool:
    return any(
        entry.get("cmd") == "wait" and "b" in entry.get("flags", "")
        for entry in client.client_list()
    )


def test_enqueue_returns_once_the_replica_holds_the_tasks(
    paused_replica: Pair, prefix: str
) -> None:
    """While the replica cannot acknowledge, the command sits in WAIT with the
    tasks on the master; once it can, the command exits 0 and the replica
    already holds them."""
    pair = paused_replica
    key = tasks_key(prefix, "jobs")
    command = ["enqueue", "jobs", "a", "b", "--wait-replicas", "1", "--wait-timeout", "30"]
    process = start_cli(*command, "--url", pair.url, "--prefix", prefix)
    try:
        with pair.client(pair.master) as master:
            wait_until(lambda: master.llen(key) == 2, message="applied on the master")
            wait_until(lambda: blocked_in_wait(master), message="the command waits")
        assert process.poll() is None
        pair.replica.resume()
        out, err = process.communicate(timeout=30)
    finally:
        stop(process)
    assert process.returncode == 0, err
    assert out.decode().strip() == "enqueued 2 tasks to 'jobs'"
    with pair.client(pair.replica) as replica:
        assert replica.lrange(key, 0, -1) == [b"b", b"a"]  # no waiting: WAIT saw it


def test_replication_timeout_exits_3_with_the_tasks_on_the_master_once(
    paused_replica: Pair, prefix: str
) -> None:
    pair = paused_replica
    result = run_cli("enqueue", "jobs", "only", *WAIT, "--url", pair.url, "--prefix", prefix)
    assert_one_line_error(
        result,
        3,
        "worqr enqueue: error: 1 task is enqueued to 'jobs' on the master, but only 0 of 1 "
        "replicas acknowledged it within 0.2s: it may be lost if the master fails before "
        "replicating it; do not enqueue it again (it would run twice)",
    )
    assert result.stdout == "" and SECRET not in result.stderr

    # From stdin, 2,500 tasks: the first batch of 1,000 times out; nothing after it is sent.
    bulk = run_cli(
        "enqueue", "bulk", *WAIT, "--url", pair.url, "--prefix", prefix, input=lines(2500)
    )
    assert_one_line_error(
        bulk,
        3,
        "1000 tasks are enqueued to 'bulk' on the master, but only 0 of 1 replicas "
        "acknowledged them within 0.2s",
        "the rest of the input was not enqueued",
    )
    assert SECRET not in bulk.stderr
    with pair.client(pair.master) as master:
        assert master.lrange(tasks_key(prefix, "jobs"), 0, -1) == [b"only"]
        queued = master.lrange(tasks_key(prefix, "bulk"), 0, -1)
        assert queued == [b"t%d" % n for n in reversed(range(1000))]


@pytest.mark.sentinel
@pytest.mark.slow
def test_through_sentinel_flags(
    make_sentinel_group: Callable[..., SentinelGroup], prefix: str
) -> None:
    group = make_sentinel_group()
    flags = [f"--sentinel=127.0.0.1:{port}" for _, port in group.addresses]
    flags += ["--service-name", group.service, "--prefix", prefix]
    key = tasks_key(prefix, "jobs")
    result = run_cli("enqueue", "jobs", "--wait-replicas", "1", *flags, input=lines(2500))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "enqueued 2500 tasks to 'jobs'"
    master_port = group.master_port()
    replica_port = next(s.port for s in group.servers if s.port != master_port)
    with group.client(replica_port) as replica:
        assert replica.llen(key) == 2500

    # Two replicas asked for, one exists: exit 3, the task on the master once.
    result = run_cli(
        "enqueue", "jobs", "x", "--wait-replicas", "2", "--wait-timeout", "0.2", *flags
    )
    assert_one_line_error(
        result, 3, "1 task is enqueued to 'jobs' on the master, but only 1 of 2 replicas"
    )
    with group.client(master_port) as master:
        assert master.llen(key) == 2501 and master.lindex(key, 0) == b"x"


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--wait-replicas", "-1"], "argument --wait-replicas: must be an integer >= 0, got -1"),
        (["--wait-replicas", "one"], "argument --wait-replicas: not an integer: 'one'"),
        (["--wait-replicas", "1.5"], "argument --wait-replicas: not an integer: '1.5'"),
        (["--wait-replicas", "1", "--wait-timeout", "0"], "argument --wait-timeout: must be a "),
        (["--wait-replicas", "1", "--wait-timeout", "-1"], "argument --wait-timeout: must be a "),
        (["--wait-replicas", "1", "--wait-timeout", "nan"], "argument --wait-timeout: must be a "),
        (["--wait-replicas", "1", "--wait-timeout", "soon"], "argument --wait-timeout: not a "),
        (
            ["--wait-replicas", "1", "--wait-timeout", "7200"],
            "argument --wait-timeout: must be at most",
        ),
        (["--wait-timeout", "1"], "--wait-timeout needs --wait-replicas >= 1"),
        (["--wait-replicas", "0", "--wait-timeout", "1"], "--wait-timeout needs --wait-replicas"),
    ],
)
def test_bad_values_exit_2_and_enqueue_nothing(
    options: list[str], says: str, pair: Pair, prefix: str
) -> None:
    target = ["--url", pair.url, "--prefix", prefix]
    assert_one_line_error(run_cli("enqueue", "q", "a", *options, *target), 2, says)
    if not says.startswith("argument"):  # checked after parsing: before reading stdin too
        result = run_cli("enqueue", "q", *options, *target, input=b"a\nb\n")
        assert_one_line_error(result, 2, says)
    with pair.client(pair.master) as master:
        assert list(master.scan_iter(match=f"*{prefix}*")) == []


def test_help_documents_the_options_and_exit_code_3() -> None:
    result = run_cli("enqueue", "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "--wait-replicas N" in text and "--wait-timeout SECONDS" in text
    assert "3 enqueued on the master, but fewer than N replicas acknowledged" in text


@pytest.mark.parametrize(
    "command", [["failed", "q", "--requeue"], ["status"], ["cancel", "q", "a"]]
)
def test_only_enqueue_takes_them(command: list[str]) -> None:
    """Only enqueue waits: a redrive lost in a failover leaves its tasks on the
    failed list, so nothing is lost (docs/sentinel.md); the others add no task."""
    result = run_cli(*command, "--wait-replicas", "1")
    assert_one_line_error(result, 2, "unrecognized arguments: --wait-replicas 1")


def test_message_when_earlier_batches_were_confirmed() -> None:
    """Only the last batch is at risk; the count covers every earlier chunk."""
    error = worqr.ReplicationTimeoutError(
        "", enqueued=2500, unconfirmed=500, replicas=0, required=1
    )
    assert str(not_replicated(error, "q", 10_000, 0.2, more=False)) == (
        "12500 tasks are enqueued to 'q' on the master, but only 0 of 1 replicas acknowledged "
        "the last 500 within 0.2s: those may be lost if the master fails before replicating "
        "them; do not enqueue them again (they would run twice)"
    )
