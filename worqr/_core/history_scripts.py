"""One builder per Lua script of the metrics history (``worqr/lua/history_*.lua``),
as `job_scripts` holds the job layer's."""

from __future__ import annotations

from collections.abc import Sequence

from .._keys import QueueKeys
from .calls import Call

Update = tuple[str, str, str, str]
"""One update of `history_add`: the block's index in ``blocks`` (1-based),
field, tally text, expire_at (epoch seconds)."""


def history_add(keys: QueueKeys, blocks: Sequence[str], updates: Sequence[Update]) -> Call:
    # Adds counts: a resend after the script ran would count them twice.
    return Call(
        "history_add",
        tuple(keys.history(block) for block in blocks),
        tuple(field for update in updates for field in update),
        idempotent=False,
    )


def history_read(keys: QueueKeys, blocks: Sequence[str]) -> Call:
    return Call("history_read", tuple(keys.history(block) for block in blocks), ())
