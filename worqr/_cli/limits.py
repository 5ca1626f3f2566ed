"""`worqr limit`: show or change a job queue's limits (`Worqr.configure_queue`)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .._core.limits import UNSET, QueueLimits
from .._errors import WrongQueueKindError
from .base import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, CliError, admin_client


def describe(limits: QueueLimits, now: float) -> str:
    """One line: the limits and whether they hold the queue back now."""
    parts = []
    if limits.rate is not None:
        parts.append(f"rate {limits.rate[0]}/{limits.rate[1]:g}s")
    if limits.max_active is not None:
        parts.append(f"max active {limits.max_active} ({limits.active} active)")
    if not parts:
        return "paused" if limits.paused else "no limits"
    if limits.paused:
        parts.insert(0, "paused")
    if limits.closed_until is not None:
        parts.append(f"limited: opens in {max(0.0, limits.closed_until - now):.2f}s")
    elif limits.limited:
        parts.append("limited: at its cap")
    return ", ".join(parts)


def limit(args: argparse.Namespace) -> int:
    changes: dict[str, Any] = {}
    if args.rate is not None or args.no_rate:
        changes["rate"] = None if args.no_rate else args.rate
    if args.max_active is not None or args.no_max_active:
        changes["max_active"] = None if args.no_max_active else args.max_active
    with admin_client(args) as client:
        try:
            if changes:
                client.configure_queue(
                    args.queue,
                    rate=changes.get("rate", UNSET),
                    max_active=changes.get("max_active", UNSET),
                )
            limits = client.get_limits(args.queue)
        except WrongQueueKindError as error:  # (a ValueError too: caught first)
            raise CliError(str(error), EXIT_FAILURE) from None
        except (ValueError, TypeError) as error:  # checked before anything is written
            raise CliError(str(error), EXIT_USAGE) from None
        now = client.server_time()
    if args.json:
        print(json.dumps({"queue": args.queue, **limits.as_json()}))
    else:
        print(f"{args.queue}: {describe(limits, now)}")
    return EXIT_OK
