"""Bad input is refused before anything is written; odd but valid input round-trips
exactly; passwords never leak into reprs, exception messages or logs."""

from __future__ import annotations

import logging
import os
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from core_helpers import Clients, keys_under

import worqr
from worqr.embedded import EmbeddedRedis

Q = "jobs"


@pytest.fixture
def clients(redis_url: str, prefix: str) -> Iterator[Clients]:
    made = Clients(redis_url, prefix)
    try:
        yield made
    finally:
        made.close_all()


BAD_NAMES: list[tuple[object, type[Exception]]] = [
    ("", ValueError),
    ("x" * (worqr.MAX_NAME_CHARS + 1), ValueError),
    ("a{b", ValueError),
    ("a}b", ValueError),
    ("{", ValueError),
    ("line\nbreak", ValueError),
    ("nul\x00byte", ValueError),
    ("tab\there", ValueError),
    ("del\x7f", ValueError),
    ("c1\x85control", ValueError),
    ("surrogate\ud800", ValueError),
    (None, TypeError),
    (5, TypeError),
    (b"bytes", TypeError),
    (["list"], TypeError),
]
BAD_NAME_IDS = [repr(name)[:20] for name, _ in BAD_NAMES]


def queue_calls(client: worqr.Worqr) -> dict[str, Callable[[Any], object]]:
    """Every method that takes a queue name, called with one."""
    return {
        "enqueue": lambda q: client.enqueue(q, "task"),
        "enqueue_many": lambda q: client.enqueue_many(q, ["a", "b"]),
        "cancel_tasks": lambda q: client.cancel_tasks(q, "task"),
        "delete_queue": client.delete_queue,
        "count_tasks": client.count_tasks,
        "count_processes": client.count_processes,
        "count_failed": client.count_failed,
        "get_failed": client.get_failed,
        "get_stats": client.get_stats,
        "requeue_failed": client.requeue_failed,
        "purge_failed": client.purge_failed,
        "configure_queue": lambda q: client.configure_queue(q, max_recoveries=1),
        "on": lambda q: client.on(q, lambda event, message: None),
        "processes_exist": lambda q: client.processes_exist(q, ["pid"]),
        "count_worker_processes": lambda q: client.count_worker_processes(q, "w"),
    }


def worker_calls(client: worqr.Worqr) -> dict[str, Callable[[Any], object]]:
    return {
        "start_work": client.start_work,
        "stop_work": client.stop_work,
        "dequeue": client.dequeue,
        "dequeue_many": lambda q: client.dequeue_many(q, 2),
    }


def snapshot(raw: redis.Redis, prefix: str) -> dict[bytes, bytes | None]:
    """Every key of the mesh with its serialised value (DUMP holds no TTL, so a
    lease ticking down does not count as a change)."""
    return {key: raw.dump(key) for key in keys_under(raw, prefix)}


@pytest.mark.parametrize(("name", "error"), BAD_NAMES, ids=BAD_NAME_IDS)
def test_bad_queue_names_are_refused_and_nothing_is_written(
    clients: Clients, redis_client: redis.Redis, prefix: str, name: object, error: type[Exception]
) -> None:
    producer = clients.make()
    for method, call in queue_calls(producer).items():
        with pytest.raises(error):
            call(name)
        assert keys_under(redis_client, prefix) == [], f"{method} wrote something"
    worker = clients.worker()
    before = snapshot(redis_client, prefix)
    for method, call in worker_calls(worker).items():
        with pytest.raises(error):
            call(name)
        assert snapshot(redis_client, prefix) == before, f"{method} wrote something"
    assert worker.get_working_queues() == []


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
        worqr.validate_name(b"q")
    with pytest.raises(ValueError):
        worqr.Settings(prefix="bad{prefix")


GOOD_NAMES = [
    "a:b:c",
    "with space",
    "*",
    "?",
    "[abc]",
    "a*b?c",
    "ünïcødé 名前 🚀",
    "עברית مرحبا",  # right-to-left scripts
    "\u202eRTL override",
    "x" * worqr.MAX_NAME_CHARS,
    "a",
]


