"""The history YuniKorn's REST API serves at /ws/v1/history/apps and /history/containers: every
minute, how many applications run and how many allocations are held, the last 24 hours of it.

Recorded on the engine's tick against the injected clock (the first tick records at once, so a
fresh core has one record to show); a ring, so memory stays bounded.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

HISTORY_INTERVAL = 60.0  # seconds between records, as YuniKorn's internal metrics collector
HISTORY_LIMIT = 1440  # records kept: a day at one a minute, as YuniKorn


@dataclass(frozen=True)
class HistoryRecord:
    time: float
    applications: int  # running applications (all partitions)
    containers: int  # allocations held (all partitions)


class History:
    def __init__(self, interval: float = HISTORY_INTERVAL, limit: int = HISTORY_LIMIT) -> None:
        self.interval = interval
        self.records: deque[HistoryRecord] = deque(maxlen=limit)

    def due(self, now: float) -> bool:
        return not self.records or now - self.records[-1].time >= self.interval

    def record(self, now: float, applications: int, containers: int) -> None:
        self.records.append(HistoryRecord(now, applications, containers))
