"""The admin commands, end to end: `worqr enqueue/cancel/delete/failed/status/top`
run as subprocesses against the test Redis."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

import worqr
from tests.support.cli import WORQR, cli_env, run_cli
from tests.support.processes import stop
from tests.support.waiting import wait_until


def test_enqueue_arguments_in_order(redis_url: str, prefix: str, wq: worqr.Worqr) -> None:
    result = run_cli("enqueue", "jobs", "a", "b", "c", "--url", redis_url, "--prefix", prefix)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "enqueued 3 tasks to 'jobs'"
    wq.start_worker()
    assert [p.task for p in wq.dequeue_many("jobs", 10)] == ["a", "b", "c"]


def test_enqueue_stdin_streams_large_input_exactly(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    # More lines than one stdin chunk (10,000), a CRLF line, a blank line and a
    # line that is not UTF-8: each non-blank line is one task, byte for byte.
    lines = [f"task-{i}".encode() for i in range(25_000)]
    lines[5] = b"windows\r"
    lines[6] = b""
    lines[7] = b"\xff\xfebinary"
    data = b"\n".join(lines) + b"\n"
    result = run_cli("enqueue", "bulk", "--url", redis_url, "--prefix", prefix, input=data)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "enqueued 24999 tasks to 'bulk'"
    assert wq.count_tasks("bulk") == 24_999
    wq.start_worker()
    first = [p.data for p in wq.dequeue_many("bulk", 8)]
    assert first == [
        b"task-0",
        b"task-1",
        b"task-2",
        b"task-3",
        b"task-4",
        b"windows",
        b"\xff\xfebinary",
        b"task-8",
    ]
    rest = wq.dequeue_many("bulk", 30_000)
    assert rest[-1].task == "task-24999"


def test_arguments_that_are_not_utf8_are_tasks_of_their_bytes(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    binary = os.fsdecode(b"caf\xe9")  # how Python passes argv bytes that are not UTF-8
    result = run_cli("enqueue", "q", binary, binary, "ok", "--url", redis_url, "--prefix", prefix)
    assert result.returncode == 0, result.stderr
    cancelled = run_cli("cancel", "q", binary, "--url", redis_url, "--prefix", prefix)
    assert cancelled.stdout == "cancelled 2 copies on 'q'\n", cancelled.stderr
    wq.start_worker()
    assert [p.data for p in wq.dequeue_many("q", 10)] == [b"ok"]


def test_cancel_removes_every_queued_copy(redis_url: str, prefix: str, wq: worqr.Worqr) -> None:
    wq.enqueue_many("jobs", ["x", "y", "x", "z"])
    result = run_cli("cancel", "jobs", "x", "--url", redis_url, "--prefix", prefix)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "cancelled 2 copies on 'jobs'"
    wq.start_worker()
    assert [p.task for p in wq.dequeue_many("jobs", 10)] == ["y", "z"]


def test_cancel_ends_a_process_held_by_a_worker(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    wq.start_worker()
    wq.enqueue("jobs", "running")
    process = wq.dequeue("jobs")
    assert process is not None
    result = run_cli("cancel", "jobs", "running", "--url", redis_url, "--prefix", prefix)
    assert result.stdout.strip() == "cancelled 1 copy on 'jobs'"
    assert wq.finish_process(process) is False  # fenced: it was cancelled


def test_delete_drops_the_queue(redis_url: str, prefix: str, wq: worqr.Worqr) -> None:
    wq.enqueue_many("jobs", ["a", "b"])
    result = run_cli("delete", "jobs", "--url", redis_url, "--prefix", prefix)
    assert result.returncode == 0, result.stderr
    assert wq.count_tasks("jobs") == 0
    assert "jobs" not in wq.get_queues()


def _dead_letters(wq: worqr.Worqr, tasks: list[str]) -> None:
    wq.start_worker()
    wq.enqueue_many("jobs", tasks)
    for process in wq.dequeue_many("jobs", len(tasks)):
        assert wq.fail_process(process)


def test_failed_lists_requeues_and_purges(redis_url: str, prefix: str, wq: worqr.Worqr) -> None:
    _dead_letters(wq, ["first", "second\nline", "third"])
    listed = run_cli("failed", "jobs", "--url", redis_url, "--prefix", prefix)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == ["first", "'second\\nline'", "third"]

    moved = run_cli("failed", "jobs", "--requeue", "--url", redis_url, "--prefix", prefix)
    assert moved.stdout.strip() == "requeued 3 dead letters on 'jobs'"
    assert wq.count_failed("jobs") == 0
    assert [p.task for p in wq.dequeue_many("jobs", 10)] == ["first", "second\nline", "third"]

    for process in wq.dequeue_many("jobs", 10) or []:
        wq.fail_process(process)
    _dead_letters(wq, ["again"])
    purged = run_cli("failed", "jobs", "--purge", "--url", redis_url, "--prefix", prefix)
    assert purged.stdout.strip() == "purged 1 dead letter on 'jobs'"
    assert wq.count_failed("jobs") == 0


def test_status_shows_queues_and_workers(redis_url: str, prefix: str, wq: worqr.Worqr) -> None:
    worker = wq.start_worker()
    wq.enqueue_many("jobs", ["a", "b", "c"])
    wq.dequeue_many("jobs", 2)
    _dead = wq.dequeue("jobs")
    assert _dead is not None and wq.fail_process(_dead)
    wq.enqueue("jobs", "d")

    result = run_cli("status", "--json", "--url", redis_url, "--prefix", prefix)
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert status["prefix"] == prefix
    [queue] = status["queues"]
    assert (queue["name"], queue["queued"], queue["in_process"], queue["failed"]) == (
        "jobs",
        1,
        2,
        1,
    )
    assert queue["stats"]["enqueued"] == 4
    [row] = status["workers"]
    assert row["id"] == worker and row["alive"] is True
    assert row["pid"] == os.getpid() and row["queues"] == ["jobs"] and row["in_process"] == 2

    text = run_cli("status", "--url", redis_url, "--prefix", prefix)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[2].split() == ["QUEUE", "QUEUED", "IN", "PROCESS", "FAILED"]
    assert lines[3].split() == ["jobs", "1", "2", "1"]
    assert any(line.split()[:2] == [worker, "yes"] for line in lines)


def test_status_of_an_empty_mesh(redis_url: str, prefix: str) -> None:
    result = run_cli("status", "--url", redis_url, "--prefix", prefix)
    assert result.returncode == 0, result.stderr
    assert "no queues" in result.stdout and "no workers" in result.stdout


def test_url_comes_from_the_environment(redis_url: str, prefix: str, wq: worqr.Worqr) -> None:
    result = run_cli(
        "enqueue", "jobs", "a", "--prefix", prefix, env=cli_env(WORQR_REDIS_URL=redis_url)
    )
    assert result.returncode == 0, result.stderr
    assert wq.count_tasks("jobs") == 1


def test_top_renders_and_stops_after_iterations(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    wq.enqueue_many("visible-queue", ["a", "b"])
    result = run_cli(
        "top", "--iterations", "2", "--interval", "0.05", "--url", redis_url, "--prefix", prefix
    )
    assert result.returncode == 0, result.stderr
    assert "visible-queue" in result.stdout and "finished/s" in result.stdout


def test_top_exits_0_on_ctrl_c(redis_url: str, prefix: str, wq: worqr.Worqr) -> None:
    wq.enqueue("top-queue", "a")
    leader, follower = pty.openpty()  # a terminal, so rich draws each frame at once
    process = subprocess.Popen(
        [*WORQR, "top", "--url", redis_url, "--prefix", prefix],
        stdin=follower,
        stdout=follower,
        stderr=subprocess.PIPE,
        env=cli_env(COLUMNS="120", LINES="40", TERM="xterm-256color"),  # whatever runs the tests
    )
    os.close(follower)
    seen = b""
    try:

        def drawn() -> bool:
            nonlocal seen
            if select.select([leader], [], [], 0.05)[0]:
                seen += os.read(leader, 65536)
            return b"top-queue" in seen

        wait_until(drawn, timeout=20, message="top never drew the queue")
        process.send_signal(signal.SIGINT)

        def exited() -> bool:
            # Keep reading, as a terminal does: a full pty would block top's last
            # frame (and its exit) on a write.
            with contextlib.suppress(OSError):
                if select.select([leader], [], [], 0.05)[0]:
                    os.read(leader, 65536)
            return process.poll() is not None

        wait_until(exited, timeout=10, message="top did not exit on Ctrl-C")
        assert process.returncode == 0
        assert process.stderr is not None and b"Traceback" not in process.stderr.read()
    finally:
        stop(process)
        os.close(leader)


def test_top_without_rich_says_how_to_get_it(redis_url: str, tmp_path: Path) -> None:
    blocker = tmp_path / "rich"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ImportError('rich is not installed')\n")
    result = run_cli("top", "--url", redis_url, env=cli_env(PYTHONPATH=str(tmp_path)))
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "worqr top: error: worqr top needs the 'rich' package: pip install 'worqr[cli]'"
    )


@pytest.mark.slow
def test_every_command_has_help() -> None:
    commands = ["worker", "enqueue", "cancel", "delete", "status", "top", "failed", "redis"]
    commands += ["submit", "job", "jobs"]
    for command in [*commands, "demo"]:
        result = run_cli(command, "--help")
        assert result.returncode == 0, (command, result.stderr)
        assert result.stdout.startswith(f"usage: worqr {command}"), command
    overview = run_cli("--help")
    assert overview.returncode == 0
    for command in commands:
        assert command in overview.stdout


def test_version() -> None:
    result = run_cli("--version")
    assert result.stdout.strip() == f"worqr {worqr.__version__}"


def test_redis_command_serves_until_interrupted() -> None:
    process = subprocess.Popen(
        [*WORQR, "redis"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env()
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().decode().strip()
        assert url.startswith("redis://127.0.0.1:")
        with worqr.Worqr(url) as client:
            client.enqueue("q", "served")
            assert client.count_tasks("q") == 1
        process.send_signal(signal.SIGINT)
        assert process.wait(10) == 0
        start = time.monotonic()
        with pytest.raises(worqr.RedisUnavailableError):
            worqr.Worqr(url, settings=worqr.Settings(retry_deadline=0.2)).count_tasks("q")
        assert time.monotonic() - start < 5
    finally:
        stop(process)
