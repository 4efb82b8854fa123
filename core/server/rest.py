"""The read-only REST state API on YuniKorn's ws/v1 paths, served in the core's event loop.

Handlers are synchronous readers between engine steps (see core.views.dao), so every answer is one
consistent snapshot. Unknown objects answer 404 with {"status_code", "message", "description"}, the
shape YuniKorn's web service uses for errors.

Optionally the API is served over TLS, and with a bearer token every request but the health check
must carry `Authorization: Bearer <token>` (401 in the same error shape otherwise).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import ssl
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from aiohttp import web
from aiohttp.typedefs import Middleware

from core.config import ConfigError
from core.config.as_json import config_json
from core.config.extra_config import DEFAULT_MAX_STREAMS, DEFAULT_MAX_STREAMS_PER_HOST
from core.config.input_limits import DEFAULT_LIMITS, Limits
from core.events import Follower
from core.history.recorder import HistoryRecorder
from core.history.store import HistoryStore
from core.rm.config_reading import read_config
from core.scheduler.cluster import ClusterContext
from core.server.addresses import split_host_port
from core.server.cors import cors, cors_headers
from core.server.event_json import event_batch, event_record
from core.server.process_metrics import process_families
from core.server.prometheus import history_families
from core.server.prometheus import render as render_metrics
from core.server.rest_cluster import ClusterAPI
from core.server.rest_connections import DEFAULT_BOUNDS, ConnectionBounds, ConnectionGuard
from core.server.rest_errors import error_response
from core.server.rest_history import HistoryAPI
from core.views import app_views, dao, health_view, metrics_view, usage_views

log = structlog.get_logger("pykorn.rest")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


_error = error_response


def json_handler(read: Callable[[web.Request], Any]) -> Handler:
    """A handler answering with what `read` returns, as JSON."""

    async def handler(request: web.Request) -> web.Response:
        return web.json_response(read(request))

    return handler


DEFAULT_BATCH = 10_000
SHUTDOWN_SECONDS = 0.3  # at most this long for requests under way to finish when the core stops


class StateAPI:
    def __init__(
        self,
        context: ClusterContext,
        default_config: str,
        limits: Limits = DEFAULT_LIMITS,
        body_timeout: float = ConnectionBounds.header_timeout,
        max_event_streams: int = ConnectionBounds.max_event_streams,
    ) -> None:
        self.context = context
        self.max_event_streams = max_event_streams  # --rest-max-event-streams: their connections' share
        # From an RM's extraConfig (core.server.core_settings): event.RESTResponseSize,
        # event.maxStreams, event.maxStreamsPerHost.
        self.max_batch = DEFAULT_BATCH
        self.max_streams = DEFAULT_MAX_STREAMS
        self.max_streams_per_host = DEFAULT_MAX_STREAMS_PER_HOST
        self._streams_by_host: dict[str, int] = {}
        self.last_health: Callable[[], dict[str, Any] | None] | None = None  # the periodic check's result
        self.default_config = default_config
        self.max_config_bytes = limits.max_config_bytes  # the same limit as over gRPC
        self.body_timeout = body_timeout  # for a request body (validate-conf) to arrive whole
        self._followers: set[Follower] = set()  # open event streams
        self._no_followers = asyncio.Event()
        self._no_followers.set()
        self.instance = str(uuid.uuid4())  # tells a reader of event numbers that the core restarted
        self.history_recorder: HistoryRecorder | None = None  # its write path's metrics (--history)

    def routes(self) -> list[web.RouteDef]:
        get = web.get
        return [
            get("/ws/v1/partitions", self._wrap(self.partitions)),
            get("/ws/v1/partition/{p}/queues", self._wrap(self.queues)),
            get("/ws/v1/partition/{p}/queue/{q}", self._wrap(self.queue)),
            get("/ws/v1/partition/{p}/queue/{q}/applications", self._wrap(self.queue_applications)),
            get("/ws/v1/partition/{p}/nodes", self._wrap(self.nodes)),
            get("/ws/v1/partition/{p}/node/{n}", self._wrap(self.node)),
            get("/ws/v1/partition/{p}/application/{a}", self._wrap(self.application)),
            get("/ws/v1/partition/{p}/applications/{s}", self._wrap(self.applications)),
            get("/ws/v1/partition/{p}/usage/users", self._wrap(self.usage_users)),
            get("/ws/v1/partition/{p}/usage/user/{u}", self._wrap(self.usage_user)),
            get("/ws/v1/partition/{p}/usage/groups", self._wrap(self.usage_groups)),
            get("/ws/v1/partition/{p}/usage/group/{g}", self._wrap(self.usage_group)),
            get("/ws/v1/scheduler/healthcheck", self._wrap(self.healthcheck)),
            get("/ws/v1/events/batch", self._wrap(self.events)),
            get("/ws/v1/events/stream", self.event_stream),
            get("/ws/v1/config", self.config),
            web.post("/ws/v1/validate-conf", self.validate_conf),
            get("/ws/v1/metrics", self.metrics),
        ]

    def _wrap(self, read: Callable[[web.Request], Any]) -> Handler:
        return json_handler(read)

    def _part(self, request: web.Request) -> Any:
        return dao.find_partition(self.context, request.match_info["p"])

    def partitions(self, request: web.Request) -> Any:
        return dao.partitions(self.context)

    def queues(self, request: web.Request) -> Any:
        return dao.queue_tree(self._part(request))

    def queue(self, request: web.Request) -> Any:
        part = self._part(request)
        return dao.queue_info(part, dao.find_queue(part, request.match_info["q"]), recurse=True)

    def queue_applications(self, request: web.Request) -> Any:
        part = self._part(request)
        return app_views.queue_applications(part, dao.find_queue(part, request.match_info["q"]))

    def nodes(self, request: web.Request) -> Any:
        return dao.nodes(self._part(request))

    def node(self, request: web.Request) -> Any:
        part = self._part(request)
        return dao.node_info(part, dao.node_by_id(part, request.match_info["n"]))

    def application(self, request: web.Request) -> Any:
        part = self._part(request)
        return app_views.application_view(part, request.match_info["a"])

    def applications(self, request: web.Request) -> Any:
        status = request.query.get("status", "")
        return app_views.applications_in_state(self._part(request), request.match_info["s"], status)

    def usage_users(self, request: web.Request) -> Any:
        return usage_views.users(self._part(request))

    def usage_user(self, request: web.Request) -> Any:
        return usage_views.user(self._part(request), request.match_info["u"])

    def usage_groups(self, request: web.Request) -> Any:
        return usage_views.groups(self._part(request))

    def usage_group(self, request: web.Request) -> Any:
        return usage_views.group(self._part(request), request.match_info["g"])

    def healthcheck(self, request: web.Request) -> Any:
        # As YuniKorn: the last periodic check's result (a check walks every node and allocation; the
        # endpoint is open to probes), or a check now when there is none.
        last = self.last_health() if self.last_health is not None else None
        return last if last is not None else health_view.scheduler_health(self.context)

    def events(self, request: web.Request) -> Any:
        if not self.context.events.tracking:
            raise TrackingOff
        start = _int_param(request, "start", 0)
        count = min(_int_param(request, "count", self.max_batch), self.max_batch)
        if count == 0 and "count" in request.query:
            raise dao.BadRequest('0 is not a valid value for "count"')  # as YuniKorn
        return event_batch(self.context.events, self.instance, start, count)

    async def event_stream(self, request: web.Request) -> web.StreamResponse:
        """Newline-delimited JSON event records as they happen, after the last `count` held ones.

        A reader so far behind that the ring drops events it has not read is cut off rather than let
        it miss them unknowingly; it can reconnect and page what is still held from /events/batch.
        """
        if not self.context.events.tracking:
            return _error(500, TRACKING_OFF)
        host = request.remote or ""
        refusal = self._stream_refusal(host)
        if refusal:
            body = {"status_code": 503, "message": refusal, "description": ""}
            return web.json_response(body, status=503, headers={"Retry-After": "1", **cors_headers("GET")})
        count = _int_param(request, "count", 0)
        self._streams_by_host[host] = self._streams_by_host.get(host, 0) + 1
        try:
            return await self._stream(request, count)
        finally:
            left = self._streams_by_host.pop(host) - 1
            if left:
                self._streams_by_host[host] = left

    def _stream_refusal(self, host: str) -> str:
        """Why another event stream may not open now ("" when it may)."""
        open_now = len(self._followers)
        if open_now >= self.max_event_streams:
            # Streams keep to their share of the connections, so that short requests always have room.
            return (
                f"{open_now} event streams are open, the limit (--rest-max-event-streams): "
                "retry shortly, or page /ws/v1/events/batch"
            )
        if open_now >= self.max_streams:
            return f"{open_now} event streams are open, the limit (event.maxStreams): retry shortly"
        if self._streams_by_host.get(host, 0) >= self.max_streams_per_host:
            return (
                f"{self._streams_by_host[host]} event streams are open from {host}, the limit "
                "(event.maxStreamsPerHost): retry shortly"
            )
        return ""

    async def _stream(self, request: web.Request, count: int) -> web.StreamResponse:
        events = self.context.events
        follower = Follower(events, start=events.highest_id + 1 - count)
        self._followers.add(follower)
        self._no_followers.clear()
        response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson", **cors_headers("GET")})
        try:
            await response.prepare(request)  # inside: a reader gone already must not keep its place
            while (item := await follower.next()) is not None:
                await response.write(_line(event_record(*item)))
            log.warning("event stream reader fell behind, closing", resumeFrom=follower.cursor)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            follower.close()
            self._followers.discard(follower)
            if not self._followers:
                self._no_followers.set()
        return response

    def end_streams(self) -> None:
        """End every open event stream after what it has been sent (the core is stopping)."""
        for follower in list(self._followers):
            follower.end()

    async def streams_ended(self, timeout: float) -> None:
        """Until every event stream handler has returned, or the timeout."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._no_followers.wait(), timeout)

    async def metrics(self, request: web.Request) -> web.Response:
        text = render_metrics(metrics_view.gauges(self.context), self.context.metrics) + process_families()
        recorder = self.history_recorder
        if recorder is not None:
            buffer = recorder.buffer
            text += history_families(buffer.dropped, recorder.written, len(buffer), recorder.healthy)
        return web.Response(text=text, headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})

    async def config(self, request: web.Request) -> web.Response:
        """The queues.yaml in force, as YAML; as JSON (YuniKorn's ConfigDAOInfo) when the request says
        `Accept: application/json`."""
        text = dao.config_source(self.context, request.query.get("rmID", ""), self.default_config)
        if request.headers.get("Accept") == "application/json":
            body = {**config_json(text), "DeadlockDetectionEnabled": False, "DeadlockTimeoutSeconds": 0}
            return web.json_response(body)
        return web.Response(text=text, content_type="application/x-yaml")

    async def validate_conf(self, request: web.Request) -> web.Response:
        """YuniKorn's answer shape: {"allowed": bool, "reason": str}; every problem is in the reason."""
        try:
            async with asyncio.timeout(self.body_timeout):
                text = await request.text()
        except TimeoutError:
            return _error(
                408,
                f"the request body did not arrive within {self.body_timeout:g}s (--rest-header-timeout)",
            )
        if not text.strip():
            # As YuniKorn's: an empty text is valid (an RM that sends it gets the core's default).
            warning = "the text is empty: an RM that sends it gets the core's default configuration"
            return web.json_response({"allowed": True, "reason": "", "warnings": [warning]})
        try:
            loaded = await read_config(text, self.max_config_bytes)
        except ConfigError as exc:
            reason = "; ".join(str(problem) for problem in exc.problems)
            return web.json_response({"allowed": False, "reason": reason, "warnings": []})
        # pykorn's addition: what the configuration sets that will not act as written.
        warnings = [str(warning) for warning in loaded.warnings]
        return web.json_response({"allowed": True, "reason": "", "warnings": warnings})


