"""The I/O requests the sans-I/O core yields, and which of them may be resent.

A *plan* is a generator that yields `Call`, `Subscribe` or `Sleep` requests
and receives their replies. The sync and async clients drive the same plans; only
the code that waits on a socket comes in two colours.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeAlias, TypeVar

from redis.exceptions import AuthenticationError, AuthorizationError, NoScriptError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

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


def script(
    name: str, keys: tuple[str, ...], args: tuple[Arg, ...], *, idempotent: bool = True
) -> Call:
    return Call(name, keys, args, idempotent)


def command(*args: Arg, idempotent: bool = True) -> Call:
    return Call(None, (), args, idempotent)


@dataclass(frozen=True, slots=True)
class Subscribe:
    """Change the pub/sub subscriptions of the client's subscriber connection."""

    add: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()


Request: TypeAlias = Call | Subscribe
T = TypeVar("T")
Plan: TypeAlias = Generator[Request, Any, T]


def never_sent(error: BaseException) -> bool:
    """True when the command certainly never reached Redis (the connect failed).

    redis-py reports connect failures as ``Error ... connecting to HOST`` or
    ``Timeout connecting to server``; a failure while reading a reply is
    ambiguous: Redis may have applied the command.
    """
    return isinstance(error, RedisConnectionError | RedisTimeoutError) and (
        "connecting to" in str(error)
    )


def is_connection_error(error: BaseException) -> bool:
    # redis-py derives its auth errors from ConnectionError, but a wrong password
    # is not an outage: resending it until the deadline only hides the cause.
    if isinstance(error, AuthenticationError | AuthorizationError):
        return False
    return isinstance(error, RedisConnectionError | RedisTimeoutError)


def may_resend(call: Request, error: BaseException) -> bool:
    # NOSCRIPT means the script did not run, so any call may be resent. redis-py
    # reloads a script once; a second flush (SCRIPT FLUSH, another failover)
    # between that reload and its retry still reaches us.
    if isinstance(error, NoScriptError):
        return True
    if not is_connection_error(error):
        return False
    if isinstance(call, Subscribe):
        return True
    return call.idempotent or never_sent(error)
