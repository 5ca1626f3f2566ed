"""Sending a `Pinned` group: the commands it becomes and, on Redis Cluster, the
node they go to and what a redirection changes. Sans-I/O, shared by both clients.

``WAIT`` counts the replicas of the connection it runs on, so the group must not
be split over nodes: redis-py's cluster pipeline would route the ``EVALSHA`` by
key and the key-less ``WAIT`` elsewhere. On a cluster the whole group is
pipelined on one connection to the master that owns its first key's slot
(`cluster_route`). A ``MOVED``/``ASK`` answer means the script did not run, so
the group is sent again to the node named (after re-reading the slot map for
``MOVED``; behind ``ASKING`` for ``ASK``). Connection failures are raised as for
any call (an enqueue whose reply was lost is never resent) after the slot map is
re-read, so a resend that is safe finds the new master after a failover.

`loaded` sends a group whose scripts Redis may have forgotten (NOSCRIPT, after
a restart, a failover or ``SCRIPT FLUSH``): the plans' one way to reload them
on the group's own connection.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from redis.exceptions import (
    AskError,
    ClusterDownError,
    ClusterError,
    MovedError,
    NoScriptError,
    ResponseError,
    SlotNotCoveredError,
    TryAgainError,
)

from .calls import Arg, Call, Pinned, Plan, command, is_connection_error
from .lua import digest, source

REDIRECTS = 5  # MOVED/ASK answers followed per group before resending it later

Command = tuple[Arg, ...]
ASKING: Command = ("ASKING",)


def commands(request: Pinned, *, asking: bool = False) -> list[Command]:
    """The commands of ``request`` in order; scripts as plain ``EVALSHA`` (the plan
    handles NOSCRIPT). ``asking``: each call with keys behind ``ASKING``, which
    admits only the command right after it on an importing node."""
    sent: list[Command] = []
    for call in request.calls:
        if asking and call.keys:
            sent.append(ASKING)
        if call.script is None:
            sent.append(call.args)
        else:
            sent.append(("EVALSHA", digest(call.script), len(call.keys), *call.keys, *call.args))
    return sent


def unknown_scripts(calls: Sequence[Call], replies: Sequence[Any]) -> list[str]:
    """The scripts of the calls Redis answered NOSCRIPT (it did not run them),
    each once, in order."""
    unknown = (
        call.script
        for call, reply in zip(calls, replies, strict=True)
        if call.script is not None and isinstance(reply, NoScriptError)
    )
    return list(dict.fromkeys(unknown))


def loaded(request: Pinned) -> Plan[list[Any]]:
    """Send ``request`` and return its calls' replies, as ``yield request``
    does; when Redis did not know a script (NOSCRIPT), send again, as one group
    on one connection (on a cluster: the same node), ``SCRIPT LOAD`` of each
    script it did not know, then the calls from the first that answered
    NOSCRIPT on. The calls before it ran and are not sent again; it did not run.
    The calls after it that ran must be safe to send twice (a ``WAIT``, reads):
    if one is not, or NOSCRIPT comes back again (another flush meanwhile), the
    reply holds the NOSCRIPT error, for the plan to judge."""
    replies: list[Any] = yield request
    unknown = unknown_scripts(request.calls, replies)
    if not unknown:
        return replies
    first = next(i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError))
    again = request.calls[first:]
    ran = zip(again, replies[first:], strict=True)
    if any(not call.idempotent and not isinstance(reply, NoScriptError) for call, reply in ran):
        return replies
    loads = tuple(command("SCRIPT", "LOAD", source(name)) for name in unknown)
    resent: list[Any] = yield Pinned(loads + again)
    return [*replies[:first], *resent[len(loads) :]]


@dataclass(frozen=True, slots=True)
class Send:
    """Pipeline ``commands`` on one connection to ``address`` (host, port) if it is
    set and known, else to the master that owns ``key``'s slot; reply with the
    list of replies (errors Redis answered included, as in the plain case)."""

    key: str
    address: tuple[str, int] | None
    commands: list[Command]


@dataclass(frozen=True, slots=True)
class Refresh:
    """Re-read the cluster's slot map."""


