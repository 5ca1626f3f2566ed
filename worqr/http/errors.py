"""Every error the API answers, as JSON: ``{"error": {"code": ..., "message": ...}}``.

The codes are stable (clients branch on them); the messages name the problem
for a person. Library exceptions become API errors here and only here.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from redis.exceptions import RedisError, ResponseError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .._core.server_errors import server_error
from .._errors import (
    AmbiguousResultError,
    JobNotFoundError,
    RedisUnavailableError,
    WrongQueueKindError,
)

log = logging.getLogger("worqr.http")

# Reasons for the errors Starlette raises itself (routing).
_STARLETTE_CODES = {404: "not_found", 405: "method_not_allowed"}


class ApiError(HTTPException):
    """An answer other than success. A subclass of Starlette's `HTTPException`,
    so that an app mounted inside ours (the web view) still answers with the
    right status and headers even if it does not install our handlers."""

    def __init__(
        self, status: int, code: str, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(status, message, dict(headers) if headers else None)
        self.code = code
        self.message = message


def error_response(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


def bad_request(code: str, message: str) -> ApiError:
    return ApiError(400, code, message)


def job_not_found(queue: str, id: str) -> ApiError:
    return ApiError(404, "job_not_found", f"no job {id!r} on queue {queue!r} (or it was purged)")


async def _api_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    if isinstance(error, ApiError):
        return error_response(error.status_code, error.code, error.message, error.headers)
    code = _STARLETTE_CODES.get(error.status_code, "http_error")
    return error_response(error.status_code, code, str(error.detail), error.headers)


async def _wrong_kind(request: Request, error: Exception) -> Response:
    return error_response(409, "wrong_queue_kind", str(error))


async def _not_found(request: Request, error: Exception) -> Response:
    return error_response(404, "job_not_found", str(error))


async def _ambiguous(request: Request, error: Exception) -> Response:
    # The command may have been applied: say so, the client decides (a submit
    # with its own id creates nothing twice while that job lives; the message
    # says when sending it again could run it twice).
    return error_response(503, "ambiguous_result", str(error))


async def _unavailable(request: Request, error: Exception) -> Response:
    """Redis could not be reached, or refused the command for its own state
    (loading, busy, out of memory, read-only, cannot persist): try again later.
    An error reply about the command itself (``ERR invalid cursor``,
    ``WRONGTYPE``) is no outage: the request should have been refused before
    it reached Redis, so it is an internal error, logged as one."""
    if isinstance(error, ResponseError) and type(server_error(error)) is ResponseError:
        return await _internal(request, error)
    log.warning("Redis error on %s %s: %s", request.method, request.url.path, type(error).__name__)
    return error_response(503, "redis_unavailable", "Redis could not be reached or refused")


async def _internal(request: Request, error: Exception) -> Response:
    # The exception's type only: messages of unexpected errors are not vetted
    # to be free of payloads (the traceback goes to the server's own log).
    log.error("unexpected %s on %s %s", type(error).__name__, request.method, request.url.path)
    return error_response(500, "internal_error", "unexpected server error (see the server's log)")


EXCEPTION_HANDLERS: dict[Any, Any] = {
    HTTPException: _api_error,
    WrongQueueKindError: _wrong_kind,
    JobNotFoundError: _not_found,
    AmbiguousResultError: _ambiguous,
    RedisUnavailableError: _unavailable,
    RedisError: _unavailable,
    Exception: _internal,
}
"""What `create_app` installs; an app mounted inside it may install them too."""
