"""Cancel tasks by payload, wherever they are: queued, running in a sync
handler, or running in an async handler.

- A queued copy is removed: it never runs.
- A sync handler sees ``worqr.current_process().cancelled`` set (an Event it
  can check or wait on) and returns; the task is not requeued.
- An async handler is cancelled (``asyncio.CancelledError`` at its await).

Run:  python examples/cancel_by_payload.py --url redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import asyncio
import os
import threading
import uuid

import worqr

# One report and one crawl at a time, so the second report has to wait in the queue.
settings = worqr.WorkerSettings(concurrency=2, queue_limits={"reports": 1, "crawls": 1})
worker = worqr.Worker(settings=settings)
started: dict[str, threading.Event] = {}
stopped: dict[str, str] = {}
both_stopped = threading.Event()


def mark_started(task: str) -> None:
    started.setdefault(task, threading.Event()).set()


def mark_stopped(task: str, how: str) -> None:
    stopped[task] = how
    if len(stopped) == 2:
        both_stopped.set()


@worker.handler("reports")
def build_report(task: str) -> None:
    mark_started(task)
    cancelled = worqr.current_process().cancelled
    for _step in range(600):  # long work, checking for cancellation between steps
        if cancelled.wait(0.05):
            mark_stopped(task, "saw current_process().cancelled and returned")
            return
    mark_stopped(task, "finished")


@worker.handler("crawls")
async def crawl(task: str) -> None:
    mark_started(task)
    try:
        await asyncio.sleep(30)  # stands for slow network I/O
    except asyncio.CancelledError:
        mark_stopped(task, "got CancelledError")
        raise
    mark_stopped(task, "finished")


def wait_started(task: str) -> None:
    if not started.setdefault(task, threading.Event()).wait(10):
        raise SystemExit(f"{task} never started")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("WORQR_REDIS_URL"))
    parser.add_argument("--prefix", default=f"example-{uuid.uuid4().hex[:8]}")
    args = parser.parse_args()
    worker.configure(url=args.url, prefix=args.prefix)
    running = threading.Thread(target=worker.run)
    running.start()
    worker.wait_started(timeout=10)

    with worqr.Worqr(args.url, prefix=args.prefix) as client:
        client.enqueue_many("reports", ["report-2024", "report-2025"])
        client.enqueue("crawls", "https://example.com/")
        wait_started("report-2024")
        wait_started("https://example.com/")

        queued = client.cancel_tasks("reports", "report-2025")
        print(f"cancelled the queued report-2025: {queued} copy removed")
        client.cancel_tasks("reports", "report-2024")
        client.cancel_tasks("crawls", "https://example.com/")
        both_stopped.wait(10)  # the handlers hear of it over pub/sub within moments
        for task, how in sorted(stopped.items()):
            print(f"cancelled the running {task}: its handler {how}")

        never_ran = "report-2025" not in started
        nothing_left = all(
            client.count_tasks(q) == client.count_processes(q) == 0 for q in ("reports", "crawls")
        )
        print(f"report-2025 never ran: {never_ran}; nothing queued or running: {nothing_left}")
        worker.stop()
        running.join()
        for queue in ("reports", "crawls"):
            client.delete_queue(queue)
    ok = queued == 1 and never_ran and nothing_left and len(stopped) == 2
    raise SystemExit(0 if ok and "finished" not in stopped.values() else 1)


if __name__ == "__main__":
    main()
