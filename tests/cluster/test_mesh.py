"""The core behaviour tests, run again on a real 3-master Redis Cluster.

The test functions are those of tests/client/test_api.py, test_failover.py and
test_notify.py; only the fixtures change: every client is
``Worqr(url, cluster=True)`` and the raw client the tests inspect Redis with is a
``RedisCluster``. Queues of one test land in different slots (and so on
different masters), mesh keys in the prefix's own slot. A few tests are left
out where they measure one standalone server (slowlog, a private server to
CLIENT KILL, a PUBLISH pattern subscription, the thread count of one subscriber
connection); tests/cluster/test_faults.py covers those concerns for a cluster.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

import worqr
from tests.client.test_api import (
    test_cancel_removes_queued_and_in_process_copies,
    test_cancelled_process_is_never_requeued_by_a_failover,
    test_counts_per_queue_and_per_worker,
    test_delete_queue_drops_everything_fences_processes_and_tells_listeners,
    test_deleted_queue_can_be_used_again,
    test_dequeue_many_takes_up_to_count_from_the_front,
    test_enqueue_counts_and_dequeue_is_fifo,
    test_enqueue_many_keeps_order_across_batches,
    test_fail_process_dead_letters_and_the_failed_list_can_be_requeued_or_purged,
    test_fail_worker_returns_every_queue_to_the_front_and_keeps_working,
    test_finish_process_is_fenced_and_accepts_an_id,
    test_get_queues_lists_known_queues_sorted,
    test_get_workers_and_worker_id,
    test_get_working_queues,
    test_heartbeat_refreshes_the_lease_and_takes_the_reaper_turn,
    test_held_tasks_go_back_to_the_front_oldest_first,
    test_lost_lease_runs_hooks_and_observers_and_re_registers,
    test_on_delivers_work_cancel_and_delete_events,
    test_reap_fails_only_dead_workers,
    test_stop_process_puts_the_task_at_the_front,
)
from tests.client.test_failover import (
    test_concurrent_reapers_requeue_each_task_exactly_once,
    test_max_recoveries_minus_one_never_dead_letters,
    test_one_reaper_per_interval,
    test_peer_requeues_exactly_the_dead_workers_tasks,
    test_peers_fail_an_expired_worker_on_their_own,
    test_poison_pill_is_dead_lettered_after_max_recoveries,
    test_zombie_is_fenced_then_recovers_under_a_new_id,
    test_zombie_that_finds_out_first_fails_its_old_id_itself,
)
from tests.client.test_notify import (
    test_a_woken_worker_that_drains_the_queue_waits_again,
    test_enqueue_many_wakes_one_idle_worker_per_task,
    test_fail_worker_and_stop_work_wake_an_idle_worker,
    test_one_task_wakes_exactly_one_idle_worker,
    test_peer_failover_wakes_an_idle_worker,
    test_stop_process_wakes_an_idle_worker,
)
from tests.support.clients import Clients, Factory
from tests.support.cluster import LocalCluster, needs_sharded_pubsub, sharded_pubsub
from tests.support.timing import quiet
from tests.support.waiting import wait_until
from worqr._core.lua import script_names

pytestmark = pytest.mark.cluster

__all__ = [  # the borrowed tests, collected here with this module's fixtures
    "test_a_woken_worker_that_drains_the_queue_waits_again",
    "test_cancel_removes_queued_and_in_process_copies",
    "test_cancelled_process_is_never_requeued_by_a_failover",
    "test_concurrent_reapers_requeue_each_task_exactly_once",
    "test_counts_per_queue_and_per_worker",
    "test_delete_queue_drops_everything_fences_processes_and_tells_listeners",
    "test_deleted_queue_can_be_used_again",
    "test_dequeue_many_takes_up_to_count_from_the_front",
    "test_enqueue_counts_and_dequeue_is_fifo",
    "test_enqueue_many_keeps_order_across_batches",
    "test_enqueue_many_wakes_one_idle_worker_per_task",
    "test_fail_process_dead_letters_and_the_failed_list_can_be_requeued_or_purged",
    "test_fail_worker_and_stop_work_wake_an_idle_worker",
    "test_fail_worker_returns_every_queue_to_the_front_and_keeps_working",
    "test_finish_process_is_fenced_and_accepts_an_id",
    "test_get_queues_lists_known_queues_sorted",
    "test_get_workers_and_worker_id",
    "test_get_working_queues",
    "test_heartbeat_refreshes_the_lease_and_takes_the_reaper_turn",
    "test_held_tasks_go_back_to_the_front_oldest_first",
    "test_lost_lease_runs_hooks_and_observers_and_re_registers",
    "test_max_recoveries_minus_one_never_dead_letters",
    "test_on_delivers_work_cancel_and_delete_events",
    "test_one_reaper_per_interval",
    "test_one_task_wakes_exactly_one_idle_worker",
    "test_peer_failover_wakes_an_idle_worker",
    "test_peer_requeues_exactly_the_dead_workers_tasks",
    "test_peers_fail_an_expired_worker_on_their_own",
    "test_poison_pill_is_dead_lettered_after_max_recoveries",
    "test_reap_fails_only_dead_workers",
    "test_stop_process_puts_the_task_at_the_front",
    "test_stop_process_wakes_an_idle_worker",
    "test_zombie_is_fenced_then_recovers_under_a_new_id",
    "test_zombie_that_finds_out_first_fails_its_old_id_itself",
]


class RawCluster(RedisCluster):
    """The raw client the borrowed tests inspect Redis with. The workers listen
    with SSUBSCRIBE (Redis >= 7), so what a test publishes (a notify test's
    fence) goes out with SPUBLISH, on the shard that owns the channel."""

    def publish(self, channel: Any, message: Any, **kwargs: Any) -> Any:
        if not sharded_pubsub():  # Redis 6.2: the mesh listens with SUBSCRIBE
            return super().publish(channel, message, **kwargs)
        return self.spublish(channel, message)


@pytest.fixture
def redis_url(redis_cluster_url: str) -> str:
    return redis_cluster_url


@pytest.fixture
def redis_client(redis_cluster: LocalCluster) -> Iterator[redis.Redis]:
    client = RawCluster.from_url(redis_cluster.url, retry=Retry(NoBackoff(), 0))
    try:
        yield client  # type: ignore[misc]
    finally:
        client.close()


@pytest.fixture
def clients(redis_cluster_url: str, prefix: str) -> Iterator[Clients]:
    """The shared client factory, on the cluster: every client it makes (and so
    the ``make``, ``wq`` and ``worker`` fixtures) is ``Worqr(url, cluster=True)``."""
    made = Clients(redis_cluster_url, prefix, cluster=True)
    try:
        yield made
    finally:
        made.close_all()


@needs_sharded_pubsub
def test_clients_are_in_cluster_mode_and_publish_sharded(make: Factory) -> None:
    client = make(start=True)
    client.start_work("q")
    assert client._cluster
    assert client._core.state.publish == "SPUBLISH"  # Redis 7 cluster: sharded pub/sub


def test_close_leaves_the_mesh_and_stops_every_thread(
    make: Factory, redis_cluster_url: str, prefix: str
) -> None:
    """Like the standalone test, plus the per-node subscriber threads: queues on
    different masters mean one subscriber connection (and thread) per master."""
    producer = make()
    before = set(threading.enumerate())
    settings = quiet(prefix)
    with worqr.Worqr(redis_cluster_url, settings=settings, cluster=True) as worker:
        worker.start_worker()
        queues = [f"q{i}" for i in range(12)]  # 12 slots: every master owns some
        for queue in queues:
            worker.start_work(queue)
        producer.enqueue_many("q0", ["a", "b", "c"])
        assert len(worker.dequeue_many("q0", 2)) == 2
        started = set(threading.enumerate()) - before
        names = sorted(t.name.split("-")[1] for t in started)
        assert names == ["heartbeat", "listener", "shard", "shard", "shard"], names
    assert producer.get_workers() == []
    assert producer.count_processes("q0") == 0
    assert producer.count_tasks("q0") == 3
    wait_until(lambda: set(threading.enumerate()) - before == set(), message="threads left")


def test_every_script_and_read_runs_on_the_cluster(make: Factory) -> None:
    """Each script touches one slot and each read one key (or keys of one slot):
    on a cluster a cross-slot call fails with CROSSSLOT. Every script worqr has
    and every public read runs here; the scripts are counted as they run."""
    client = make()
    ran: set[str] = set()

    execute_once = client._executor._execute_once

    def counting(request: Any) -> Any:
        if getattr(request, "script", None):
            ran.add(request.script)
        return execute_once(request)

    client._executor._execute_once = counting  # type: ignore[method-assign]
    worker_id = client.start_worker()
    client.configure_queue("q", max_recoveries=3)
    client.enqueue_many("q", ["a", "b", "c", "d", "e"])
    a, b, c, d = client.dequeue_many("q", 4)
    assert client.finish_process(a) and client.stop_process(b) and client.fail_process(c)
    assert client.processes_exist("q", [d.id, a.id]) == [True, False]
    assert client.count_worker_processes("q", worker_id) == 1
    assert client.get_failed("q") == ["c"] and client.count_failed("q") == 1
    assert client.requeue_failed("q") == 1 and client.count_failed("q") == 0
    assert client.dequeue_many("q", 5)  # "b", "e", "c"
    assert client.fail_worker() == 4
    [again] = client.dequeue_many("q", 1)
    assert client.fail_process(again) and client.purge_failed("q") == 1
    assert client.cancel_tasks("q", "e") >= 1
    assert client.get_stats("q")["enqueued"] == 5
    assert client.get_worker_info(worker_id)["pid"]
    assert client.workers_alive([worker_id, "nobody"]) == [True, False]
    assert client.get_queues() == ["q"] and client.get_workers() == [worker_id]
    assert client.get_working_queues() == ["q"]
    assert client.heartbeat() in ("ok", "reaped")
    assert client.reap() == 0
    client.enqueue("q", "f")
    flags, taken = client.complete("q", [], 1)
    assert flags == [] and len(taken) == 1
    assert client.complete("q", taken, 0) == ([True], [])
    # The metrics history: a worker's flush (history_add) and a read (history_read).
    minute = int(client.server_time()) // 60 * 60
    client.internals.record_history("hq", [(minute, "1,1,0,0,0;3:1")])
    (point,) = client.get_history("hq")
    assert (point.time, point.started, point.finished) == (minute, 1, 1)
    client.stop_work("q")
    client.delete_queue("q")
    client.close()  # forget_worker
    # (The job and flow scripts: tests/jobs/test_cluster.py; delete_queue runs two.)
    mesh_scripts = {name for name in script_names() if not name.startswith(("job_", "flow_"))}
    assert mesh_scripts <= ran, mesh_scripts - ran
