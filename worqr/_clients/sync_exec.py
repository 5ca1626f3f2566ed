"""Running plans with blocking calls: the sync client's executor, also used by
the lease thread of `AsyncWorqr` (`lease`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import redis as redis_py
from redis.cluster import RedisCluster
from redis.exceptions import NoScriptError
from tenacity import Retrying

from .._core.calls import Listen, Pinned, Plan, Request, Subscribe, Wait, may_resend
from .._core.failures import final_error
from .._core.lua import digest, source
from .._core.pinned import Command, Refresh, cluster_route, commands, target
from .._settings import Settings
from .connect import cluster_node_client
from .resend import tenacity_options

T = TypeVar("T")


def _pipeline(client: redis_py.Redis, sent: list[Command]) -> list[Any]:
    """Send commands back to back on one connection, without MULTI."""
    with client.pipeline(transaction=False) as pipe:
        for args in sent:
            pipe.execute_command(*args)  # type: ignore[no-untyped-call]
        return pipe.execute(raise_on_error=False)


class SyncExecutor:
    """Executes what plans yield on one sync redis-py client (standalone,
    Sentinel or Cluster), resending what is safe for the deadline.
    ``subscribe`` carries out `Subscribe` requests and ``add_waiter`` registers
    the waiters of `Listen` (None: a plan must not yield them)."""

    def __init__(
        self,
        redis: redis_py.Redis | RedisCluster,
        settings: Settings,
        subscribe: Callable[[Subscribe], None] | None = None,
        add_waiter: Callable[[tuple[str, str, str], threading.Event], None] | None = None,
    ) -> None:
        self.redis = redis
        self.settings = settings
        self._subscribe = subscribe
        self._add_waiter = add_waiter

    def drive(self, plan: Plan[T], deadline: float | None = None) -> T:
        limit = self.settings.retry_deadline if deadline is None else deadline
        try:
            request = next(plan)
            while True:
                try:
                    reply = self.execute(request, limit)
                except Exception as error:  # handed to the plan, which may handle it
                    request = plan.throw(error)
                else:
                    request = plan.send(reply)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]

    def execute(self, request: Request, deadline: float) -> Any:
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
        redis = self.redis
        if isinstance(request, Subscribe):
            if self._subscribe is None:
                raise TypeError("this executor has no subscriber")
            self._subscribe(request)
            return None
        if isinstance(request, Listen):
            if self._add_waiter is None:
                raise TypeError("this executor has no listener")
            event = threading.Event()
            self._add_waiter(request.key, event)
            return event
        if isinstance(request, Wait):
            request.waiter.wait(request.timeout)
            request.waiter.clear()
            return None
        if isinstance(request, Pinned):
            if isinstance(redis, RedisCluster):
                return self._pinned_on_cluster(redis, request)
            return _pipeline(redis, commands(request))
        if request.script is None:
            return redis.execute_command(*request.args)  # type: ignore[no-untyped-call]
        # EVALSHA straight away (redis-py's Script adds a fifth to a call's cost);
        # NOSCRIPT (after a restart or failover) loads the script and sends it again.
        keys = request.keys
        try:
            return redis.execute_command(  # type: ignore[no-untyped-call]
                "EVALSHA", digest(request.script), len(keys), *keys, *request.args
            )
        except NoScriptError:
            redis.script_load(source(request.script))
            return redis.execute_command(  # type: ignore[no-untyped-call]
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
