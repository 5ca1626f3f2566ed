"""`worqr exporter`: the mesh's queue metrics from the command line."""

from __future__ import annotations

import signal

import worqr
from tests.support.cli import run_cli, start_cli
from tests.support.metrics import scrape_metrics
from tests.support.processes import stop
from tests.support.waiting import wait_until
from worqr.embedded import free_port


def test_exporter_serves_queue_figures_and_exits_0_on_sigterm(redis_url: str, prefix: str) -> None:
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        wq.enqueue_many("mail", ["a", "b", "c"])
    port = free_port()
    process = start_cli("exporter", "--url", redis_url, "--prefix", prefix, "--port", str(port))
    try:
        text = wait_until(lambda: scrape_metrics(port), timeout=10, message="exporter not serving")
        assert 'worqr_queue_tasks{queue="mail"} 3.0' in text
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        stop(process)


def test_exporter_errors_are_one_line() -> None:
    bad_prefix = run_cli("exporter", "--prefix", "a{b")
    assert bad_prefix.returncode == 2
    assert bad_prefix.stderr.count("\n") == 1 and "Traceback" not in bad_prefix.stderr
    bad_port = run_cli("exporter", "--port", "70000")
    assert bad_port.returncode == 2 and "not a TCP port" in bad_port.stderr
