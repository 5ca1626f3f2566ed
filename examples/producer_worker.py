"""A producer and a worker.

The producer enqueues e-mail addresses; the worker's handler "sends" each one.
Here both run in one script so it can show the round trip and exit; in
production they are separate programs:

    cd examples && worqr worker producer_worker:worker --processes 4
    worqr enqueue emails alice@example.com bob@example.com

Run:  python examples/producer_worker.py --url redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import os
import threading
import uuid

import worqr

worker = worqr.Worker(concurrency=4)
sent: list[str] = []
all_sent = threading.Event()
EXPECTED = 20


@worker.handler("emails")
def send(task: str) -> None:
    # Return = finished; raise = failed (dead-lettered); raise worqr.Retry() = back to the front.
    sent.append(task)
    if len(sent) == EXPECTED:
        all_sent.set()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("WORQR_REDIS_URL"))
    parser.add_argument("--prefix", default=f"example-{uuid.uuid4().hex[:8]}")
    args = parser.parse_args()
    worker.configure(url=args.url, prefix=args.prefix)

    # The worker: normally `worker.run()` in its own process (it handles SIGTERM).
    running = threading.Thread(target=worker.run)
    running.start()
    worker.wait_started(timeout=10)

    # The producer: any program with a client.
    with worqr.Worqr(args.url, prefix=args.prefix) as producer:
        producer.enqueue_many("emails", [f"user{i}@example.com" for i in range(EXPECTED)])
        print(f"producer: enqueued {EXPECTED} e-mails")
        finished = all_sent.wait(timeout=30)
        worker.stop()
        running.join()
        print(f"worker: sent {len(sent)} e-mails, e.g. to {sorted(sent)[0]}")
        left = producer.count_tasks("emails") + producer.count_processes("emails")
        print(f"queue: {left} tasks left")
        producer.delete_queue("emails")
    raise SystemExit(0 if finished and left == 0 else 1)


if __name__ == "__main__":
    main()
