"""Plans of a worker's processes: taking tasks, and ending processes (finish,
stop, dead-letter), fenced by process existence."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .. import _checks as checks
from .._keys import QueueKeys
from .._process import Process, decode_task
from . import scripts
from .calls import Call, Plan, command
from .lua import NotMemberError
from .membership import Membership
from .state import CoreState, text

logger = logging.getLogger("worqr")

COMPLETE_BATCH = 500  # processes finished per complete script call: keeps it short
DEQUEUE_CHUNK = 500  # most tasks per dequeue script call (bounded scripts): ~3 ms each


@dataclass(eq=False)
class Processes:
    """The plans of a worker's task processes (``core.processes``)."""

    state: CoreState
    membership: Membership

    def dequeue(self, queue: str, count: int = 1) -> Plan[list[Process]]:
        checks.count("count", count, low=1)
        state = self.state
        keys = state.queue_keys(queue)
        worker = state.require_worker()
        if queue not in state.working:
            yield from self.membership.start_work(queue)
        # One prefix per dequeue; a large count runs as several short script calls
        # numbering their processes on from each other, each safe to resend.
        pid_prefix = state.new_prefix(worker)
        try:
            processes: list[Process] = []
            rejoined = False
            numbered = 0  # processes numbered under this prefix so far
            while len(processes) < count:
                chunk = min(DEQUEUE_CHUNK, count - len(processes))
                try:
                    reply = yield scripts.dequeue(
                        keys, worker, pid_prefix, count=chunk, first=numbered
                    )
                except NotMemberError as error:
                    state.working.discard(queue)
                    # Not a member: failed by peers, or the queue was deleted (with its
                    # members) before this worker heard of it. A lease that still exists
                    # was never failed (peers fail only expired leases, which never come
                    # back): join the queue again and carry on. Processes taken by
                    # earlier chunks went with the membership (deleted or requeued).
                    if rejoined or not (yield from self._lease_exists(worker)):
                        raise error
                    rejoined = True
                    processes.clear()
                    yield from self.membership.start_work(queue)
                    continue
                except Exception as error:
                    if not processes:
                        raise
                    # Earlier chunks are ours: hand them over rather than strand them.
                    logger.warning(
                        "dequeue from %r stopped after %d of %d tasks: %s",
                        queue,
                        len(processes),
                        count,
                        type(error).__name__,
                    )
                    break
                numbered += chunk
                processes += self._took(queue, worker, reply)
                if len(reply) < 2 * chunk:  # the queue ran dry
                    break
            return processes
        finally:  # after the processes are in state.owned (see reconcile)
            state.dequeuing.discard(pid_prefix)

    def _lease_exists(self, worker: str) -> Plan[bool]:
        return bool((yield command("EXISTS", self.state.mesh.alive(worker))))

    def _took(self, queue: str, worker: str, reply: list[Any]) -> list[Process]:
        """The processes a take reply ``{pid1, task1, ...}`` hands out."""
        processes = []
        decode = self.state.settings.decode_tasks
        owned = self.state.owned
        for i in range(0, len(reply), 2):
            pid, data = text(reply[i]), reply[i + 1]
            owned[pid] = (queue, worker)
            processes.append(Process(pid, queue, decode_task(data, decode), data, worker))
        return processes

    def complete(
        self, queue: str, finished: Iterable[str | Process], count: int = 0
    ) -> Plan[tuple[list[bool], list[Process]]]:
        """Finish ``finished`` (processes of ``queue``) and take up to ``count`` more
        tasks, in one script call when they all belong to this worker's current id.

        Returns one flag per finished process, in order (True only if it still
        existed: fenced like `finish_process`), and the new processes.
        """
        checks.count("count", count)
        state = self.state
        keys = state.queue_keys(queue)
        worker = state.require_worker()
        wanted = [state.owner(process) for process in finished]
        accepted = [False] * len(wanted)
        batch: list[tuple[int, str]] = []  # (index, pid) finished by the script call(s)
        for i, owner in enumerate(wanted):
            if owner is None:
                continue  # not ours (or already acknowledged): fenced
            if owner[1] == queue and owner[2] == worker:
                batch.append((i, owner[0]))
            else:  # another queue, or our former id (its processes are peers' now)
                accepted[i] = yield from self.finish_process(owner[0])
        if count and queue not in state.working:
            yield from self.membership.start_work(queue)
        taken: list[Process] = []
        # The take rides on the first chunk: a refused one (not a member) then
        # finished nothing yet, and the caller can resend every finish with count 0.
        for start in range(0, max(1, len(batch)), COMPLETE_BATCH):
            chunk = batch[start : start + COMPLETE_BATCH]
            take = min(count, DEQUEUE_CHUNK) if start == 0 else 0  # bounded, as dequeue
            if not chunk and not take:
                break
            pids = [pid for _, pid in chunk]
            pid_prefix = state.new_prefix(worker) if take else ""
            try:
                try:
                    flags, reply = yield scripts.complete(
                        keys, worker, pid_prefix, count=take, pids=pids
                    )
                except NotMemberError:
                    state.working.discard(queue)  # rejoin on the next call, as dequeue does
                    raise
                for (i, pid), flag in zip(chunk, flags, strict=True):
                    state.owned.pop(pid, None)
                    accepted[i] = flag == 1
                if take:
                    taken = self._took(queue, worker, reply)
            finally:  # after the processes are in state.owned
                state.dequeuing.discard(pid_prefix)
        return accepted, taken

    def _end_process(
        self, process: str | Process, build: Callable[[QueueKeys, str, str], Call]
    ) -> Plan[bool]:
        """End one of this client's processes with the call ``build(keys, worker,
        pid)`` makes; True only if the process still existed (fencing)."""
        owner = self.state.owner(process)
        if owner is None:
            return False
        pid, queue, worker = owner
        reply = yield build(self.state.mesh.queue(queue), worker, pid)
        self.state.owned.pop(pid, None)
        return bool(reply == 1)

    def finish_process(self, process: str | Process) -> Plan[bool]:
        return self._end_process(process, scripts.finish)

    def stop_process(self, process: str | Process) -> Plan[bool]:
        publish = yield from self.state.publishing()
        return (
            yield from self._end_process(
                process, lambda keys, worker, pid: scripts.stop(keys, worker, pid, publish=publish)
            )
        )

    def fail_process(self, process: str | Process) -> Plan[bool]:
        """Dead-letter a process whose task failed: the task goes to the failed list."""
        failed_max = self.state.settings.failed_max
        return self._end_process(
            process,
            lambda keys, worker, pid: scripts.dead_letter(keys, worker, pid, failed_max=failed_max),
        )

    def processes_exist(self, queue: str, pids: Iterable[str]) -> Plan[list[bool]]:
        """Whether each process still exists (not finished, cancelled or failed over)."""
        keys = self.state.queue_keys(queue)
        wanted = list(pids)
        if not wanted:
            return []
        tasks = yield command("HMGET", keys.processes, *wanted)
        return [task is not None for task in tasks]
