"""Warnings about what RMs send, bounded: one line per message and kind of reason, not one per item,
and no more than a steady few lines a second per RM.

The RM still gets every item's rejection with its own reason, and the event log still records what
happened; only the log is summarised. A kind of reason is its text with the item's own IDs taken
out, so "application a-1 is not known" and "application a-2 is not known" are one kind, logged once
with how many there were and a few of the IDs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from structlog.typing import FilteringBoundLogger

SAMPLES = 3  # item IDs shown per kind of reason
LINES_PER_SECOND = 10.0  # warning lines per RM, on average ...
BURST = 50  # ... and at most this many at once


@dataclass
class _Kind:
    count: int = 0
    samples: list[str] = field(default_factory=list)


class RejectionDigest:
    """The rejections of one message, by kind of reason."""

    def __init__(self) -> None:
        self._kinds: dict[tuple[str, str], _Kind] = {}  # (what was refused, kind of reason)

    def add(self, ids: Sequence[str], reason: str, what: str = "items") -> None:
        kind = reason
        for item_id in ids:
            if item_id:
                kind = _take_out(kind, item_id)
        entry = self._kinds.get((what, kind))
        if entry is None:
            entry = self._kinds[(what, kind)] = _Kind()
        entry.count += 1
        if len(entry.samples) < SAMPLES:
            entry.samples.append("/".join(i for i in ids if i) or "-")

    def log(self, limiter: WarningLimiter, logger: FilteringBoundLogger, rm_id: str, **bound: object) -> None:
        """One line per kind: `<what> rejected`, with the reason (IDs taken out), how many, samples."""
        for (what, kind), entry in self._kinds.items():
            limiter.warn(
                logger,
                f"{what} rejected",
                rm_id,
                reason=kind,
                count=entry.count,
                samples=entry.samples,
                **bound,
            )
        self._kinds.clear()


_SEPARATORS = ".:/"  # join parts of one name (a queue `root.a`, a path), or end a phrase


def _is_name_char(char: str) -> bool:
    return char.isalnum() or char in "_-"


def _take_out(text: str, item_id: str) -> str:
    """`text` with `item_id` replaced by <id> where it stands as a name of its own, not inside a longer
    one: an application `a` must not take the letter out of "already" or of the queue `root.a.b`.
    A separator followed by a name character joins (`a.b`); one followed by anything else ends a
    phrase ("application a: ..."). Without a regular expression: this runs once per refused item."""
    if item_id not in text:
        return text
    out, start, size = [], 0, len(item_id)
    found = text.find(item_id)
    while found >= 0:
        before, after = found - 1, found + size
        joined_before = before >= 0 and (
            _is_name_char(text[before])
            or (text[before] in _SEPARATORS and before >= 1 and _is_name_char(text[before - 1]))
        )
        joined_after = after < len(text) and (
            _is_name_char(text[after])
            or (text[after] in _SEPARATORS and after + 1 < len(text) and _is_name_char(text[after + 1]))
        )
        if not joined_before and not joined_after:
            out.append(text[start:found])
            out.append("<id>")
            start = after
        found = text.find(item_id, max(start, found + 1))
    out.append(text[start:])
    return "".join(out)


@dataclass
class _Bucket:
    tokens: float
    updated: float
    suppressed: int = 0


class WarningLimiter:
    """A token bucket of warning lines per RM; lines over it are counted, and the next line that goes
    out says how many were left out."""

    def __init__(
        self, rate: float = LINES_PER_SECOND, burst: int = BURST, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._rate = rate
        self._burst = burst
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}

    def warn(self, logger: FilteringBoundLogger, event: str, rm_id: str, **fields: object) -> None:
        now = self._clock()
        bucket = self._buckets.get(rm_id)
        if bucket is None:
            bucket = self._buckets[rm_id] = _Bucket(float(self._burst), now)
        bucket.tokens = min(float(self._burst), bucket.tokens + (now - bucket.updated) * self._rate)
        bucket.updated = now
        if bucket.tokens < 1:
            bucket.suppressed += 1
            return
        bucket.tokens -= 1
        if bucket.suppressed:
            fields["suppressedBefore"] = bucket.suppressed
            bucket.suppressed = 0
        logger.warning(event, rmID=rm_id, **fields)

    def forget(self, rm_id: str) -> None:
        """The RM is gone: its bucket goes too."""
        self._buckets.pop(rm_id, None)
