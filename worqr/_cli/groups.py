"""`worqr groups`: a job queue's fair-share groups (`Worqr.get_groups`), page
after page up to ``--limit``."""

from __future__ import annotations

import argparse
import json

from .._clients.sync_client import Worqr
from .._core.groups import GroupInfo
from .base import EXIT_OK, admin_client
from .group_parser import GROUPS_LIMIT
from .status import table

PAGE = 1000
"""Groups asked for per `get_groups` call."""


def first_groups(client: Worqr, queue: str, limit: int) -> tuple[list[GroupInfo], bool]:
    """Up to ``limit`` groups over as many pages as it takes, and whether there are more."""
    found: dict[str, GroupInfo] = {}  # by name: a scan may return one twice
    cursor = None
    while True:
        page, cursor = client.get_groups(queue, limit=min(PAGE, limit), cursor=cursor)
        for info in page:
            found.setdefault(info.name, info)
        if cursor is None or len(found) >= limit:
            break
    return list(found.values())[:limit], cursor is not None or len(found) > limit


def state_of(info: GroupInfo, now: float) -> str:
    """Whether anything holds the group back now: its pause, its rate, its cap."""
    held = ["paused"] if info.paused else []
    if info.closed_until is not None:
        held.append(f"limited: opens in {max(0.0, info.closed_until - now):.2f}s")
    elif info.limited:
        held.append("limited: at its cap")
    return ", ".join(held) or "-"


def groups_table(groups: list[GroupInfo], now: float) -> str:
    rows = [
        (
            info.name,
            info.queued,
            info.delayed,
            info.active,
            f"{info.rate[0]}/{info.rate[1]:g}s" if info.rate else "-",
            "-" if info.max_active is None else info.max_active,
            state_of(info, now),
        )
        for info in groups
    ]
    headers = ("GROUP", "QUEUED", "DELAYED", "ACTIVE", "RATE", "MAX ACTIVE", "STATE")
    return table(headers, rows, {1, 2, 3, 5})


def groups(args: argparse.Namespace) -> int:
    limit = GROUPS_LIMIT if args.limit is None else args.limit
    with admin_client(args) as client:
        found, more = first_groups(client, args.queue, limit)
        now = client.server_time()
    if args.json:
        document = {"queue": args.queue, "groups": [g.as_json() for g in found], "more": more}
        print(json.dumps(document, indent=2))
        return EXIT_OK
    if not found:
        print(f"queue {args.queue!r}: no groups")
        return EXIT_OK
    print(groups_table(found, now))
    if more:
        print(f"(showing the first {len(found)}: worqr groups {args.queue} --limit N for more)")
    return EXIT_OK
