"""The I/O requests the sans-I/O core yields, and which of them may be resent.

A *plan* is a generator that yields `Call`, `Subscribe` or `Pinned` requests
and receives their replies. The sync and async clients drive the same plans; only
the code that waits on a socket comes in two colours.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeAlias, TypeVar

from redis.exceptions import (
    AuthenticationError,
    AuthorizationError,
    BusyLoadingError,
    ClusterDownError,
    ClusterError,
    NoScriptError,
    RedisClusterException,
    ResponseError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .._errors import RedisBusyError
from .server_errors import server_error

# What redis-py's Sentinel connection raises on a READONLY reply from a demoted master.
DEMOTED = "The previous master is now a slave"

Arg: TypeAlias = str | bytes | int | float


class Call(NamedTuple):
    """Run a Lua script (``script`` set) or a plain command (``args[0]`` its name).

    ``idempotent`` calls are resent after a connection failure; the others only
    when the failure certainly happened before the command was sent. (A named
    tuple: one is built per Redis call, and a frozen dataclass costs 4x as much.)
    """

    script: str | None
    keys: tuple[str, ...]
    args: tuple[Arg, ...]
    idempotent: bool = True


def command(*args: Arg, idempotent: bool = True, key: str | None = None) -> Call:
    """A plain command. ``key``: the key it reads or writes, which routes a
    `Pinned` group on a cluster (plain calls are routed by the client)."""
    return Call(None, (key,) if key else (), args, idempotent)


@dataclass(frozen=True, slots=True)
class Subscribe:
    """Change the pub/sub subscriptions of the client's subscriber connection."""

    add: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Pinned:
    """Send ``calls`` back to back on one connection (a pipeline without MULTI).

    For commands whose meaning depends on the connection, such as ``WAIT`` (it
    waits for the replication of *this connection's* writes). Script calls go
    as plain ``EVALSHA``. The reply is a list with each call's reply, or the
    error Redis answered it with (e.g. NOSCRIPT), for the plan to judge; a
    connection failure raises as for any call. On a cluster the group goes to
    the master of its first key's slot, following redirections (`_pinned`).
    """

    calls: tuple[Call, ...]

    @property
    def idempotent(self) -> bool:
        return all(call.idempotent for call in self.calls)


@dataclass(frozen=True, slots=True)
class Listen:
    """Get a waiter for ``key`` (a job's ``("done", queue, id)``): the client
    makes one its colour can wait on (something with ``set()``, ``clear()`` and
    ``wait``) and registers it with the core, whose listener sets it when the key
    is signalled. Reply: the waiter. It stays registered while the plan holds it."""

    key: tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class Wait:
    """Wait until ``waiter`` (from `Listen`) is set, or ``timeout`` seconds pass,
    then clear it. A signal that came since the last wait counts at once."""

    waiter: Any
    timeout: float


Request: TypeAlias = Call | Subscribe | Pinned | Listen | Wait
T = TypeVar("T")
Plan: TypeAlias = Generator[Request, Any, T]


def _cluster_unreachable(error: BaseException) -> bool:
    """redis-py's cluster client found no node to read the slot map from: it
    sent nothing (raised before any command, e.g. on its first use). Not when a
    node answered that it is no cluster node: that is a mistake, not an outage."""
    message = str(error)
    return (
        isinstance(error, RedisClusterException)
        and "cannot be connected" in message
        and "not enabled" not in message
    )


def never_sent(error: BaseException) -> bool:
    """True when the command certainly never reached Redis (the connect failed).

    redis-py reports connect failures as ``Error ... connecting to HOST`` or
    ``Timeout connecting to server``; a failure while reading a reply is
    ambiguous: Redis may have applied the command. Through Sentinel, no master
    known (mid-failover) and a master that turned replica (it refused the write
    with READONLY, which redis-py reports as a connection error) never applied it.
    """
    # Sentinel's MasterNotFoundError (sync and asyncio: two classes, one name, both
    # ConnectionErrors), matched by name to keep redis-py's clients out of the core.
    if isinstance(error, RedisConnectionError) and type(error).__name__ == "MasterNotFoundError":
        return True
    if isinstance(error, RedisConnectionError) and str(error) == DEMOTED:
        return True
    if _cluster_unreachable(error):
        return True
    return isinstance(error, RedisConnectionError | RedisTimeoutError) and (
        "connecting to" in str(error)
    )


def is_connection_error(error: BaseException) -> bool:
    # redis-py derives its auth errors from ConnectionError, but a wrong password
    # is not an outage: resending it until the deadline only hides the cause.
    if isinstance(error, AuthenticationError | AuthorizationError):
        return False
    return isinstance(error, RedisConnectionError | RedisTimeoutError) or _cluster_unreachable(
        error
    )


def refused(error: BaseException) -> bool:
    """True when Redis certainly did not run the command: any call may be resent.

    NOSCRIPT: redis-py reloads a script once; a second flush (SCRIPT FLUSH, another
    failover) between that reload and its retry still reaches us. On a cluster:
    TRYAGAIN (a slot half migrated), CLUSTERDOWN, a slot no node serves yet, and
    redis-py's "TTL exhausted" (raised only when MOVED/ASK/TRYAGAIN redirects ran
    out). MOVED and ASK themselves never reach worqr from a cluster client, which
    follows them; a standalone client that meets them talks to a cluster node by
    mistake, and resending cannot help (see `_retry.final_error`).

    And on any server: LOADING (it is reading its data after a restart) and BUSY
    (someone else's script runs past the time limit) refuse every command."""
    if isinstance(error, NoScriptError | TryAgainError | ClusterDownError | BusyLoadingError):
        return True
    if isinstance(error, ResponseError) and isinstance(server_error(error), RedisBusyError):
        return True
    if isinstance(error, SlotNotCoveredError):
        return True
    return isinstance(error, ClusterError) and "TTL exhausted" in str(error)


def may_resend(call: Request, error: BaseException) -> bool:
    if isinstance(call, Listen | Wait):
        return False  # they do no I/O: whatever they raise is final
    if refused(error):
        return True
    if not is_connection_error(error):
        return False
    if isinstance(call, Subscribe):
        return True
    return call.idempotent or never_sent(error)
