"""One builder per Lua script: the only code that knows a script's KEYS and ARGV.

Each builder is named after its script (``worqr/lua/<name>.lua``), takes named
parameters and returns the `Call` that runs it. Plans never assemble KEYS or
ARGV themselves, so a script that gains a slot changes its builder's signature
and every call site that does not pass it fails to type-check.
``tests/core/test_script_contracts.py`` checks each builder against its script's
header: the KEYS and ARGV it passes, in order, and that every script has a
builder and every builder a script.

Parameter names follow the headers: a KEYS slot named ``owned`` is
``keys.owned(worker)``, an ARGV slot named like a parameter is that parameter,
and ``wake_prefix``/``events`` come from the queue's keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from .._keys import MeshKeys, QueueKeys
from .calls import Arg, Call

RequeueMode = Literal["fail", "leave", "release"]
"""How `requeue_owned` returns a worker's processes (see its header)."""


def _call(
    name: str, keys: tuple[str, ...], args: tuple[Arg, ...], *, idempotent: bool = True
) -> Call:
    return Call(name, keys, args, idempotent)


# -- producing -----------------------------------------------------------------


def enqueue(keys: QueueKeys, tasks: Sequence[bytes], *, publish: str) -> Call:
    # Never resent after an ambiguous failure: a resend could push the tasks twice.
    return _call(
        "enqueue",
        (keys.tasks, keys.idle, keys.stats, keys.config),
        (keys.wake_prefix, publish, *tasks),
        idempotent=False,
    )


def cancel(keys: QueueKeys, task: bytes, *, publish: str) -> Call:
    return _call(
        "cancel",
        (keys.tasks, keys.processes, keys.recoveries, keys.stats, keys.config),
        (task, keys.events, publish),
    )


def delete_queue(
    keys: QueueKeys,
    members: Sequence[str],
    *,
    publish: str,
    applied_ttl_ms: int,
    if_idle: bool = False,
) -> Call:
    return _call(
        "delete_queue",
        (
            *keys.job_keys,
            keys.processes,
            keys.members,
            keys.idle,
            keys.recoveries,
            keys.failed,
            keys.config,
            keys.stats,
            keys.seq,
            keys.job_flow_live,
            keys.job_flow,
            keys.job_waiting,
            keys.job_applied,
            *keys.sched_keys,
            keys.job_throttle,
            *(keys.owned(member) for member in members),
        ),
        (keys.events, keys.notify, publish, applied_ttl_ms, "1" if if_idle else "0"),
    )


def requeue_failed(keys: QueueKeys, *, count: int, publish: str) -> Call:
    return _call(
        "requeue_failed",
        (keys.failed, keys.tasks, keys.idle, keys.stats),
        (count, keys.wake_prefix, publish),
    )


def purge_failed(keys: QueueKeys) -> Call:
    return _call("purge_failed", (keys.failed,), ())


# -- membership ----------------------------------------------------------------


def register(mesh: MeshKeys, worker: str, *, ttl_ms: int, info: Sequence[Arg]) -> Call:
    return _call(
        "register",
        (mesh.workers, mesh.alive(worker), mesh.worker_info(worker)),
        (worker, ttl_ms, *info),
    )


def add_worker_queue(mesh: MeshKeys, worker: str, queue: str) -> Call:
    return _call(
        "add_worker_queue",
        (mesh.alive(worker), mesh.worker_queues(worker), mesh.queues),
        (queue,),
    )


def join_queue(keys: QueueKeys, worker: str) -> Call:
    return _call("join_queue", (keys.members, keys.idle), (worker,))


def forget_worker(mesh: MeshKeys, worker: str, *, only_if_dead: bool) -> Call:
    return _call(
        "forget_worker",
        (mesh.workers, mesh.alive(worker), mesh.worker_queues(worker), mesh.worker_info(worker)),
        (worker, "1" if only_if_dead else "0"),
    )


def heartbeat(mesh: MeshKeys, worker: str, *, ttl_ms: int, reap_ms: int) -> Call:
    return _call("heartbeat", (mesh.alive(worker), mesh.reaper), (worker, ttl_ms, reap_ms))


# -- processes -----------------------------------------------------------------


def dequeue(keys: QueueKeys, worker: str, pid_prefix: str, *, count: int, first: int) -> Call:
    return _call(
        "dequeue",
        (
            keys.tasks,
            keys.processes,
            keys.owned(worker),
            keys.members,
            keys.idle,
            keys.seq,
            keys.stats,
            keys.config,
        ),
        (worker, pid_prefix, count, first),
    )


def complete(
    keys: QueueKeys, worker: str, pid_prefix: str, *, count: int, pids: Sequence[str]
) -> Call:
    return _call(
        "complete",
        (
            keys.tasks,
            keys.processes,
            keys.owned(worker),
            keys.members,
            keys.idle,
            keys.seq,
            keys.recoveries,
            keys.stats,
            keys.config,
        ),
        (worker, pid_prefix, count, *pids),
    )


def finish(keys: QueueKeys, worker: str, pid: str) -> Call:
    return _call(
        "finish", (keys.processes, keys.owned(worker), keys.recoveries, keys.stats), (pid,)
    )


def stop(keys: QueueKeys, worker: str, pid: str, *, publish: str) -> Call:
    return _call(
        "stop",
        (keys.tasks, keys.processes, keys.owned(worker), keys.idle, keys.stats),
        (pid, keys.wake_prefix, publish),
    )


def dead_letter(keys: QueueKeys, worker: str, pid: str, *, failed_max: int) -> Call:
    return _call(
        "dead_letter",
        (keys.processes, keys.owned(worker), keys.failed, keys.recoveries, keys.stats),
        (pid, failed_max),
    )


def requeue_owned(
    keys: QueueKeys,
    worker: str,
    *,
    mode: RequeueMode,
    chunk: int,
    max_recoveries: int,
    failed_max: int,
    publish: str,
) -> Call:
    return _call(
        "requeue_owned",
        (
            keys.tasks,
            keys.processes,
            keys.owned(worker),
            keys.members,
            keys.idle,
            keys.recoveries,
            keys.failed,
            keys.config,
            keys.stats,
        ),
        (worker, mode, chunk, max_recoveries, failed_max, keys.wake_prefix, publish),
    )
