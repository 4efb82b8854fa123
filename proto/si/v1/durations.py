"""Durations as YuniKorn's settings spell them, read as Go's time.ParseDuration reads them.

The core's queue properties (preemption.delay, quota.preemption.delay) and the Kubernetes shim's
ConfigMap (service.schedulingInterval, ...) are both YuniKorn settings that Go reads with
time.ParseDuration; this is the one reading they share (beside the tag names, as vocabulary of the
interface): an optional sign, then one or more decimal numbers each with a unit (ns, us, µs, μs, ms,
s, m, h), "0" alone needing none; at most what an int64 of nanoseconds holds.
"""

from __future__ import annotations

_NANOS_PER_UNIT = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_LIMIT = 1 << 63  # nanoseconds: a negative duration may reach it, a positive one stays below it


def go_duration_nanos(text: str) -> int | None:
    """Nanoseconds, exactly as Go's time.ParseDuration answers; None where it answers an error."""
    rest, negative = text, False
    if rest[:1] in ("-", "+"):
        negative, rest = rest[0] == "-", rest[1:]
    if rest == "0":
        return 0
    if not rest:
        return None
    total = 0
    while rest:
        if not (rest[0] == "." or "0" <= rest[0] <= "9"):
            return None
        whole, rest, digits = _leading_int(rest)
        if whole is None:
            return None  # overflow
        fraction, scale, fraction_digits = 0, 1.0, 0
        if rest[:1] == ".":
            fraction, scale, fraction_digits, rest = _leading_fraction(rest[1:])
        if not digits and not fraction_digits:
            return None  # a lone "." has no digits
        end = 0
        while end < len(rest) and not (rest[end] == "." or "0" <= rest[end] <= "9"):
            end += 1
        unit = _NANOS_PER_UNIT.get(rest[:end])
        if unit is None:
            return None  # missing or unknown unit
        rest = rest[end:]
        if whole > _LIMIT // unit:
            return None
        value = whole * unit
        if fraction:
            value += int(float(fraction) * (float(unit) / scale))  # as Go: a float64 product, truncated
            if value > _LIMIT:
                return None
        total += value
        if total > _LIMIT:
            return None
    if negative:
        return -total
    return total if total < _LIMIT else None


def go_duration(text: str) -> float | None:
    """Seconds, from a duration as Go's time.ParseDuration reads it; None where Go refuses it."""
    nanos = go_duration_nanos(text)
    return None if nanos is None else nanos / 1e9


def _leading_int(text: str) -> tuple[int | None, str, int]:
    """The leading decimal digits as an integer (None past 1<<63), what follows, how many digits."""
    value, i = 0, 0
    while i < len(text) and "0" <= text[i] <= "9":
        if value > _LIMIT // 10:
            return None, text, i
        value = value * 10 + ord(text[i]) - 48
        if value > _LIMIT:
            return None, text, i
        i += 1
    return value, text[i:], i


def _leading_fraction(text: str) -> tuple[int, float, int, str]:
    """The digits after a decimal point: their value and its scale (10 per digit kept; digits past
    what 63 bits hold are read and dropped), how many digits, what follows."""
    value, scale, i, overflow = 0, 1.0, 0, False
    while i < len(text) and "0" <= text[i] <= "9":
        if not overflow:
            if value > (_LIMIT - 1) // 10:
                overflow = True
            else:
                following = value * 10 + ord(text[i]) - 48
                if following > _LIMIT:
                    overflow = True
                else:
                    value, scale = following, scale * 10
        i += 1
    return value, scale, i, text[i:]
