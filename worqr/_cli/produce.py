"""`worqr enqueue`, `cancel`, `delete` and `failed`: the admin commands that change queues."""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Iterator
from typing import BinaryIO, TypeVar

from .._errors import ReplicationTimeoutError, WorqrError
from .base import (
    EXIT_NOT_REPLICATED,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    admin_client,
    argv_value,
    check_durability,
)
from .job_view import failed_table
from .jobs import first_jobs

T = TypeVar("T")

STDIN_CHUNK = 10_000
"""Lines read from stdin per `enqueue_many` call: bounded memory for any input
size, while each call still batches 1,000 tasks per script."""


def read_tasks(stream: BinaryIO) -> Iterator[bytes]:
    """One task per line, exactly as its bytes, without the line ending ("\\n" or
    "\\r\\n"). Empty lines are skipped: a trailing blank line is not a task."""
    for line in stream:
        task = line[:-1] if line.endswith(b"\n") else line
        if task.endswith(b"\r"):
            task = task[:-1]
        if task:
            yield task


def _chunks(tasks: Iterator[T], size: int) -> Iterator[list[T]]:
    while chunk := list(itertools.islice(tasks, size)):
        yield chunk


def enqueue(args: argparse.Namespace) -> int:
    check_durability(args)  # before reading stdin or connecting
    tasks: Iterator[str | bytes]
    tasks = (argv_value(t) for t in args.tasks) if args.tasks else read_tasks(sys.stdin.buffer)
    total = 0
    with admin_client(
        args, wait_replicas=args.wait_replicas, wait_timeout=args.wait_timeout
    ) as client:
        for chunk in _chunks(tasks, STDIN_CHUNK):
            try:
                total += client.enqueue_many(args.queue, chunk)
            except ReplicationTimeoutError as error:
                more = error.enqueued < len(chunk) or next(tasks, None) is not None
                timeout = client.settings.wait_timeout
                raise not_replicated(error, args.queue, total, timeout, more) from None
            except WorqrError as error:
                if not total:
                    raise
                # Earlier chunks are in the queue: say how many, so a rerun can skip them.
                raise CliError(f"{error} ({total} tasks were enqueued before this)") from None
            except (ValueError, TypeError) as error:  # a task too large: this chunk not written
                before = f" ({total} tasks were enqueued before this)" if total else ""
                raise CliError(f"{error}{before}", EXIT_USAGE) from None
    print(f"enqueued {total} task{'s' if total != 1 else ''} to {args.queue!r}")
    return EXIT_OK


def not_replicated(
    error: ReplicationTimeoutError, queue: str, before: int, timeout: float, more: bool
) -> CliError:
    """The one line for an enqueue the master applied but too few replicas
    confirmed: how many are in the queue, which are at risk, and not to resend."""
    enqueued = before + error.enqueued
    tasks = f"{enqueued} task is" if enqueued == 1 else f"{enqueued} tasks are"
    they, them = ("it", "it") if enqueued == 1 else ("they", "them")
    at_risk, subject = them, they
    if error.unconfirmed < enqueued:  # earlier batches were confirmed
        at_risk, subject = f"the last {error.unconfirmed}", "those"
    rest = "; the rest of the input was not enqueued" if more else ""
    return CliError(
        f"{tasks} enqueued to {queue!r} on the master, but only {error.replicas} of "
        f"{error.required} replicas acknowledged {at_risk} within {timeout:g}s: {subject} "
        f"may be lost if the master fails before replicating {them}; do not enqueue {them} "
        f"again ({they} would run twice){rest}",
        EXIT_NOT_REPLICATED,
    )


def cancel(args: argparse.Namespace) -> int:
    with admin_client(args) as client:
        cancelled = client.cancel_tasks(args.queue, argv_value(args.task))
        jobs = client.internals.queue_kind(args.queue) == "jobs"  # known by now: no extra read
    if jobs:  # every live job with this payload
        print(f"cancelled {cancelled} job{'s' if cancelled != 1 else ''} on {args.queue!r}")
    else:
        print(f"cancelled {cancelled} cop{'ies' if cancelled != 1 else 'y'} on {args.queue!r}")
    return EXIT_OK


def delete(args: argparse.Namespace) -> int:
    with admin_client(args) as client:
        client.delete_queue(args.queue, if_idle=args.if_idle)
    print(f"deleted queue {args.queue!r}")
    return EXIT_OK


def show_task(task: str | bytes) -> str:
    """A task on one line: text as is, unless it holds a line break or is binary
    (then a Python-style escaped literal)."""
    if isinstance(task, str) and task.isprintable():
        return task
    return repr(task)


def failed(args: argparse.Namespace) -> int:
    """A task queue's dead letters, or a job queue's failed jobs (id, attempts, error)."""
    with admin_client(args) as client:
        jobs = client.internals.queue_kind(args.queue) == "jobs"
        noun = "failed job" if jobs else "dead letter"
        if args.requeue:
            moved = client.requeue_failed(args.queue)
            print(f"requeued {moved} {noun}{'s' if moved != 1 else ''} on {args.queue!r}")
        elif args.purge:
            dropped = client.purge_failed(args.queue)
            print(f"purged {dropped} {noun}{'s' if dropped != 1 else ''} on {args.queue!r}")
        elif jobs:
            listed = first_jobs(client, args.queue, "failed", client.count_failed(args.queue))
            if listed:
                print(failed_table(listed[::-1]))  # oldest first, as dead letters
        else:
            for task in reversed(client.get_failed(args.queue)):  # oldest first
                print(show_task(task))
    return EXIT_OK
