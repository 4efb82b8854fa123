"""The core daemon: wires engine, rmproxy and the gRPC server, and stops cleanly on SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from core.config import load_config
from core.config.input_limits import DEFAULT_LIMITS, Limits
from core.config.loader import default_config_text
from core.events import DEFAULT_CAPACITY as DEFAULT_EVENT_CAPACITY
from core.history.recorder import HistoryRecorder
from core.history.store import HistoryStore
from core.rm.proxy import DEFAULT_GRACE_PERIOD, RMProxy
from core.scheduler.cluster import ClusterContext
from core.scheduler.early_asks import EarlyAsks
from core.scheduler.engine import Engine
from core.server.addresses import check_can_listen
from core.server.core_settings import CoreSettingsApplier, LogLevels
from core.server.event_stream import EventStreams
from core.server.grpc_handlers import LargeMessages, add_scheduler
from core.server.grpc_service import SchedulerService
from core.server.health_loop import HealthLoop
from core.server.memory import MemoryReleaser
from core.server.rest import RestServer
from core.server.rest_connections import DEFAULT_BOUNDS, ConnectionBounds
from core.server.tls import ServerTLS, grpc_credentials, read_token, server_tls, ssl_context
from si.v1 import si_pb2

# Seconds the start waits for the history's schema (a migration) before the core serves without it.
HISTORY_SCHEMA_WAIT = 5.0
log = structlog.get_logger("pykorn.daemon")

SERVICE_NAME = si_pb2.DESCRIPTOR.services_by_name["Scheduler"].full_name
MAX_MESSAGE_BYTES = DEFAULT_LIMITS.max_message_bytes


@dataclass(frozen=True)
class CoreOptions:
    listen: str = "127.0.0.1:3333"
    config_path: Path | None = None
    port_file: Path | None = None
    # Of the 2 s a stop takes at most (SIGTERM to exit, in every state): how long response streams
    # may take to write what is queued for them before their calls are ended.
    shutdown_grace: float = 0.6
    rest_listen: str = "127.0.0.1:9080"  # empty: no REST API
    rm_grace_period: float = DEFAULT_GRACE_PERIOD  # seconds an RM with no open stream keeps its state
    event_log_size: int = DEFAULT_EVENT_CAPACITY  # events held for REST and StreamEvents readers
    history_url: str = ""  # the history database (core.history); empty: no history
    history_retention: float = 30 * 86400.0  # seconds history is kept (0: all)
    rest_port_file: Path | None = None
    # gRPC TLS: certificate and key (both or neither); a client CA on top turns on mutual TLS, and
    # then each RM may only act as the rmID its certificate's common name names.
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None
    # REST API: TLS certificate and key (both or neither), and a file holding a bearer token.
    rest_tls_cert: Path | None = None
    rest_tls_key: Path | None = None
    rest_token_file: Path | None = None
    # What an RM may send (core/config/input_limits.py, `pykorn core --limit`).
    limits: Limits = DEFAULT_LIMITS
    rest_bounds: ConnectionBounds = DEFAULT_BOUNDS  # REST timeouts and connection cap
    # Sets log levels while running (log.* of an RM's extraConfig): given by the command that set up
    # logging with live levels; None: the levels stay as started, and such keys are warned about.
    log_levels: LogLevels | None = None


def _tls_mode(tls: ServerTLS | None) -> str:
    return "off" if tls is None else "mutual" if tls.client_ca is not None else "server"


class CoreDaemon:
    """A running core: start(), then wait_stopped(); stop() may come from a signal or a test."""

    def __init__(self, options: CoreOptions) -> None:
        self.options = options
        # Read every certificate, key and token first: a bad one is a startup error (SecurityConfigError).
        self.tls = server_tls(options.tls_cert, options.tls_key, options.tls_client_ca)
        rest_tls = server_tls(options.rest_tls_cert, options.rest_tls_key, what="--rest-tls")
        rest_token = read_token(options.rest_token_file) if options.rest_token_file else None
        config_text = options.config_path.read_text() if options.config_path else default_config_text()
        load_config(config_text)  # an unusable default config is a startup error, not a registration one
        limits = options.limits
        self.context = ClusterContext(
            time.time, options.event_log_size, limits.max_pending_asks_per_application,
            EarlyAsks(limits.early_ask_seconds, limits.max_early_asks),
        )  # fmt: skip
        self.releaser = MemoryReleaser(asyncio.get_running_loop())  # coalesced: one pause at a time
        self.context.on_state_dropped = self.releaser.request
        self.rmproxy = RMProxy(
            config_text,
            grace_period=options.rm_grace_period,
            limits=options.limits,
            metrics=self.context.metrics,
        )
        self.rmproxy.configs.on_refused = self.releaser.request
        self.engine = Engine(self.context, self.rmproxy.deliver)
        self.rmproxy.bind_engine(self.engine.submit)
        self.server = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", options.limits.max_message_bytes),
                ("grpc.max_send_message_length", options.limits.max_message_bytes),
                ("grpc.so_reuseport", 0),
            ]
        )
        self.health_loop = HealthLoop(self.context)
        self.service = SchedulerService(
            self.rmproxy,
            EventStreams(self.context.events, self.rmproxy.is_registered),
            enforce_rm_identity=self.tls is not None and self.tls.client_ca is not None,
            room=self.engine.room,
            settings=self._apply_settings,
        )
        add_scheduler(
            self.service, self.server, LargeMessages(asyncio.get_running_loop(), self.releaser.request)
        )
        self.health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), self.server
        )
        # History: written by a thread of its own off the scheduling path, read by the REST API.
        self.history = (
            HistoryRecorder(
                HistoryStore(options.history_url), self.context, retention=options.history_retention
            )
            if options.history_url
            else None
        )
        self.rest = (
            RestServer(
                self.context,
                options.rest_listen,
                config_text,
                ssl_context=ssl_context(rest_tls) if rest_tls is not None else None,
                token=rest_token,
                limits=options.limits,
                bounds=options.rest_bounds,
                history=self.history.store if self.history is not None else None,
            )
            if options.rest_listen
            else None
        )
        if self.rest is not None:
            self.rest.api.last_health = lambda: self.health_loop.last
            self.rest.api.history_recorder = self.history
        self.settings = CoreSettingsApplier(
            self.context.events, self.health_loop, self.rest.api if self.rest is not None else None,
            options.log_levels,
        )  # fmt: skip
        self.port = 0
        self._engine_task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def start(self) -> int:
        try:
            check_can_listen(self.options.listen)
        except OSError as exc:
            raise ListenError(
                f"cannot listen on {self.options.listen} for gRPC (--listen): {exc.strerror or exc}"
            ) from exc
        try:
            if self.tls is None:
                self.port = self.server.add_insecure_port(self.options.listen)
            else:
                self.port = self.server.add_secure_port(self.options.listen, grpc_credentials(self.tls))
        except RuntimeError:  # gRPC's "Failed to bind" (older versions returned 0 instead)
            self.port = 0
        if self.port == 0:
            raise ListenError(
                f"cannot listen on {self.options.listen} for gRPC (--listen): the port is in use, or the "
                "host is not an address of this machine"
            )
        if self.rest is not None:
            try:
                await self.rest.start()
            except OSError as exc:
                raise ListenError(
                    f"cannot listen on {self.options.rest_listen} for the REST API (--rest-listen): "
                    f"{exc.strerror or exc}"
                ) from exc
            if self.options.rest_port_file:
                self.options.rest_port_file.write_text(f"{self.rest.port}\n")
        if self.history is not None:
            self.history.start()
            log.info("history recording", database=self.history.store.described)
            if not await self.history.schema_ready(HISTORY_SCHEMA_WAIT):  # records are held meanwhile
                log.warning("history database not ready; serving, records held", waited=HISTORY_SCHEMA_WAIT)
        self._engine_task = asyncio.create_task(self.engine.run())
        self.health_loop.start()
        await self.server.start()
        await self.health.set("", health_pb2.HealthCheckResponse.SERVING)
        await self.health.set(SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
        host = self.options.listen.rpartition(":")[0]
        if self.options.port_file:
            self.options.port_file.write_text(f"{self.port}\n")
        log.info(
            "core listening", address=f"{host}:{self.port}", service=SERVICE_NAME, tls=_tls_mode(self.tls)
        )
        return self.port

    def stop(self) -> None:
        self._stop.set()

    def _apply_settings(self, rm_id: str, extra: Mapping[str, str]) -> list[str]:
        return self.settings.apply(rm_id, extra)

    async def wait_stopped(self) -> None:
        """The stop, within STOP_SECONDS of the signal whatever the core is doing: every stream is
        ended cleanly if it can be in time, and abandoned if not (a reader that does not read)."""
        await self._stop.wait()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STOP_SECONDS
        log.info("core stopping")
        if self.history is not None:  # what it holds written at full speed while the rest stops
            self.history.stopping()
        # Streams ended first: from here rmproxy refuses what would need the engine (UNAVAILABLE).
        self.rmproxy.close_all_streams()
        self.engine.stop()  # between two slices; what is queued already is applied and answered
        self.health_loop.close()
        await self.health.enter_graceful_shutdown()
        self.service.events.end_all()
        if self.rest is not None:
            self.rest.api.end_streams()
        await self.service.wait_streams_finished(self.options.shutdown_grace)
        await asyncio.sleep(0.05)  # gRPC sends each call's final status after its handler returns
        await self.server.stop(_left(deadline, loop, 0.2))
        if self.rest is not None:
            await self.rest.stop(_left(deadline, loop, 0.3))
        if self._engine_task is not None:
            try:
                await asyncio.wait_for(self._engine_task, _left(deadline, loop, 0.1))
            except TimeoutError:
                log.warning("engine still busy at the stop deadline; abandoned")
        if self.history is not None:  # what the engine recorded last, written in what time is left
            await self.history.stop(_left(deadline, loop, STOP_SECONDS))
        log.info("core stopped", seconds=round(STOP_SECONDS - (deadline - loop.time()), 3))


class ListenError(OSError):
    """An address the core cannot listen on: in use, not local, or not permitted."""


STOP_SECONDS = 1.5  # from the signal to "core stopped": 0.5 s left of the 2 s for the process's exit


def _left(deadline: float, loop: asyncio.AbstractEventLoop, most: float) -> float:
    """At most `most` seconds, and no more than what is left before the deadline."""
    return max(0.0, min(most, deadline - loop.time()))


async def run_core(options: CoreOptions) -> None:
    daemon = CoreDaemon(options)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, daemon.stop)
    try:
        await daemon.start()
    except BaseException:
        # Whatever stopped the start (a port file that cannot be written, say): the servers started
        # so far are stopped here, in the loop, not left to a finalizer after it has closed.
        await daemon.server.stop(None)
        if daemon.rest is not None:
            await daemon.rest.stop(0)
        raise
    await daemon.wait_stopped()
