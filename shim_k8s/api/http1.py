"""A lean HTTP/1.1 client for the shim's requests to the API server: keep-alive connections in a
pool, one request at a time on each, the response read by an asyncio protocol.

Why not aiohttp for these: a binding is a small POST with a small answer, thousands a second, and
aiohttp's client spends about 100 µs of CPU on each (its session, connector, URL, header and timeout
objects), which made it the largest cost of a burst on the shim's one core (benchmarks/RESULTS.md,
"Kubernetes shim"). Here a request is one write of prepared bytes and a parse of the answer's head.
Watches and lists stay on aiohttp (KubeHTTP): they are few, long or large.

What it does and does not do, as the API server needs it: HTTP/1.1 over TCP or TLS; bodies by
Content-Length or chunked; `Connection: close` honoured; no redirects, cookies, proxies or
compression (the API server answers identity when not asked for gzip).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

IDLE_SECONDS = 30.0  # a connection idle longer is closed rather than reused: the server may have shut it
_HEAD_END = b"\r\n\r\n"
_CRLF = b"\r\n"


class HttpProtocolError(ConnectionError):
    """An answer that is not HTTP/1.1 as this client reads it; the connection is closed."""


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    reason: str
    body: bytes


class _Connection(asyncio.Protocol):
    """One keep-alive connection: at most one request in flight; `answer()` waits for its response."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future[Answer] | None = None
        self.closed = False
        self.keep = True  # the last answer allows another request on this connection
        self.idle_since = time.monotonic()
        self._lost: Exception | None = None

    # asyncio.Protocol --------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.waiter is not None and not self.waiter.done():
            self._parse(eof=False)

    def eof_received(self) -> bool | None:
        if self.waiter is not None and not self.waiter.done():
            self._parse(eof=True)
        return None  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._lost = exc
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            # A body read to the end of the connection is complete now; anything else was cut.
            self._parse(eof=True)
            if not waiter.done():
                waiter.set_exception(ConnectionResetError(f"the API server closed the connection: {exc!r}"))

    # Requests ----------------------------------------------------------------------------------
    def send(self, request: bytes) -> asyncio.Future[Answer]:
        assert self.transport is not None and not self.closed
        self.buffer.clear()
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return self.waiter

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _parse(self, eof: bool) -> None:
        """Complete the waiter when the buffer holds a whole answer (or fail it on a malformed one)."""
        assert self.waiter is not None
        try:
            answer = _answer(self.buffer, eof)
        except HttpProtocolError as exc:
            self.waiter.set_exception(exc)
            self.close()
            return
        if answer is None:
            return
        parsed, keep = answer
        self.keep = keep and not eof
        self.waiter.set_result(parsed)


def _answer(buffer: bytearray, eof: bool) -> tuple[Answer, bool] | None:
    """The answer in `buffer` and whether the connection may be kept, or None while incomplete."""
    end = buffer.find(_HEAD_END)
    if end < 0:
        if eof and buffer:  # (nothing at all: the connection was closed, which connection_lost says)
            raise HttpProtocolError("the connection ended inside an answer's head")
        return None
    lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
    try:
        version, code, *reason = lines[0].split(" ", 2)
        status = int(code)
    except ValueError:
        raise HttpProtocolError(f"not an HTTP status line: {lines[0][:80]!r}") from None
    if not version.startswith("HTTP/1."):
        raise HttpProtocolError(f"not an HTTP/1.x answer: {lines[0][:80]!r}")
    if 100 <= status < 200:  # an interim answer (we send no Expect): the real one follows
        del buffer[: end + 4]
        return _answer(buffer, eof)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
    start = end + 4
    if status in (204, 304):
        return Answer(status, reason[0] if reason else "", b""), keep
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = _chunked(buffer, start)
        if body is None:
            if eof:
                raise HttpProtocolError("the connection ended inside a chunked body")
            return None
    elif "content-length" in headers:
        try:
            length = int(headers["content-length"])
        except ValueError:
            raise HttpProtocolError(f"bad Content-Length {headers['content-length']!r}") from None
        if len(buffer) - start < length:
            if eof:
                raise HttpProtocolError("the connection ended inside a body")
            return None
        body = bytes(buffer[start : start + length])
    else:  # the body runs to the end of the connection
        if not eof:
            return None
        body, keep = bytes(buffer[start:]), False
    return Answer(status, reason[0] if reason else "", body), keep


def _chunked(buffer: bytearray, at: int) -> bytes | None:
    """A chunked body from `at`, or None while incomplete (trailers are read and dropped)."""
    parts: list[bytes] = []
    while True:
        line_end = buffer.find(_CRLF, at)
        if line_end < 0:
            return None
        size_text = bytes(buffer[at:line_end]).split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise HttpProtocolError(f"bad chunk size {size_text[:20]!r}") from None
        at = line_end + 2
        if size == 0:
            trailers_end = buffer.find(_CRLF, at)
            while trailers_end > at:  # a trailer line: skip it
                at = trailers_end + 2
                trailers_end = buffer.find(_CRLF, at)
            if trailers_end < 0:
                return None
            return b"".join(parts)
        if len(buffer) < at + size + 2:
            return None
        parts.append(bytes(buffer[at : at + size]))
        at += size + 2


