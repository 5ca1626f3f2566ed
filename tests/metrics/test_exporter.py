"""The standalone exporter: serves the mesh on loopback, stops on SIGTERM with exit
0, and reports a port it cannot bind in one line."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import Callable

import pytest
import redis

from tests.support.metrics import scrape_metrics
from tests.support.waiting import wait_until
from worqr import Worqr
from worqr.embedded import EmbeddedRedis, free_port
from worqr.metrics.exporter import main


def test_exporter_serves_the_mesh_and_stops_on_sigterm(redis_url: str, prefix: str) -> None:
    with Worqr(redis_url, prefix=prefix) as client:
        client.enqueue_many("mail", ["a", "b"])
    port = free_port()
    exporter = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "worqr.metrics.exporter",
            "--url",
            redis_url,
            "--prefix",
            prefix,
            "--port",
            str(port),
        ],
        stderr=subprocess.PIPE,
    )
    try:
        text = wait_until(lambda: scrape_metrics(port), timeout=15, message="exporter serving")
        assert 'worqr_queue_tasks{queue="mail"} 2.0' in text
        assert "worqr_collector_up 1.0" in text
        # Bound to 127.0.0.1 only: another address of this host is refused
        # (a socket bound to 0.0.0.0 would accept this connection).
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.2", port), timeout=2).close()
        exporter.send_signal(signal.SIGTERM)
        assert exporter.wait(timeout=10) == 0
    finally:
        if exporter.poll() is None:
            exporter.kill()
            exporter.wait()
        assert exporter.stderr is not None
        log = exporter.stderr.read().decode()
        exporter.stderr.close()
    assert "serving http://127.0.0.1:" in log


def test_a_password_never_shows(make_redis: Callable[..., EmbeddedRedis]) -> None:
    server = make_redis()
    with redis.Redis.from_url(server.url) as admin:
        admin.acl_setuser("watcher", enabled=True, passwords=["+right-password"])
    secret = "s3cret-pw-never-shown"
    url = server.url.replace("redis://", f"redis://watcher:{secret}@")  # a wrong password
    port = free_port()
    exporter = subprocess.Popen(
        [sys.executable, "-m", "worqr.metrics.exporter", "--url", url, "--port", str(port)],
        stderr=subprocess.PIPE,
    )
    try:
        text = wait_until(lambda: scrape_metrics(port), timeout=15, message="exporter serving")
        assert "worqr_collector_up 0.0" in text  # AUTH fails: reported, not raised
        assert secret not in text
        exporter.send_signal(signal.SIGTERM)
        assert exporter.wait(timeout=10) == 0
    finally:
        if exporter.poll() is None:
            exporter.kill()
            exporter.wait()
        assert exporter.stderr is not None
        log = exporter.stderr.read().decode()
        exporter.stderr.close()
    assert "cannot read the mesh" in log
    assert secret not in log


def test_a_taken_port_is_one_line_and_exit_1(
    capsys: pytest.CaptureFixture[str], redis_url: str
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["--url", redis_url, "--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("worqr exporter: error:") and err.count("\n") == 1


def test_a_bad_prefix_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--prefix", "{bad}", "--port", "0"]) == 1
    err = capsys.readouterr().err
    assert "prefix" in err and err.count("\n") == 1
