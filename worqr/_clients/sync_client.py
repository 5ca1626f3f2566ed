"""`Worqr`: the synchronous client. Executes the core's plans; threads run the
heartbeat and the pub/sub listener."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from types import TracebackType
from typing import Any, TypeVar

import redis as redis_py
from redis.client import PubSub
from redis.cluster import RedisCluster
from redis.exceptions import NoScriptError
from tenacity import Retrying

from .._core.calls import Pinned, Plan, Request, Subscribe, may_resend
from .._core.core import Callback
from .._core.failures import OutageLog, final_error, tenacity_options
from .._core.lua import digest, source
from .._core.pinned import Command, Refresh, cluster_route, commands, target
from .._process import Process
from .._settings import Settings
from .connect import cluster_node_client, subscriber_client, subscriber_options
from .pubsub_guard import PubSubGuard
from .shards import ClusterSubscriber
from .shell import Shell

T = TypeVar("T")
logger = logging.getLogger("worqr")


def _pipeline(client: redis_py.Redis, sent: list[Command]) -> list[Any]:
    """Send commands back to back on one connection, without MULTI."""
    with client.pipeline(transaction=False) as pipe:
        for args in sent:
            pipe.execute_command(*args)  # type: ignore[no-untyped-call]
        return pipe.execute(raise_on_error=False)


class Worqr(Shell):
    """A client of one worqr mesh: produce tasks, and optionally be a worker.

    See the README for the semantics of each method. Thread-safe for use from
    several threads; background threads run only after `start_worker()` or `on()`.
    """

    _redis: redis_py.Redis | RedisCluster

    def __init__(
        self,
        url: str | None = None,
        *,
        prefix: str | None = None,
        redis: redis_py.Redis | RedisCluster | None = None,
        subscriber: redis_py.Redis | RedisCluster | None = None,
        ttl: float | None = None,
        heartbeat: float | None = None,
        max_recoveries: int | None = None,
        settings: Settings | None = None,
        cluster: bool = False,
        sentinels: Iterable[tuple[str, int]] | None = None,
        service_name: str | None = None,
    ) -> None:
        super().__init__(
            url,
            settings,
            prefix=prefix,
            ttl=ttl,
            heartbeat=heartbeat,
            max_recoveries=max_recoveries,
            redis=redis,
            subscriber=subscriber,
            cluster=cluster,
            sentinels=sentinels,
            service_name=service_name,
            asynchronous=False,
        )
        self._pubsub: PubSub | ClusterSubscriber | None = None
        self._pubsub_guard = PubSubGuard()  # every use of _pubsub, from any thread
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    # -- driving plans ---------------------------------------------------------

    def _drive(self, plan: Plan[T], deadline: float | None = None) -> T:
        limit = self.settings.retry_deadline if deadline is None else deadline
        try:
            request = next(plan)
            while True:
                try:
                    reply = self._execute(request, limit)
                except Exception as error:  # handed to the plan, which may handle it
                    request = plan.throw(error)
                else:
                    request = plan.send(reply)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]

    def _execute(self, request: Request, deadline: float) -> Any:
        try:  # the fast path: most calls succeed at once, without a retry loop
            return self._execute_once(request)
        except Exception as error:
            if deadline <= 0 or not may_resend(request, error):
                raise final_error(request, error) from error
        try:
            for attempt in Retrying(**tenacity_options(request, deadline)):
                with attempt:
                    return self._execute_once(request)
        except Exception as error:
            raise final_error(request, error) from error
        raise AssertionError("unreachable")  # pragma: no cover

    def _execute_once(self, request: Request) -> Any:
        if isinstance(request, Subscribe):
            self._pubsub_guard.apply(self._ensure_listener(), request)
            return None
        if isinstance(request, Pinned):
            if isinstance(self._redis, RedisCluster):
                return self._pinned_on_cluster(self._redis, request)
            return _pipeline(self._redis, commands(request))
        if request.script is None:
            return self._redis.execute_command(*request.args)  # type: ignore[no-untyped-call]
        # EVALSHA straight away (redis-py's Script adds a fifth to a call's cost);
        # NOSCRIPT (after a restart or failover) loads the script and sends it again.
        keys = request.keys
        try:
            return self._redis.execute_command(  # type: ignore[no-untyped-call]
                "EVALSHA", digest(request.script), len(keys), *keys, *request.args
            )
        except NoScriptError:
            self._redis.script_load(source(request.script))
            return self._redis.execute_command(  # type: ignore[no-untyped-call]
                "EVALSHA", digest(request.script), len(keys), *keys, *request.args
            )

    def _pinned_on_cluster(self, cluster: RedisCluster, request: Pinned) -> list[Any]:
        route = cluster_route(request)
        try:
            step = next(route)
            while True:
                try:
                    if isinstance(step, Refresh):
                        cluster.nodes_manager.initialize()
                        reply = None
                    else:
                        node = cluster_node_client(cluster, target(cluster, step))
                        reply = _pipeline(node, step.commands)
                except Exception as error:
                    step = route.throw(error)
                else:
                    step = route.send(reply)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]

    # -- producing -------------------------------------------------------------

    def enqueue(self, queue: str, task: str | bytes) -> None:
        """Add one task to the back of ``queue``."""
        self._drive(self._core.enqueue_many(queue, [task]))

    def enqueue_many(self, queue: str, tasks: Iterable[str | bytes]) -> int:
        """Add tasks to the back of ``queue`` in order; returns how many."""
        return self._drive(self._core.enqueue_many(queue, tasks))

    def cancel_tasks(self, queue: str, task: str | bytes) -> int:
        """Cancel every copy of ``task``: queued copies are removed, in-process
        copies end and their workers are told. Returns how many copies."""
        return self._drive(self._core.cancel_tasks(queue, task))

    def delete_queue(self, queue: str) -> None:
        """Drop ``queue`` with its tasks and processes; listeners get "delete"."""
        self._drive(self._core.delete_queue(queue))

    # -- reading ---------------------------------------------------------------

    def get_queues(self) -> list[str]:
        return self._drive(self._core.get_queues())

    def get_workers(self) -> list[str]:
        return self._drive(self._core.get_workers())

    def get_working_queues(self, worker_id: str | None = None) -> list[str]:
        return self._drive(self._core.get_working_queues(worker_id))

    def get_worker_info(self, worker_id: str) -> dict[str, str]:
        return self._drive(self._core.get_worker_info(worker_id))

    def count_tasks(self, queue: str) -> int:
        return self._drive(self._core.count_tasks(queue))

    def count_processes(self, queue: str) -> int:
        return self._drive(self._core.count_processes(queue))

    def count_failed(self, queue: str) -> int:
        return self._drive(self._core.count_failed(queue))

    def get_failed(self, queue: str) -> list[str | bytes]:
        return self._drive(self._core.get_failed(queue))

    def get_stats(self, queue: str) -> dict[str, int]:
        """Lifetime counters of ``queue`` by event: enqueued, dequeued, finished,
        stopped, released, recovered, dead_lettered, failed, cancelled, redriven."""
        return self._drive(self._core.get_stats(queue))

    def workers_alive(self, worker_ids: Iterable[str]) -> list[bool]:
        """Whether each worker's lease currently exists."""
        return self._drive(self._core.workers_alive(worker_ids))

    def count_worker_processes(self, queue: str, worker_id: str) -> int:
        return self._drive(self._core.count_worker_processes(queue, worker_id))

    def requeue_failed(self, queue: str) -> int:
        """Move the dead letters of ``queue`` to its back, oldest first; returns how many."""
        return self._drive(self._core.requeue_failed(queue))

    def purge_failed(self, queue: str) -> int:
        """Drop the dead letters of ``queue``; returns how many."""
        return self._drive(self._core.purge_failed(queue))

    # -- working ---------------------------------------------------------------

    def start_worker(self) -> str:
        """Register in the mesh and start the heartbeat and peer supervision."""
        with self._lock:
            if self._core.worker_id is not None:
                return self._core.worker_id
            worker = self._drive(self._core.start_worker())
            self._spawn("worqr-heartbeat", self._heartbeat_loop)
            return worker

    def start_work(self, queue: str) -> None:
        self._drive(self._core.start_work(queue))

    def stop_work(self, queue: str) -> None:
        """Stop working on ``queue``; its processes go back to the front."""
        self._drive(self._core.stop_work(queue))

    def on(self, queue: str, callback: Callback) -> None:
        """Call ``callback(event, message)`` for "work", "cancel" and "delete"."""
        self._drive(self._core.on(queue, callback))

    def dequeue(self, queue: str) -> Process | None:
        """Take the task at the front of ``queue``, or None when it is empty."""
        taken = self._drive(self._core.dequeue(queue, 1))
        return taken[0] if taken else None

    def dequeue_many(self, queue: str, count: int) -> list[Process]:
        """Take up to ``count`` tasks from the front of ``queue`` in one call."""
        return self._drive(self._core.dequeue(queue, count))

    def finish_process(self, process: str | Process) -> bool:
        return self._drive(self._core.finish_process(process))

    def complete(
        self, queue: str, finished: Iterable[str | Process], count: int = 0
    ) -> tuple[list[bool], list[Process]]:
        """Finish processes of ``queue`` and take up to ``count`` more tasks from its
        front, in one script call. Returns a flag per finished process (False: it no
        longer existed, as `finish_process`) and the new processes."""
        return self._drive(self._core.complete(queue, finished, count))

    def stop_process(self, process: str | Process) -> bool:
        return self._drive(self._core.stop_process(process))

    def fail_process(self, process: str | Process) -> bool:
        """Dead-letter a process whose task failed; False if it no longer exists."""
        return self._drive(self._core.fail_process(process))

    def processes_exist(self, queue: str, pids: Iterable[str]) -> list[bool]:
        """Whether each process still exists (not finished, cancelled or failed over)."""
        return self._drive(self._core.processes_exist(queue, pids))

    def configure_queue(self, queue: str, *, max_recoveries: int | None) -> None:
        """Per-queue options shared by the mesh; max_recoveries=-1: never dead-letter."""
        self._drive(self._core.configure_queue(queue, max_recoveries=max_recoveries))

    def fail_worker(self) -> int:
        return self._drive(self._core.fail_worker())

    def reconcile(self) -> int:
        """Return to the front the processes Redis says this worker holds but this
        client no longer runs (acknowledgements Redis lost, e.g. in a failover);
        heartbeats do it after an outage. Returns how many."""
        return self._drive(self._core.reconcile())

    def reap(self) -> int:
        return self._drive(self._core.reap())

    def heartbeat(self) -> str:
        """Run one heartbeat now (the background thread does it every interval)."""
        return self._drive(self._core.heartbeat(), deadline=0)

    # -- background loops --------------------------------------------------------

    def _spawn(self, name: str, target: Any) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _heartbeat_loop(self) -> None:
        outage = OutageLog("heartbeat", self._core.emit)
        interval = self.settings.heartbeat
        while not self._stopping.wait(outage.backoff() if outage.since else interval):
            try:
                self._drive(self._core.heartbeat(), deadline=0)
                outage.ok()
            except Exception as error:
                self._core.emit("heartbeat_failed", error=type(error).__name__)
                outage.failed(error)

    def _ensure_listener(self) -> PubSub | ClusterSubscriber:
        with self._lock:
            if self._pubsub is None:
                if self._cluster:
                    self._pubsub = ClusterSubscriber(
                        self._subscriber or self._redis,
                        subscriber_options(self.settings),
                        sharded=self._core.sharded,
                    )
                else:
                    if self._subscriber is None:
                        self._subscriber = subscriber_client(
                            self._url, self.settings, asynchronous=False, sentinel=self._sentinel
                        )
                    self._pubsub = self._subscriber.pubsub()
                self._pubsub_guard.start()
                self._spawn("worqr-listener", self._listen_loop)
            return self._pubsub

    def _listen_loop(self) -> None:
        pubsub = self._pubsub
        assert pubsub is not None
        guard = self._pubsub_guard
        outage = OutageLog("listener", self._core.emit)
        next_poll = time.monotonic() + self.settings.poll_interval
        while not self._stopping.is_set():
            wait = min(0.25, max(0.0, next_poll - time.monotonic()))
            try:
                if isinstance(pubsub, ClusterSubscriber):  # its own readers and queue
                    message = pubsub.get_message(timeout=wait)
                else:
                    message = guard.next_message(pubsub, wait)
                outage.ok()
            except Exception as error:
                outage.failed(error)
                guard.sleep(outage.backoff())  # close() wakes it
                continue
            events = self._core.parse_message(message) if message else []
            if time.monotonic() >= next_poll:
                events += self._core.poll_events()
                next_poll = time.monotonic() + self.settings.poll_interval
            for queue, event, payload in events:
                for callback in self._core.listeners(queue):
                    try:
                        callback(event, payload)
                    except Exception:
                        logger.exception("listener of queue %r failed on %r", queue, event)

    # -- closing ---------------------------------------------------------------

    def close(self) -> None:
        """Leave the mesh (processes go back to the front) and close connections."""
        try:
            if self._core.worker_id is not None:
                self._drive(self._core.deregister())
        finally:
            self._stopping.set()
            self._pubsub_guard.wake()
            for thread in self._threads:
                if thread is not threading.current_thread():
                    thread.join(timeout=5)
            self._pubsub_guard.close(self._pubsub)
            if self._own_subscriber and self._subscriber is not None:
                self._subscriber.close()
            if self._own_redis:
                self._redis.close()

    def __enter__(self) -> Worqr:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