class _Deadlines:
    """The answers awaited, each with its deadline; one timer for all of them, at the earliest.

    A timer per request (call_later, then cancel) cost about 2.4 µs of the shim's 15 per request: a
    heap entry made and dropped each time, and the loop's passes over the cancelled ones. Here a request
    costs a dict entry, and the one timer fires about once per timeout at most, to time out what is
    late and set itself again for what is left. It is not cancelled when the last answer comes (that
    would be the churn again between bursts): it fires once more, finds nothing, and stops."""

    def __init__(self) -> None:
        self._waiting: dict[asyncio.Future[Answer], tuple[float, float]] = {}  # deadline, timeout
        self._timer: asyncio.TimerHandle | None = None
        self._at = 0.0  # when the timer fires

    def watch(self, waiter: asyncio.Future[Answer], timeout: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        self._waiting[waiter] = (deadline, timeout)
        if self._timer is None or deadline < self._at:
            self._set(loop, deadline)

    def done(self, waiter: asyncio.Future[Answer]) -> None:
        self._waiting.pop(waiter, None)

    def _set(self, loop: asyncio.AbstractEventLoop, at: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._at = loop.call_at(at, self._fire), at

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        # asyncio may run a timer up to its clock's resolution early: then nothing is late yet, and
        # the timer is set again for the same deadline.
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        late = [(w, timeout) for w, (deadline, timeout) in self._waiting.items() if deadline <= now]
        for waiter, timeout in late:
            del self._waiting[waiter]
            if not waiter.done():
                waiter.set_exception(TimeoutError(f"no answer from the API server within {timeout:g} s"))
        if self._waiting:
            self._set(loop, min(deadline for deadline, _ in self._waiting.values()))


class Http1Pool:
    """Keep-alive connections to one server, each used by one request at a time; as many are opened
    as requests are in flight (the caller bounds that)."""

    def __init__(self, base_url: str, ssl_context: ssl.SSLContext | bool = False) -> None:
        parts = urlsplit(base_url)
        self.secure = parts.scheme == "https"
        self.host = parts.hostname or "localhost"
        self.port = parts.port or (443 if self.secure else 80)
        self.prefix = parts.path.rstrip("/")  # an API server behind a path (a proxy) keeps it
        authority = parts.netloc.rsplit("@", 1)[-1]
        self.host_header = f"Host: {authority}\r\n".encode("latin-1")
        self._ssl: ssl.SSLContext | None = None
        if self.secure:
            if isinstance(ssl_context, ssl.SSLContext):
                self._ssl = ssl_context
            else:  # as aiohttp's ssl=False: encrypted, not verified
                self._ssl = ssl.create_default_context()
                self._ssl.check_hostname = False
                self._ssl.verify_mode = ssl.CERT_NONE
        self._idle: list[_Connection] = []
        self._deadlines = _Deadlines()
        self.opened = 0  # connections made (a keep-alive pool makes few)

    async def request(
        self, method: str, target: str, headers: bytes, body: bytes | None, timeout: float
    ) -> Answer:
        """One request (`target`: path and query; `headers`: prepared header lines, each ending in
        CRLF, without Host and Content-Length). Raises OSError or EOFError subclasses on no answer,
        TimeoutError after `timeout` seconds."""
        head = f"{method} {self.prefix}{target} HTTP/1.1\r\n".encode("latin-1") + self.host_header + headers
        if body is not None:
            request = b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body)
        else:
            request = head + _CRLF
        connection = self._kept() or await self._connect()
        waiter = connection.send(request)
        self._deadlines.watch(waiter, timeout)
        try:
            answer = await waiter
        except BaseException:
            connection.close()  # its state is unknown: never reused
            raise
        finally:
            self._deadlines.done(waiter)
        if connection.keep and not connection.closed:
            connection.idle_since = time.monotonic()
            self._idle.append(connection)
        else:
            connection.close()
        return answer

    def _kept(self) -> _Connection | None:
        """An idle connection that may still be used (no coroutine: nearly every request finds one)."""
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed and now - connection.idle_since < IDLE_SECONDS:
                return connection
            connection.close()
        return None

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        _, connection = await loop.create_connection(
            _Connection, self.host, self.port, ssl=self._ssl, server_hostname=self.host if self._ssl else None
        )
        self.opened += 1
        return connection

    def close(self) -> None:
        self._deadlines.close()
        for connection in self._idle:
            connection.close()
        self._idle.clear()
