"""Persistent tasks: one long-lived connection per task, owned by exactly one
live worker, moved to a peer when its owner dies.

Each task of the persistent queue "feeds" holds a Redis pub/sub subscription
open (a stand-in for a websocket or a broker connection) and serves it until
the task is cancelled. The script starts three worker processes (each serves at
most two feeds), SIGKILLs the one that owns "feed-0", and watches its peers take
over the dead worker's feeds.

Run:  python examples/persistent_tasks.py --url redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable

import redis
import redis.asyncio as aioredis

import worqr

FEEDS = [f"feed-{i}" for i in range(4)]
# Short leases so the failover shows within seconds (defaults: ttl 3 s, heartbeat 1 s).
LEASE = worqr.Settings(ttl=1.0, heartbeat=0.2)


def owners_key(prefix: str) -> str:
    return f"{prefix}:example:owners"  # the example's own bookkeeping, not worqr's


def serve(url: str, prefix: str) -> None:
    """One worker process: runs until SIGTERM."""
    settings = worqr.WorkerSettings(client=LEASE, queue_limits={"feeds": 2})
    worker = worqr.Worker(url, prefix=prefix, settings=settings)

    @worker.handler("feeds", persistent=True)
    async def feed(task: str) -> None:
        connection = aioredis.Redis.from_url(url)
        pubsub = connection.pubsub()
        await pubsub.subscribe(f"{prefix}:example:{task}")  # the long-lived connection
        await connection.hset(owners_key(prefix), task, os.getpid())
        try:
            while True:  # serve it until cancelled, or until this process dies
                await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
        finally:
            await pubsub.aclose()
            await connection.aclose()

    worker.run()


def wait(what: str, condition: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting until {what}")
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("WORQR_REDIS_URL"))
    parser.add_argument("--prefix", default=f"example-{uuid.uuid4().hex[:8]}")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    url = args.url or "redis://127.0.0.1:6379/0"
    if args.serve:
        serve(url, args.prefix)
        return

    this = [sys.executable, __file__, "--serve", "--url", url, "--prefix", args.prefix]
    workers = [subprocess.Popen(this) for _ in range(3)]
    book = redis.Redis.from_url(url, decode_responses=True)
    client = worqr.Worqr(url, prefix=args.prefix)
    try:
        wait("the workers registered", lambda: len(client.get_workers()) == 3)
        client.enqueue_many("feeds", FEEDS)

        def owners() -> dict[str, int]:
            return {task: int(pid) for task, pid in book.hgetall(owners_key(args.prefix)).items()}

        wait("every feed is served", lambda: len(owners()) == len(FEEDS))
        print("owners:", owners())
        victim = owners()["feed-0"]
        orphans = sorted(task for task, pid in owners().items() if pid == victim)
        os.kill(victim, signal.SIGKILL)
        print(f"SIGKILLed worker pid {victim}, which served {', '.join(orphans)}")
        killed = time.monotonic()
        peers = {w.pid for w in workers if w.pid != victim}
        wait("its peers took the feeds over", lambda: set(owners().values()) <= peers)
        print(f"{time.monotonic() - killed:.1f} s later its peers serve them:", owners())

        cancelled = sum(client.cancel_tasks("feeds", task) for task in FEEDS)
        print(f"cancelled {cancelled} feeds by payload")
        wait("the feeds stop", lambda: client.count_processes("feeds") == 0)
        ok = cancelled == len(FEEDS) and client.count_tasks("feeds") == 0
    finally:
        for process in workers:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in workers:
            process.wait(30)
        client.delete_queue("feeds")
        client.close()
        book.delete(owners_key(args.prefix))
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
