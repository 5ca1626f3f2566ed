"""Every user mistake and outage the CLI meets ends with one line on stderr and a
non-zero exit code, never a traceback."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest
import redis

from tests.support import APPS
from tests.support.cli import assert_one_line_error, cli_env, run_cli
from worqr.embedded import free_port


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
        (["worker", "m:w", "--ttl", "0"], "argument --ttl: must be a positive number, got 0"),
        (["worker", "m:w", "--ttl", "-1"], "argument --ttl: must be a positive number"),
        (["worker", "m:w", "--heartbeat", "fast"], "argument --heartbeat: not a number: 'fast'"),
        (["worker", "m:w", "--heartbeat", "nan"], "argument --heartbeat: must be a positive"),
        (["worker", "m:w", "--poll-interval", "0"], "argument --poll-interval: must be a positive"),
        (["worker", "m:w", "--poll-interval", "x"], "argument --poll-interval: not a number"),
        (["worker", "m:w", "--socket-timeout", "inf"], "argument --socket-timeout: must be a "),
        (["worker", "m:w", "--socket-timeout", "-2"], "argument --socket-timeout: must be a "),
        (["worker", "m:w", "--max-restarts", "-1"], "argument --max-restarts: must be an integer"),
        (["worker", "m:w", "--max-restarts", "1.5"], "argument --max-restarts: not an integer"),
        (["worker", "m:w", "--restart-window", "0"], "argument --restart-window: must be a "),
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


@pytest.mark.slow
def test_redis_on_a_taken_port(taken_port: int) -> None:
    result = run_cli("redis", "--port", str(taken_port))
    assert_one_line_error(result, 1, "worqr redis: error:")


def test_wrong_password_is_one_line(redis_url: str) -> None:
    url = redis_url.replace("redis://", "redis://someone:secret@")
    result = run_cli("status", "--url", url, *FAST)
    assert_one_line_error(result, 1, "worqr status: error:")
    assert "secret" not in result.stderr  # never echo a password


@pytest.fixture(scope="module")
def app_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """PYTHONPATH with the tests' worker module and a module that fails to import."""
    extra = tmp_path_factory.mktemp("apps")
    (extra / "broken_app.py").write_text("raise RuntimeError('config file missing')\n")
    (extra / "needs_missing_dep.py").write_text("import no_such_dependency_xyz\n")
    return cli_env(PYTHONPATH=f"{APPS}{os.pathsep}{extra}")


@pytest.mark.parametrize(
    ("target", "options", "fragment"),
    [
        ("no_such_module:worker", [], "no module named 'no_such_module'"),
        ("cli_worker_app", [], "expected MODULE:ATTR (e.g. app:worker), got 'cli_worker_app'"),
        ("cli_worker_app:nope", [], "'cli_worker_app' has no attribute 'nope'"),
        ("cli_worker_app:not_a_worker", [], "is a int, not a worqr.Worker"),
        ("cli_worker_app:empty", [], "has no handlers"),
        ("broken_app:worker", [], "importing 'broken_app' failed: RuntimeError: config file"),
        ("needs_missing_dep:worker", [], "No module named 'no_such_dependency_xyz'"),
        (
            "cli_worker_app:worker",
            ["--ttl", "1", "--heartbeat", "2"],
            "--heartbeat 2 must be shorter than --ttl 1",
        ),
        (
            "cli_worker_app:worker",
            ["--ttl", "0.5"],
            "the Worker's heartbeat (1) must be shorter than --ttl 0.5",
        ),
        (
            "cli_worker_app:worker",
            ["--heartbeat", "3"],
            "--heartbeat 3 must be shorter than the Worker's ttl (3)",
        ),
        ("cli_worker_app:worker", ["--max-restarts", "3"], "--max-restarts needs --processes > 1"),
        ("cli_worker_app:worker", ["--restart-window", "9"], "--restart-window needs --processes"),
        ("cli_worker_app:worker", ["--url", "http://example.com"], "bad Redis URL"),
        ("cli_worker_app:worker", ["--log-level", "LOUD"], "unknown --log-level 'LOUD'"),
        # With several processes the parent checks everything before starting any.
        ("no_such_module:worker", ["--processes", "3"], "no module named 'no_such_module'"),
    ],
)
def test_worker_errors(
    target: str, options: list[str], fragment: str, app_env: dict[str, str]
) -> None:
    result = run_cli("worker", target, *options, env=app_env)
    assert_one_line_error(result, 2, "worqr worker: error:", fragment)


@pytest.mark.parametrize(
    "options",
    [
        ["--processes", "3", "--ttl", "0.5"],
        ["--processes", "3", "--heartbeat", "2", "--ttl", "2"],
        ["--processes", "3", "--poll-interval", "-1"],
        ["--processes", "3", "--max-restarts", "ten"],
        ["--max-restarts", "2"],
    ],
)
def test_bad_worker_options_start_nothing(
    options: list[str], app_env: dict[str, str], redis_url: str, prefix: str
) -> None:
    """Checked before any process starts or any key is written, with or without a supervisor."""
    result = run_cli(
        "worker",
        "cli_worker_app:worker",
        "--url",
        redis_url,
        "--prefix",
        prefix,
        *options,
        env=app_env,
    )
    assert_one_line_error(result, 2, "worqr worker: error:")
    assert "started" not in result.stderr
    with redis.Redis.from_url(redis_url) as client:
        assert list(client.scan_iter(match=f"*{prefix}*")) == []


def test_worker_metrics_port_taken(
    taken_port: int, app_env: dict[str, str], redis_url: str
) -> None:
    result = run_cli(
        "worker",
        "cli_worker_app:worker",
        "--url",
        redis_url,
        "--metrics-port",
        str(taken_port),
        env=app_env,
    )
    assert_one_line_error(result, 1, "cannot serve metrics on 127.0.0.1")


@pytest.mark.slow
def test_demo_against_an_unreachable_redis(dead_url: str) -> None:
    result = run_cli("demo", "--url", dead_url)
    assert_one_line_error(result, 1, "worqr demo: error:", "Connection refused")
    assert result.stdout == ""  # it stopped before starting anything


def test_demo_with_a_bad_url() -> None:
    assert_one_line_error(run_cli("demo", "--url", "http://example.com"), 2, "bad Redis URL")