def test_names_with_colons_globs_unicode_and_rtl_text_work(
    clients: Clients, redis_client: redis.Redis, prefix: str
) -> None:
    producer = clients.make()
    worker = clients.worker()
    for i, name in enumerate(GOOD_NAMES):
        producer.enqueue_many(name, [f"{i}-first", f"{i}-second"])
    assert producer.get_queues() == sorted(GOOD_NAMES)
    for i, name in enumerate(GOOD_NAMES):
        # Glob characters are names, not patterns: each queue sees its own tasks only.
        assert producer.count_tasks(name) == 2
        process = worker.dequeue(name)
        assert process is not None
        assert (process.queue, process.task) == (name, f"{i}-first")
        assert worker.finish_process(process)
    assert worker.get_working_queues() == sorted(GOOD_NAMES)
    producer.delete_queue("*")
    producer.delete_queue("a*b?c")
    assert producer.count_tasks("a") == 1  # deleting "*" deleted nothing else
    assert producer.get_queues() == sorted(set(GOOD_NAMES) - {"*", "a*b?c"})
    assert sum(producer.count_tasks(n) for n in GOOD_NAMES) == len(GOOD_NAMES) - 2


@pytest.mark.parametrize("task", [None, 5, 1.5, ["a"], {"a": 1}, object()])
def test_tasks_that_are_not_str_or_bytes_raise_type_error(
    clients: Clients, redis_client: redis.Redis, prefix: str, task: object
) -> None:
    producer = clients.make()
    with pytest.raises(TypeError):
        producer.enqueue(Q, task)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        producer.cancel_tasks(Q, task)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        producer.enqueue_many(Q, ["good", task, "good too"])  # type: ignore[list-item]
    assert keys_under(redis_client, prefix) == []


def test_tasks_over_max_task_bytes_are_refused_and_nothing_is_written(
    clients: Clients, redis_client: redis.Redis, prefix: str
) -> None:
    producer = clients.make(max_task_bytes=1024)
    for task in (b"x" * 1025, "x" * 1025, "é" * 513):  # the limit is in bytes: é is 2
        with pytest.raises(ValueError, match="1024"):
            producer.enqueue(Q, task)
        with pytest.raises(ValueError):
            producer.enqueue_many(Q, ["small", task])
    with pytest.raises(ValueError):
        producer.enqueue(Q, "unpaired \ud800 surrogate")  # not encodable as UTF-8
    assert keys_under(redis_client, prefix) == []
    producer.enqueue(Q, b"x" * 1024)  # exactly the limit is fine
    assert producer.count_tasks(Q) == 1


def test_a_big_batch_with_one_bad_task_at_the_end_writes_nothing(
    clients: Clients, redis_client: redis.Redis, prefix: str
) -> None:
    """Every task is checked before the first script batch is sent."""
    producer = clients.make()
    tasks: list[object] = [f"t{i}" for i in range(2500)] + [42]
    with pytest.raises(TypeError):
        producer.enqueue_many(Q, tasks)  # type: ignore[arg-type]
    assert keys_under(redis_client, prefix) == []


MEGABYTE = os.urandom(1024 * 1024)
PAYLOADS: list[tuple[str | bytes, str | bytes]] = [  # (enqueued, returned as task)
    (b"", ""),
    ("", ""),
    (b"\x00", "\x00"),
    (b"a\x00b\x00", "a\x00b\x00"),
    (b"\xff\xfe\x80", b"\xff\xfe\x80"),  # not UTF-8: stays bytes
    (b"ascii bytes", "ascii bytes"),  # valid UTF-8 comes back as str
    ("héllo wörld ✓ 🚀", "héllo wörld ✓ 🚀"),
    ("מה שלום", "מה שלום"),
    (MEGABYTE, MEGABYTE),
    ("x" * 1024 * 1024, "x" * 1024 * 1024),
]


