"""Whether a worker runs its handlers on lanes (`lanes`), and what they run on."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from .._clients.async_client import AsyncWorqr
from .._clients.sync_exec import SyncExecutor
from .._core.calls import Subscribe
from .capacity import Capacity
from .dispatch import Dispatcher
from .lane_calls import LaneCalls
from .lanes import Lanes

SUBSCRIBE_WAIT = 30.0  # seconds a lane waits for the loop to (re)subscribe a queue


def lane_executor(client: AsyncWorqr, loop: asyncio.AbstractEventLoop) -> SyncExecutor | None:
    """An executor of ``client``'s plans on a sync twin of its connection (None
    when a client passed in cannot be copied). Subscribing, which a take does
    when it rejoins a queue, is the loop's: the lane waits for it."""
    twin = client.internals.sync_twin()
    if twin is None:
        return None

    def subscribe(request: Subscribe) -> None:
        done = asyncio.run_coroutine_threadsafe(client.internals.execute_once(request), loop)
        done.result(SUBSCRIBE_WAIT)

    return SyncExecutor(twin, client.settings, subscribe)


def make_lanes(
    client: AsyncWorqr,
    dispatch: Dispatcher,
    capacity: Capacity,
    job_queues: frozenset[str],
    *,
    stopping: Callable[[], bool],
    size: int,
    take_ahead: bool,
) -> Lanes | None:
    """Lanes when every handler is sync and none persistent (and the client can
    be copied for them); else None, and handlers run as the loop starts them."""
    specs = dispatch.specs.values()
    if any(spec.is_async or spec.persistent for spec in specs):
        return None
    loop = asyncio.get_running_loop()
    executor = lane_executor(client, loop)
    if executor is None:
        return None
    dispatch.lanes = True
    return Lanes(
        LaneCalls(client.internals.core, executor, job_queues, dispatch, loop),
        loop=loop,
        size=size,
        dispatch=dispatch,
        capacity=capacity,
        hooks=dispatch.hooks,
        stopping=stopping,
        lease_fresh=lambda: client.lease_fresh(),
        fence_wait=client.settings.heartbeat / 4,
        take_ahead=take_ahead,
    )
