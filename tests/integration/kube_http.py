"""The HTTP/1.1 server under the API emulation (tests/integration/kube_api.py): requests, responses,
chunked streams for watches, a router with `{name}` path segments, and middlewares.

Why not aiohttp's server: the benchmarks run the emulation beside the shim and the core on two cores,
and aiohttp's request and response machinery cost the emulation about 50 µs a request, more than the
shim's CPU for a pod (benchmarks/RESULTS.md). This server does what an API server's HTTP layer does for
the emulation's clients (the shim's client, aiohttp's, kubectl's Go client) and no more: keep-alive,
pipelined requests answered in order, bodies by Content-Length or chunked, `Expect: 100-continue`, the
API server's 3 MiB request limit (413), a Status body for an unknown path (404) or method (405), and
`Connection: close`. Handlers take a `Request` and answer a `Response` or a `StreamResponse`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any, cast
from urllib.parse import parse_qsl, unquote

import structlog

log = structlog.get_logger("tests.kube_http")

MAX_BODY = 3 * 1024 * 1024  # the API server's limit on a request body
MAX_HEAD = 64 * 1024
_HIGH_WATER = 256 * 1024  # a stream writer waits for the client above this much unsent
_REASONS = {status.value: status.phrase for status in HTTPStatus}


class Headers(dict[str, str]):
    """Request headers by lower-case name; `get` takes any case, as HTTP's names are."""

    def get(self, name: str, default: Any = None) -> Any:
        return super().get(name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name.lower() if isinstance(name, str) else name)


class Request:
    __slots__ = ("_body", "connection", "headers", "match_info", "method", "path", "query")

    def __init__(self, method: str, target: str, headers: Headers, body: bytes) -> None:
        self.method = method
        raw_path, _, query = target.partition("?")
        self.path = unquote(raw_path) if "%" in raw_path else raw_path
        self.query: dict[str, str] = {}
        if query:
            for key, value in parse_qsl(query, keep_blank_values=True):
                self.query.setdefault(key, value)  # the first of a repeated key, as aiohttp's query.get
        self.headers = headers
        self.match_info: dict[str, str] = {}
        self.connection: _Connection | None = None  # what a stream response writes to
        self._body = body

    @property
    def content_type(self) -> str:
        value = self.headers.get("content-type") or "application/octet-stream"
        return str(value).split(";", 1)[0].strip().lower()

    async def read(self) -> bytes:
        return self._body

    async def json(self) -> Any:
        return json.loads(self._body)


