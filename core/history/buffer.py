"""Records between the event loop and the history's writer thread (core.history.recorder): bounded,
the oldest dropped first when full, counted, and said once per stretch of drops."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from itertools import islice

import structlog

from core.history.store import Record

log = structlog.get_logger("pykorn.history")


class Buffer:
    """Records between the loop and the writer thread: bounded, oldest dropped first when full."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._records: deque[Record] = deque()
        self._ready = threading.Condition()
        self.dropped = 0
        self._dropped_at_take = 0  # `dropped` when the batch being written was taken
        self._dropping = False  # within a stretch of drops (logged once per stretch)

    def put(self, ops: Sequence[Record]) -> None:
        with self._ready:
            records = self._records
            records.extend(ops)
            over = len(records) - self.limit
            if over > 0:
                for _ in range(over):
                    records.popleft()
                self.dropped += over
                if not self._dropping:
                    self._dropping = True
                    log.warning("history records dropped: the database is behind", held=self.limit)
            elif self._dropping and len(records) < self.limit // 2:
                self._dropping = False
            self._ready.notify()

    def take(self, most: int, wait: float) -> list[Record]:
        """Up to `most` records from the front, left in place (`done` removes them once written); waits
        up to `wait` seconds for any."""
        with self._ready:
            if not self._records:
                self._ready.wait(wait)
            self._dropped_at_take = self.dropped
            return list(islice(self._records, most))

    def done(self, count: int) -> None:
        """The batch taken last is written: its records leave the front, less those dropped meanwhile
        (the oldest go first, so they were the batch's)."""
        with self._ready:
            count -= self.dropped - self._dropped_at_take
            for _ in range(max(0, min(count, len(self._records)))):
                self._records.popleft()

    def __len__(self) -> int:
        return len(self._records)
