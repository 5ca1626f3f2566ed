"""The wire format between a worker and its handler children.

A frame is a JSON header and a body of raw bytes, each preceded by its length:
``>II`` (header length, body length), the header, the body. Payloads, results
and progress values travel in the body as they are; nothing is pickled, so a
child can only tell the worker what these frames can say.

Worker to child: ``boot`` (once: sys.path and the handlers to import), then
``run`` frames, one job at a time. Child to worker: ``ready`` after its boot;
while a job runs, ``progress`` and ``job_log`` frames (a line of the job's
log); then one ``done`` or ``raised`` frame, with the child's resident memory
in bytes (``rss``) when the worker limits it.
"""

from __future__ import annotations

import asyncio
import json
import struct
from typing import IO, Any

LENGTHS = struct.Struct(">II")
MAX_HEADER_BYTES = 1 << 20  # a header is a few fields; more means a broken stream

Frame = tuple[dict[str, Any], bytes]


class BrokenStreamError(Exception):
    """The other side wrote something that is not a frame."""


_encode = json.JSONEncoder(separators=(",", ":")).encode  # made once: a frame per job
_decode = json.JSONDecoder().decode


def pack(header: dict[str, Any], body: bytes = b"") -> bytes:
    head = _encode(header).encode("utf-8")
    return LENGTHS.pack(len(head), len(body)) + head + body


def _unpack(lengths: bytes) -> tuple[int, int]:
    head_size, body_size = LENGTHS.unpack(lengths)
    if head_size > MAX_HEADER_BYTES:
        raise BrokenStreamError(f"a frame header of {head_size} bytes")
    return head_size, body_size


def _header(raw: bytes) -> dict[str, Any]:
    try:
        header = _decode(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise BrokenStreamError(f"a frame header that is not JSON: {error}") from None
    if not isinstance(header, dict) or not isinstance(header.get("t"), str):
        raise BrokenStreamError("a frame header without its type")
    return header


def read(stream: IO[bytes]) -> Frame | None:
    """The next frame from a blocking stream; None at its end."""
    lengths = _read_exactly(stream, LENGTHS.size)
    if lengths is None:
        return None
    head_size, body_size = _unpack(lengths)
    rest = _read_exactly(stream, head_size + body_size)  # one read, not two
    if rest is None:
        return None
    return _header(rest[:head_size]), rest[head_size:]


def _read_exactly(stream: IO[bytes], size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


async def read_async(reader: asyncio.StreamReader) -> Frame | None:
    """The next frame from an asyncio stream; None at its end (the child died)."""
    try:
        head_size, body_size = _unpack(await reader.readexactly(LENGTHS.size))
        rest = await reader.readexactly(head_size + body_size)  # one wait, not two
    except asyncio.IncompleteReadError:
        return None
    return _header(rest[:head_size]), rest[head_size:]
