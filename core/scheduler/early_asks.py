"""Asks that arrive before their application: held until it does.

An RM sends a new application on the application stream and its asks on the allocation stream, one
right after the other, without waiting for the application's answer (YuniKorn's shim calls the core
in that order; over gRPC the two streams are apart, and a reader can be a step behind the other). An
ask (or an allocation an RM reports) whose application the partition does not know is therefore held
for a while instead of refused: when its application is accepted it is added as if it had come
after; when the application is rejected it is refused with the application's reason; when nothing
came within the hold (Limits.early_ask_seconds) it is refused as an ask of an unknown application
always was. A release (or the application's removal) takes it back. At most Limits.max_early_asks are
held per RM; past that an ask of an unknown application is refused at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.config.input_limits import DEFAULT_LIMITS
from core.objects.allocation import Allocation
from core.objects.partition_key import PartitionKey

HOLD_SECONDS = DEFAULT_LIMITS.early_ask_seconds  # far above the streams' skew, a message or two
MAX_HELD = DEFAULT_LIMITS.max_early_asks  # per RM

_AppKey = tuple[PartitionKey, str]  # the partition, the application ID


@dataclass(slots=True)
class _Held:
    since: float  # when the first of them arrived
    asks: list[Allocation] = field(default_factory=list)  # in the order they came


class EarlyAsks:
    def __init__(self, hold_seconds: float = HOLD_SECONDS, max_held: int = MAX_HELD) -> None:
        self.hold_seconds = hold_seconds
        self.max_held = max_held
        self._held: dict[_AppKey, _Held] = {}
        self._count: dict[str, int] = {}  # by rmID

    def __len__(self) -> int:
        return sum(self._count.values())

    def hold(self, partition: PartitionKey, alloc: Allocation, now: float) -> bool:
        """Hold `alloc` for its application; False when the RM has `max_held` held already."""
        rm_id = partition.rm_id
        count = self._count.get(rm_id, 0)
        if count >= self.max_held:
            return False
        held = self._held.get((partition, alloc.application_id))
        if held is None:
            held = self._held[partition, alloc.application_id] = _Held(now)
        held.asks.append(alloc)
        self._count[rm_id] = count + 1
        return True

    def take(self, partition: PartitionKey, app_id: str) -> list[Allocation]:
        """What is held for the application (it arrived, or went), in order; none are held after."""
        if not self._held:
            return []
        held = self._held.pop((partition, app_id), None)
        if held is None:
            return []
        self._less(partition.rm_id, len(held.asks))
        return held.asks

    def drop(self, partition: PartitionKey, app_id: str, key: str) -> bool:
        """Release a held ask (`key` empty: every one of the application's); False when none was held."""
        held = self._held.get((partition, app_id)) if self._held else None
        if held is None:
            return False
        if not key:
            self.take(partition, app_id)
            return True
        kept = [a for a in held.asks if a.key != key]
        if len(kept) == len(held.asks):
            return False
        self._less(partition.rm_id, len(held.asks) - len(kept))
        if kept:
            held.asks = kept
        else:
            del self._held[partition, app_id]
        return True

    def expired(self, now: float) -> list[tuple[PartitionKey, list[Allocation]]]:
        """Those whose application did not come in time, taken out (by partition)."""
        late = [key for key, held in self._held.items() if now - held.since >= self.hold_seconds]
        return [(key[0], self.take(*key)) for key in late]

    def forget_rm(self, rm_id: str) -> None:
        """The RM left or registered again: what it sent before is gone."""
        for key in [key for key in self._held if key[0].rm_id == rm_id]:
            del self._held[key]
        self._count.pop(rm_id, None)

    def _less(self, rm_id: str, count: int) -> None:
        left = self._count.get(rm_id, 0) - count
        if left > 0:
            self._count[rm_id] = left
        else:
            self._count.pop(rm_id, None)