def test_payloads_round_trip_exactly(clients: Clients) -> None:
    producer = clients.make()
    worker = clients.worker(Q)
    raw_worker = clients.worker(Q, decode_tasks=False)
    assert producer.enqueue_many(Q, [sent for sent, _ in PAYLOADS]) == len(PAYLOADS)
    for sent, returned in PAYLOADS:
        process = worker.dequeue(Q)
        assert process is not None
        assert type(process.task) is type(returned)
        assert process.task == returned
        exact = sent.encode() if isinstance(sent, str) else sent
        assert process.data == exact  # always the exact bytes
        assert worker.stop_process(process)  # back to the front, for the bytes reader
        raw = raw_worker.dequeue(Q)
        assert raw is not None
        assert raw.task == exact and type(raw.task) is bytes  # decode_tasks=False
        assert raw_worker.fail_process(raw)
    failed = producer.get_failed(Q)  # dead letters follow the same rule, newest first
    assert failed == [returned for _, returned in reversed(PAYLOADS)]


def test_cancel_matches_the_exact_bytes(clients: Clients) -> None:
    producer = clients.make()
    producer.enqueue_many(Q, [b"\xff", b"\xff\x00", "\xff", b"", ""])
    assert producer.cancel_tasks(Q, b"\xff") == 1  # not "\xff" (two bytes in UTF-8)
    assert producer.cancel_tasks(Q, "") == 2  # "" and b"" are the same bytes
    assert producer.count_tasks(Q) == 2


# -- passwords ------------------------------------------------------------------------------

PASSWORD = "pw-Sup3r-s3cret-do-not-leak"


@pytest.fixture
def locked_redis(make_redis: Callable[..., EmbeddedRedis]) -> EmbeddedRedis:
    return make_redis(extra_args=["--requirepass", PASSWORD])


def exception_text(error: BaseException) -> str:
    """Everything an exception would show: message, repr, causes and traceback."""
    return "".join(traceback.format_exception(error)) + repr(error)


def test_a_url_with_the_right_password_works_and_hides_it(
    locked_redis: EmbeddedRedis, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    made = Clients(f"redis://:{PASSWORD}@127.0.0.1:{locked_redis.port}/0", prefix)
    try:
        worker = made.worker(Q)
        worker.enqueue(Q, "task")
        process = worker.dequeue(Q)
        assert process is not None and worker.finish_process(process)
        assert PASSWORD not in repr(worker) and PASSWORD not in str(worker)
        assert PASSWORD not in repr(process)
    finally:
        made.close_all()
    assert PASSWORD not in caplog.text


@pytest.mark.parametrize(
    "url",
    [
        "redis://:{password}-wrong@127.0.0.1:{port}/0",
        "redis://someone:{password}-wrong@127.0.0.1:{port}/0",
    ],
)
def test_a_rejected_password_never_appears_in_errors_or_logs(
    locked_redis: EmbeddedRedis, prefix: str, caplog: pytest.LogCaptureFixture, url: str
) -> None:
    caplog.set_level(logging.DEBUG)
    made = Clients(url.format(password=PASSWORD, port=locked_redis.port), prefix)
    try:
        client = made.make(retry_deadline=3)
        assert PASSWORD not in repr(client)
        for call in (lambda: client.count_tasks(Q), lambda: client.enqueue(Q, "x")):
            started = time.monotonic()
            with pytest.raises(redis.AuthenticationError) as raised:
                call()
            # A wrong password is not an outage: no retrying until the deadline.
            assert time.monotonic() - started < 1.5
            assert PASSWORD not in exception_text(raised.value)
    finally:
        made.close_all()
    assert PASSWORD not in caplog.text


def test_an_unreachable_server_never_shows_the_password(
    make_redis: Callable[..., EmbeddedRedis], prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server = make_redis()
    server.stop()  # nobody listens on its port now
    made = Clients(f"redis://:{PASSWORD}@127.0.0.1:{server.port}/0", prefix)
    try:
        client = made.make(retry_deadline=0.2)
        with pytest.raises(worqr.RedisUnavailableError) as raised:
            client.count_tasks(Q)
        assert PASSWORD not in exception_text(raised.value)
        with pytest.raises(worqr.RedisUnavailableError) as raised:
            client.start_worker()
        assert PASSWORD not in exception_text(raised.value)
    finally:
        made.close_all()
    assert PASSWORD not in caplog.text