class Response:
    __slots__ = ("body", "headers", "status")

    def __init__(
        self,
        body: bytes = b"",
        status: int = 200,
        text: str | None = None,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.status = status
        self.body = text.encode() if text is not None else body
        self.headers = {"Content-Type": content_type, **(headers or {})}

    def encode(self) -> bytes:
        """The response as sent (a constant answer may keep this and send it again: `Encoded`)."""
        return _head(self.status, self.headers, f"Content-Length: {len(self.body)}") + self.body


class Encoded(Response):
    """A response encoded once, sent as is each time (a binding's constant Status)."""

    __slots__ = ("_encoded",)

    def __init__(self, body: bytes, status: int = 200) -> None:
        super().__init__(body, status)
        self._encoded = super().encode()

    def encode(self) -> bytes:
        return self._encoded


def _head(status: int, headers: dict[str, str], framing: str) -> bytes:
    """A response's status line and headers, ending with how its body is framed."""
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    lines.append(f"{framing}\r\n\r\n")
    return "\r\n".join(lines).encode("latin-1")


class StreamResponse:
    """A response written as it goes (a watch): chunked, ended when the handler returns."""

    def __init__(self, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.headers = dict(headers or {})
        self._connection: _Connection | None = None

    async def prepare(self, request: Request) -> None:
        connection = request.connection
        assert connection is not None, "a request being served"
        self._connection = connection
        await connection.send(_head(self.status, self.headers, "Transfer-Encoding: chunked"))

    async def write(self, data: bytes) -> None:
        assert self._connection is not None, "prepare() first"
        if data:
            await self._connection.send(b"%x\r\n%s\r\n" % (len(data), data))

    async def write_eof(self) -> None:
        if self._connection is not None:
            await self._connection.send(b"0\r\n\r\n")
            self._connection = None


Handler = Callable[[Request], Awaitable[Response | StreamResponse]]
Middleware = Callable[[Request, Handler], Awaitable[Response | StreamResponse]]


def _status(code: int, reason: str, message: str) -> Response:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "details": {}, "code": code}  # fmt: skip
    return Response(json.dumps(body).encode(), code)


class Router:
    """Routes by method and path template (`/api/v1/namespaces/{ns}/pods/{name}`): a `{name}` segment
    matches one non-empty path segment. Tried in the order added."""

    def __init__(self) -> None:
        self._routes: dict[int, list[tuple[str, tuple[str, ...], Handler]]] = {}

    def add(self, method: str, template: str, handler: Handler) -> None:
        segments = tuple(template.split("/"))
        self._routes.setdefault(len(segments), []).append((method, segments, handler))

    def resolve(self, method: str, path: str) -> tuple[Handler | None, dict[str, str], bool]:
        """The handler and the path's parameters; the flag says a route had the path (405 if no handler)."""
        parts = path.split("/")
        known = False
        for wanted, segments, handler in self._routes.get(len(parts), ()):
            params: dict[str, str] = {}
            for pattern, part in zip(segments, parts, strict=True):
                if pattern[:1] == "{":
                    if not part:
                        break
                    params[pattern[1:-1]] = part
                elif pattern != part:
                    break
            else:
                if wanted == method:
                    return handler, params, True
                known = True
        return None, {}, known


class _Connection(asyncio.Protocol):
    def __init__(self, server: HttpServer) -> None:
        self._server = server
        self._buffer = bytearray()
        self._waiter: asyncio.Future[None] | None = None
        self._drained: asyncio.Future[None] | None = None
        self._closed = False
        self.transport: asyncio.Transport | None = None
        self.task: asyncio.Task[None] | None = None

    # asyncio.Protocol --------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass, only alike
        self.transport.set_write_buffer_limits(high=_HIGH_WATER)
        self._server.connections.add(self)
        self.task = asyncio.get_running_loop().create_task(self._serve())

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        self._wake()

    def eof_received(self) -> bool:
        self._closed = True
        self._wake()
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._server.connections.discard(self)
        self._wake()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def pause_writing(self) -> None:
        self._drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        self._drained = None

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    # Writing -----------------------------------------------------------------------------------
    async def send(self, data: bytes) -> None:
        if self._closed or self.transport is None or self.transport.is_closing():
            raise ConnectionResetError("the client went away")
        self.transport.write(data)
        if self._drained is not None:
            await self._drained

    # Reading -----------------------------------------------------------------------------------
    async def _more(self) -> bool:
        """Wait for more bytes; False once the client closed or went away."""
        if self._closed:
            return False
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None
        return not self._closed or bool(self._buffer)

    async def _head(self) -> bytes | None:
        while True:
            end = self._buffer.find(b"\r\n\r\n")
            if end >= 0:
                head = bytes(self._buffer[:end])
                del self._buffer[: end + 4]
                return head
            if len(self._buffer) > MAX_HEAD:
                raise _Refused(431, "RequestHeaderFieldsTooLarge", "request headers too large")
            if not await self._more():
                return None

    async def _exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            if not await self._more():
                raise ConnectionResetError("the client went away inside a body")
        body = bytes(self._buffer[:size])
        del self._buffer[:size]
        return body

    async def _line(self) -> bytes:
        while (end := self._buffer.find(b"\r\n")) < 0:
            if not await self._more():
                raise ConnectionResetError("the client went away inside a chunked body")
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 2]
        return line

    async def _chunked(self) -> bytes:
        body = bytearray()
        while True:
            size_text = (await self._line()).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise _Refused(400, "BadRequest", f"bad chunk size {size_text!r}") from None
            if size == 0:
                while await self._line():  # trailers, to the empty line
                    pass
                return bytes(body)
            if len(body) + size > MAX_BODY:
                raise _Refused(413, "RequestEntityTooLarge", "the request body is too large")
            body += await self._exactly(size)
            await self._line()

    async def _request(self) -> tuple[Request, bool] | None:
        """The next request and whether the connection stays open after its answer; None at the end."""
        head = await self._head()
        if head is None:
            return None
        text = head.decode("latin-1")
        request_line, _, header_text = text.partition("\r\n")
        parts = request_line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise _Refused(400, "BadRequest", f"bad request line {request_line[:100]!r}")
        method, target, version = parts
        headers = Headers()
        for line in header_text.split("\r\n") if header_text else ():
            name, colon, value = line.partition(":")
            if not colon:
                raise _Refused(400, "BadRequest", f"bad header line {line[:100]!r}")
            headers[name.strip().lower()] = value.strip()
        get = dict.get  # the names are lower-case already: no case folding on every look
        connection = get(headers, "connection", "").lower()
        keep = "close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection
        if get(headers, "expect", "").lower() == "100-continue":
            await self.send(b"HTTP/1.1 100 Continue\r\n\r\n")
        if "chunked" in get(headers, "transfer-encoding", "").lower():
            body = await self._chunked()
        else:
            try:
                length = int(get(headers, "content-length") or 0)
            except ValueError:
                raise _Refused(400, "BadRequest", "bad Content-Length") from None
            if length > MAX_BODY:
                raise _Refused(413, "RequestEntityTooLarge", "the request body is too large")
            body = await self._exactly(length) if length > 0 else b""
        return Request(method, target, headers, body), keep

    # Serving -----------------------------------------------------------------------------------
    async def _serve(self) -> None:
        try:
            while True:
                try:
                    read = await self._request()
                except _Refused as refused:
                    await self.send(_status(refused.code, refused.reason, refused.message).encode())
                    return
                if read is None:
                    return
                request, keep = read
                if not await self._answer(request) or not keep:
                    return
        except ConnectionResetError:
            pass
        finally:
            if self.transport is not None:
                self.transport.close()

    async def _answer(self, request: Request) -> bool:
        """Answer one request; False when the connection must close."""
        server = self._server
        handler, request.match_info, known = server.router.resolve(request.method, request.path)
        if handler is None:
            if known:
                response = _status(
                    405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
                )
            else:
                response = _status(404, "NotFound", "the server could not find the requested resource")
            await self.send(response.encode())
            return True
        request.connection = self
        answer: Response | StreamResponse
        try:
            answer = await server.call(handler, request)
        except ConnectionResetError:
            raise
        except Exception:
            log.exception("emulation handler failed", method=request.method, path=request.path)
            answer = _status(500, "InternalError", "an error on the server has prevented the request")
        if isinstance(answer, StreamResponse):
            await answer.write_eof()
        else:
            await self.send(answer.encode())
        return True


class _Refused(Exception):
    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


class HttpServer:
    def __init__(self, middlewares: list[Middleware] | None = None) -> None:
        self.router = Router()
        self.middlewares = list(middlewares or [])
        self.connections: set[_Connection] = set()
        self._server: asyncio.Server | None = None

    async def call(self, handler: Handler, request: Request) -> Response | StreamResponse:
        for middleware in reversed(self.middlewares):
            handler = _wrapped(middleware, handler)
        return await handler(request)

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Connection(self), host, port)
        return int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        tasks = []
        for connection in list(self.connections):
            if connection.transport is not None:
                connection.transport.close()
            if connection.task is not None:
                connection.task.cancel()
                tasks.append(connection.task)
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self._server.wait_closed()
        self._server = None


def _wrapped(middleware: Middleware, handler: Handler) -> Handler:
    async def call(request: Request) -> Response | StreamResponse:
        return await middleware(request, handler)

    return call
