"""Plans that read the mesh, without worker state."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .calls import Plan, command
from .state import CoreState, text

MGET_BATCH = 1000  # alive keys read per command


@dataclass(eq=False)
class Reads:
    """Read-only plans: no worker state needed."""

    state: CoreState

    def get_queues(self) -> Plan[list[str]]:
        return sorted(text(q) for q in (yield command("SMEMBERS", self.state.mesh.queues)))

    def get_workers(self) -> Plan[list[str]]:
        return sorted(text(w) for w in (yield command("SMEMBERS", self.state.mesh.workers)))

    def get_working_queues(self, worker_id: str | None) -> Plan[list[str]]:
        worker = self.state.require_worker() if worker_id is None else worker_id
        queues = yield command("SMEMBERS", self.state.mesh.worker_queues(worker))
        return sorted(text(q) for q in queues)

    def count_processes(self, queue: str) -> Plan[int]:
        return int((yield command("HLEN", self.state.queue_keys(queue).processes)))

    def get_stats(self, queue: str) -> Plan[dict[str, int]]:
        """Lifetime counters of the queue by event (see `QueueKeys.stats`)."""
        counters = yield command("HGETALL", self.state.queue_keys(queue).stats)
        return {text(k): int(v) for k, v in counters.items()}

    def workers_alive(self, worker_ids: Iterable[str]) -> Plan[list[bool]]:
        """Whether each worker's lease (its alive key) currently exists."""
        wanted = list(worker_ids)
        alive: list[bool] = []
        for start in range(0, len(wanted), MGET_BATCH):
            batch = wanted[start : start + MGET_BATCH]
            flags = yield command("MGET", *(self.state.mesh.alive(w) for w in batch))
            alive += [flag is not None for flag in flags]
        return alive

    def count_worker_processes(self, queue: str, worker_id: str) -> Plan[int]:
        """Processes ``worker_id`` holds on ``queue`` (cancelled ones count until
        their worker acknowledges them)."""
        return int((yield command("ZCARD", self.state.queue_keys(queue).owned(worker_id))))

    def get_worker_info(self, worker_id: str) -> Plan[dict[str, str]]:
        info = yield command("HGETALL", self.state.mesh.worker_info(worker_id))
        return {text(k): text(v) for k, v in info.items()}
