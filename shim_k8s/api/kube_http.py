"""The Kubernetes API over aiohttp: pooled keep-alive connections, a bounded number of requests in
flight, client-side rate limits, each response decoded once.

Why not the official client: it is synchronous, so every call needs a worker thread; its
`_preload_content=False` responses must be read and released by hand or the connection never returns to
the pool; and its watch decodes every event twice and encodes it once. Measured on the HTTP emulation
(benchmarks/RESULTS.md, "Kubernetes shim"), the shim spent most of its CPU inside it. The official
client still reads kubeconfig files and the in-cluster service account (`kubeconfig.py`), whose
host, credentials and certificates this client then uses, so authentication stays what Kubernetes
users configure.

JSON is orjson's: every pod comes as two or three watch events and goes out as a binding and an event,
and the standard library's codec was a tenth of the shim's CPU per pod; orjson takes a third of that
(benchmarks/RESULTS.md, issue 35 goal 3). It reads what the API server writes alike; text that is not
JSON (NaN, a lone surrogate) is refused as the API server's own decoder refuses it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlencode

import aiohttp
import orjson
import structlog

from shim_k8s.api.http1 import Http1Pool
from shim_k8s.api.kubeconfig import ClusterAccess
from shim_k8s.api.objects import WatchEvent
from shim_k8s.api.request_flow import InFlight, RateLimiter

log = structlog.get_logger("pykorn.k8s.http")

# Generous, as a scheduler's client should be that binds thousands of pods a second (YuniKorn's own
# kubernetes.qps and kubernetes.burst default to 1,000 each; kube-scheduler's to 50 and 100).
DEFAULT_QPS = 5000.0
DEFAULT_BURST = 10000
DEFAULT_IN_FLIGHT = 64  # requests at once, over as many pooled connections


# A request that got no answer: it may or may not have reached the server (aiohttp's for watches and
# lists; OSError and EOFError subclasses from the lean client's connections).
TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (aiohttp.ClientError, TimeoutError, OSError, EOFError)
USER_AGENT = "pykorn-k8s-shim"
# The largest watch event read: an object in etcd may be 1.5 MiB by default, written as JSON with
# escapes and the event around it; a cluster may raise etcd's limit.
MAX_EVENT_BYTES = 64 * 1024 * 1024


class ApiError(RuntimeError):
    """A request the API server answered with an error status."""

    def __init__(self, status: int, reason: str, body: str = "") -> None:
        super().__init__(f"{status} {reason}")
        self.status, self.reason, self.body = status, reason, body


class KubeHTTP:
    """Requests to one API server. Writes share the in-flight bound and the rate limit; watches hold
    their own connection for as long as they stream."""

    def __init__(
        self,
        access: ClusterAccess,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        in_flight: int = DEFAULT_IN_FLIGHT,
    ) -> None:
        self.access = access
        self.limiter = RateLimiter(qps, burst)
        # Events have a limit of their own, as kube-scheduler's event client does: a flood of them
        # never takes the rate that bindings need.
        self.event_limiter = RateLimiter(qps, burst)
        self._slots = InFlight(in_flight)
        self._in_flight = in_flight
        self._session: aiohttp.ClientSession | None = None  # watches and lists
        self._pool = Http1Pool(access.host, access.ssl_context)  # every other request
        self._static_headers: dict[str, bytes] = {}  # by content type
        self.requests = 0  # sent, for the benchmarks and the metrics
        # Requests the API server forbade, by (resource, verb): a role that lacks a rule is a cause of
        # the installation's, said loudly (a warning and a metric), never a silent stall.
        self.forbidden: dict[tuple[str, str], int] = {}
        # Requests that failed, for the metrics: by the answer's status code, or "network" (no answer).
        self.errors: dict[str, int] = {}
        self._forbidden_logged: dict[tuple[str, str], float] = {}
        self.in_flight_peak = 0
        self._busy = 0

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            # Pooled: one connection per request in flight, plus the watches, kept alive.
            connector = aiohttp.TCPConnector(limit=0, ssl=self.access.ssl_context, keepalive_timeout=60)
            self._session = aiohttp.ClientSession(
                connector=connector, json_serialize=_dumps_text, timeout=aiohttp.ClientTimeout(total=None)
            )
        return self._session

    async def close(self) -> None:
        self._pool.close()
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _headers(self, content_type: str = "application/json") -> dict[str, str]:
        headers = _static_headers(content_type)
        token = self.access.authorization()
        if token:
            headers["Authorization"] = token
        return headers

    def _header_lines(self, content_type: str) -> bytes:
        """The lean client's header lines: the same headers, prepared once per content type, the
        token each time (it may have been refreshed)."""
        static = self._static_headers.get(content_type)
        if static is None:
            lines = "".join(f"{name}: {value}\r\n" for name, value in _static_headers(content_type).items())
            static = self._static_headers[content_type] = lines.encode("latin-1")
        token = self.access.authorization()
        return static + f"Authorization: {token}\r\n".encode("latin-1") if token else static

    async def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
        timeout: float = 30.0,
        event: bool = False,
        answer: bool = True,
    ) -> dict[str, Any]:
        """One request under the rate limit (events': `event`) and the in-flight bound; the decoded
        answer ({} with `answer` False: a write whose answer nobody reads is not decoded), or ApiError."""
        # The rate limit and the in-flight bound, each awaited only when it holds the request back
        # (their common case, a token and a slot free, costs no coroutine: this runs twice per pod).
        limiter = self.event_limiter if event else self.limiter
        wait = limiter.take()
        if wait > 0.0:
            await limiter.pay(wait)
        slots = self._slots
        if not slots.take_now():
            await slots.take()
        try:
            self._busy += 1
            if self._busy > self.in_flight_peak:
                self.in_flight_peak = self._busy
            self.requests += 1
            target = f"{path}?{urlencode(params)}" if params else path
            data = orjson.dumps(body) if body is not None else None
            try:
                got = await self._pool.request(
                    method, target, self._header_lines(content_type), data, timeout
                )
            except (OSError, EOFError, TimeoutError):
                self.errors["network"] = self.errors.get("network", 0) + 1
                raise
            finally:
                self._busy -= 1
        finally:
            slots.give()
        if got.status >= 400:
            code = str(got.status)
            self.errors[code] = self.errors.get(code, 0) + 1
            text = got.body.decode("utf-8", "replace")
            error = ApiError(got.status, _reason(text, got.reason), text)
            if got.status == 403:
                self.note_forbidden(method, path, error)
            raise error
        if not answer or not got.body:
            return {}
        decoded: dict[str, Any] = orjson.loads(got.body)
        return decoded

    async def list(self, path: str) -> tuple[list[dict[str, Any]], str]:
        """Every object at a collection path, and the list's resourceVersion to watch from (over
        aiohttp: a list may be large and come in many pieces)."""
        await self.limiter.acquire()
        async with self._open().get(
            self.access.host + path, headers=self._headers(), timeout=aiohttp.ClientTimeout(total=120.0)
        ) as response:  # fmt: skip
            await self._raise_for_status("GET", path, response)
            raw = await response.read()
        self.requests += 1
        body = orjson.loads(raw) if raw else {}
        return body.get("items") or [], (body.get("metadata") or {}).get("resourceVersion", "")

    async def watch(
        self, path: str, resource_version: str, timeout_seconds: int
    ) -> AsyncIterator[dict[str, Any]]:
        """The watch events from `resource_version` (each `{"type", "object"}`), decoded once, until the
        server ends the watch; an ERROR event (410 Gone) raises ApiError."""
        params = {
            "watch": "true", "resourceVersion": resource_version, "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }  # fmt: skip
        async with self._open().get(
            self.access.host + path, params=params, headers=self._headers(),
            timeout=aiohttp.ClientTimeout(total=None, sock_read=timeout_seconds + 30),
        ) as response:  # fmt: skip
            await self._raise_for_status("WATCH", path, response)
            content = response.content
            partial = bytearray()  # the start of an event whose line has not ended yet
            while True:
                # One event a line, as large as its object. Read as it comes, many events at a time
                # in a burst: one wait per chunk, not one per line.
                chunk = await content.readany()
                if not chunk:  # the server ended the watch (after a last line without its newline?)
                    if partial.strip():
                        yield _watch_event(partial)
                    return
                end = chunk.rfind(b"\n")
                if end < 0:
                    partial += chunk
                    if len(partial) > MAX_EVENT_BYTES:
                        raise ValueError(f"a watch event over {MAX_EVENT_BYTES} bytes")
                    continue
                lines = (bytes(partial) + chunk[:end] if partial else chunk[:end]).split(b"\n")
                partial = bytearray(chunk[end + 1 :])
                for line in lines:
                    if len(line) > MAX_EVENT_BYTES:
                        raise ValueError(f"a watch event over {MAX_EVENT_BYTES} bytes")
                    if line.strip():
                        yield _watch_event(line)

    async def _raise_for_status(self, method: str, path: str, response: aiohttp.ClientResponse) -> None:
        """ApiError, with the API's Status message, for an answer that is an error."""
        if response.status >= 400:
            code = str(response.status)
            self.errors[code] = self.errors.get(code, 0) + 1
            text = await response.text()
            error = ApiError(response.status, _reason(text, response.reason or ""), text)
            if response.status == 403:
                self.note_forbidden(method, path, error)
            raise error

    def note_forbidden(self, method: str, path: str, error: ApiError) -> None:
        """Count a 403 and say it: once per resource and verb, then once a minute with the count."""
        key = (resource_of(path), verb_of(method, path))
        self.forbidden[key] = self.forbidden.get(key, 0) + 1
        now = time.monotonic()
        last = self._forbidden_logged.get(key)
        if last is None or now - last >= FORBIDDEN_LOG_PERIOD:
            self._forbidden_logged[key] = now
            log.warning(
                "the API server forbade a request: the role does not grant it (see deploy/kubernetes)",
                resource=key[0], verb=key[1], times=self.forbidden[key], message=error.reason,
            )  # fmt: skip


