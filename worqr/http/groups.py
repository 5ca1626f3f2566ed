"""A job queue's fair-share groups over HTTP: a page of them (`get_groups`),
and one group's own limits read and changed as `configure_group` does (a
field not given stays, null removes it, a bad value changes nothing). A
group's pause is the queue's pause with ``{"group": ...}`` (`limits`)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from .._errors import WrongQueueKindError
from .config import client_of
from .errors import bad_request
from .models import LimitsBody, PageQuery
from .operations import Answer, Operation, reply
from .replies import GroupPage, LimitsReply
from .views import group_reply, limits_reply


async def list_groups(request: Request, queue: str, query: PageQuery) -> Response:
    """The groups with waiting or active jobs, limits of their own or a pause."""
    groups, cursor = await client_of(request).get_groups(
        queue, limit=query.limit, cursor=query.cursor
    )
    return reply(GroupPage(groups=[group_reply(info) for info in groups], cursor=cursor))


async def get_group_limits(request: Request, queue: str, group: str) -> Response:
    return reply(limits_reply(await client_of(request).get_limits(queue, group=group)))


async def set_group_limits(request: Request, queue: str, group: str, body: LimitsBody) -> Response:
    """Change the group's own ``rate`` and/or ``max_active``; answers with the
    limits in force then (its own, else the queue's for every group)."""
    client = client_of(request)
    try:
        await client.configure_group(queue, group, **body.changes())
    except WrongQueueKindError:
        raise
    except (TypeError, ValueError) as error:  # raised before anything is written
        raise bad_request("invalid_option", str(error)) from None
    return reply(limits_reply(await client.get_limits(queue, group=group)))


GROUP_LIMITS = "/v1/queues/{queue}/groups/{group}/limits"

OPERATIONS = [
    Operation(
        "GET",
        "/v1/queues/{queue}/groups",
        "listGroups",
        "a page of a job queue's fair-share groups: those with waiting or active jobs, "
        "limits of their own or a pause",
        list_groups,
        {200: Answer(GroupPage, "the groups, and the next page's cursor")},
        query=PageQuery,
    ),
    Operation(
        "GET",
        GROUP_LIMITS,
        "getGroupLimits",
        "a group's limits in force (its own, else the queue's for every group), its "
        "active jobs, its pause, and whether they hold it back now",
        get_group_limits,
        {200: Answer(LimitsReply, "the limits")},
    ),
    Operation(
        "PUT",
        GROUP_LIMITS,
        "setGroupLimits",
        "change the group's own limits: a field not given stays, null removes it",
        set_group_limits,
        {200: Answer(LimitsReply, "the limits in force now")},
        errors=(409,),
        body=LimitsBody,
    ),
]
