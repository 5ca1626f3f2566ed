"""`Dedup`: a submit's deduplication key and mode (``submit(dedup=...)``).

The modes, kept by ``lua/lib/dedup.lua`` in one script with the submit:

- ``throttle``: for ``ttl`` seconds after the submit that created a job with the
  key, submits with it create nothing and return that job (``duplicate=True``).
- ``debounce``: while the key's job is delayed or queued, a submit replaces its
  payload and options (a ``delay`` moves its due time to now + delay) and returns
  it: a burst of submits gives one run, with the last payload.
- ``keep_last``: as ``debounce`` while the job waits; while it runs, the first
  submit creates one follow-up job (``waiting`` until the run ends, then
  queued) and later ones replace the follow-up's payload. Never two runs at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ._checks import optional_seconds
from ._jobs import ms, validate_like_id

DedupMode = Literal["throttle", "debounce", "keep_last"]

MODE_CODES: dict[str, str] = {"throttle": "t", "debounce": "b", "keep_last": "l"}


@dataclass(frozen=True, slots=True)
class Dedup:
    """A dedup key (the job-id rules) and its mode; ``ttl`` seconds, given with
    ``throttle`` only (required there). Bad values raise `ValueError` or
    `TypeError` when it is made."""

    key: str
    ttl: float | None = None
    mode: DedupMode = "throttle"

    def __post_init__(self) -> None:
        validate_like_id("dedup key", self.key)
        if not isinstance(self.mode, str):
            raise TypeError(f"dedup mode must be str, not {type(self.mode).__name__}")
        if self.mode not in MODE_CODES:
            raise ValueError(
                f"dedup mode must be one of {', '.join(MODE_CODES)}, got {self.mode!r}"
            )
        ttl = optional_seconds("dedup ttl", self.ttl, above=True)
        if self.mode == "throttle" and ttl is None:
            raise ValueError("dedup mode 'throttle' needs a ttl (seconds)")
        if self.mode != "throttle" and ttl is not None:
            raise ValueError(f"dedup mode {self.mode!r} takes no ttl (throttle only)")
        object.__setattr__(self, "ttl", ttl)

    def as_options(self) -> dict[str, Any]:
        """The record's short keys job_submit reads: D the key, M the mode, L the ttl ms."""
        options: dict[str, Any] = {"D": self.key, "M": MODE_CODES[self.mode]}
        if self.ttl is not None:
            options["L"] = max(1, ms(self.ttl))
        return options
