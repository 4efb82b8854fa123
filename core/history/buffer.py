"""Records between the event loop and the history's writer thread (core.history.recorder): bounded,
the oldest dropped first when full, counted, and said once per stretch of drops; with when each came,
so the writer knows how long the oldest has waited (core.history.pacing)."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from itertools import islice

import structlog

from core.history.store import Record

log = structlog.get_logger("pykorn.history")


class Buffer:
    """Records between the loop and the writer thread: bounded, oldest dropped first when full."""

    def __init__(self, limit: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self._clock = clock
        self._records: deque[Record] = deque()
        self._ready = threading.Condition()
        self.dropped = 0
        self._dropped_at_take = 0  # `dropped` when the batch being written was taken
        self._dropping = False  # within a stretch of drops (logged once per stretch)
        # When each put's records came: (the serial number of its last record, the time), oldest first,
        # while any of them is held; `_gone` counts the records that left the front.
        self._stamps: deque[tuple[int, float]] = deque()
        self._serial = 0
        self._gone = 0

    def put(self, ops: Sequence[Record]) -> None:
        with self._ready:
            records = self._records
            was_empty = not records
            records.extend(ops)
            self._serial += len(ops)
            self._stamps.append((self._serial, self._clock()))
            over = len(records) - self.limit
            if over > 0:
                for _ in range(over):
                    records.popleft()
                self.dropped += over
                self._left(over)
                if not self._dropping:
                    self._dropping = True
                    log.warning("history records dropped: the database is behind", held=self.limit)
            elif self._dropping and len(records) < self.limit // 2:
                self._dropping = False
            if was_empty:  # a waiting writer wakes
                self._ready.notify()

    def wake(self) -> None:
        """A waiting `take` returns now (the stop)."""
        with self._ready:
            self._ready.notify()

    def waited(self) -> float:
        """Seconds the oldest record held has waited (0 when none is)."""
        with self._ready:
            return self._clock() - self._stamps[0][1] if self._stamps else 0.0

    def wait(self, seconds: float) -> None:
        """Wait up to `seconds` for records (at once when some are held)."""
        with self._ready:
            if not self._records:
                self._ready.wait(seconds)

    def take(self, most: int) -> list[Record]:
        """Up to `most` records from the front, left in place (`done` removes them once written)."""
        with self._ready:
            self._dropped_at_take = self.dropped
            return list(islice(self._records, most))

    def done(self, count: int) -> None:
        """The batch taken last is written: its records leave the front, less those dropped meanwhile
        (the oldest go first, so they were the batch's)."""
        with self._ready:
            count -= self.dropped - self._dropped_at_take
            count = max(0, min(count, len(self._records)))
            for _ in range(count):
                self._records.popleft()
            self._left(count)

    def refused(self, count: int) -> None:
        """`count` records taken were not written (the database refused them, or no row could be
        made of them): counted as dropped."""
        if count:
            with self._ready:
                self.dropped += count
                self._dropped_at_take += count  # not pushed out of the buffer: done() is unaffected

    def _left(self, count: int) -> None:
        """`count` records left the front (written or dropped)."""
        self._gone += count
        stamps = self._stamps
        while stamps and stamps[0][0] <= self._gone:
            stamps.popleft()

    def __len__(self) -> int:
        return len(self._records)
