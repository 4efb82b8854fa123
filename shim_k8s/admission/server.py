"""`pykorn admission`: the admission controller's HTTPS server (shim_k8s.admission.controller decides).

Paths as YuniKorn's: `POST /mutate` (pods and workloads), `POST /validate-conf` (the scheduler's
configmaps), `GET /health`. It follows namespaces (their enableYuniKorn/generateAppId annotations),
priority classes (allow-preemption) and the scheduler's configmaps (its `admissionController.*`
keys, applied live) with informers. A queue configuration is checked by the core's own
`/ws/v1/validate-conf`; when the core cannot be reached the change is let through (as YuniKorn does:
an unreachable scheduler must not block every configmap write) and a warning says so.

Without `--tls-cert`/`--tls-key` it sets itself up (shim_k8s.admission.webhook_setup): CAs in a Secret,
its own serving certificate, its webhook configurations, kept current (rotation, a new Service name,
the namespace filters) by a task of its own. With them it serves those and registers nothing
(certificates and webhooks made by hand or by cert-manager).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import structlog
from aiohttp import web

from shim_k8s.admission import controller as admission
from shim_k8s.admission.webhook_setup import SECRET_NAME, SetupError, WebhookManager, utc_now
from shim_k8s.api import object_shapes
from shim_k8s.api.informer import Informer
from shim_k8s.api.kube_http import TRANSPORT_ERRORS, ApiError, KubeHTTP
from shim_k8s.api.kubeconfig import cluster_access
from shim_k8s.api.objects import Obj, WatchEvent, key_of
from shim_k8s.api.startup import ListenError, list_at_start
from shim_k8s.readers import service_config
from shim_k8s.readers.bad_objects import Refused
from shim_k8s.readers.service_config import CONFIGMAP_NAMES

log = structlog.get_logger("pykorn.admission")

Decide = Callable[[Obj], Awaitable[dict[str, Any]]]
CHECK_TIMEOUT = 10.0  # seconds the core may take to judge a configuration
_SETUP_ERRORS: tuple[type[BaseException], ...] = (SetupError, ApiError, *TRANSPORT_ERRORS)
SETUP_RETRY = 60.0  # seconds before a failed renewal or webhook update is tried again
RECHECK_PERIOD = 3600.0  # seconds between readings of the webhook configurations (changed by hand?)


class AdmissionServer:
    def __init__(self, namespace: str, core_rest: str | None = None, core_rest_ca: str | None = None) -> None:
        """`core_rest`: the core's REST address (host:port, or a URL: https:// when the core serves its
        REST API over TLS, trusting `core_rest_ca`) to check configurations against; without it,
        `admissionController.webHook.schedulerServiceAddress` from the configmaps."""
        self.namespace = namespace
        self.core_rest = core_rest
        self.core_trust: ssl.SSLContext | bool = True  # https: the system's CAs, or core_rest_ca
        if core_rest_ca:
            self.core_trust = ssl.create_default_context(cafile=core_rest_ca)
        self.cluster = admission.Cluster()
        self.configmaps: dict[str, Obj | None] = {}
        self.controller = admission.Controller(admission.AdmissionConfig(), self.cluster)
        self._session: aiohttp.ClientSession | None = None
        # Set when what the webhook configurations say may have changed (the Service's name, the
        # namespace filters): the set-up task looks again.
        self.changed = asyncio.Event()

    # What the informers deliver ----------------------------------------------------------------
    def on_object(self, kind: str, event: str, obj: Obj) -> None:
        """An informer's object; one that cannot be read is logged and not used (the last good one of
        its name stays): it never stops the controller."""
        try:
            self._take(kind, event, obj)
        except Exception as exc:
            found = object_shapes.diagnose(kind, obj)
            log.warning("object not used: it cannot be read", kind=kind, object=key_of(obj),
                        reason=found or str(exc))  # fmt: skip

    def _take(self, kind: str, event: str, obj: Obj) -> None:
        name = obj["metadata"]["name"]
        if not isinstance(name, str):
            raise Refused("metadata.name: expected a string")
        if kind == "namespaces":
            _put(self.cluster.namespaces, name, obj, event)
            self.changed.set()
        elif kind == "priorityclasses":
            _put(self.cluster.priority_classes, name, obj, event)
        elif kind == "configmaps" and name in CONFIGMAP_NAMES:
            if event != WatchEvent.DELETED:
                service_config.flatten(obj)  # readable, before it replaces the last good one
            self.configmaps[name] = None if event == WatchEvent.DELETED else obj
            self._reconfigure()

    def _reconfigure(self) -> None:
        warnings: list[str] = []
        parsed = admission.admission_config(service_config.merged(self.configmaps, warnings))
        for warning in warnings + parsed.warnings:
            log.warning("admission configuration key not used as written", detail=warning)
        self.controller = admission.Controller(parsed.config, self.cluster)
        self.changed.set()

    # HTTP ----------------------------------------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application()
        app.add_routes([
            web.post("/mutate", self._mutate),
            web.post("/validate-conf", self._validate),
            web.get("/health", self._health),
        ])  # fmt: skip
        return app

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response(text="OK\r\n")

    async def _mutate(self, request: web.Request) -> web.Response:
        return await self._answer(request, self._mutate_one)

    async def _validate(self, request: web.Request) -> web.Response:
        return await self._answer(request, self._validate_one)

    async def _mutate_one(self, request: Obj) -> dict[str, Any]:
        return self.controller.mutate(request)

    async def _validate_one(self, request: Obj) -> dict[str, Any]:
        text = self.controller.config_to_check(request, self.namespace, self.configmaps)
        refusal = await self.check_config(text) if text is not None else None
        return admission.refuse(request, refusal) if refusal else admission.allow(request)

    async def _answer(self, request: web.Request, decide: Decide) -> web.Response:
        if request.content_type != "application/json":
            return web.Response(status=415, text="invalid Content-Type, expect `application/json`")
        try:
            body = json.loads(await request.text())
            review_request = body["request"]
            if not isinstance(review_request, dict):
                raise TypeError("request is not an object")
        except (ValueError, KeyError, TypeError):
            invalid = admission.refuse({"uid": "yunikorn-invalid-body"}, "body decode failed")
            return web.json_response(admission.review(invalid))
        try:
            response = await decide(review_request)
        except Exception as exc:  # a request of a shape the controller cannot read: refused, and said why
            found = object_shapes.diagnose("pods", review_request.get("object"))
            log.warning("admission request not readable", error=repr(exc), field=found)
            response = admission.refuse(review_request, f"pykorn could not read the request: {found or exc}")
        if not response["allowed"]:
            kind = (review_request.get("kind") or {}).get("kind")
            namespace = review_request.get("namespace")
            log.info(
                "admission refused", kind=kind, namespace=namespace, reason=response["status"]["message"]
            )
        return web.json_response(admission.review(response))

    async def check_config(self, text: str) -> str | None:
        """The core's reason to refuse a queue configuration, or None."""
        if not text.strip():
            return None  # no queues.yaml: the core's default configuration applies
        address = self.core_rest or self.controller.config.scheduler_service_address
        base = address if "://" in address else f"http://{address}"
        url = f"{base.rstrip('/')}/ws/v1/validate-conf"
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=CHECK_TIMEOUT))
        try:
            async with self._session.post(url, data=text.encode(), ssl=self.core_trust) as answer:
                verdict = await answer.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            log.warning("could not ask the core about a configuration; let through", url=url, error=repr(exc))
            return None
        if verdict.get("allowed"):
            return None
        return str(verdict.get("reason") or "the core refused the configuration")

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


