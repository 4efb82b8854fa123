"""The core's side of one registered resource manager: its current streams, the asks it has not been
answered on, its rate buckets, and the responses held while a stream of a kind is closed."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.config.input_limits import Limits
from core.rm.ask_cache import AskCache
from core.rm.response_stream import ResponseStream, StreamKind
from core.rm.token_bucket import TokenBucket

BACKLOG_LIMIT = 100_000  # responses kept per RM and stream kind while no stream is open


@dataclass
class RMRoute:
    """What the core keeps for one registered RM on the way out: its current stream of each kind, its
    unanswered asks, its rate buckets, and what waits while a stream of a kind is closed."""

    current: dict[StreamKind, ResponseStream] = field(default_factory=dict)
    asks: AskCache = field(default_factory=AskCache)  # the messages of its asks the core has not answered
    # Items per second on each kind of stream (Limits.rate_items_per_second).
    rates: dict[StreamKind, TokenBucket] = field(default_factory=dict)
    # Responses held while no stream of their kind is open (a reconnect within the grace period gets
    # them), with their sizes, bounded in messages (BACKLOG_LIMIT) and in bytes: what the new stream
    # takes at once (four times Limits.max_unread_response_bytes), no more, or it would be cut on
    # arrival. The oldest go first, with a log line.
    backlog: dict[StreamKind, deque[tuple[Any, int]]] = field(
        default_factory=lambda: {k: deque(maxlen=BACKLOG_LIMIT) for k in StreamKind}
    )
    backlog_bytes: dict[StreamKind, int] = field(default_factory=lambda: dict.fromkeys(StreamKind, 0))

    def hold(self, kind: StreamKind, message: Any, most_bytes: int) -> int:
        """Keep a response while no stream of its kind is open, within BACKLOG_LIMIT messages and
        `most_bytes` (0: no byte bound); returns how many of the oldest were dropped to make room."""
        backlog, size = self.backlog[kind], message.ByteSize()
        dropped = 0
        if len(backlog) == backlog.maxlen:
            self.backlog_bytes[kind] -= backlog[0][1]  # the deque drops it on the append below
            dropped += 1
        backlog.append((message, size))
        self.backlog_bytes[kind] += size
        while most_bytes and len(backlog) > 1 and self.backlog_bytes[kind] > most_bytes:
            self.backlog_bytes[kind] -= backlog.popleft()[1]
            dropped += 1
        return dropped

    def admit(
        self, rm_id: str, kind: StreamKind, items: int, limits: Limits, clock: Callable[[], float]
    ) -> tuple[int, str]:
        """How many of a message's items (the first ones) its rate limit lets in now, and the reason
        given for the others ("" when all are in)."""
        if limits.rate_items_per_second <= 0:
            return items, ""  # no limit: not even the clock is read
        now = clock()
        bucket = self.rates.get(kind)
        if bucket is None:
            bucket = self.rates[kind] = TokenBucket(limits.rate_items_per_second, limits.rate_burst, now)
        admitted = bucket.take(items, now)
        if admitted == items:
            return items, ""
        wait = bucket.wait_for(items - admitted)
        return admitted, (
            f"rate limit exceeded: resource manager {rm_id} may send {limits.rate_items_per_second:g} "
            f"items a second on its {kind.value} stream, in bursts of up to {limits.rate_burst:,} "
            f"(rate_items_per_second, rate_burst); this item was not processed: retry it in "
            f"{max(wait, 0.001):.3f}s or later"
        )

    def forget_backlog(self) -> None:
        for backlog in self.backlog.values():
            backlog.clear()
        self.backlog_bytes = dict.fromkeys(StreamKind, 0)
