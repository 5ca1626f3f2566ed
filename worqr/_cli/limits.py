"""`worqr limit`: show or change a job queue's limits (`Worqr.configure_queue`)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .._clients.sync_client import Worqr
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


def _option(args: argparse.Namespace, name: str) -> Any:
    """An option as `configure_queue` takes it: given, None (``--no-...``) or UNSET."""
    if getattr(args, f"no_{name}"):
        return None
    value = getattr(args, name)
    return UNSET if value is None else value


def _defaults_text(rate: tuple[int, float] | None, cap: int | None) -> str:
    """The queue's limits of every group, as `describe` writes limits ("" for none)."""
    parts = [f"rate {rate[0]}/{rate[1]:g}s"] if rate else []
    if cap is not None:
        parts.append(f"max active {cap}")
    return f"; every group: {', '.join(parts)}" if parts else ""


def _apply(client: Worqr, args: argparse.Namespace) -> QueueLimits:
    """Change what the options say (the queue's limits, every group's, or with
    --group that group's own), then read the limits back."""
    rate, cap = _option(args, "rate"), _option(args, "max_active")
    group_rate, group_cap = _option(args, "group_rate"), _option(args, "group_max_active")
    if args.group is not None:
        if rate is not UNSET or cap is not UNSET:
            client.configure_group(args.queue, args.group, rate=rate, max_active=cap)
        return client.get_limits(args.queue, group=args.group)
    if any(option is not UNSET for option in (rate, cap, group_rate, group_cap)):
        client.configure_queue(
            args.queue, rate=rate, max_active=cap, group_rate=group_rate, group_max_active=group_cap
        )
    return client.get_limits(args.queue)


def limit(args: argparse.Namespace) -> int:
    every_group = (_option(args, "group_rate"), _option(args, "group_max_active"))
    if args.group is not None and any(option is not UNSET for option in every_group):
        raise CliError(  # before connecting
            "--group-rate and --group-max-active set every group's limits: "
            "give them without --group",
            EXIT_USAGE,
        )
    with admin_client(args) as client:
        try:
            limits = _apply(client, args)
        except WrongQueueKindError as error:  # (a ValueError too: caught first)
            raise CliError(str(error), EXIT_FAILURE) from None
        except (ValueError, TypeError) as error:  # checked before anything is written
            raise CliError(str(error), EXIT_USAGE) from None
        defaults = client.internals.group_defaults(args.queue) if args.group is None else None
        now = client.server_time()
    if defaults is None:  # one group's
        if args.json:
            print(json.dumps({"queue": args.queue, "group": args.group, **limits.as_json()}))
        else:
            print(f"{args.queue} group {args.group!r}: {describe(limits, now)}")
    elif args.json:
        rate, cap = defaults
        every = {"group_rate": list(rate) if rate else None, "group_max_active": cap}
        print(json.dumps({"queue": args.queue, **limits.as_json(), **every}))
    else:
        print(f"{args.queue}: {describe(limits, now)}{_defaults_text(*defaults)}")
    return EXIT_OK
