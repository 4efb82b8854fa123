"""The range of priorities: si's int32, the bounds a queue's offset clamps to."""

from __future__ import annotations

MIN_PRIORITY = -(2**31)  # also what an object with nothing pending shows
MAX_PRIORITY = 2**31 - 1


def clamp(value: int) -> int:
    return max(MIN_PRIORITY, min(MAX_PRIORITY, value))
