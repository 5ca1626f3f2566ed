"""Redis's own error replies, as the same exception classes on every supported server.

Redis 7 (and Valkey) pass an error that a script's command met straight
through, code first (``OOM command not allowed ... script: <sha>, on
@user_script:1.``), and redis-py parses the code into its class
(`OutOfMemoryError`). Redis 6.2 wraps it in a generic script error::

    Error running script (call to f_<sha>): @user_script:1: @user_script: 1: -OOM command ...

(or, from ``redis.pcall``, ``@user_script: 1: -OOM command ...``), which redis-py
leaves a plain `ResponseError`. `server_error` unwraps it into the class 7.x
gets. ``BUSY`` (a script of someone else's running too long) and ``MISCONF``
(Redis cannot persist, and refuses writes) have no class in redis-py on any
version: they become `RedisBusyError` and `RedisPersistenceError`.

=========  ======================================  ================================
code       class                                   worqr's clients
=========  ======================================  ================================
OOM        redis.exceptions.OutOfMemoryError       raise it (nothing applied)
READONLY   redis.exceptions.ReadOnlyError          raise it; through Sentinel a
                                                   demoted master: reconnect, resend
NOPERM     redis.exceptions.NoPermissionError      raise it
LOADING    redis.exceptions.BusyLoadingError       resend until the deadline
BUSY       worqr.RedisBusyError                    resend until the deadline
MISCONF    worqr.RedisPersistenceError             raise it (nothing applied)
NOSCRIPT   redis.exceptions.NoScriptError          load the script, resend
=========  ======================================  ================================
"""

from __future__ import annotations

import re

from redis.exceptions import (
    BusyLoadingError,
    NoPermissionError,
    NoScriptError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisError,
    ResponseError,
)

from .._errors import RedisBusyError, RedisPersistenceError

# Redis 6.2's wrapping of an error reply a command inside a script got: the
# optional outer "Error running script ..." (redis.call), then the inner
# "@user_script: N: -CODE message" (both redis.call and redis.pcall).
_WRAPPED = re.compile(
    r"(?:Error running script \(call to f_[0-9a-f]+\): @\S+:\d+: )?"
    r"@user_script: ?\d+: -(?P<code>[A-Z]+) (?P<message>.*)",
    re.DOTALL,
)

_CLASSES: dict[str, type[RedisError]] = {
    "OOM": OutOfMemoryError,
    "READONLY": ReadOnlyError,
    "NOPERM": NoPermissionError,
    "LOADING": BusyLoadingError,
    "NOSCRIPT": NoScriptError,
    "BUSY": RedisBusyError,
    "MISCONF": RedisPersistenceError,
}


def server_error(error: RedisError) -> RedisError:
    """``error`` as the class Redis 7's reply gets on every supported server;
    ``error`` itself when it is already that class or no server error we know.
    The message is Redis's, without its code (as redis-py makes it)."""
    if type(error) is not ResponseError:  # redis-py already chose a class (or it is ours)
        return error
    text = str(error)
    wrapped = _WRAPPED.fullmatch(text)
    if wrapped is not None:
        code, message = wrapped["code"], wrapped["message"]
    else:
        code, _, message = text.partition(" ")
    kind = _CLASSES.get(code)
    return error if kind is None else kind(message)
