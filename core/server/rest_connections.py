"""Bounds on the REST API's connections, so that clients that open connections and send nothing, or
send a request header a byte at a time (slowloris), cannot hold the API away from everyone else.

- **Header timeout**: a connection must have sent its first request's header within
  `header_timeout` seconds of opening, or it is closed. (Later requests on a kept-alive connection
  are bounded by the idle timeout: aiohttp closes a connection whose next request has not arrived
  whole `idle_timeout` seconds after the last response.)
- **Connection cap**: at most `max_connections` at once. A connection over the cap first pushes out
  the oldest connection that has not yet sent a whole header, then the one idle longest between
  requests (a kept-alive client, or one that got its answer, a refusal say, and sits on it): under a
  slowloris or idle load the new client (a healthcheck, a scrape) is served and the others go. Only
  when every connection is busy with a request is the new one refused.
- **Probes' reserve**: even then, `probe_reserve` more connections are let in for the healthcheck and
  the metrics alone (the kubelet's liveness probe, Prometheus): once such a connection's request line
  shows another path, it is answered 503 and closed. So a healthy scheduler is never reported dead
  because its API is busy.
- **Event streams' share**: long-lived event streams (`/ws/v1/events/stream`) may hold at most
  `max_event_streams` of those connections (rest.StateAPI answers one more 503): the rest are kept for
  short requests, so streams alone can never fill the cap and the healthcheck, the metrics and the
  state stay answerable however many readers follow the events.

The guard sits between asyncio and aiohttp's own protocol, one per connection, and sees the plain
bytes (under TLS too); it looks only for the end of the first header, never parses HTTP itself.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from core.scheduler.metrics import SchedulerMetrics

# An HTTP header ends with an empty line: CRLF CRLF, or LF LF from lenient clients.
_HEADER_ENDS = (b"\r\n\r\n", b"\n\n")
REFUSAL_LINGER = 1.0  # seconds a refused connection stays open for its client to read the answer
_REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"Content-Type: application/json\r\n"
    b"Retry-After: 1\r\n"
    b"Connection: close\r\n"
    b"Content-Length: %d\r\n\r\n%s"
)


@dataclass(frozen=True)
class ConnectionBounds:
    header_timeout: float = 10.0  # seconds from opening to the end of the first request's header
    idle_timeout: float = 60.0  # seconds a kept-alive connection may wait for its next request
    max_connections: int = 512  # open at once; well under the usual 1,024 file descriptors
    # Of those, held by event streams at most (each also costs a write per event): the rest stay free
    # for short requests (probes, scrapes, the web UI).
    max_event_streams: int = 64
    probe_reserve: int = 8  # over the cap, for the healthcheck and the metrics only


PROBE_PATHS = frozenset({"/ws/v1/scheduler/healthcheck", "/ws/v1/metrics"})


DEFAULT_BOUNDS = ConnectionBounds()


def _refusal_body(max_connections: int) -> bytes:
    return (
        b'{"status_code": 503, "message": "the REST API has %d connections open, its limit '
        b'(--rest-max-connections), all busy: retry shortly", "description": ""}' % max_connections
    )


def _refusal(max_connections: int) -> bytes:
    body = _refusal_body(max_connections)
    return _REFUSAL % (len(body), body)


class ConnectionGuard:
    """The connections of one REST server: counted, timed until their first header, and pushed out
    when the cap is reached (without a header first, then idle), oldest first."""

    def __init__(self, bounds: ConnectionBounds, metrics: SchedulerMetrics) -> None:
        self.bounds = bounds
        self._metrics = metrics
        self._open: set[_GuardedConnection] = set()
        self._no_header_yet: OrderedDict[_GuardedConnection, None] = OrderedDict()  # oldest first
        self._idle: OrderedDict[_GuardedConnection, None] = OrderedDict()  # between requests, longest first
        self._by_transport: dict[object, _GuardedConnection] = {}
        self._probes: set[_GuardedConnection] = set()  # let in over the cap for the probe paths only

    def factory(self, inner: Callable[[], asyncio.Protocol]) -> Callable[[], asyncio.Protocol]:
        """A protocol factory for loop.create_server: `inner`'s protocols, each behind a guard."""
        return lambda: _GuardedConnection(self, inner)

    @property
    def open_connections(self) -> int:
        return len(self._open)

    def admit(self, conn: _GuardedConnection) -> bool:
        if len(self._open) >= self.bounds.max_connections and not self._evict_one():
            if len(self._probes) >= self.bounds.probe_reserve:
                self.count_closed("refused")
                return False
            self._probes.add(conn)
            conn.probe_only = True
        self._open.add(conn)
        self._no_header_yet[conn] = None
        self._by_transport[conn.transport] = conn
        return True

    def middleware(self) -> Callable[..., Any]:
        """aiohttp middleware: a connection is busy while a request of it is handled (an event stream
        as long as it runs), idle from its end until its next request; only idle ones are pushed out."""

        @web.middleware
        async def busy(request: web.Request, handler: Callable[[web.Request], Awaitable[Any]]) -> Any:
            probe = self._by_transport.get(request.transport) in self._probes
            if probe and request.path not in PROBE_PATHS:  # a later request on a probe's connection
                self.count_closed("refused")
                refused = web.Response(
                    status=503, body=_refusal_body(self.bounds.max_connections),
                    content_type="application/json", headers={"Retry-After": "1"},
                )  # fmt: skip
                refused.force_close()
                return refused
            self.request_started(request.transport)
            try:
                response = await handler(request)
                if probe:
                    response.force_close()  # a reserve connection serves one probe, then gives its place
                return response
            finally:
                self.request_ended(request.transport)

        return busy

    def _evict_one(self) -> bool:
        """Push out the oldest connection without a header, else the one idle longest whose answer has
        been written whole, else the one idle longest whose client does not read its answers (what it
        was not sent is dropped); never a probe's. False when every other connection is busy."""
        oldest = next((conn for conn in self._no_header_yet if conn not in self._probes), None)
        if oldest is not None:
            oldest.close("evicted")
            return True
        idle = [conn for conn in self._idle if conn not in self._probes]
        answered = next((conn for conn in idle if conn.answered()), None)
        if answered is not None:
            answered.close("evicted_idle")
            return True
        if idle:
            idle[0].close("evicted_idle", abort=True)
            return True
        return False

    def request_started(self, transport: object) -> None:
        """A request of the connection is being handled (rest's middleware says so): it is busy."""
        conn = self._by_transport.get(transport)
        if conn is not None:
            self._idle.pop(conn, None)

    def request_ended(self, transport: object) -> None:
        """Its handler is done (answered, refused, or a stream ended): idle until its next request."""
        conn = self._by_transport.get(transport)
        if conn is not None and conn in self._open:
            self._idle.pop(conn, None)
            self._idle[conn] = None

    def abort_all(self) -> None:
        """Close every connection at once, unsent data dropped (the server is stopping)."""
        for conn in list(self._open):
            conn.abort()

    def header_seen(self, conn: _GuardedConnection) -> None:
        self._no_header_yet.pop(conn, None)

    def left(self, conn: _GuardedConnection) -> None:
        self._open.discard(conn)
        self._no_header_yet.pop(conn, None)
        self._idle.pop(conn, None)
        self._probes.discard(conn)
        if conn.transport is not None:
            self._by_transport.pop(conn.transport, None)

    def count_closed(self, reason: str) -> None:
        closed = self._metrics.rest_connections_closed
        closed[reason] = closed.get(reason, 0) + 1


