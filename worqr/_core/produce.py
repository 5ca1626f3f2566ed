"""Plans that produce and remove work: enqueue, cancel by payload, and the
per-queue options shared by the mesh (deleting a queue: `deletion`)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from redis.exceptions import ResponseError

from .._errors import (
    AmbiguousResultError,
    ReplicationTimeoutError,
    WorqrError,
    WrongQueueKindError,
)
from .._keys import QueueKeys
from . import job_scripts, scripts
from .calls import Call, Pinned, Plan, command
from .kinds import QueueKinds
from .lua import translate
from .pinned import loaded
from .relay import Relay
from .state import CoreState, text

ENQUEUE_BATCH = 1000  # tasks per enqueue script call: keeps each script short
CANCEL_SCAN_PAGE = 1000  # job payloads a cancel by payload looks at per script call
REGISTRY_REFRESH = 30.0  # seconds between re-adding a queue to the registry


def _with_count(error: Exception, done: int, total: int) -> Exception:
    """``error`` (same type when possible) saying how much of an enqueue_many applied."""
    message = f"{done} of {total} tasks were enqueued, the rest were not: {error}"
    try:
        return type(error)(message)
    except Exception:  # a constructor that wants other arguments
        return WorqrError(message)


@dataclass(eq=False)
class Producing:
    """The plans that produce and remove work (``core.producing``)."""

    state: CoreState
    kinds: QueueKinds
    relay: Relay

    def encode_task(self, task: object) -> bytes:
        if isinstance(task, str):
            try:
                data = task.encode("utf-8")
            except UnicodeEncodeError as error:
                raise ValueError(f"task is not encodable as UTF-8: {error.reason}") from None
        elif isinstance(task, bytes | bytearray | memoryview):
            data = bytes(task)
        else:
            raise TypeError(f"task must be str or bytes, not {type(task).__name__}")
        if len(data) > self.state.settings.max_task_bytes:
            raise ValueError(
                f"task is {len(data)} bytes; the limit is {self.state.settings.max_task_bytes} "
                "(Settings.max_task_bytes)"
            )
        return data

    def enqueue_many(self, queue: str, tasks: Iterable[object]) -> Plan[int]:
        state = self.state
        keys = state.queue_keys(queue)
        if isinstance(tasks, str | bytes):
            raise TypeError("enqueue_many takes an iterable of tasks, not one task")
        payloads = [self.encode_task(task) for task in tasks]  # all checked before any write
        if not payloads:
            return 0
        # (The check inline saves a generator per call on the hot path.)
        if time.monotonic() - state.registered.get(queue, -REGISTRY_REFRESH) >= REGISTRY_REFRESH:
            yield from self.register_queue(queue)
        publish = yield from state.publishing()
        done = 0
        for start in range(0, len(payloads), ENQUEUE_BATCH):
            batch = payloads[start : start + ENQUEUE_BATCH]
            try:
                yield from self._push(keys, publish, batch, done, len(payloads))
            except ReplicationTimeoutError:
                raise
            except AmbiguousResultError:
                if len(payloads) == 1:
                    raise
                raise AmbiguousResultError(
                    f"{done} of {len(payloads)} tasks were enqueued; the next "
                    f"{len(batch)} may or may not have been"
                ) from None
            except Exception as error:
                if done == 0:
                    raise
                # Earlier batches stay enqueued: say so, or a caller that retries
                # the whole call enqueues them twice (e.g. Redis filled up meanwhile).
                raise _with_count(error, done, len(payloads)) from error
            done += len(batch)
        return done

    def _push(
        self, keys: QueueKeys, publish: str, batch: list[bytes], done: int, total: int
    ) -> Plan[None]:
        """One enqueue script call (see `replicated`)."""
        call = scripts.enqueue(keys, batch, publish=publish)
        yield from self.replicated(
            call,
            len(batch),
            done,
            total,
            what="task(s)",
            verb="enqueued",
            again="enqueueing them again would run them twice",
        )

    def replicated(
        self, call: Call, count: int, done: int, total: int, *, what: str, verb: str, again: str
    ) -> Plan[Any]:
        """Run ``call`` (it creates ``count`` things, after ``done`` of ``total``);
        with ``wait_replicas``, followed on the same connection by ``WAIT``, and a
        `ReplicationTimeoutError` if too few replicas acknowledged in time.
        Returns the script's reply."""
        settings = self.state.settings
        required = settings.wait_replicas
        if not required:
            return (yield call)
        wait = command("WAIT", required, settings.wait_timeout_ms)
        # NOSCRIPT: loaded, and the pair sent again, on the same connection.
        reply, acked = yield from loaded(Pinned((call, wait)))
        if isinstance(reply, ResponseError):
            raise translate(reply)
        if isinstance(acked, ResponseError):
            raise acked
        if int(acked) < required:
            applied = done + count
            rest = f"; the other {total - applied} were not {verb}" if applied < total else ""
            raise ReplicationTimeoutError(
                f"{count} {what} ARE {verb} on the master, but only {acked} of "
                f"{required} replicas acknowledged them within {settings.wait_timeout:g}s "
                f"(Settings.wait_replicas/wait_timeout): they are lost if the master fails "
                f"before replicating them; {again}{rest}",
                enqueued=applied,
                unconfirmed=count,
                replicas=int(acked),
                required=required,
            )
        return reply

    def register_queue(self, queue: str) -> Plan[None]:
        """Add ``queue`` to the mesh's registry, at most once per `REGISTRY_REFRESH`
        (a deleted queue that is used again comes back)."""
        now, state = time.monotonic(), self.state
        if now - state.registered.get(queue, -REGISTRY_REFRESH) >= REGISTRY_REFRESH:
            yield command("SADD", state.mesh.queues, queue)
            state.registered[queue] = now

    def cancel_tasks(self, queue: str, task: object) -> Plan[int]:
        """Cancel every copy of a payload (on a job queue: every live job with it)."""
        keys = self.state.queue_keys(queue)
        data = self.encode_task(task)
        publish = yield from self.state.publishing()
        if (yield from self.kinds.of(queue)) == "jobs":
            return (yield from self._cancel_jobs_by_payload(queue, data, publish))
        try:
            reply = yield scripts.cancel(keys, data, publish=publish)
        except WrongQueueKindError:
            self.kinds.learned(queue, "jobs")  # it became one since we last looked
            return (yield from self.cancel_tasks(queue, task))
        return int(reply[0]) + len(reply) - 1

    def _cancel_jobs_by_payload(self, queue: str, data: bytes, publish: str) -> Plan[int]:
        """A scan of the queue's payloads, a bounded script call per page (a
        queue may retain millions of jobs); a job submitted meanwhile may be missed."""
        keys, cancelled, cursor = self.state.queue_keys(queue), 0, "0"
        while True:
            reply = yield job_scripts.job_cancel_payload(
                keys,
                data,
                cursor=cursor,
                page=CANCEL_SCAN_PAGE,
                publish=publish,
                policy=self.state.settings.jobs.policy,
            )
            yield from self.relay.relay_written(queue, reply[1])
            cancelled += int(reply[0])
            cursor = text(reply[2])
            if cursor == "0":
                return cancelled
