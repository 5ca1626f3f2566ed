"""How the tests find worqr's script calls in what Redis logs and counts: a
script runs as a Redis function (``FCALL``, Redis >= 7) or by ``EVALSHA``
(Redis 6.2, a cluster, a pipeline of pinned calls)."""

from __future__ import annotations

from typing import Any

import redis

from worqr._core.lua import digest, function_error, function_name, library, script_names, source

SCRIPT_STATS = ("cmdstat_evalsha", "cmdstat_fcall")
"""The command statistics of script calls."""


def script_calls_run(raw: Any) -> int:
    """How many script calls the server has run (its command statistics)."""
    stats = raw.info("commandstats")
    return sum(int(stats.get(name, {}).get("calls", 0)) for name in SCRIPT_STATS)


def runs_script(command: bytes, name: str) -> bool:
    """Whether a logged command (a SLOWLOG entry's) is a call of script ``name``."""
    return command.startswith(b"EVALSHA " + digest(name).encode()) or command.startswith(
        b"FCALL " + function_name(name).encode()
    )


def is_script_call(command: bytes) -> bool:
    """Whether a logged command is any script's call."""
    return command.split(b" ", 1)[0].upper() in (b"EVALSHA", b"EVAL", b"FCALL")


def script_of_function(function: str) -> str | None:
    """The sha of the script whose Redis function is ``function`` (None: no worqr
    script's)."""
    shas = {function_name(name): digest(name) for name in script_names()}
    return shas.get(function)


def preload(raw: Any, name: str) -> None:
    """Load script ``name`` both ways ahead, so that a log of its calls shows no
    loading round (NOSCRIPT, "Function not found") first."""
    raw.script_load(source(name))
    try:
        raw.execute_command("FUNCTION", "LOAD", library(name))
    except redis.ResponseError as error:
        if function_error(error) not in ("loaded", "unsupported"):
            raise
