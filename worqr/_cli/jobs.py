"""`worqr submit`, `job` and `jobs`: create a job, read or act on one, list a
job queue. Bad options are refused before anything is read or written."""

from __future__ import annotations

import argparse
import json
import sys

from .._clients.sync_client import Worqr
from .._dedup import Dedup
from .._errors import JobCancelledError, JobFailedError, WrongQueueKindError
from .._jobs import LISTED_STATES, JobInfo, JobRef
from . import bulk
from .base import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_JOB_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    admin_client,
    argv_value,
)
from .job_view import job_json, job_text, jobs_table

MAX_PAGE = 1000  # the most `get_jobs` returns per call
LIST_LIMIT = 20  # jobs listed per state without --limit


def _payload(args: argparse.Namespace) -> str | bytes:
    """PAYLOAD as typed (bytes when it is not UTF-8), else all of stdin as bytes."""
    if args.payload is None:
        return sys.stdin.buffer.read()
    return argv_value(args.payload)


def _dedup(args: argparse.Namespace) -> Dedup | None:
    """--dedup with its ttl and mode, checked (before stdin is read)."""
    if args.dedup is None:
        if args.dedup_ttl is not None or args.dedup_mode is not None:
            raise CliError("--dedup-ttl and --dedup-mode need --dedup KEY", EXIT_USAGE)
        return None
    try:
        return Dedup(args.dedup, ttl=args.dedup_ttl, mode=args.dedup_mode or "throttle")
    except (ValueError, TypeError) as error:
        raise CliError(str(error).replace("ttl (seconds)", "--dedup-ttl"), EXIT_USAGE) from None


def submit(args: argparse.Namespace) -> int:
    if args.wait_timeout is not None and not args.wait:
        raise CliError("--wait-timeout needs --wait", EXIT_USAGE)  # before reading stdin
    dedup = _dedup(args)
    payload = _payload(args)
    with admin_client(args) as client:
        try:
            ref = client.submit(
                args.queue,
                payload,
                id=args.id,
                delay=args.delay,
                at=args.at,
                priority=args.priority,
                unique=args.unique,
                group=args.group,
                retries=args.retries,
                timeout=args.timeout,
                dedup=dedup,
            )
        except WrongQueueKindError:
            raise
        except (ValueError, TypeError) as error:  # raised before anything is written
            raise CliError(str(error), EXIT_USAGE) from None
        if ref.duplicate:
            print(f"worqr submit: {_duplicate(ref, args)}", file=sys.stderr)
        if not args.wait:
            print(ref.id)
            return EXIT_OK
        try:
            return _wait(client, ref, args.wait_timeout)
        except KeyboardInterrupt:
            raise CliError(
                f"interrupted; job {ref.id!r} on queue {ref.queue!r} stays submitted: "
                f"see `worqr job {ref.queue} {ref.id}`",
                EXIT_INTERRUPTED,
            ) from None


def _duplicate(ref: JobRef, args: argparse.Namespace) -> str:
    if args.dedup is not None:
        return f"{ref.id} is the job of dedup key {args.dedup!r}; no job was created"
    what = "id" if ref.id == args.id else "payload"
    return f"{ref.id} is a duplicate: a live job already has this {what}; nothing was created"


def _wait(client: Worqr, ref: JobRef, timeout: float | None) -> int:
    """Print the job's result once it finished: bytes as they are, text as UTF-8
    with a newline, None as nothing."""
    try:
        result = client.result(ref.queue, ref.id, timeout=timeout)
    except (JobFailedError, JobCancelledError) as error:
        raise CliError(str(error), EXIT_JOB_FAILED) from None
    except TimeoutError as error:
        follow = f"worqr job {ref.queue} {ref.id}"
        raise CliError(f"{error}; follow it with `{follow}`", EXIT_FAILURE) from None
    if result is None:
        return EXIT_OK
    data = result if isinstance(result, bytes) else _text_bytes(result) + b"\n"
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    return EXIT_OK


def _text_bytes(text: str) -> bytes:
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate: show it escaped
        return text.encode("utf-8", "backslashreplace")


def _not_found(client: Worqr, queue: str, id: str) -> CliError:
    hint = " (it is a task queue)" if _is_task_queue(client, queue) else " (or it was purged)"
    return CliError(f"no job {id!r} on queue {queue!r}{hint}")


def _is_task_queue(client: Worqr, queue: str) -> bool:
    """A known queue that holds tasks (an unknown one may still become a job queue)."""
    return client.internals.queue_kind(queue) != "jobs" and queue in client.get_queues()