Step = Send | Refresh


class Redirect(NamedTuple):
    ask: bool
    host: str
    port: int


def redirection(reply: object) -> Redirect | None:
    """The ``MOVED``/``ASK`` a reply is, if it is one. redis-py >= 8 parses them
    into `MovedError`/`AskError` on a plain node client too; older ones give a
    `ResponseError` with the raw text ("MOVED 3999 127.0.0.1:6381")."""
    if isinstance(reply, AskError):  # MovedError derives from AskError
        return Redirect(not isinstance(reply, MovedError), str(reply.host), int(reply.port))
    if isinstance(reply, ResponseError):
        kind, _, rest = str(reply).partition(" ")
        _, _, address = rest.partition(" ")
        host, _, port = address.rpartition(":")
        if kind in ("MOVED", "ASK") and host and port.isdigit():
            return Redirect(kind == "ASK", host, int(port))
    return None


def _refusal(reply: object) -> Exception | None:
    """A reply that must be raised rather than handed to the plan: a failed
    connection (redis.asyncio's node pipeline stores it as the reply), or
    ``TRYAGAIN``/``CLUSTERDOWN`` (nothing ran; `_calls.refused` resends them).
    redis-py < 8 parses the latter as a plain `ResponseError` outside its
    cluster client."""
    if not isinstance(reply, Exception):
        return None
    if not isinstance(reply, ResponseError):
        return reply
    if isinstance(reply, TryAgainError | ClusterDownError):
        return reply
    code = str(reply).split(" ", 1)[0]
    if code == "TRYAGAIN":
        return TryAgainError(str(reply))
    if code == "CLUSTERDOWN":
        return ClusterDownError(str(reply))
    return None


def _stale_map(error: BaseException) -> bool:
    """The node may be gone or no longer serve the slot: re-read the slot map."""
    return is_connection_error(error) or isinstance(error, SlotNotCoveredError | ClusterDownError)


def cluster_route(request: Pinned) -> Generator[Step, Any, list[Any]]:
    """Send ``request`` to its slot's master, following redirections; returns the
    replies of its calls. Driven by the client: it executes each `Send` and
    `Refresh`, sends back the replies, and throws in what they raised."""
    key = next((key for call in request.calls for key in call.keys), None)
    if key is None:
        raise ValueError("a pinned group needs a key to find its node on a cluster")
    address: tuple[str, int] | None = None
    asking = False
    for _ in range(REDIRECTS):
        sent = commands(request, asking=asking)
        try:
            replies = yield Send(key, address, sent)
            replies = [reply for cmd, reply in zip(sent, replies, strict=True) if cmd != ASKING]
            refusal = next(filter(None, map(_refusal, replies)), None)
            if refusal is not None:
                raise refusal
        except Exception as error:
            if _stale_map(error):
                # A failed refresh changes nothing: the next attempt tries again.
                with contextlib.suppress(Exception):
                    yield Refresh()
            raise
        redirect = next(filter(None, map(redirection, replies)), None)
        if redirect is None:
            return replies
        address, asking = (redirect.host, redirect.port), redirect.ask
        if not redirect.ask:  # the slot moved for good
            with contextlib.suppress(Exception):
                yield Refresh()
    raise ClusterError(
        f"TTL exhausted: the slot of {key!r} was redirected {REDIRECTS} times in a row "
        f"(last to {address}); nothing ran"
    )


def target(cluster: Any, step: Send) -> Any:
    """The node of a sync or asyncio ``RedisCluster`` that ``step`` goes to (a
    redirection to a node missing from the slot map falls back to the owner)."""
    if step.address is not None:
        node = cluster.get_node(host=step.address[0], port=step.address[1])
        if node is not None:
            return node
    return cluster.get_node_from_key(step.key)
