"""Checks of the numbers and flags the public API takes, in one place.

Every method that takes seconds, a count or a flag checks it here, so each one
refuses the same things with the same kind of error, before anything is
written: a wrong type (a ``bool`` is not a number here) raises `TypeError`;
NaN, an infinity, or a value outside what Redis and the millisecond arithmetic
hold raises `ValueError` naming the option and its bounds.
"""

from __future__ import annotations

import math
from typing import Final

MAX_SECONDS: Final = 1_000_000_000
"""The longest duration, in seconds (about 31.7 years). Every wait on this
machine holds it (threading's ``TIMEOUT_MAX`` is about 9.2e9 s, and a socket
timeout of 1e10 s overflows), and so do the scripts, which work in
milliseconds on Redis's clock: Lua prints a number with 14 significant digits
(``tostring``, cjson), so a time stays an exact integer below 10**14 ms."""

MAX_EPOCH_SECONDS: Final = 10_000_000_000
"""The latest epoch time, in seconds (the year 2286): 10**13 ms, still exact in Lua."""

MAX_COUNT: Final = 2**31 - 1
"""The largest count (retries, a cap, a batch): far past any real use, and
exact everywhere a count travels (Lua numbers, Redis integers, JSON)."""


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def number(
    name: str,
    value: object,
    *,
    low: float,
    high: float,
    above: bool = False,
    unit: str = "",
) -> float:
    """``value`` as a float when it is a finite number from ``low`` (excluded
    when ``above``) to ``high``; raises otherwise. ``unit`` names what it counts
    ("seconds") in the messages."""
    noun = f"a number of {unit}" if unit else "a number"
    if not _is_number(value):
        raise TypeError(f"{name} must be {noun}, not {type(value).__name__}")
    assert isinstance(value, int | float)
    # An int too large for a float is out of range: compare it before converting.
    in_range = (value > low if above else value >= low) and value <= high
    if not in_range or (isinstance(value, float) and not math.isfinite(value)):
        bound = f"> {low:g}" if above else f">= {low:g}"
        raise ValueError(f"{name} must be {noun} {bound} and <= {high:g}, got {value!r}")
    return float(value)


def seconds(
    name: str, value: object, *, low: float = 0.0, above: bool = False, high: float = MAX_SECONDS
) -> float:
    """A duration (or an epoch time) in seconds: finite, from ``low`` (above it
    when ``above``) to ``high`` (`MAX_SECONDS` unless said)."""
    return number(name, value, low=low, high=high, above=above, unit="seconds")


def optional_seconds(
    name: str, value: object, *, low: float = 0.0, above: bool = False, high: float = MAX_SECONDS
) -> float | None:
    """`seconds`, or None for None."""
    return None if value is None else seconds(name, value, low=low, above=above, high=high)


def count(name: str, value: object, *, low: int = 0, high: int = MAX_COUNT) -> int:
    """An ``int`` (not a ``bool``) from ``low`` to ``high``."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be an int from {low:,} to {high:,}, got {value!r}")
    return value


def optional_count(name: str, value: object, *, low: int = 0, high: int = MAX_COUNT) -> int | None:
    """`count`, or None for None."""
    return None if value is None else count(name, value, low=low, high=high)


def flag(name: str, value: object) -> bool:
    """``True`` or ``False``, nothing that merely looks like one (1, "yes")."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {type(value).__name__}")
    return value
