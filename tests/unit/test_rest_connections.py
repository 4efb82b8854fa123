"""The REST connection guard on its own: when a header counts as arrived, who is pushed out at the
cap, and what a refused client reads."""

from __future__ import annotations

import asyncio

from core.scheduler.metrics import SchedulerMetrics
from core.server.rest_connections import ConnectionBounds, ConnectionGuard


class Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.closed = False
        self.closing = asyncio.Event()
        self.eof = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self.eof = True

    def close(self) -> None:
        self.closed = True
        self.closing.set()

    def is_closing(self) -> bool:
        return self.closed

    def get_write_buffer_size(self) -> int:
        return len(self.unsent)

    def abort(self) -> None:
        self.aborted = True
        self.close()

    aborted = False

    unsent = b""  # what a slow reader has not taken yet


class Inner(asyncio.Protocol):
    def __init__(self) -> None:
        self.data = b""
        self.lost = False

    def data_received(self, data: bytes) -> None:
        self.data += data

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True


def _guard(cap: int = 2, header_timeout: float = 60.0) -> tuple[ConnectionGuard, SchedulerMetrics]:
    metrics = SchedulerMetrics()
    return ConnectionGuard(ConnectionBounds(header_timeout, 60.0, cap), metrics), metrics


def _connect(guard: ConnectionGuard) -> tuple[asyncio.Protocol, Transport, list[Inner]]:
    made: list[Inner] = []

    def inner() -> Inner:
        made.append(Inner())
        return made[-1]

    protocol = guard.factory(inner)()
    transport = Transport()
    protocol.connection_made(transport)
    return protocol, transport, made


async def test_a_header_end_split_across_reads_counts_and_everything_reaches_aiohttp() -> None:
    guard, _ = _guard(cap=1)
    protocol, transport, inner = _connect(guard)
    for piece in (b"GET / HTTP/1.1\r\nHost: x\r\n\r", b"\n"):
        protocol.data_received(piece)
    assert inner[0].data == b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    # With its header in, it is busy, not slow: a new connection at the cap does not push it out. It
    # is let in over the cap for a probe path only: another path is refused with 503.
    guard.request_started(transport)
    second_protocol, second, second_inner = _connect(guard)
    assert not transport.closed and len(second_inner) == 1
    second_protocol.data_received(b"GET /ws/v1/partitions HTTP/1.1\r\nHost: x\r\n\r\n")
    assert second.written.startswith(b"HTTP/1.1 503") and second.eof
    assert second_inner[0].data == b"" and second_inner[0].lost


async def test_over_the_cap_the_probes_are_let_in_up_to_their_reserve() -> None:
    metrics = SchedulerMetrics()
    guard = ConnectionGuard(ConnectionBounds(60.0, 60.0, 1, probe_reserve=1), metrics)
    busy_protocol, busy, _ = _connect(guard)
    busy_protocol.data_received(b"GET /ws/v1/events/stream HTTP/1.1\r\n\r\n")
    guard.request_started(busy)
    probe, probe_transport, probe_inner = _connect(guard)
    for piece in (b"GET /ws/v1/scheduler/health", b"check?x=1 HTTP/1.1\r\n\r\n"):  # the line in two reads
        probe.data_received(piece)
    assert probe_inner[0].data == b"GET /ws/v1/scheduler/healthcheck?x=1 HTTP/1.1\r\n\r\n"
    assert not probe_transport.closed
    _, third, third_inner = _connect(guard)  # the reserve is taken: refused at once
    assert third_inner == [] and third.written.startswith(b"HTTP/1.1 503")
    assert metrics.rest_connections_closed == {"refused": 1}


async def test_at_the_cap_a_connection_idle_between_requests_is_pushed_out() -> None:
    # Idle: its request answered (or refused) and nothing since, as a kept-alive client or one sitting
    # on a 503. One whose client reads its answers goes first; one whose client does not read is
    # aborted next (what it was not sent is dropped), so non-readers cannot hold the API either.
    guard, metrics = _guard(cap=2)
    connections = [_connect(guard) for _ in range(2)]
    for protocol, transport, _ in connections:
        protocol.data_received(b"GET /ws/v1/partitions HTTP/1.1\r\n\r\n")
        guard.request_started(transport)
        guard.request_ended(transport)
    slow_reader, reads = (transport for _, transport, _ in connections)
    slow_reader.unsent = b"x" * 4096  # its answer not taken yet, though it is the older
    third_protocol, third, third_inner = _connect(guard)
    assert reads.closed and not slow_reader.closed and len(third_inner) == 1 and not third.written
    third_protocol.data_received(b"GET /ws/v1/events/stream HTTP/1.1\r\n\r\n")
    guard.request_started(third)  # busy now
    fourth_inner = _connect(guard)[2]
    assert slow_reader.aborted and len(fourth_inner) == 1
    assert metrics.rest_connections_closed == {"evicted_idle": 2}


async def test_at_the_cap_the_oldest_connection_without_a_header_is_pushed_out() -> None:
    guard, metrics = _guard(cap=2)
    first, first_transport, _ = _connect(guard)
    _, second_transport, _ = _connect(guard)
    first.data_received(b"GET / HTTP/1.1\r\n\r\n")  # the first is busy: the second is the one to go
    _, third_transport, third_inner = _connect(guard)
    assert (first_transport.closed, second_transport.closed, third_transport.closed) == (False, True, False)
    assert len(third_inner) == 1 and guard.open_connections == 2
    assert metrics.rest_connections_closed == {"evicted": 1}


async def test_a_connection_without_a_header_in_time_is_closed() -> None:
    guard, metrics = _guard(header_timeout=0.01)
    protocol, transport, inner = _connect(guard)
    protocol.data_received(b"GET / HTTP/1.1\r\n")
    await asyncio.wait_for(transport.closing.wait(), 5)  # the guard's own timer closes it
    protocol.connection_lost(None)
    assert inner[0].lost and guard.open_connections == 0
    assert metrics.rest_connections_closed == {"header_timeout": 1}
