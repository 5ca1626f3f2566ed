"""Delayed and prioritised jobs: due at a time on Redis's clock, started within
milliseconds of it by whichever worker holds the queue's timer, never early;
no scheduler process, no leader.

Run:  python examples/delayed_jobs.py --url redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import os
import threading
import uuid

import worqr

worker = worqr.Worker(concurrency=2)
started: dict[str, float] = {}  # job id -> how late it started, seconds


@worker.job("reminders")
async def remind(message: str) -> str:
    job = worqr.current_job()
    started[job.id] = job.process.waited  # Redis time from due to start
    return f"sent: {message}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("WORQR_REDIS_URL"))
    parser.add_argument("--prefix", default=f"example-{uuid.uuid4().hex[:8]}")
    args = parser.parse_args()
    worker.configure(url=args.url, prefix=args.prefix)
    runner = threading.Thread(target=worker.run)
    runner.start()
    try:
        with worqr.Worqr(args.url, prefix=args.prefix) as wq:
            worker.wait_started(10)
            now = wq.server_time()  # every due time is read against Redis's clock
            soon = wq.submit("reminders", "stand up", at=now + 0.5)
            later = wq.submit("reminders", "drink water", delay=1.0)
            never = wq.submit("reminders", "spam", delay=0.8)
            print("delayed:", wq.count_jobs("reminders")["delayed"])
            print("cancelled the spam before it was due:", wq.cancel_job("reminders", never.id))
            for ref in (soon, later):
                print(wq.result("reminders", ref.id, timeout=10))
            lateness = max(started.values())
            print(f"each started within {lateness * 1000:.0f} ms of its due time")
            print("counts:", wq.count_jobs("reminders"))
    finally:
        worker.stop()
        runner.join()


if __name__ == "__main__":
    main()
