"""Every user mistake and outage the CLI meets ends with one line on stderr and a
non-zero exit code, never a traceback."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator

import pytest
from cli_helpers import run_cli

from worqr.embedded import free_port


def assert_one_line_error(
    result: subprocess.CompletedProcess[str], code: int, *fragments: str
) -> None:
    assert result.returncode == code, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("worqr"), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture(scope="module")
def dead_url() -> str:
    """A URL nothing listens on."""
    return f"redis://127.0.0.1:{free_port()}/0"


FAST = ("--retry-deadline", "0.2")


@pytest.mark.parametrize(
    "command",
    [
        ["enqueue", "q", "a"],
        ["cancel", "q", "a"],
        ["delete", "q"],
        ["failed", "q"],
        ["failed", "q", "--requeue"],
        ["failed", "q", "--purge"],
        ["status"],
        ["status", "--json"],
        ["top", "--iterations", "1"],
    ],
)
def test_unreachable_redis(command: list[str], dead_url: str) -> None:
    result = run_cli(*command, "--url", dead_url, *FAST)
    assert_one_line_error(result, 1, f"worqr {command[0]}: error:", "Connection refused")


def test_unreachable_redis_from_stdin(dead_url: str) -> None:
    result = run_cli("enqueue", "q", "--url", dead_url, *FAST, input=b"a\nb\n")
    assert_one_line_error(result, 1, "Redis is unavailable")


@pytest.mark.parametrize(
    ("command", "fragment"),
    [
        (["enqueue", "bad{name", "a"], "queue name 'bad{name' contains '{'"),
        (["cancel", "", "a"], "queue name must not be empty"),
        (["delete", "x" * 300], "the limit is 256"),
        (["failed", "a\tb"], "control character"),
        (["status", "--prefix", "p}"], "prefix 'p}' contains '}'"),
        (["failed", "q", "--requeue", "--purge"], "not allowed with argument"),
        (["cancel", "q"], "the following arguments are required: TASK"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        ([], "the following arguments are required: COMMAND"),
        (["worker"], "the following arguments are required: MODULE:ATTR"),
        (["worker", "m:w", "--processes", "0"], "must be at least 1"),
        (["worker", "m:w", "--metrics-port", "70000"], "not a TCP port"),
        (["redis", "--port", "http"], "not an integer"),
        (["demo", "--tasks", "-3"], "must be at least 1"),
        (["enqueue", "q", "a", "--url", "http://example.com"], "bad Redis URL"),
    ],
)
def test_usage_errors(command: list[str], fragment: str) -> None:
    assert_one_line_error(run_cli(*command), 2, fragment)


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_redis_on_a_taken_port(taken_port: int) -> None:
    result = run_cli("redis", "--port", str(taken_port))
    assert_one_line_error(result, 1, "worqr redis: error:")


def test_wrong_password_is_one_line(redis_url: str) -> None:
    url = redis_url.replace("redis://", "redis://someone:secret@")
    result = run_cli("status", "--url", url, *FAST)
    assert_one_line_error(result, 1, "worqr status: error:")
    assert "secret" not in result.stderr  # never echo a password
