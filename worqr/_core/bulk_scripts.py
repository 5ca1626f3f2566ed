"""One builder per Lua script of the bulk operations and `update_job`
(``worqr/lua/job_*_many.lua``, ``job_update.lua``), as `job_scripts` holds the
job layer's. Each bulk script handles one bounded chunk; the plans in `bulk`
call it again with the cursor or skip it replies."""

from __future__ import annotations

from .._keys import QueueKeys
from .calls import Call


def job_cancel_many(
    keys: QueueKeys,
    *,
    state: str,
    count: int,
    cursor: str,
    publish: str,
    policy: str,
    group: str | None = None,
) -> Call:
    # Resend-safe: a cancelled job is no longer live (a resent chunk counts less).
    return Call(
        "job_cancel_many",
        (
            *keys.job_keys,
            keys.processes,
            keys.stats,
            *keys.flow_keys,
            keys.config,
            keys.members,
            keys.idle,
        ),
        (
            state,
            count,
            cursor,
            keys.events,
            publish,
            keys.notify,
            policy,
            group or "",
            keys.wake_prefix,
        ),
    )


def job_retry_many(keys: QueueKeys, *, state: str, count: int, skip: int, publish: str) -> Call:
    return Call(
        "job_retry_many",
        (*keys.job_keys, keys.idle, keys.stats),
        (state, count, skip, keys.wake_prefix, publish),
    )


def job_promote_many(keys: QueueKeys, *, count: int, publish: str) -> Call:
    return Call(
        "job_promote_many",
        (*keys.job_keys, keys.idle, keys.stats),
        (count, keys.wake_prefix, publish),
    )


def job_purge_many(
    keys: QueueKeys, *, state: str, count: int, want: int, skip: int, older_than_ms: int
) -> Call:
    return Call(
        "job_purge_many",
        (*keys.job_keys, keys.stats),
        (state, count, want, skip, older_than_ms),
    )


def job_update(
    keys: QueueKeys, id: str, changes: str, payload: bytes, *, publish: str, policy: str
) -> Call:
    # Resend-safe: it sets values (a resent delay counts from the resend).
    return Call(
        "job_update",
        (*keys.job_keys, keys.members, keys.idle, keys.stats),
        (id, changes, payload, keys.wake_prefix, publish, policy),
    )
