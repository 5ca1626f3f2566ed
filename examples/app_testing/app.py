"""A small application's worker: it e-mails order receipts and reminders.

`test_app.py` beside it tests these handlers with worqr's pytest plugin
(docs/testing.md). In production: ``worqr worker app:worker`` with
``REDIS_URL`` set, or ``worqr worker app:worker --url redis://...``.
"""

from __future__ import annotations

import os

import worqr

worker = worqr.Worker(os.environ.get("REDIS_URL", "redis://localhost:6379/0"), prefix="shop")

OUTBOX: list[str] = []  # what send_mail sent (a real app would talk to SMTP)


def send_mail(to: str, text: str) -> None:
    OUTBOX.append(f"to {to}: {text}")


@worker.job("receipts", retries=3, backoff=worqr.Backoff(base=30, factor=2))
def send_receipt(order: str) -> str:
    """``order`` is "ORDER-ID EMAIL"; a malformed one fails at once (no retries)."""
    order_id, _, email = order.partition(" ")
    if "@" not in email:
        raise worqr.Fail(f"order {order_id} has no e-mail address")
    send_mail(email, f"your receipt for {order_id}")
    return f"receipt sent to {email}"


@worker.job("reminders")
def remind(email: str) -> None:
    send_mail(email, "your cart misses you")
