"""A job queue's traffic limits over HTTP: read them (with whether they hold
the queue back now), and change them as `configure_queue` does: a field not
given stays as it is, null removes it, and a bad value changes nothing."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from .._core.limits import UNSET, QueueLimits
from .._errors import WrongQueueKindError
from .auth import protected
from .config import client_of
from .errors import bad_request
from .inputs import json_object, queue_of

RATE_FIELDS = {"starts", "seconds"}


def limits_json(limits: QueueLimits) -> dict[str, Any]:
    """`QueueLimits.as_json`, with the rate named as the PUT body names it."""
    rate = None if limits.rate is None else {"starts": limits.rate[0], "seconds": limits.rate[1]}
    return {**limits.as_json(), "rate": rate}


def _rate(value: object) -> tuple[Any, Any] | None:
    """``{"starts": n, "seconds": s}`` as configure_queue's ``rate`` (null: none);
    configure_queue checks the numbers themselves."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != RATE_FIELDS:
        raise bad_request(
            "invalid_option", 'rate must be null or {"starts": N, "seconds": S}, both given'
        )
    return value["starts"], value["seconds"]


async def get_limits(request: Request) -> Response:
    queue = queue_of(request)
    return JSONResponse(limits_json(await client_of(request).get_limits(queue)))


async def set_limits(request: Request) -> Response:
    """Change ``rate`` and/or ``max_active``; answers with the limits as they are
    then. A queue with neither becomes a job queue, as with `configure_queue`."""
    queue = queue_of(request)
    body = await json_object(request, {"rate", "max_active"})
    rate = _rate(body["rate"]) if "rate" in body else UNSET
    cap = body.get("max_active", UNSET)
    client = client_of(request)
    try:
        await client.configure_queue(queue, rate=rate, max_active=cap)
    except WrongQueueKindError:
        raise
    except (TypeError, ValueError) as error:  # raised before anything is written
        raise bad_request("invalid_option", str(error)) from None
    return JSONResponse(limits_json(await client.get_limits(queue)))


ROUTES: list[BaseRoute] = [
    Route("/v1/queues/{queue}/limits", protected(get_limits), methods=["GET"]),
    Route("/v1/queues/{queue}/limits", protected(set_limits), methods=["PUT"]),
]
