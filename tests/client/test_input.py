"""Input at the edges, against a real Redis: bad names, tasks and settings are
refused before anything is written; odd names and payloads round-trip exactly;
a password never leaks into a repr, an exception or a log line.

"Writes nothing" is checked by scanning the server for the test's prefix with a
raw client (SCAN is fine in a test; worqr itself never scans).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import traceback
from collections.abc import Callable
from typing import Any

import pytest
import redis

import worqr
from tests.support.clients import Factory
from tests.support.mesh import keys_under
from tests.support.waiting import wait_until
from worqr.embedded import EmbeddedRedis

BAD_NAMES: list[tuple[object, type[Exception]]] = [
    ("", ValueError),
    ("x" * (worqr.MAX_NAME_CHARS + 1), ValueError),
    ("a{b", ValueError),
    ("a}b", ValueError),
    ("{", ValueError),
    ("line\nbreak", ValueError),
    ("nul\x00", ValueError),
    ("tab\t", ValueError),
    ("del\x7f", ValueError),
    ("c1\x85", ValueError),
    ("surrogate\ud800", ValueError),
    (42, TypeError),
    (None, TypeError),
    (b"bytes", TypeError),
    (["q"], TypeError),
]

GOOD_NAMES = [
    "a:b:c",
    "q:tasks",  # looks like a key suffix; still its own queue
    "with space",
    "star*",
    "question?",
    "[brackets]",
    "ünïcødé",
    "שלום עולם",  # right-to-left text
    "mixed \u200fRTL\u200e marks",
    "emoji 🎉",
    "x" * worqr.MAX_NAME_CHARS,
]


def queue_calls(client: worqr.Worqr, name: Any) -> list[Callable[[], object]]:
    """Every method that takes a queue name, called with ``name``."""
    return [
        lambda: client.enqueue(name, "task"),
        lambda: client.enqueue_many(name, ["task", "task2"]),
        lambda: client.cancel_tasks(name, "task"),
        lambda: client.delete_queue(name),
        lambda: client.count_tasks(name),
        lambda: client.count_processes(name),
        lambda: client.count_failed(name),
        lambda: client.get_failed(name),
        lambda: client.get_stats(name),
        lambda: client.configure_queue(name, max_recoveries=1),
        lambda: client.processes_exist(name, ["pid"]),
        lambda: client.count_worker_processes(name, "w"),
        lambda: client.requeue_failed(name),
        lambda: client.purge_failed(name),
        lambda: client.on(name, lambda event, message: None),
    ]


def worker_calls(client: worqr.Worqr, name: Any) -> list[Callable[[], object]]:
    return [
        lambda: client.start_work(name),
        lambda: client.stop_work(name),
        lambda: client.dequeue(name),
        lambda: client.dequeue_many(name, 2),
    ]


# -- refused before anything is written -----------------------------------------------


@pytest.mark.parametrize(("name", "error"), BAD_NAMES, ids=repr)
def test_bad_queue_names_raise_and_write_nothing(
    name: object, error: type[Exception], make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    client = make()
    for call in queue_calls(client, name):
        with pytest.raises(error):
            call()
    assert keys_under(redis_client, prefix) == []

    client.start_worker()
    before = keys_under(redis_client, prefix)
    for call in worker_calls(client, name):
        with pytest.raises(error):
            call()
    assert keys_under(redis_client, prefix) == before
    assert client.get_queues() == []
    assert client.get_working_queues() == []


@pytest.mark.parametrize(("name", "error"), BAD_NAMES, ids=repr)
def test_bad_prefixes_raise(name: object, error: type[Exception], redis_url: str) -> None:
    with pytest.raises(error):
        worqr.Settings(prefix=name)  # type: ignore[arg-type]
    if name is None:
        return  # prefix=None means "the default" to the clients
    with pytest.raises(error):
        worqr.Worqr(redis_url, prefix=name)  # type: ignore[arg-type]
    with pytest.raises(error):
        worqr.AsyncWorqr(redis_url, prefix=name)  # type: ignore[arg-type]


def test_bad_names_say_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        worqr.validate_name("")
    with pytest.raises(ValueError, match=str(worqr.MAX_NAME_CHARS)):
        worqr.validate_name("x" * 300)
    with pytest.raises(ValueError, match="hash tags"):
        worqr.validate_name("a{b}")
    with pytest.raises(ValueError, match="control character"):
        worqr.validate_name("a\x1bb")
    with pytest.raises(TypeError, match="must be str"):
        worqr.validate_name(b"q")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="prefix"):
        worqr.Settings(prefix="bad{prefix")


def test_validate_name_is_the_documented_rule() -> None:
    for name in GOOD_NAMES:
        assert worqr.validate_name(name) == name
    for name, error in BAD_NAMES:
        with pytest.raises(error):
            worqr.validate_name(name)


@pytest.mark.parametrize(
    "task", [1, 1.5, None, ["a"], {"a": 1}, object()], ids=lambda task: type(task).__name__
)
def test_tasks_that_are_not_str_or_bytes_raise_type_error(
    task: object, make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    client = make()
    with pytest.raises(TypeError):
        client.enqueue("q", task)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        client.enqueue_many("q", ["good", task, "good"])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        client.cancel_tasks("q", task)  # type: ignore[arg-type]
    assert keys_under(redis_client, prefix) == []


def test_enqueue_many_wants_an_iterable_of_tasks(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    client = make()
    for one_task in ("abc", b"abc"):
        with pytest.raises(TypeError):
            client.enqueue_many("q", one_task)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        client.enqueue_many("q", 3)  # type: ignore[arg-type]
    assert keys_under(redis_client, prefix) == []


def test_tasks_over_the_size_limit_raise_and_write_nothing(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    client = make(max_task_bytes=16)
    for big in ("x" * 17, b"x" * 17, "é" * 9):  # the limit counts bytes, not characters
        with pytest.raises(ValueError, match="max_task_bytes"):
            client.enqueue("q", big)
        with pytest.raises(ValueError):
            client.enqueue_many("q", ["fine", big])
    with pytest.raises(ValueError):
        client.enqueue("q", "\ud800")  # a lone surrogate has no UTF-8 form
    assert keys_under(redis_client, prefix) == []
    client.enqueue("q", "x" * 16)  # exactly the limit is accepted
    assert client.count_tasks("q") == 1


def test_enqueue_many_with_one_bad_task_writes_none(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    client = make(max_task_bytes=1024)
    good = [f"t{i}" for i in range(2500)]  # bad task in the third script batch
    with pytest.raises(TypeError):
        client.enqueue_many("q", [*good, 7])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        client.enqueue_many("q", [*good, b"x" * 1025])
    assert keys_under(redis_client, prefix) == []


# -- odd names and payloads work ------------------------------------------------------------


def test_odd_queue_names_work_end_to_end(make: Factory) -> None:
    producer, worker = make(), make()
    worker.start_worker()
    for name in GOOD_NAMES:
        producer.enqueue(name, f"task of {name}")
    producer.enqueue_many("ab", ["plain"])  # "star*" and friends must not match others
    assert producer.get_queues() == sorted([*GOOD_NAMES, "ab"])
    for name in GOOD_NAMES:
        assert producer.count_tasks(name) == 1
        process = worker.dequeue(name)
        assert process is not None
        assert (process.queue, process.task) == (name, f"task of {name}")
        assert worker.finish_process(process)
    assert worker.get_working_queues() == sorted(GOOD_NAMES)
    producer.delete_queue("star*")
    assert producer.count_tasks("ab") == 1
    assert "ab" in producer.get_queues() and "star*" not in producer.get_queues()


def test_a_wildcard_name_gets_only_its_own_events(make: Factory) -> None:
    events: dict[str, list[str]] = {"a*": [], "ab": []}
    client = make()
    for name, seen in events.items():
        client.on(name, lambda event, message, seen=seen: seen.append(event))
    client.delete_queue("a*")
    client.delete_queue("ab")
    client.delete_queue("a*")
    wait_until(lambda: len(events["a*"]) == 2 and len(events["ab"]) == 1)
    assert events == {"a*": ["delete", "delete"], "ab": ["delete"]}


PAYLOADS: list[tuple[str | bytes, str | bytes]] = [
    # (enqueued, what Process.task is with decode_tasks on)
    ("", ""),
    (b"", ""),
    ("\x00", "\x00"),
    (b"a\x00b", "a\x00b"),
    ("ünïcødé 🎉", "ünïcødé 🎉"),
    ("שלום", "שלום"),
    (b"utf-8 bytes", "utf-8 bytes"),  # valid UTF-8 comes back as str
    (b"\xff\xfe\x00\x80", b"\xff\xfe\x00\x80"),  # not UTF-8: stays bytes
    (b"\xc3", b"\xc3"),  # a truncated UTF-8 sequence
]


def test_payloads_round_trip_exactly(make: Factory) -> None:
    producer, worker = make(), make(decode_tasks=False)
    decoding = make()
    worker.start_worker()
    decoding.start_worker()
    producer.enqueue_many("q", [payload for payload, _ in PAYLOADS])
    producer.enqueue_many("d", [payload for payload, _ in PAYLOADS])
    raw = worker.dequeue_many("q", len(PAYLOADS))
    decoded = decoding.dequeue_many("d", len(PAYLOADS))
    for (payload, expected), as_bytes, as_task in zip(PAYLOADS, raw, decoded, strict=True):
        data = payload.encode() if isinstance(payload, str) else payload
        assert as_bytes.data == data and as_bytes.task == data  # decode_tasks=False: bytes
        assert type(as_bytes.task) is bytes
        assert as_task.data == data
        assert as_task.task == expected and type(as_task.task) is type(expected)


def test_one_megabyte_payloads_round_trip(make: Factory) -> None:
    producer, worker = make(), make()
    worker.start_worker()
    blob = os.urandom(1024 * 1024)
    text = "ü" * (512 * 1024)  # 1 MiB of UTF-8
    producer.enqueue("q", blob)
    producer.enqueue("q", text)
    first, second = worker.dequeue_many("q", 2)
    assert first.data == blob
    assert second.task == text
    # And the same through the dead-letter list.
    assert worker.fail_process(first) and worker.fail_process(second)
    failed = producer.get_failed("q")
    assert [len(entry) for entry in failed] == [len(text), len(blob)]
    assert failed[0] == text
    assert failed[1] == (blob if isinstance(failed[1], bytes) else blob.decode())


def test_cancel_matches_exact_bytes(make: Factory) -> None:
    producer = make()
    producer.enqueue_many("q", [b"\xff\x00", "x", b"x", "x ", b"\xff"])
    assert producer.cancel_tasks("q", b"\xff\x00") == 1
    assert producer.cancel_tasks("q", "x") == 2  # str and bytes of the same payload
    assert producer.count_tasks("q") == 2


def test_failed_list_follows_the_decode_setting(make: Factory) -> None:
    decoding, raw = make(), make(decode_tasks=False)
    decoding.start_worker()
    decoding.enqueue_many("q", ["text", b"\xff"])
    for process in decoding.dequeue_many("q", 2):
        assert decoding.fail_process(process)
    assert sorted(decoding.get_failed("q"), key=repr) == sorted(["text", b"\xff"], key=repr)
    assert sorted(raw.get_failed("q")) == [b"text", b"\xff"]


# -- passwords ------------------------------------------------------------------------------


PASSWORD = "s3cret-Pw-9137"


@pytest.fixture
def locked_redis(make_redis: Callable[..., EmbeddedRedis]) -> EmbeddedRedis:
    return make_redis(extra_args=["--requirepass", PASSWORD])


def url_with(server: EmbeddedRedis, password: str, user: str = "") -> str:
    return f"redis://{user}:{password}@127.0.0.1:{server.port}/0"


def test_a_password_in_the_url_works_and_stays_out_of_repr(
    locked_redis: EmbeddedRedis, prefix: str
) -> None:
    with worqr.Worqr(url_with(locked_redis, PASSWORD), prefix=prefix) as client:
        client.enqueue("q", "task")
        assert client.count_tasks("q") == 1
        client.start_worker()
        assert PASSWORD not in repr(client)
        assert PASSWORD not in str(client)
    async_client = worqr.AsyncWorqr(url_with(locked_redis, PASSWORD, "default"), prefix=prefix)
    assert PASSWORD not in repr(async_client)


@pytest.mark.parametrize("user", ["", "default"])
def test_a_wrong_password_never_shows_in_errors_or_logs(
    user: str, locked_redis: EmbeddedRedis, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = "wr0ng-Pw-5521"
    settings = worqr.Settings(prefix=prefix, retry_deadline=1.0)
    caplog.set_level(logging.DEBUG)
    with worqr.Worqr(url_with(locked_redis, wrong, user), settings=settings) as client:
        with pytest.raises(Exception) as caught:
            client.enqueue("q", "task")
        text = "".join(traceback.format_exception(caught.value))
        assert "auth" in text.lower() or "password" in text.lower()
        assert wrong not in text and PASSWORD not in text
        assert wrong not in repr(client)
    assert not [r for r in caplog.records if wrong in r.getMessage()]
    with redis.Redis.from_url(url_with(locked_redis, PASSWORD)) as raw:
        assert raw.dbsize() == 0  # nothing was written


def test_an_unreachable_server_never_shows_the_password(
    make_redis: Callable[..., EmbeddedRedis], prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server = make_redis()
    server.stop()  # nobody listens on its port now
    settings = worqr.Settings(prefix=prefix, retry_deadline=0.2)
    with worqr.Worqr(url_with(server, PASSWORD), settings=settings) as client:
        for call in (lambda: client.count_tasks("q"), client.start_worker):
            with pytest.raises(worqr.RedisUnavailableError) as caught:
                call()
            text = "".join(traceback.format_exception(caught.value)) + repr(caught.value)
            assert PASSWORD not in text
    assert PASSWORD not in caplog.text


# -- settings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("ttl", 0, ValueError),
        ("ttl", -1.0, ValueError),
        ("ttl", math.nan, ValueError),
        ("ttl", math.inf, ValueError),
        ("ttl", "3", TypeError),
        ("ttl", True, TypeError),
        ("ttl", 1e10, ValueError),  # past MAX_SECONDS: no wait on this machine holds it
        ("ttl", 10**400, ValueError),  # an int too large for a float
        ("heartbeat", 0, ValueError),
        ("heartbeat", 3.0, ValueError),  # not shorter than ttl (3.0)
        ("heartbeat", 5.0, ValueError),
        ("poll_interval", 0, ValueError),
        ("socket_timeout", -0.1, ValueError),
        ("retry_deadline", 0, ValueError),
        ("max_task_bytes", 0, ValueError),
        ("max_task_bytes", 1.5, TypeError),
        ("max_task_bytes", True, TypeError),
        ("failed_max", 0, ValueError),
        ("failed_max", 2**31, ValueError),
        ("requeue_chunk", 0, ValueError),
        ("requeue_chunk", "10", TypeError),
        ("max_recoveries", -1, ValueError),  # -1 is per queue only (configure_queue)
        ("max_recoveries", 1.0, TypeError),
        ("max_recoveries", True, TypeError),
    ],
)
def test_bad_settings_raise(field: str, value: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        worqr.Settings(**{field: value})  # type: ignore[arg-type]


def test_bad_settings_raise_through_the_client_keywords(redis_url: str) -> None:
    with pytest.raises(ValueError):
        worqr.Worqr(redis_url, ttl=0)
    with pytest.raises(ValueError):
        worqr.Worqr(redis_url, heartbeat=5.0)  # the default ttl is 3 s
    with pytest.raises(ValueError):
        worqr.AsyncWorqr(redis_url, max_recoveries=-3)
    with pytest.raises(ValueError):  # a keyword overrides settings, and is checked with them
        worqr.Worqr(redis_url, ttl=1.0, settings=worqr.Settings(heartbeat=2.0, ttl=5.0))
    settings = worqr.Settings(ttl=10.0, heartbeat=1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.ttl = 1.0  # type: ignore[misc]