def _act(client: Worqr, args: argparse.Namespace, before: JobInfo) -> str:
    """Cancel or retry the job; what happened, or a `CliError` saying why not."""
    queue, id = args.queue, args.id
    name = f"job {id!r} on queue {queue!r}"
    done = client.cancel_job(queue, id) if args.cancel else client.retry_job(queue, id)
    if done:
        if args.cancel:
            return f"cancelled {name} (it was {before.state})"
        return f"retried {name}: queued again (it was {before.state})"
    now = client.get_job(queue, id)
    if now is None:
        raise _not_found(client, queue, id)
    if args.cancel:
        raise CliError(f"{name} is already {now.state}: nothing to cancel")
    if now.state not in ("failed", "cancelled"):
        raise CliError(f"{name} is {now.state}, not failed or cancelled: nothing to retry")
    raise CliError(f"{name} was not retried: another live job holds its unique payload")


def job(args: argparse.Namespace) -> int:
    with admin_client(args) as client:
        found = client.get_job(args.queue, args.id)
        if found is None:
            raise _not_found(client, args.queue, args.id)
        if args.log is not None:
            return _show_log(client, args)
        if args.cancel or args.retry:
            said = _act(client, args, found)
            if not args.json:
                print(said)
                return EXIT_OK
            found = client.get_job(args.queue, args.id) or found
        if args.json:
            print(json.dumps(job_json(found), indent=2))
        else:
            print(job_text(found))
    return EXIT_OK


def _show_log(client: Worqr, args: argparse.Namespace) -> int:
    lines = client.get_job_log(args.queue, args.id, limit=args.log)
    if lines is None:  # purged since it was read
        raise _not_found(client, args.queue, args.id)
    if args.json:
        print(json.dumps({"queue": args.queue, "id": args.id, "log": lines}, indent=2))
    else:
        for line in lines:
            print(line)
    return EXIT_OK


def first_jobs(
    client: Worqr, queue: str, state: str, limit: int, group: str | None = None
) -> list[JobInfo]:
    """Up to ``limit`` jobs in ``state`` (of ``group`` only, when given), in
    `get_jobs` order, over as many pages as it takes."""
    found: dict[str, JobInfo] = {}  # by id: a scan may return one twice
    cursor = None
    while len(found) < limit:
        page, cursor = client.get_jobs(
            queue, state, limit=min(MAX_PAGE, limit - len(found)), cursor=cursor, group=group
        )
        for info in page:
            found.setdefault(info.id, info)
        if cursor is None:
            break
    return list(found.values())[:limit]


def _counts_line(queue: str, counts: dict[str, int], states: tuple[str, ...]) -> str:
    parts = ", ".join(f"{counts[state]} {state}" for state in states)
    overdue = counts.get("overdue", 0) if {"delayed", "retrying"} & set(states) else 0
    late = f" ({overdue} overdue: due, not yet promoted)" if overdue else ""
    return f"queue {queue!r}: {parts}{late}"


def jobs(args: argparse.Namespace) -> int:
    queue = args.queue
    action = bulk.action_of(args)
    if action is not None:
        return bulk.run(args, action)
    limit = LIST_LIMIT if args.limit is None else args.limit
    with admin_client(args) as client:
        if _is_task_queue(client, queue):
            raise CliError(f"queue {queue!r} is a task queue: it holds no jobs (see worqr status)")
        counts = client.internals.job_counts(queue)
        if args.state:
            counts.setdefault(args.state, 0)  # "waiting" is counted once a queue has one
        # every state, and "waiting" where the queue has such jobs
        states = (args.state,) if args.state else tuple(s for s in LISTED_STATES if s in counts)
        listed = {
            state: first_jobs(client, queue, state, limit, args.group)
            for state in states
            if counts[state] or args.state
        }
    if args.json:
        wanted = {state: counts[state] for state in states}
        document: dict[str, object] = {"queue": queue, "counts": wanted}
        if not args.state:
            document["overdue"] = counts.get("overdue", 0)
        document["jobs"] = [job_json(j, values=False) for found in listed.values() for j in found]
        print(json.dumps(document, indent=2))
        return EXIT_OK
    print(_counts_line(queue, counts, states))
    shown = [j for found in listed.values() for j in found]
    if shown:
        print(jobs_table(shown))
    for state, found in listed.items():
        if counts[state] > len(found):
            print(
                f"(showing {len(found)} of {counts[state]} {state}: "
                f"worqr jobs {queue} --state {state} --limit N for more)"
            )
    return EXIT_OK
