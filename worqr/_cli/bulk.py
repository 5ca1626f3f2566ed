"""`worqr jobs QUEUE --cancel | --retry | --promote | --purge`: the bulk
operations, each one call of the client (bounded script calls in a loop).
Options that do not fit the action are refused before anything is read or
written."""

from __future__ import annotations

import argparse
import json

from .._jobs import TERMINAL
from .base import EXIT_OK, EXIT_USAGE, CliError, admin_client

ACTIONS = ("cancel", "retry", "promote", "purge")
DONE = {"cancel": "cancelled", "retry": "retried", "promote": "promoted", "purge": "purged"}
STATES_OF = {
    "retry": ("failed", "cancelled"),
    "promote": ("delayed",),
    "purge": ("finished", "failed", "cancelled"),
}


def action_of(args: argparse.Namespace) -> str | None:
    """The bulk action asked for, or None (a listing); usage errors raised."""
    action = next((name for name in ACTIONS if getattr(args, name)), None)
    if args.older_than is not None and action != "purge":
        raise CliError("--older-than needs --purge", EXIT_USAGE)
    if action is None:
        return None
    if args.group is not None and action != "cancel":
        raise CliError(f"--group applies to listing and --cancel, not --{action}", EXIT_USAGE)
    state = args.state
    if action == "cancel":
        if state in TERMINAL:
            raise CliError(f"--cancel: {state} jobs are terminal already", EXIT_USAGE)
        if args.limit is not None:
            raise CliError("--limit does not apply to --cancel (it cancels them all)", EXIT_USAGE)
    elif action == "purge" and state is None:
        raise CliError("--purge needs --state finished, failed or cancelled", EXIT_USAGE)
    elif state is not None and state not in STATES_OF[action]:
        raise CliError(
            f"--{action} takes --state {' or '.join(STATES_OF[action])}, not {state}", EXIT_USAGE
        )
    return action


def run(args: argparse.Namespace, action: str) -> int:
    queue, state, limit = args.queue, args.state, args.limit
    with admin_client(args) as client:
        if action == "cancel":
            count = client.cancel_jobs(queue, state=state, group=args.group)
        elif action == "retry":
            count = client.retry_jobs(queue, state=state, limit=limit)
        elif action == "promote":
            count = client.promote_jobs(queue, limit=limit)
        else:
            older = 0.0 if args.older_than is None else args.older_than
            count = client.purge_jobs(queue, state, older_than=older, limit=limit)
    if args.json:
        print(json.dumps({"queue": queue, DONE[action]: count}))
    else:
        print(f"{DONE[action]} {count} job{'s' if count != 1 else ''} on {queue!r}")
    return EXIT_OK
