"""Running plans: the one executor of both clients.

Written once, in ``async_exec.py`` (asyncio: the executor of `AsyncWorqr`);
``tools/unasync.py`` writes ``sync_exec.py`` from it (blocking: the executor of
`Worqr`, of the lease thread of `AsyncWorqr`, of a worker's lanes and of the
exporter's reads), and ``make lint`` fails when that copy is stale. What the two
colours do differently is one small function or name each in ``async_seams.py``
and ``sync_seams.py``, imported under the same names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from redis.exceptions import NoScriptError, OutOfMemoryError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from tenacity import AsyncRetrying

from .._core.calls import Call, Listen, Pinned, Plan, Request, Subscribe, may_resend
from .._core.failures import final_error
from .._core.lua import digest, function_error, function_name, library, source
from .._core.pinned import Refresh, cluster_route, commands, unknown_scripts
from .._settings import Settings
from . import resend
from .async_seams import (
    Client,
    Cluster,
    Subscriber,
    Waiter,
    honour_cancel,
    node_pipeline,
    pipeline,
    ready,
    timer,
    wait_signal,
)

T = TypeVar("T")

BY_EVALSHA = object()
"""`AsyncExecutor._fcall`'s answer for a call that must go by ``EVALSHA``."""


class AsyncExecutor:
    """Executes what plans yield on one redis-py client (standalone, Sentinel
    or Cluster), resending what is safe for the deadline (`resend`).
    ``subscribe`` carries out `Subscribe` requests and ``add_waiter`` registers
    the waiters of `Listen` (None: a plan must not yield them).
    ``command_timeout``: seconds each command gets, for a client whose
    connections have no socket timeout (None: theirs bounds each call)."""

    def __init__(
        self,
        redis: Client,
        settings: Settings,
        subscribe: Subscriber | None = None,
        add_waiter: Callable[[tuple[str, str, str], Waiter], None] | None = None,
        command_timeout: float | None = None,
    ) -> None:
        self.redis = redis
        self._redis: Any = redis  # (redis-py's sync clients are not fully annotated)
        self.settings = settings
        # Scripts run as Redis functions (`lua.library`) until this server or user
        # turns out not to run them; never on a cluster, whose client would ask
        # a node for an FCALL's keys first.
        self._functions = not isinstance(redis, Cluster)
        self._subscribe = subscribe
        self._add_waiter = add_waiter
        self._command_timeout = command_timeout

    async def drive(self, plan: Plan[T], deadline: float | None = None) -> T:
        """Run ``plan``; resend what is safe for ``deadline`` seconds (default
        `Settings.retry_deadline`; 0: never)."""
        limit = self.settings.retry_deadline if deadline is None else deadline
        try:
            request = next(plan)
            while True:
                try:
                    reply = await self.execute(request, limit)
                except Exception as error:  # handed to the plan, which may handle it
                    request = plan.throw(error)
                else:
                    request = plan.send(reply)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]

    async def execute(self, request: Request, deadline: float) -> Any:
        try:  # the fast path: most calls succeed at once, without a retry loop
            return await self._execute_once(request)
        except Exception as error:
            if deadline <= 0 or not may_resend(request, error):
                raise final_error(request, error) from error
        try:
            async for attempt in AsyncRetrying(**resend.tenacity_options(request, deadline)):
                with attempt:
                    return await self._execute_once(request)
        except Exception as error:
            raise final_error(request, error) from error
        raise AssertionError("unreachable")  # pragma: no cover

    async def _execute_once(self, request: Request) -> Any:
        return await honour_cancel(self._send(request))

    async def _send(self, request: Request) -> Any:
        if isinstance(request, Call | Pinned):  # nearly every request: first
            limit = self._command_timeout
            if limit is None:  # the client's own socket timeout bounds each read
                return await self._command(request)
            scope = timer(limit)
            try:
                async with scope:
                    return await self._command(request)
            except TimeoutError as error:
                if not scope.expired():
                    raise
                # redis-py's own words for a reply that did not come: ambiguous, as
                # when its socket_timeout fires (the connection is closed either way).
                raise RedisTimeoutError(f"Timeout reading a reply ({limit:g} s)") from error
        if isinstance(request, Subscribe):
            if self._subscribe is None:
                raise TypeError("this executor has no subscriber")
            await self._subscribe(request)
            return None
        if isinstance(request, Listen):
            if self._add_waiter is None:
                raise TypeError("this executor has no listener")
            waiter = Waiter()
            self._add_waiter(request.key, waiter)
            return waiter
        await wait_signal(request.waiter, request.timeout)  # a Wait
        request.waiter.clear()
        return None

    async def _command(self, request: Call | Pinned) -> Any:
        """Run a request that talks to Redis: a command, a script or a pinned group."""
        redis = self._redis
        if isinstance(request, Pinned):
            if isinstance(redis, Cluster):
                return await self._pinned_on_cluster(redis, request)
            return await pipeline(redis, commands(request))
        if request.script is None:
            return await redis.execute_command(*request.args)
        keys = request.keys
        if self._functions:
            reply = await self._fcall(redis, request)
            if reply is not BY_EVALSHA:
                return reply
        # EVALSHA straight away (redis-py's Script adds a fifth to a call's cost);
        # NOSCRIPT (after a restart or failover) loads the script and sends it again.
        try:
            return await redis.execute_command(
                "EVALSHA", digest(request.script), len(keys), *keys, *request.args
            )
        except NoScriptError:
            await redis.script_load(source(request.script))
            return await redis.execute_command(
                "EVALSHA", digest(request.script), len(keys), *keys, *request.args
            )

    async def _fcall(self, redis: Any, request: Call) -> Any:
        """``request`` as an ``FCALL`` of its script's function: its reply, or
        `BY_EVALSHA` when it must go by ``EVALSHA`` instead. Redis at maxmemory
        refuses a function (not flagged ``allow-oom``) before it runs, and
        refuses a script's write only if it is its first: nothing was written,
        and ``EVALSHA`` applies Redis's rule for scripts (a script whose first
        write frees memory runs; one whose first write grows it is refused)."""
        assert request.script is not None
        keys, name = request.keys, function_name(request.script)
        for _ in range(2):  # a second time once the missing function is loaded
            try:
                return await redis.execute_command("FCALL", name, len(keys), *keys, *request.args)
            except OutOfMemoryError:
                return BY_EVALSHA
            except ResponseError as error:
                state = function_error(error)
                if state is None:
                    raise  # the script's own error
                if state == "unsupported":
                    self._functions = False  # Redis 6.2, or an ACL without FCALL: for good
                    return BY_EVALSHA
                if not await self._load(redis, request.script):
                    return BY_EVALSHA
        return BY_EVALSHA  # Redis lost it again at once (FUNCTION FLUSH): not worth a fight

    async def _load(self, redis: Any, script: str) -> bool:
        """Load ``script``'s library; False when this server or user cannot run
        functions (Redis 6.2, an ACL without FCALL or FUNCTION: `_functions` off
        for good) or cannot load it now (at maxmemory)."""
        try:
            await redis.execute_command("FUNCTION", "LOAD", library(script))
        except OutOfMemoryError:
            return False
        except ResponseError as error:
            state = function_error(error)
            if state == "loaded":
                return True  # another client loaded it first
            if state != "unsupported":
                raise
        else:
            return True
        self._functions = False
        return False

    async def _pinned_on_cluster(self, cluster: Cluster, request: Pinned) -> list[Any]:
        await ready(cluster)
        route = cluster_route(request)
        try:
            step = next(route)
            while True:
                try:
                    if isinstance(step, Refresh):
                        await cluster.nodes_manager.initialize()
                        reply = None
                    else:
                        reply = await node_pipeline(cluster, step)
                except Exception as error:
                    step = route.throw(error)
                else:
                    step = route.send(reply)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]

    async def batch(self, calls: Sequence[Call]) -> list[Any]:
        """The replies of independent reads, pipelined in one round trip, each
        routed by the client (on a cluster: by its keys to their node); the
        first error reply is raised. Scripts go as plain ``EVALSHA`` commands
        (redis-py's cluster pipeline refuses ``evalsha()``): when Redis did not
        know one (NOSCRIPT), it is loaded (on a cluster: on every master) and the
        batch sent again. Nothing else is resent (the exporter's reads)."""
        sent = commands(Pinned(tuple(calls)))
        replies = await pipeline(self._redis, sent)
        unknown = unknown_scripts(calls, replies)
        if unknown:
            for name in unknown:
                await self._redis.script_load(source(name))
            replies = await pipeline(self._redis, sent)
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        return replies