class _GuardedConnection(asyncio.Protocol):
    """One connection: aiohttp's protocol, with the guard's timer and count around it."""

    def __init__(self, guard: ConnectionGuard, inner: Callable[[], asyncio.Protocol]) -> None:
        self._guard = guard
        self._make_inner = inner
        self._inner: asyncio.Protocol | None = None  # made once the connection is admitted
        self.transport: asyncio.Transport | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._tail = b""  # the last bytes seen, for a header end split across reads
        self.probe_only = False  # let in over the cap: its request must be for a probe path
        self._head = b""  # a probe-only connection's first bytes, until its request line is whole

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        guard = self._guard
        if not guard.admit(self):
            self._refuse(transport)
            return
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(guard.bounds.header_timeout, self.close, "header_timeout")
        self._inner = self._make_inner()
        self._inner.connection_made(transport)

    def _refuse(self, transport: asyncio.Transport) -> None:
        """Answer 503 and end the connection. What the client sends meanwhile is read and dropped,
        and the socket closed a moment later: closing it at once, with the client's request unread,
        would reset the connection and lose the answer."""
        transport.write(_refusal(self._guard.bounds.max_connections))
        if transport.can_write_eof():
            transport.write_eof()
        linger = min(REFUSAL_LINGER, self._guard.bounds.header_timeout)
        asyncio.get_running_loop().call_later(linger, transport.close)

    def answered(self) -> bool:
        """Whether what it was sent has left (nothing waits in its write buffer)."""
        return self.transport is None or self.transport.get_write_buffer_size() == 0

    def data_received(self, data: bytes) -> None:
        if self._inner is None:
            return  # a refused connection: its request is not for anyone
        if self.probe_only:
            held = self._probe_request(data)
            if not held:
                return
            data = held
        if self._timer is not None:
            seen = self._tail + data
            if any(end in seen for end in _HEADER_ENDS):
                self._timer.cancel()
                self._timer = None
                self._guard.header_seen(self)
            else:
                self._tail = seen[-3:]
        self._inner.data_received(data)

    def _probe_request(self, data: bytes) -> bytes:
        """For a connection let in over the cap: its bytes held until its request line is whole; then
        all of them, when the path is a probe's, or b"" and the connection refused."""
        self._head += data
        line_end = self._head.find(b"\n")
        if line_end < 0:
            if len(self._head) > 8192:  # longer than any request line a probe sends
                self._refuse_probe()
            return b""
        parts = self._head[:line_end].split()
        path = parts[1].split(b"?", 1)[0].decode("latin-1") if len(parts) >= 2 else ""
        if path not in PROBE_PATHS:
            self._refuse_probe()
            return b""
        self.probe_only = False  # a probe: served as any connection from here on
        held, self._head = self._head, b""
        return held

    def _refuse_probe(self) -> None:
        self._guard.count_closed("refused")
        self._guard.left(self)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        inner, self._inner = self._inner, None
        if self.transport is not None:
            self._refuse(self.transport)  # before aiohttp lets go of it, which may close it
        if inner is not None:
            inner.connection_lost(None)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._inner is not None else None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._guard.left(self)
        if self._inner is not None:
            self._inner.connection_lost(exc)

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def close(self, reason: str, abort: bool = False) -> None:
        """Close the connection: it sent no header in time, or it was pushed out (without a header, or
        idle between requests). `abort`: at once, what its client has not read dropped."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._guard.count_closed(reason)
        self._guard.left(self)
        if self.transport is not None:
            if abort:
                self.transport.abort()
            else:
                self.transport.close()
