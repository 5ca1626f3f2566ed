"""What a call that failed for good raises. Shared by both clients.

Which failures may be resent is decided in `calls.may_resend`; the clients
resend with tenacity (`worqr._clients.resend`) and, when they give up, raise
`final_error`.
"""

from __future__ import annotations

from typing import Any

from redis.exceptions import AskError, NoScriptError, ResponseError

from .._errors import AmbiguousResultError, RedisBusyError, RedisUnavailableError, WorqrError
from .calls import Call, Pinned, Request, is_connection_error, never_sent, refused
from .lua import translate
from .server_errors import server_error


def describe(request: Request) -> str:
    if isinstance(request, Call):
        return f"script {request.script}" if request.script else f"command {request.args[0]!r}"
    if isinstance(request, Pinned):
        return " then ".join(describe(call) for call in request.calls)
    return "subscribe"


def _redirected(error: BaseException) -> bool:
    """A cluster redirection (redis-py < 8 parses it as a plain ResponseError
    outside a cluster client)."""
    if isinstance(error, AskError):
        return True
    return isinstance(error, ResponseError) and str(error).startswith(("MOVED ", "ASK "))


def final_error(request: Request, error: BaseException) -> BaseException:
    """What a call that failed for good raises: script error codes become worqr
    exceptions; connection trouble becomes ambiguous (maybe applied) or unavailable."""
    if _redirected(error):  # MOVED or ASK reached a standalone client
        return WorqrError(
            f"Redis answered {describe(request)} with a cluster redirection ({error}): "
            "it is a Redis Cluster node; connect with cluster=True (--cluster on the "
            "command line)"
        )
    if isinstance(error, ResponseError) and isinstance(server_error(error), RedisBusyError):
        return RedisBusyError(
            f"Redis was busy running another client's script, and refused "
            f"{describe(request)} until the retry deadline: {server_error(error)}"
        )
    if refused(error) and not isinstance(error, NoScriptError):
        # A cluster that kept redirecting (a slot migrating, no node serving it),
        # or a server still loading its data: nothing was applied.
        return RedisUnavailableError(
            f"Redis did not run {describe(request)}: {type(error).__name__}: {error}"
        )
    if isinstance(error, ResponseError):
        return translate(error)
    if is_connection_error(error):
        if isinstance(request, Call | Pinned) and not request.idempotent and not never_sent(error):
            return AmbiguousResultError(
                f"{describe(request)} may or may not have been applied: the connection "
                f"failed after it was sent ({type(error).__name__}: {error}); "
                "it was not resent, to avoid applying it twice"
            )
        return RedisUnavailableError(
            f"Redis is unavailable for {describe(request)}: {type(error).__name__}: {error}"
        )
    return error


def checked_replies(request: Pinned, replies: list[Any]) -> list[Any]:
    """The replies of a `Pinned` group of reads, or what the first error among
    them raises as a failed call would (a redirection on a standalone client
    says to connect with cluster=True)."""
    for reply in replies:
        if isinstance(reply, Exception):
            raise final_error(request, reply)
    return replies
