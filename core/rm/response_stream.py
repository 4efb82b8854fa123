"""The outbound half of each bidirectional call: the responses queued for an RM, bounded in messages and
in bytes, per stream and for the whole core, and each no larger than a standard gRPC client reads.

Responses are queued serialized, as the bytes gRPC sends (core.server.grpc_handlers passes them
through), so what the bounds count is what the queue holds in memory. The transport takes them one by
one (`next`) and writes each. An RM that stops reading blocks that write, and its queue grows. Three
bounds hold it (core.config.input_limits, docs/reliability.md):
- **per stream, soft:** `max_unread_response_bytes`. A burst may go over it (one answer to a large
  message is queued at once, an RM busy sending a recovery reads late); a stream over it from which
  nothing has been taken for `unread_grace_seconds` has a reader that stopped, and is cut;
- **per stream, hard:** four times that, and `max_unread_responses` messages: cut at once;
- **the whole core:** `max_unread_response_bytes_total` over every stream. Past it, the streams furthest
  behind are cut at once (those over their own budget first) until the total is back under it: one RM
  that does not read cannot take the memory other RMs' answers need.
A cut stream's queue is freed at once; `on_cut` tells the transport to stop the write and end the call
with RESOURCE_EXHAUSTED, `cut` says how far behind the reader was, and `cut_figures` has the numbers
for the log.

A response over `MAX_RESPONSE_BYTES` (gRPC clients' default receive limit is 4 MiB) is split into
several, in order (core.rm.si_outbound.split_response), so a standard client reads every answer.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from core.rm.si_outbound import split_response
from core.rm.wire_frames import FramedResponse

# The largest response sent as one message: gRPC's default receive limit (4 MiB) less room for the
# framing, so that an RM built with a stock gRPC client reads every answer.
MAX_RESPONSE_BYTES = 4 * 1024 * 1024 - 64 * 1024
HARD_FACTOR = 4  # the per-stream budget times this is cut at once, however recent the backlog


class StreamKind(StrEnum):
    ALLOCATION = "allocation"
    APPLICATION = "application"
    NODE = "node"


_END = None  # queued on a ResponseStream to end it


@dataclass
class Backlogs:
    """What every stream holds unread, together, and the core-wide bound on it."""

    max_total_bytes: int = 0  # 0: unbounded
    total_bytes: int = 0
    streams: set[ResponseStream] = field(default_factory=set)

    def relieve(self) -> None:
        """Over the core-wide bound: cut the streams furthest behind (over their own budget first)
        until the total is back under it."""
        behind = sorted(
            (s for s in self.streams if s.unread_bytes > 0 and not s.cut),
            key=lambda s: (s.over_budget(), s.unread_bytes),
            reverse=True,
        )
        for stream in behind:
            if self.total_bytes <= self.max_total_bytes:
                return
            stream.cut_now("the core's response memory (max_unread_response_bytes_total) is full")


@dataclass(eq=False)
class ResponseStream:
    kind: StreamKind
    max_messages: int = 0  # 0: unbounded
    max_bytes: int = 0  # the soft per-stream budget; 0: unbounded
    grace_seconds: float = 5.0  # how long a burst may stay over the budget
    backlogs: Backlogs = field(default_factory=Backlogs)
    clock: Callable[[], float] = time.monotonic
    queue: asyncio.Queue[tuple[bytes | None, int, float]] = field(default_factory=asyncio.Queue)
    rm_id: str = ""
    closed: bool = False
    unread_bytes: int = 0
    cut: str = ""  # why the stream was cut; empty while it is not
    cut_figures: dict[str, float] = field(default_factory=dict)  # how far behind, for the log
    on_cut: Callable[[], object] | None = None
    _oldest: deque[float] = field(default_factory=deque)  # when each unread response was queued
    _progress: float = -1.0  # when a response was last taken off the queue (or the budget first passed)
    _check: asyncio.TimerHandle | None = None

    def __post_init__(self) -> None:
        self.backlogs.streams.add(self)

    def send(self, message: Any) -> None:
        """Queue a response, serialized now (split first when over MAX_RESPONSE_BYTES)."""
        if self.closed:
            return
        data = message.SerializeToString()
        if len(data) <= MAX_RESPONSE_BYTES:
            parts = [data]
        elif isinstance(message, FramedResponse):
            parts = message.split(MAX_RESPONSE_BYTES)
        else:
            parts = [p.SerializeToString() for p in split_response(message, MAX_RESPONSE_BYTES)]
        now = self.clock()
        if not self.unread_bytes:
            self._progress = now  # an empty queue is a reader that is keeping up
        for part in parts:
            self.unread_bytes += len(part)
            self.backlogs.total_bytes += len(part)
            self.queue.put_nowait((part, len(part), now))
            self._oldest.append(now)
        self._bound()

    def _bound(self) -> None:
        unread = self.queue.qsize()
        if self.max_messages and unread > self.max_messages:
            self.cut_now(f"over {self.max_messages:,} messages (max_unread_responses)")
        elif self.max_bytes and self.unread_bytes > HARD_FACTOR * self.max_bytes:
            self.cut_now(f"over {HARD_FACTOR} times max_unread_response_bytes ({self.max_bytes:,} bytes)")
        elif self.over_budget():
            self._lagging()
        if self.backlogs.max_total_bytes and self.backlogs.total_bytes > self.backlogs.max_total_bytes:
            self.backlogs.relieve()

    def over_budget(self) -> bool:
        return bool(self.max_bytes) and self.unread_bytes > self.max_bytes

    def _lagging(self) -> None:
        """Over its budget: cut once nothing has been taken off the queue for the grace period (an
        ended stream too: what it holds until its reader reads it counts the same)."""
        if self.cut or not self.over_budget():
            return
        still = self.clock() - self._progress
        if still >= self.grace_seconds:
            self.cut_now(
                f"over max_unread_response_bytes ({self.max_bytes:,} bytes), nothing read for {still:.1f} s"
            )
        elif self._check is None:
            loop = asyncio.get_running_loop()
            self._check = loop.call_later(self.grace_seconds - still, self._recheck)

    def _recheck(self) -> None:
        self._check = None
        self._lagging()

    def cut_now(self, why: str) -> None:
        """End the stream at once, its queue freed: the memory is the point, not when the call ends."""
        if self.cut:
            return
        unread = self.queue.qsize()
        oldest = self.clock() - self._oldest[0] if self._oldest else 0.0
        self.cut_figures = {
            "unreadMessages": unread, "unreadBytes": self.unread_bytes, "oldestSeconds": round(oldest, 3)
        }  # fmt: skip
        self.cut = (
            f"response backlog not read: {unread:,} messages, {self.unread_bytes:,} bytes, the oldest "
            f"queued {oldest:.1f} s ago; {why}. Read the stream as the core writes it; reconnect and "
            "register again to carry on"
        )
        self.closed = True
        while not self.queue.empty():
            self.queue.get_nowait()
        self._forget()
        self.queue.put_nowait((_END, 0, 0.0))
        if self.on_cut is not None:
            self.on_cut()

    def end(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait((_END, 0, 0.0))

    def detach(self) -> None:
        """The call is over: what it held no longer counts against the core's bound."""
        self._forget()
        self.backlogs.streams.discard(self)

    def _forget(self) -> None:
        self.backlogs.total_bytes -= self.unread_bytes
        self.unread_bytes = 0
        self._oldest.clear()
        if self._check is not None:
            self._check.cancel()
            self._check = None

    async def next(self) -> bytes | None:
        """The next response, serialized, or None once the stream has ended (or was cut)."""
        message, size, _queued = await self.queue.get()
        if message is not _END and self._oldest:
            self.unread_bytes -= size
            self.backlogs.total_bytes -= size
            self._oldest.popleft()
            self._progress = self.clock()
        return message