FORBIDDEN_LOG_PERIOD = 60.0  # seconds between two log lines about the same forbidden resource and verb
_VERBS = {
    "GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete", "WATCH": "watch",
}  # fmt: skip


def resource_of(path: str) -> str:
    """The resource (and subresource) a REST path names, as RBAC names it: `pods/binding`, `nodes`."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]  # after /api/v1 or /apis/GROUP/VERSION
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) != 2:
        rest = rest[2:]  # namespaced: the resource follows the namespace's name
    if not rest:
        return ""
    return f"{rest[0]}/{rest[2]}" if len(rest) >= 3 else rest[0]


def verb_of(method: str, path: str) -> str:
    """The RBAC verb of a request: a GET of a collection is a list."""
    verb = _VERBS.get(method.upper(), method.lower())
    if verb == "get":
        parts = [p for p in path.split("?", 1)[0].split("/") if p]
        rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
        if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) != 2:
            rest = rest[2:]
        if len(rest) == 1:
            return "list"
    return verb


def _static_headers(content_type: str) -> dict[str, str]:
    """Every request's headers but the credentials."""
    return {"Accept": "application/json", "Content-Type": content_type, "User-Agent": USER_AGENT}


def _watch_event(line: bytes | bytearray) -> dict[str, Any]:
    """One watch event; an ERROR event (410 Gone, say) raises ApiError, text that is not JSON
    ValueError."""
    event: dict[str, Any] = orjson.loads(line)
    if isinstance(event, dict) and event.get("type") == WatchEvent.ERROR:
        status = event.get("object") or {}
        raise ApiError(int(status.get("code") or 500), str(status.get("message", "")))
    return event


def _dumps_text(value: object) -> str:
    """aiohttp's `json=` bodies, by orjson (aiohttp wants text)."""
    return orjson.dumps(value).decode()


def _reason(text: str, fallback: str) -> str:
    """The API's Status message when the body is one."""
    try:
        body = orjson.loads(text)
    except ValueError:
        return fallback
    return str(body.get("message") or body.get("reason") or fallback) if isinstance(body, dict) else fallback
