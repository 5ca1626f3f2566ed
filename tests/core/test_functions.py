"""Scripts run as Redis functions where the server and the user allow it: each
script a library (`lua.library`) whose pieces load once, called with ``FCALL``;
a library Redis lost (a restart, ``FUNCTION FLUSH``) is loaded again on the
call that missed it. On Redis 6.2, or for a user whose ACL forbids ``FCALL``,
the client falls back to ``EVALSHA`` for good. This module also runs against
Redis 6.2 (`server_versions.CORE_MODULES`)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator

import pytest
import redis
from redis.exceptions import NoPermissionError, OutOfMemoryError, ResponseError

import worqr
from tests.support.mesh import queue_keys
from tests.support.server_versions import redis_version, require
from worqr._core import lua, scripts
from worqr.embedded import EmbeddedRedis, find_redis_server


def runs_functions(server: EmbeddedRedis) -> bool:
    return redis_version(server.binary or find_redis_server()) >= (7, 0)


def calls(raw: redis.Redis, command: str, field: str = "calls") -> int:
    """A command's count in the server's statistics (``rejected_calls``: refused
    before it ran, as for a missing ACL permission)."""
    stats = raw.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get(field, 0))


@pytest.fixture
def raw(redis_server: EmbeddedRedis) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_server.url)
    try:
        yield client
    finally:
        client.close()


def test_every_script_loads_as_a_library_and_names_its_function(
    redis_server: EmbeddedRedis, raw: redis.Redis
) -> None:
    for name in lua.script_names():
        text = lua.library(name)
        function = lua.function_name(name)
        assert text.startswith(f"#!lua name={function}\n"), name
        assert f"redis.register_function{{function_name='{function}', callback=" in text, name
        if not runs_functions(redis_server):
            continue
        try:
            assert raw.execute_command("FUNCTION", "LOAD", text) == function.encode()
        except ResponseError as error:  # loaded by a client of an earlier test
            assert lua.function_error(error) == "loaded", (name, error)


def test_a_client_runs_its_scripts_as_functions_and_reloads_what_redis_lost(
    redis_server: EmbeddedRedis, raw: redis.Redis
) -> None:
    prefix = f"t{uuid.uuid4().hex[:10]}"
    with worqr.Worqr(redis_server.url, prefix=prefix) as wq:
        before = calls(raw, "fcall"), calls(raw, "evalsha")
        wq.enqueue("q", "a")
        fcalls, evalshas = calls(raw, "fcall") - before[0], calls(raw, "evalsha") - before[1]
        if not runs_functions(redis_server):  # 6.2: FCALL is unknown; EVALSHA from then on
            assert fcalls == 0 and evalshas >= 1  # (a NOSCRIPT first, if not loaded yet)
            evalshas = calls(raw, "evalsha")
            wq.enqueue("q", "b")
            assert calls(raw, "evalsha") == evalshas + 1
            assert raw.llen(queue_keys(prefix, "q").tasks) == 2
            return
        assert (fcalls, evalshas) == (1, 0)  # loaded by an earlier test, or just now
        raw.execute_command("FUNCTION", "FLUSH")  # as a restart without persistence does
        loads = calls(raw, "function|load")
        wq.enqueue("q", "b")
        assert calls(raw, "function|load") == loads + 1  # the miss loaded it, once
        assert raw.llen(queue_keys(prefix, "q").tasks) == 2
        assert calls(raw, "evalsha") == before[1]  # never fell back


def test_a_user_who_may_not_run_functions_gets_evalsha(
    redis_server: EmbeddedRedis, raw: redis.Redis
) -> None:
    require(redis_server, (7, 0), "functions (on 6.2 every client runs EVALSHA)")
    user, prefix = f"nofn-{uuid.uuid4().hex[:8]}", f"t{uuid.uuid4().hex[:10]}"
    raw.acl_setuser(
        user,
        enabled=True,
        passwords=["+pw"],
        keys="*",
        channels="*",
        commands=["+@all", "-fcall", "-function"],
    )
    url = redis_server.url.replace("redis://", f"redis://{user}:pw@")
    try:
        with worqr.Worqr(url, prefix=prefix) as wq:
            refused = calls(raw, "fcall", "rejected_calls")
            wq.enqueue("q", "a")  # FCALL refused: EVALSHA (after a NOSCRIPT, if not loaded)
            assert calls(raw, "fcall", "rejected_calls") == refused + 1
            evalshas = calls(raw, "evalsha")
            wq.enqueue("q", "b")
            assert calls(raw, "evalsha") == evalshas + 1  # straight to EVALSHA now
            assert calls(raw, "fcall", "rejected_calls") == refused + 1  # FCALL not tried again
            assert raw.llen(queue_keys(prefix, "q").tasks) == 2
    finally:
        raw.acl_deluser(user)


def test_what_an_error_says_of_functions() -> None:
    def says(error: ResponseError) -> str | None:
        return lua.function_error(error)

    assert says(ResponseError("Function not found")) == "missing"
    assert says(ResponseError("Library 'worqr_enqueue_0123' already exists")) == "loaded"
    assert says(ResponseError("unknown command `FCALL`, with args beginning with: ")) == (
        "unsupported"
    )
    assert says(NoPermissionError("this user has no permissions to run the 'fcall' command")) == (
        "unsupported"
    )
    # A script's own errors, and a command's inside it, are the caller's to raise.
    assert says(ResponseError("WORQR_NOT_MEMBER")) is None
    denied = NoPermissionError("this user has no permissions to access one of the keys")
    assert says(denied) is None
    assert lua.function_name("enqueue").startswith("worqr_enqueue_")
    assert scripts.enqueue(queue_keys("p", "q"), [b"t"], publish="PUBLISH").script == "enqueue"


def test_at_maxmemory_scripts_run_as_redis_runs_scripts(
    make_redis: Callable[..., EmbeddedRedis],
) -> None:
    """Redis at maxmemory refuses a function before it runs, but refuses a
    script only at its first write that grows memory: the client then sends it
    by EVALSHA, so a heartbeat and a dequeue still run, and an enqueue is
    refused with nothing applied, as before functions."""
    server = make_redis(extra_args=["--maxmemory-policy", "noeviction"])
    raw = redis.Redis.from_url(server.url)
    prefix = f"t{uuid.uuid4().hex[:10]}"
    tasks = queue_keys(prefix, "q").tasks
    try:
        with worqr.Worqr(server.url, prefix=prefix) as wq:
            wq.start_worker()
            wq.start_work("q")
            wq.enqueue("q", "a")  # each script called once: its function is loaded
            wq.enqueue("q", "b")
            wq.heartbeat()
            assert getattr(wq.dequeue("q"), "task", None) == "a"
            raw.config_set("maxmemory", 1)  # every byte is over
            try:
                with pytest.raises(OutOfMemoryError):
                    wq.enqueue("q", "c")
                assert raw.lrange(tasks, 0, -1) == [b"b"]  # nothing applied
                assert wq.heartbeat() in ("ok", "reaped")  # the lease kept
                taken = wq.dequeue("q")  # its first write pops: it runs
                assert taken is not None and taken.task == "b"
                if runs_functions(server):  # each refused as a function first
                    assert calls(raw, "fcall", "rejected_calls") == 3
            finally:
                raw.config_set("maxmemory", 0)
    finally:
        raw.close()


def test_the_scripts_flagged_no_writes_are_those_that_call_no_write_command(
    raw: redis.Redis,
) -> None:
    """`lua.READ_ONLY` is derived by hand; the server's command table says which
    commands write. A flagged script that wrote would fail at that write; an
    unflagged one that only reads would be refused where writes are."""
    table = raw.command()
    literal = re.compile(r"redis\.p?call\(\s*(['\"])([A-Za-z]+)\1")
    read_only = set()
    for name in lua.script_names():
        text = lua.source(name)
        commands = {match.group(2).lower() for match in literal.finditer(text)}
        named_at_run_time = text.count("redis.call(") + text.count("redis.pcall(") > len(
            literal.findall(text)
        )  # a command in a variable (PUBLISH or SPUBLISH): it may write
        if not named_at_run_time and not any("write" in _flags(table[c]) for c in commands):
            read_only.add(name)
    assert read_only == lua.READ_ONLY


def _flags(entry: dict[str, object]) -> set[str]:
    flags = entry["flags"]
    assert isinstance(flags, list | set | tuple)
    return {flag.decode() if isinstance(flag, bytes) else str(flag) for flag in flags}


def test_reads_run_where_redis_refuses_writes(
    make_redis: Callable[..., EmbeddedRedis],
) -> None:
    """With too few replicas for ``min-replicas-to-write``, Redis refuses every
    write, and an unflagged function before it runs: the counts (a `no-writes`
    function) are still read, and a submit is refused with nothing applied."""
    server = make_redis()
    raw = redis.Redis.from_url(server.url)
    prefix = f"t{uuid.uuid4().hex[:10]}"
    try:
        with worqr.Worqr(server.url, prefix=prefix) as wq:
            wq.submit("q", "a")
            assert wq.count_jobs("q")["queued"] == 1  # its function is loaded
            raw.config_set("min-replicas-to-write", 1)  # no replica: writes refused
            try:
                assert wq.count_jobs("q")["queued"] == 1
                with pytest.raises(ResponseError, match="NOREPLICAS"):
                    wq.submit("q", "b")
                assert wq.count_jobs("q")["queued"] == 1  # nothing applied
            finally:
                raw.config_set("min-replicas-to-write", 0)
    finally:
        raw.close()