def _int_param(request: web.Request, name: str, default: int) -> int:
    raw = request.query.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise dao.BadRequest(f"{name} must be a whole number, not {raw!r}") from None
    if value < 0:
        raise dao.BadRequest(f"{name} must not be negative")
    return value


@web.middleware
async def _state_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """One mapping for every endpoint: what the state layer cannot find is 404, what it cannot
    answer as asked is 400, each with the reason as JSON."""
    try:
        return await handler(request)
    except dao.NotFound as exc:
        return _error(404, str(exc))
    except dao.BadRequest as exc:
        return _error(400, str(exc))
    except TrackingOff:
        return _error(500, TRACKING_OFF)


TRACKING_OFF = "Event tracking is disabled"  # YuniKorn's words, with its 500


class TrackingOff(Exception):
    """event.trackingEnabled is false: there are no events to read."""


HEALTHCHECK_PATH = "/ws/v1/scheduler/healthcheck"  # open without a token: probes carry no secrets


def bearer_token_check(token: str) -> Middleware:
    """Middleware: 401 unless the request carries `Authorization: Bearer <token>`."""
    expected = token.encode()

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path == HEALTHCHECK_PATH:
            return await handler(request)
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        # Constant-time comparison: response timing must not reveal how much of a guess was right.
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), expected):
            return await handler(request)
        reason = "wrong bearer token" if scheme.lower() == "bearer" else "no bearer token"
        return _error(
            401,
            f"unauthorized: {reason}",
            "this API requires the header 'Authorization: Bearer <token>' with the core's REST token",
            headers={"WWW-Authenticate": 'Bearer realm="pykorn"'},
        )

    return check


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def _line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record) + "\n").encode()


