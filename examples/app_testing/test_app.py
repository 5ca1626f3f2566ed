"""Tests of app.py's handlers with worqr's pytest plugin: `worqr_redis` is a
throwaway real Redis, `worqr_client` a client on a fresh prefix, and `drain`
runs the worker's handlers here until nothing is queued or due."""

from __future__ import annotations

import app
import pytest

import worqr
from worqr.embedded import EmbeddedRedis
from worqr.testing import drain


@pytest.fixture
def worker(worqr_redis: EmbeddedRedis, worqr_prefix: str) -> worqr.Worker:
    """The application's worker, pointed at the test's Redis and prefix."""
    app.worker.configure(url=worqr_redis.url, prefix=worqr_prefix)
    app.OUTBOX.clear()
    return app.worker


def test_a_receipt_is_sent(worker: worqr.Worker, worqr_client: worqr.Worqr) -> None:
    job = worqr_client.submit("receipts", "A-1 ada@example.com")
    report = drain(worker)
    assert report.finished == [job.id]
    assert app.OUTBOX == ["to ada@example.com: your receipt for A-1"]
    assert worqr_client.result("receipts", job.id) == "receipt sent to ada@example.com"


def test_a_flaky_mail_server_is_retried(
    worker: worqr.Worker, worqr_client: worqr.Worqr, monkeypatch: pytest.MonkeyPatch
) -> None:
    failures = iter([ConnectionError("smtp down")] * 3)

    def flaky_send(to: str, text: str) -> None:
        error = next(failures, None)
        if error is not None:
            raise error
        app.OUTBOX.append(f"to {to}: {text}")

    monkeypatch.setattr(app, "send_mail", flaky_send)
    job = worqr_client.submit("receipts", "A-2 bob@example.com")
    report = drain(worker, skip_delays=True)  # 30 + 60 + 120 s of backoff, skipped
    assert report.retried == [job.id] and report.finished == [job.id]
    assert report.attempts(job.id) == 4
    assert len(app.OUTBOX) == 1


def test_an_order_without_an_address_fails_at_once(
    worker: worqr.Worker, worqr_client: worqr.Worqr
) -> None:
    job = worqr_client.submit("receipts", "A-3")
    report = drain(worker)
    assert report.failed == [job.id] and report.attempts(job.id) == 1
    assert isinstance(report.errors[job.id], worqr.Fail)
    assert app.OUTBOX == []


def test_a_reminder_waits_for_its_time(worker: worqr.Worker, worqr_client: worqr.Worqr) -> None:
    worqr_client.submit("reminders", "cy@example.com", delay=24 * 3600)
    assert drain(worker).left_for_later == 1  # not due: nothing ran
    assert app.OUTBOX == []
    drain(worker, skip_delays=True)
    assert app.OUTBOX == ["to cy@example.com: your cart misses you"]
