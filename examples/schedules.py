"""Schedules: a job every half second and one on a cron expression in a time
zone, declared by every worker (an idempotent upsert) and fired once per fire
time by whichever member finds it due; no beat process, no leader, Redis's
clock only.

Run:  python examples/schedules.py --url redis://127.0.0.1:6379/0
(cron schedules need the cronsim package: pip install 'worqr[cron]')
"""

from __future__ import annotations

import argparse
import itertools
import os
import threading
import uuid

import worqr

workers = [worqr.Worker(concurrency=2) for _ in range(3)]
ran: list[str] = []  # job ids, from every worker


for each in workers:
    each.cron("beats", "heartbeat", every=0.5, payload="ping")  # all three declare it

    @each.job("beats")
    def beat(payload: str) -> None:
        ran.append(worqr.current_job().id)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("WORQR_REDIS_URL"))
    parser.add_argument("--prefix", default=f"example-{uuid.uuid4().hex[:8]}")
    args = parser.parse_args()
    runners = []
    for each in workers:
        each.configure(url=args.url, prefix=args.prefix)
        runners.append(threading.Thread(target=each.run))
        runners[-1].start()
    try:
        with worqr.Worqr(args.url, prefix=args.prefix) as wq:
            for each in workers:
                each.wait_started(10)
            nightly = wq.schedule("beats", "nightly", cron="0 3 * * *", tz="Europe/Berlin")
            print(f"nightly next runs at {nightly.next_run:.0f} (Redis time, 03:00 in Berlin)")
            now = wq.server_time()
            while wq.server_time() < now + 3:  # six fires of the heartbeat
                threading.Event().wait(0.1)
            fires = sorted(int(i.rpartition(":")[2]) for i in ran if i.startswith("cron:"))
            gaps = {b - a for a, b in itertools.pairwise(fires)}
            once = len(set(fires)) == len(fires)
            print(f"3 workers, {len(fires)} heartbeats, none twice: {once}")
            print(f"gaps between fire times: {sorted(gaps)} ms")
            print("schedules:", [s.name for s in wq.get_schedules("beats")])
            print("unscheduled:", wq.unschedule("beats", "heartbeat"))
    finally:
        for each in workers:
            each.stop()
        for runner in runners:
            runner.join()


if __name__ == "__main__":
    main()
