"""An asyncio worker: async handlers run as tasks on one event loop, so a
worker with concurrency 20 overlaps 20 slow I/O calls at once.

The worker runs inside your own event loop with ``await worker.run_async()``,
next to a producer that uses `worqr.AsyncWorqr`.

Run:  python examples/async_worker.py --url redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid

import worqr

URLS = [f"https://example.com/page/{i}" for i in range(40)]
FETCH_SECONDS = 0.2

worker = worqr.Worker(concurrency=20)
fetched: list[str] = []
all_fetched = asyncio.Event()


@worker.handler("fetch")
async def fetch(task: str) -> None:
    await asyncio.sleep(FETCH_SECONDS)  # stands for an HTTP request
    fetched.append(task)
    if len(fetched) == len(URLS):
        all_fetched.set()


async def main(url: str | None, prefix: str) -> bool:
    worker.configure(url=url, prefix=prefix)
    running = asyncio.create_task(worker.run_async())
    async with worqr.AsyncWorqr(url, prefix=prefix) as producer:
        started = time.monotonic()
        await producer.enqueue_many("fetch", URLS)
        await asyncio.wait_for(all_fetched.wait(), timeout=30)
        elapsed = time.monotonic() - started
        serial = len(URLS) * FETCH_SECONDS
        print(f"fetched {len(fetched)} pages in {elapsed:.2f} s ({serial:.0f} s one at a time)")
        worker.stop()
        await running
        await producer.delete_queue("fetch")
    return len(set(fetched)) == len(URLS) and elapsed < serial / 2


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("WORQR_REDIS_URL"))
    parser.add_argument("--prefix", default=f"example-{uuid.uuid4().hex[:8]}")
    args = parser.parse_args()
    raise SystemExit(0 if asyncio.run(main(args.url, args.prefix)) else 1)
