"""The application docker-compose.yml runs: a worker and a steady producer, so the
Grafana dashboard has something to show.

    worqr worker deploy.app:worker --metrics-port 9100    # the worker service
    python -m deploy.app produce [--rate 20] [--count N]  # the producer service

Handlers sleep a few milliseconds to a second; about 2 % of tasks fail (dead
letters), 1 % ask for a retry, and the producer cancels a few tasks by payload.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence

import worqr

QUEUES = ("emails", "thumbnails")

worker = worqr.Worker()


def _work(task: str) -> None:
    kind, _, millis = task.rpartition(":")
    deadline = time.monotonic() + int(millis) / 1000
    cancelled = worqr.current_process().cancelled
    cancelled.wait(max(0.0, deadline - time.monotonic()))  # a cancel stops it early
    if kind.endswith("-fail"):
        raise RuntimeError("this task always fails (a demonstration dead letter)")
    if kind.endswith("-retry") and random.random() < 0.5:
        raise worqr.Retry()


for _queue in QUEUES:
    worker.handler(_queue)(_work)


def task(n: int, rng: random.Random) -> str:
    """A payload: a name, an outcome and a run time in milliseconds (log-normal)."""
    outcome = rng.choices(("", "-fail", "-retry"), weights=(97, 2, 1))[0]
    millis = min(60_000, int(rng.lognormvariate(3.5, 1.2)))
    return f"task-{n}{outcome}:{millis}"


def produce(url: str | None, rate: float, count: int | None, seed: int = 0) -> int:
    """Enqueue about ``rate`` tasks a second (``count`` in all, or forever)."""
    rng = random.Random(seed)
    sent = 0
    with worqr.Worqr(url) as client:
        while count is None or sent < count:
            queue = rng.choice(QUEUES)
            payload = task(sent, rng)
            client.enqueue(queue, payload)
            sent += 1
            if sent % 50 == 0:
                client.cancel_tasks(queue, payload)  # cancelled by payload, wherever it is
            time.sleep(rng.expovariate(rate))
    return sent


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m deploy.app")
    commands = parser.add_subparsers(dest="command", required=True)
    producer = commands.add_parser("produce", help="enqueue tasks at a steady rate")
    producer.add_argument("--url", help="Redis URL (default: $WORQR_REDIS_URL)")
    producer.add_argument("--rate", type=float, default=20.0, help="tasks per second")
    producer.add_argument("--count", type=int, help="stop after this many tasks")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    sent = produce(args.url, args.rate, args.count)
    print(f"enqueued {sent} tasks")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