class RestServer:
    def __init__(
        self,
        context: ClusterContext,
        listen: str,
        default_config: str,
        ssl_context: ssl.SSLContext | None = None,
        token: str | None = None,
        limits: Limits = DEFAULT_LIMITS,
        bounds: ConnectionBounds = DEFAULT_BOUNDS,
        history: HistoryStore | None = None,
    ) -> None:
        self.listen = listen
        self.ssl_context = ssl_context
        self.token = token
        self.guard = ConnectionGuard(bounds, context.metrics)
        self._listener: asyncio.Server | None = None
        # The token check comes first (outermost), so an unauthorised request learns nothing more.
        middlewares = [bearer_token_check(token)] if token else []
        # aiohttp refuses larger bodies (413) before validate-conf reads them: the same limit.
        # CORS outermost: every answer carries it, and a preflight is answered before the token check.
        self.app = web.Application(
            middlewares=[self.guard.middleware(), cors, *middlewares, _state_errors],
            client_max_size=limits.max_config_bytes,
        )
        self.api = StateAPI(
            context, default_config, limits, body_timeout=bounds.header_timeout,
            # Below the cap whatever the bounds say: short requests always keep room.
            max_event_streams=max(0, min(bounds.max_event_streams, bounds.max_connections - 1)),
        )  # fmt: skip
        self.app.router.add_routes(self.api.routes())
        config_text = lambda rm_id: dao.config_source(context, rm_id, default_config)  # noqa: E731
        self.app.router.add_routes(ClusterAPI(context, config_text).routes(json_handler))
        self.app.router.add_routes(HistoryAPI(history).routes())
        self.app.router.add_route("*", "/{tail:.*}", self._unknown)
        # A handler whose client went away is cancelled: an event stream reader that left would
        # otherwise wait for the next event, and hold up a shutdown for aiohttp's whole timeout.
        # aiohttp's keep-alive timeout closes a connection left idle between requests.
        self._runner = web.AppRunner(
            self.app,
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=0.1,  # stop() has given requests their time already
            keepalive_timeout=bounds.idle_timeout,
        )
        self.port = 0

    async def _unknown(self, request: web.Request) -> web.Response:
        return _error(404, f"no such endpoint: {request.method} {request.path}")

    async def start(self) -> int:
        host, port = split_host_port(self.listen)
        await self._runner.setup()
        server = self._runner.server
        assert server is not None  # set up just now
        # The listener is ours, not an aiohttp site, so that each connection comes in through the
        # guard (header timeout, connection cap); a TLS handshake gets the header timeout too.
        timeout = self.guard.bounds.header_timeout
        self._listener = await asyncio.get_running_loop().create_server(
            self.guard.factory(server),
            host,
            port,
            ssl=self.ssl_context,
            ssl_handshake_timeout=timeout if self.ssl_context is not None else None,
        )
        self.port = int(self._listener.sockets[0].getsockname()[1])  # the port bound, when 0 was asked
        tls = self.ssl_context is not None
        log.info("rest api listening", address=f"{host}:{self.port}", tls=tls, token=self.token is not None)
        if self.token and not tls and not _is_loopback(host):
            log.warning("the REST token travels in plaintext off this host; give --rest-tls-cert/-key")
        return self.port

    async def stop(self, grace: float = SHUTDOWN_SECONDS) -> None:
        """Within about `grace` seconds: event streams end after what they were sent, requests under way
        finish; then every connection still open is closed, a write its reader left blocked with it."""
        self.api.end_streams()
        if self._listener is not None:
            self._listener.close()  # no new connections
        await self.api.streams_ended(grace)
        self.guard.abort_all()  # what is left (a reader that does not read) is abandoned, not waited for
        await self._runner.cleanup()
