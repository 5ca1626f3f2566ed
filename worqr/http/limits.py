"""A job queue's traffic limits over HTTP: read them (with whether they hold
the queue back now), and change them as `configure_queue` does: a field not
given stays as it is, null removes it, and a bad value changes nothing. And
its durable pause, or a schedule's (`pause`, `resume`, `pause_schedule`,
`resume_schedule`)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from .._errors import WrongQueueKindError
from .config import client_of
from .errors import ApiError, bad_request
from .models import LimitsBody, PauseBody
from .operations import Answer, Operation, reply
from .replies import LimitsReply, PausedReply
from .views import limits_reply


async def get_limits(request: Request, queue: str) -> Response:
    return reply(limits_reply(await client_of(request).get_limits(queue)))


async def set_limits(request: Request, queue: str, body: LimitsBody) -> Response:
    """Change ``rate`` and/or ``max_active``; answers with the limits as they are
    then. A queue with neither becomes a job queue, as with `configure_queue`."""
    client = client_of(request)
    try:
        await client.configure_queue(queue, **body.changes())
    except WrongQueueKindError:
        raise
    except (TypeError, ValueError) as error:  # raised before anything is written
        raise bad_request("invalid_option", str(error)) from None
    return reply(limits_reply(await client.get_limits(queue)))


async def pause(request: Request, queue: str, body: PauseBody) -> Response:
    """Pause the queue (a new queue becomes a job queue), one of its groups, or its schedule."""
    return await _pausing(request, queue, body, paused=True)


async def resume(request: Request, queue: str, body: PauseBody) -> Response:
    """Resume the queue (idle workers are woken for its ready jobs), its group, or its schedule."""
    return await _pausing(request, queue, body, paused=False)


async def _pausing(request: Request, queue: str, body: PauseBody, *, paused: bool) -> Response:
    client = client_of(request)
    if body.schedule is None:
        await (client.pause if paused else client.resume)(queue, group=body.group)
        if body.group is not None:
            return reply(PausedReply(paused=paused, group=body.group))
        return reply(PausedReply(paused=paused))
    change = client.pause_schedule if paused else client.resume_schedule
    if not await change(queue, body.schedule):
        raise ApiError(
            404, "schedule_not_found", f"queue {queue!r} has no schedule {body.schedule!r}"
        )
    return reply(PausedReply(paused=paused, schedule=body.schedule))


LIMITS = "/v1/queues/{queue}/limits"

OPERATIONS = [
    Operation(
        "GET",
        LIMITS,
        "getLimits",
        "a job queue's traffic limits, and whether they hold it back now",
        get_limits,
        {200: Answer(LimitsReply, "the limits")},
        errors=(409,),
    ),
    Operation(
        "PUT",
        LIMITS,
        "setLimits",
        "change them: a field not given stays, null removes it",
        set_limits,
        {200: Answer(LimitsReply, "the limits now")},
        errors=(409,),
        body=LimitsBody,
    ),
    Operation(
        "POST",
        "/v1/queues/{queue}/pause",
        "pauseQueue",
        "pause a job queue on every worker until resumed (active jobs finish); with a "
        "group, that fair-share group (the others run on); with a schedule's name, that "
        "schedule (it fires nothing until resumed)",
        pause,
        {200: Answer(PausedReply, "paused")},
        errors=(404, 409),
        body=PauseBody,
        body_required=False,
    ),
    Operation(
        "POST",
        "/v1/queues/{queue}/resume",
        "resumeQueue",
        "resume a paused job queue (idle workers are woken for its ready jobs), or its "
        "group, or with a schedule's name, that schedule (the fires it missed give one job)",
        resume,
        {200: Answer(PausedReply, "resumed")},
        errors=(404,),
        body=PauseBody,
        body_required=False,
    ),
]
