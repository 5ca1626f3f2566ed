"""NOSCRIPT (Redis forgot the scripts: a restart, a failover, ``SCRIPT FLUSH``)
is answered in one place per shape of request: the executor for a script call
(load it, send it again) and for the exporter's batches, and `pinned.loaded`
for the `Pinned` groups of plans, which reload on the group's own connection.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis
from redis.exceptions import NoScriptError, ResponseError

import worqr
from tests.support.clients import Factory
from tests.support.mesh import queue_keys
from worqr._core import job_scripts, scripts
from worqr._core.calls import Call, Pinned, command
from worqr._core.lua import source
from worqr._core.pinned import loaded

REFUSED = NoScriptError("NOSCRIPT No matching script.")


def call(script: str, *, idempotent: bool = True) -> Call:
    return Call(script, ("{p:q}:k",), (), idempotent)


def run(request: Pinned, *answers: list[Any]) -> tuple[list[Pinned], list[Any]]:
    """Drive `loaded` with one list of replies per group it sends."""
    plan = loaded(request)
    sent = [next(plan)]
    for answer in answers:
        try:
            sent.append(plan.send(answer))
        except StopIteration as stop:
            return sent, stop.value
    raise AssertionError(f"loaded sent more groups than answered: {sent}")


def test_a_group_redis_ran_is_sent_once() -> None:
    request = Pinned((call("dequeue"), command("WAIT", 1, 10)))
    sent, replies = run(request, [b"ok", 1])
    assert sent == [request]
    assert replies == [b"ok", 1]


def test_a_refused_script_and_its_wait_go_again_behind_the_load() -> None:
    enqueue, wait = call("enqueue", idempotent=False), command("WAIT", 1, 10)
    sent, replies = run(Pinned((enqueue, wait)), [REFUSED, 1], [b"sha", 3, 1])
    load = command("SCRIPT", "LOAD", source("enqueue"))
    assert sent[1] == Pinned((load, enqueue, wait))  # one group: one connection
    assert replies == [3, 1]


def test_only_the_calls_from_the_first_refused_one_go_again() -> None:
    reads = (call("job_watch"), call("job_watch"), call("job_counts"), call("job_watch"))
    sent, replies = run(Pinned(reads), [b"a", REFUSED, REFUSED, REFUSED], [b"s1", b"s2", 2, 3, 4])
    loads = tuple(command("SCRIPT", "LOAD", source(name)) for name in ("job_watch", "job_counts"))
    assert sent[1] == Pinned(loads + reads[1:])  # each unknown script loaded once
    assert replies == [b"a", 2, 3, 4]


def test_a_call_that_ran_and_may_not_run_twice_is_left_to_the_plan() -> None:
    reads = (call("job_watch"), call("enqueue", idempotent=False))
    sent, replies = run(Pinned(reads), [REFUSED, 1])
    assert len(sent) == 1
    assert replies == [REFUSED, 1]


def test_a_pinned_group_reloads_on_a_real_server(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    wq = make()
    refs = wq.submit_many("j", ["a", "b"])
    keys = queue_keys(prefix, "j")
    reads = Pinned(
        tuple(job_scripts.job_watch(keys, ref.id, watch=False, with_payload=True) for ref in refs)
    )
    redis_client.script_flush()
    replies = wq._drive(loaded(reads))
    assert len(replies) == 2
    assert not any(isinstance(reply, Exception) or reply is None for reply in replies)


def batch_calls(prefix: str) -> list[Call]:
    keys = queue_keys(prefix, "j")
    return [
        command("LLEN", keys.tasks),
        job_scripts.job_counts(keys),
        command("HGET", keys.config, "kind"),
    ]


def test_the_sync_executor_batch_reloads_and_raises_error_replies(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    wq = make()
    wq.submit("j", "a")
    redis_client.script_flush()
    _, counts, kind = wq._executor.batch(batch_calls(prefix))
    assert kind == b"jobs" and b"queued" in counts
    wrong = command("LLEN", queue_keys(prefix, "j").config)  # a hash
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        wq._executor.batch([command("LLEN", queue_keys(prefix, "j").tasks), wrong])


def test_the_async_executor_batch_is_the_same(redis_url: str, prefix: str) -> None:
    async def scenario() -> None:
        async with worqr.AsyncWorqr(redis_url, prefix=prefix) as wq:
            await wq.submit("j", "a")
            await wq._redis.script_flush()
            _, counts, kind = await wq._executor.batch(batch_calls(prefix))
            assert kind == b"jobs" and b"queued" in counts
            wrong = command("LLEN", queue_keys(prefix, "j").config)
            with pytest.raises(ResponseError, match="WRONGTYPE"):
                await wq._executor.batch([wrong])

    asyncio.run(scenario())


def test_a_script_call_reloads_in_both_colours(
    make: Factory, redis_client: redis.Redis, redis_url: str, prefix: str
) -> None:
    """By EVALSHA, as on Redis 6.2 or for a user without FCALL (tests/core/
    test_functions.py has the functions' own reload)."""
    keys = queue_keys(prefix, "q")
    redis_client.script_flush()
    sync_client = make()
    sync_client._executor._functions = False
    assert sync_client._execute(scripts.enqueue(keys, [b"t"], publish="PUBLISH"), 0) is not None

    async def scenario() -> None:
        async with worqr.AsyncWorqr(redis_url, prefix=prefix) as wq:
            wq._executor._functions = False
            redis_client.script_flush()
            assert (
                await wq._execute(scripts.enqueue(keys, [b"u"], publish="PUBLISH"), 0) is not None
            )

    asyncio.run(scenario())
    assert redis_client.llen(keys.tasks) == 2