def _put(into: dict[str, Obj], name: str, obj: Obj, event: str) -> None:
    if event == WatchEvent.DELETED:
        into.pop(name, None)
    else:
        into[name] = obj


def tls_context(cert: str, key: str) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


def load_serving(context: ssl.SSLContext, chain_pem: bytes, key_pem: bytes) -> None:
    """Put a certificate made in memory into the context (new connections get it): the ssl module
    reads files only, so it passes through a private temporary directory, removed at once."""
    with tempfile.TemporaryDirectory(prefix="pykorn-admission-") as directory:
        cert, key = Path(directory) / "tls.crt", Path(directory) / "tls.key"
        cert.write_bytes(chain_pem)
        key.touch(mode=0o600)
        key.write_bytes(key_pem)
        context.load_cert_chain(cert, key)


@dataclass
class SelfSetup:
    """The set-up: the manager, the context it keeps current, and what it last installed for."""

    manager: WebhookManager
    context: ssl.SSLContext
    service: str = ""
    wake: asyncio.Event = field(default_factory=asyncio.Event)  # tests: the clock moved, look again
    installed: asyncio.Event = field(default_factory=asyncio.Event)  # set after each install

    async def start(self, server: AdmissionServer) -> None:
        """The CAs and the serving certificate, signed by a CA the API server already trusts: before
        the server listens."""
        await self.manager.load_cas()
        await self.manager.read_trusted()
        self._sign(server.controller.config.service_name)

    def _sign(self, service: str) -> None:
        serving = self.manager.make_serving(service)
        load_serving(self.context, serving.chain_pem, serving.key_pem)
        self.service = service
        log.info("admission serving certificate made", service=service, expires=serving.not_after.isoformat())

    async def first_install(self, server: AdmissionServer) -> None:
        """The webhook configurations, once the server listens (the API server may call it as soon as
        they name it). What fails here is the installation's (a configuration missing that the role may
        not create): SetupError, and the controller does not start."""
        config = server.controller.config
        await self.manager.install(self.service, config, server.cluster, force=True)
        server.changed.clear()
        self.installed.set()

    async def keep(self, server: AdmissionServer, stop: asyncio.Event) -> None:
        """Install the webhooks, then keep them and the certificates current until stopped. Any failure
        is logged and tried again shortly: the task never ends while the controller serves."""
        next_check = time.monotonic() + RECHECK_PERIOD  # when the configurations are next read back
        while not stop.is_set():
            by_hand = self.wake.is_set()
            self.wake.clear()
            try:
                renewing = self.manager.clock() >= self.manager.renewal_due()
                if renewing:
                    await self.manager.load_cas()  # the expiring CA replaced in the Secret
                server.changed.clear()
                config, cluster = server.controller.config, server.cluster
                checking = renewing or by_hand or time.monotonic() >= next_check
                if checking:
                    next_check = time.monotonic() + RECHECK_PERIOD
                # The certificate first, signed by a CA the installed bundle holds (at a renewal, the one
                # that stays: the new CA signs only from the next renewal on, long after its bundle is
                # everywhere); then the bundle and the Service's name.
                if renewing or config.service_name != self.service:
                    self._sign(config.service_name)
                await self.manager.install(self.service, config, cluster, force=checking)
                self.installed.set()
                wait = (self.manager.renewal_due() - self.manager.clock()).total_seconds()
                wait = min(wait, next_check - time.monotonic())
            except _SETUP_ERRORS as exc:
                log.warning("admission set-up not current; tried again shortly", error=str(exc) or repr(exc))
                wait = SETUP_RETRY
            except Exception:  # a fault of ours: said in full, and tried again rather than left dead
                log.exception("admission set-up failed; tried again shortly")
                wait = SETUP_RETRY
            await _first_of(stop, server.changed, self.wake, timeout=max(wait, 0.0))


