"""Jobs: ids, results, retries with backoff, unique jobs, and a failed job retried.

A job queue holds jobs: each has an id, a state and, once finished, a result
that the submitter can wait for (without polling Redis). A handler's return
value is the result; an exception is a failure, retried with backoff until its
retries are used up.

Run:  python examples/jobs_results.py --url redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import os
import threading
import uuid

import worqr

worker = worqr.Worker(concurrency=4)
seen_once: set[str] = set()


@worker.job("thumbnails", retries=2, backoff=worqr.Backoff(base=0.05, jitter=0.5))
def thumbnail(path: str) -> str:
    job = worqr.current_job()
    if path.endswith(".psd"):
        raise worqr.Fail("photoshop files are not supported")  # failed now, no retry
    if path == "flaky.png" and path not in seen_once:
        seen_once.add(path)
        raise ConnectionError("the image store timed out")  # retried after its backoff
    job.progress("resized")
    return f"{path.rsplit('.', 1)[0]}-small.jpg (attempt {job.attempt})"


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
            cat = wq.submit("thumbnails", "cat.png", id="thumb-cat")
            again = wq.submit("thumbnails", "cat.png", id="thumb-cat")
            print(f"submitted {cat.id}; again with its id: duplicate={again.duplicate}")
            print("result:", wq.result("thumbnails", cat.id, timeout=10))

            flaky = wq.submit("thumbnails", "flaky.png")
            print("flaky result:", wq.result("thumbnails", flaky.id, timeout=10))

            psd = wq.submit("thumbnails", "poster.psd")
            try:
                wq.result("thumbnails", psd.id, timeout=10)
            except worqr.JobFailedError as error:
                print("poster.psd failed:", error.error)
            info = wq.get_job("thumbnails", psd.id)
            assert info is not None
            print(f"its record: state={info.state} attempts={info.attempts}")

            first = wq.submit("thumbnails", "dog.png", unique=True)
            second = wq.submit("thumbnails", "dog.png", unique=True)
            print(f"unique: the second submit found {second.id == first.id and second.duplicate}")
            wq.result("thumbnails", first.id, timeout=10)

            print("counts:", wq.count_jobs("thumbnails"))
    finally:
        worker.stop()
        runner.join()


if __name__ == "__main__":
    main()
