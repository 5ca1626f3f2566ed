"""`worqr pause` and `worqr resume`: a job queue's durable pause (`Worqr.pause`,
`Worqr.resume`), one of its groups' (``group=``), or a schedule's
(`Worqr.pause_schedule`, `Worqr.resume_schedule`)."""

from __future__ import annotations

import argparse

from .._errors import WrongQueueKindError
from .base import EXIT_FAILURE, EXIT_OK, CliError, admin_client


def pause(args: argparse.Namespace) -> int:
    return _apply(args, pausing=True)


def resume(args: argparse.Namespace) -> int:
    return _apply(args, pausing=False)


def _apply(args: argparse.Namespace, *, pausing: bool) -> int:
    with admin_client(args) as client:
        if args.schedule is not None:
            change = client.pause_schedule if pausing else client.resume_schedule
            if not change(args.queue, args.schedule):
                raise CliError(f"queue {args.queue!r} has no schedule {args.schedule!r}")
            what = f"schedule {args.schedule!r} of {args.queue}"
        else:
            try:
                (client.pause if pausing else client.resume)(args.queue, group=args.group)
            except WrongQueueKindError as error:
                raise CliError(str(error), EXIT_FAILURE) from None
            what = args.queue if args.group is None else f"group {args.group!r} of {args.queue}"
    print(f"{what}: {'paused' if pausing else 'resumed'}")
    return EXIT_OK