async def _first_of(*events: asyncio.Event, timeout: float) -> None:
    waits = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waits, timeout=min(timeout, 86_400.0), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


async def run_admission(
    port: int,
    cert: str | None,
    key: str | None,
    namespace: str = "yunikorn",
    kubeconfig: str | None = None,
    host: str | None = None,
    core_rest: str | None = None,
    bind: str = "0.0.0.0",
    stop: asyncio.Event | None = None,
    on_ready: Callable[[int], None] | None = None,
    core_rest_ca: str | None = None,
    secret: str = SECRET_NAME,
    clock: Callable[[], datetime.datetime] = utc_now,
    on_setup: Callable[[SelfSetup], None] | None = None,
) -> None:
    """Serve until stopped; `on_ready` is told the port once it listens. With `cert`/`key` it serves
    them; without, it sets itself up (CAs in the Secret `secret`, its serving certificate, its webhook
    configurations) and keeps that current; `on_setup` (tests) is given the set-up to watch."""
    stop = stop or asyncio.Event()
    server = AdmissionServer(namespace, core_rest, core_rest_ca)
    http = KubeHTTP(cluster_access(kubeconfig, host), 50.0, 100, 8)
    paths = {
        "namespaces": "/api/v1/namespaces",
        "priorityclasses": "/apis/scheduling.k8s.io/v1/priorityclasses",
        "configmaps": f"/api/v1/namespaces/{namespace}/configmaps",
    }
    informers: list[Informer] = []
    runner = web.AppRunner(server.app(), access_log=None)
    keeper: asyncio.Task[None] | None = None
    try:
        lists = await list_at_start(http, paths, stop)
        if lists is None:
            return  # stopped while the API server did not answer
        for kind, (items, version) in lists.items():
            path = paths[kind]
            for obj in items:
                server.on_object(kind, WatchEvent.ADDED, obj)
            informer = Informer(kind, path, http, server.on_object)
            informer.start(items, version)
            informers.append(informer)
        setup: SelfSetup | None = None
        if cert and key:
            context = tls_context(cert, key)
            log.info("serving the given certificate; the webhook configurations are not managed")
        else:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            setup = SelfSetup(WebhookManager(http, namespace, secret, clock), context)
            await setup.start(server)
            if on_setup is not None:
                on_setup(setup)
        await runner.setup()
        try:
            await web.TCPSite(runner, bind, port, ssl_context=context).start()
        except OSError as exc:
            raise ListenError(
                f"cannot listen on {bind}:{port} (--bind, --port): {exc.strerror or exc}"
            ) from None
        bound = runner.addresses[0][1]  # the port chosen, when `port` is 0
        log.info("admission controller serving", port=bound, namespace=namespace, managed=setup is not None)
        if setup is not None:  # once it serves: the API server may call it as soon as it is registered
            await setup.first_install(server)
            keeper = asyncio.create_task(setup.keep(server, stop))
        if on_ready is not None:
            on_ready(bound)
        await stop.wait()
    finally:
        if keeper is not None:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
        for informer in informers:
            informer.stop()
        with contextlib.suppress(Exception):
            await runner.cleanup()
        await server.close()
        await http.close()
