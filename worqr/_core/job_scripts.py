"""One builder per Lua script of the job layer (``worqr/lua/job_*.lua``), as
`scripts` holds them for the core's. Every job script takes the queue's job
keys first (`QueueKeys.job_keys`), then its own; ``policy`` is the JSON of
`JobSettings.policy` (retention and budgets, in ms).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from .._keys import QueueKeys
from .calls import Call
from .scripts import RequeueMode

SubmitItem = tuple[str, str, bytes, str]
"""One job of a `job_submit` call: id, nonce, payload, options JSON."""

Finish = tuple[str, str, str, bytes]
"""One finish carried by `job_take`: pid, entry (id#life), result type (s, b, n), result."""


def job_kind(keys: QueueKeys) -> Call:
    return Call("job_kind", (keys.config, keys.tasks, keys.processes), ())


def job_submit(
    keys: QueueKeys,
    jobs: Sequence[SubmitItem],
    *,
    publish: str,
    policy: str,
    resendable: bool = True,
) -> Call:
    # Resend-safe while the records last: each job is keyed by its id and the
    # call's nonce (``resendable``: the caller says whether they outlast resends).
    return Call(
        "job_submit",
        (
            *keys.job_keys,
            keys.processes,
            keys.members,
            keys.idle,
            keys.config,
            keys.stats,
            *keys.dedup_keys,
        ),
        (keys.wake_prefix, publish, policy, *(field for job in jobs for field in job)),
        resendable,
    )


def job_take(
    keys: QueueKeys,
    worker: str,
    pid_prefix: str,
    *,
    count: int,
    publish: str,
    policy: str,
    finishes: Sequence[Finish],
    full: bool = False,
) -> Call:
    return Call(
        "job_take",
        _take_keys(keys, worker),
        (
            worker,
            pid_prefix,
            count,
            keys.wake_prefix,
            publish,
            keys.notify,
            policy,
            "1" if full else "",
            *(field for finish in finishes for field in finish),
        ),
    )


@lru_cache(maxsize=4096)  # a worker's every take names the same 31 keys
def _take_keys(keys: QueueKeys, worker: str) -> tuple[str, ...]:
    return (
        *keys.job_keys,
        keys.processes,
        keys.owned(worker),
        keys.members,
        keys.idle,
        keys.seq,
        keys.config,
        keys.stats,
        *keys.sched_keys,
        *keys.flow_keys,
    )


def job_fail(
    keys: QueueKeys,
    worker: str,
    pid: str,
    entry: str,
    *,
    mode: str,
    delay_ms: int,
    retries: int,
    error_text: str,
    publish: str,
    policy: str,
) -> Call:
    return Call(
        "job_fail",
        (
            *keys.job_keys,
            keys.processes,
            keys.owned(worker),
            keys.members,
            keys.idle,
            keys.stats,
            *keys.flow_keys,
            keys.config,
        ),
        (
            pid,
            entry,
            mode,
            delay_ms,
            retries,
            error_text,
            keys.wake_prefix,
            publish,
            keys.notify,
            policy,
        ),
    )


def job_stop(keys: QueueKeys, worker: str, pid: str, *, publish: str) -> Call:
    return Call(
        "job_stop",
        (*keys.job_keys, keys.processes, keys.owned(worker), keys.idle, keys.stats),
        (pid, keys.wake_prefix, publish),
    )


def job_requeue_owned(
    keys: QueueKeys,
    worker: str,
    *,
    mode: RequeueMode,
    chunk: int,
    max_recoveries: int,
    publish: str,
    policy: str,
) -> Call:
    return Call(
        "job_requeue_owned",
        (
            *keys.job_keys,
            keys.processes,
            keys.owned(worker),
            keys.members,
            keys.idle,
            keys.config,
            keys.stats,
            *keys.flow_keys,
        ),
        (worker, mode, chunk, max_recoveries, keys.wake_prefix, publish, keys.notify, policy),
    )


def job_cancel(keys: QueueKeys, id: str, nonce: str, *, publish: str, policy: str) -> Call:
    return Call(
        "job_cancel",
        (*keys.job_keys, keys.processes, keys.stats, *keys.flow_keys, keys.members, keys.idle),
        (id, nonce, keys.events, publish, keys.notify, policy, keys.wake_prefix),
    )


def job_cancel_payload(
    keys: QueueKeys, payload: bytes, *, cursor: str, page: int, publish: str, policy: str
) -> Call:
    # One page of a scan: the caller goes on from the cursor replied until "0".
    return Call(
        "job_cancel_payload",
        (*keys.job_keys, keys.processes, keys.stats, *keys.flow_keys, keys.members, keys.idle),
        (payload, keys.events, publish, keys.notify, policy, cursor, page, keys.wake_prefix),
    )


def job_retry(keys: QueueKeys, id: str, nonce: str, *, publish: str) -> Call:
    return Call(
        "job_retry",
        (*keys.job_keys, keys.idle, keys.stats),
        (id, nonce, keys.wake_prefix, publish),
    )


def job_watch(keys: QueueKeys, id: str, *, watch: bool, with_payload: bool) -> Call:
    return Call(
        "job_watch",
        (keys.jobs, keys.job_data, keys.job_result, keys.job_progress),
        (id, "1" if watch else "0", "1" if with_payload else "0"),
    )


def job_counts(keys: QueueKeys) -> Call:
    return Call(
        "job_counts",
        (
            keys.job_counts,
            keys.job_finished,
            keys.job_failed,
            keys.job_cancelled,
            keys.job_delayed,
            keys.job_retrying,
        ),
        (),
    )


def job_promote(keys: QueueKeys, *, publish: str, policy: str) -> Call:
    return Call(
        "job_promote",
        (*keys.job_keys, keys.members, keys.idle, keys.stats, *keys.sched_keys, keys.config),
        (keys.wake_prefix, publish, policy),
    )


def job_limits(
    keys: QueueKeys,
    *,
    rate: str,
    per: str,
    max_active: str,
    publish: str,
    group_rate: str = "-",
    group_per: str = "",
    group_max_active: str = "-",
) -> Call:
    # Resend-safe: it sets values (a second wake-up is harmless).
    return Call(
        "job_limits",
        (keys.tasks, keys.processes, keys.config, keys.idle),
        (
            rate,
            per,
            max_active,
            keys.wake_prefix,
            publish,
            group_rate,
            group_per,
            group_max_active,
        ),
    )


def job_group_limits(
    keys: QueueKeys, group: str, *, rate: str, per: str, max_active: str, publish: str
) -> Call:
    # Resend-safe: it sets values (a second wake-up is harmless).
    return Call(
        "job_group_limits",
        (keys.tasks, keys.job_prio, keys.processes, keys.config, keys.idle),
        (group, rate, per, max_active, keys.wake_prefix, publish),
    )


def job_group_pause(keys: QueueKeys, group: str) -> Call:
    # Resend-safe: it sets a flag.
    return Call(
        "job_group_pause", (keys.tasks, keys.job_prio, keys.processes, keys.config), (group,)
    )


def job_group_resume(keys: QueueKeys, group: str, *, publish: str) -> Call:
    # Resend-safe: a second call finds nothing paused and does nothing.
    return Call(
        "job_group_resume",
        (keys.tasks, keys.job_prio, keys.idle),
        (group, keys.wake_prefix, publish),
    )


def job_groups(keys: QueueKeys, *, cursor: str, count: int) -> Call:
    return Call("job_groups", (keys.tasks, keys.config), (cursor, count))


def job_sweep_graves(keys: QueueKeys, *, count: int) -> Call:
    return Call("job_sweep_graves", (keys.tasks,), (count,))


def job_progress(keys: QueueKeys, pid: str, entry: str, value: bytes, *, publish: str) -> Call:
    return Call(
        "job_progress",
        (keys.jobs, keys.job_progress, keys.processes),
        (pid, entry, value, keys.notify, publish),
    )


def job_purge_failed(keys: QueueKeys, *, count: int) -> Call:
    return Call("job_purge_failed", (*keys.job_keys, keys.stats), (count,))


# -- schedules (lib/schedule) ------------------------------------------------


def job_sched_set(
    keys: QueueKeys,
    name: str,
    spec: str,
    payload: bytes,
    fires: Sequence[int],
    *,
    publish: str,
    policy: str,
) -> Call:
    # Resend-safe: an equal spec is a no-op; a replaced one is replaced again.
    return Call(
        "job_sched_set",
        (
            *keys.job_keys,
            keys.processes,
            keys.members,
            keys.idle,
            keys.config,
            keys.stats,
            *keys.sched_keys,
        ),
        (keys.wake_prefix, publish, policy, name, spec, payload, *fires),
    )


def job_sched_refill(
    keys: QueueKeys, name: str, version: str, fires: Sequence[int], *, publish: str, policy: str
) -> Call:
    return Call(
        "job_sched_refill",
        (*keys.job_keys, keys.members, keys.idle, keys.stats, *keys.sched_keys),
        (keys.wake_prefix, publish, policy, name, version, *fires),
    )


def job_sched_remove(keys: QueueKeys, name: str) -> Call:
    return Call("job_sched_remove", keys.sched_keys, (name,))


# -- pausing (lib/limit's 'paused', lib/schedule's p) --------------------------


def job_pause(keys: QueueKeys) -> Call:
    # Resend-safe: it sets a flag.
    return Call("job_pause", (keys.tasks, keys.processes, keys.config), ())


def job_resume(keys: QueueKeys, *, publish: str) -> Call:
    # Resend-safe: a second call finds nothing paused and does nothing.
    return Call(
        "job_resume", (keys.config, keys.idle, keys.job_counts), (keys.wake_prefix, publish)
    )


def job_sched_pause(keys: QueueKeys, name: str) -> Call:
    return Call("job_sched_pause", keys.sched_keys, (name,))


def job_sched_resume(keys: QueueKeys, name: str, *, publish: str, policy: str) -> Call:
    return Call(
        "job_sched_resume",
        (*keys.job_keys, keys.members, keys.idle, *keys.sched_keys),
        (keys.wake_prefix, publish, policy, name),
    )
