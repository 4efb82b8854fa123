"""`pykorn k8s`: list what exists, sync the core, then follow the API with informers and carry out
what the core decides, until stopped."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
import structlog

from rmclient.client import SEND_ERRORS, SchedulerClient
from rmclient.reachability import unreachable_reason
from rmclient.reconnect import Backoff, reconnect
from rmclient.tls import ClientTLS
from shim_k8s import metrics
from shim_k8s.api.informer import Informer
from shim_k8s.api.kube import Kube
from shim_k8s.api.kube_http import (
    DEFAULT_BURST,
    DEFAULT_IN_FLIGHT,
    DEFAULT_QPS,
    TRANSPORT_ERRORS,
    ApiError,
    KubeHTTP,
)
from shim_k8s.api.kubeconfig import cluster_access
from shim_k8s.api.leader import LeaderElection, LeaderElector, LeadershipLost
from shim_k8s.api.objects import Obj, WatchEvent, name_of
from shim_k8s.api.own_pod import LEADER_LABEL, OwnPod
from shim_k8s.api.request_flow import RateLimiter
from shim_k8s.api.startup import ListenError, StartupError, described, list_at_start
from shim_k8s.readers.configmaps import CONFIGMAP_NAME
from shim_k8s.readers.service_config import CONFIGMAP_NAMES
from shim_k8s.readers.task_groups import DEFAULT_PLACEHOLDER_IMAGE
from shim_k8s.readers.workload_ref import PODGROUPS, WORKLOADS
from shim_k8s.shim import K8sShim
from shim_k8s.volumes.cache import VOLUME_KINDS

log = structlog.get_logger("pykorn.k8s")

DEFAULTS_NAME = CONFIGMAP_NAMES[0]
BACKOFF = Backoff(first=0.2, most=5.0)  # between attempts to reach a core that went away
_LIST_ERRORS: tuple[type[BaseException], ...] = (ApiError, *TRANSPORT_ERRORS)
_CONNECT_ERRORS: tuple[type[BaseException], ...] = (TimeoutError, *SEND_ERRORS)
RECONCILE_PERIOD = 60.0  # seconds between comparisons of the core's view with the API's
BATCH_ITEMS = 2_000  # informer events handled before the asks they made are sent and decisions started
# Informer events waiting for the loop, past which the informers stop reading their watches until the
# loop has taken the backlog down to half (EventBacklog): a pod's event is a few KB.
EVENT_BACKLOG = 10_000
UNMARK_SECONDS = 2.0  # the most a stop waits to clear the pod's leader label (own_pod.py)
STOP_GRACE = 5.0  # seconds the decisions under way may take to finish when the shim stops


class EventBacklog:
    """The bound on the informer events waiting in the loop's queue. Informers call `room` after each
    event they hand on, and await what it returns (only when the queue is full: otherwise None, and no
    coroutine is made for the event); the loop calls `taken` after each batch it takes. The loop's own
    wake-ups (the core's answers, a stop, a reconciliation round) are never held back: only the watches
    wait."""

    def __init__(self, items: asyncio.Queue[Item], most: int = EVENT_BACKLOG) -> None:
        self._items = items
        self._most = most
        self._free = asyncio.Event()
        self._free.set()
        self.waits = 0  # times an informer had to wait, for the metrics and the tests

    def room(self) -> Coroutine[Any, Any, bool] | None:
        """None while there is room; else what to await until there is."""
        if self._items.qsize() >= self._most:
            self.waits += 1
            self._free.clear()
            return self._free.wait()
        return None

    def taken(self) -> None:
        if not self._free.is_set() and self._items.qsize() <= self._most // 2:
            self._free.set()


# What the main loop is woken with, one queue for all of it ------------------------------------------
@dataclass(slots=True)  # not frozen: two per pod, and a frozen dataclass's __init__ costs 3x
class InformerEvent:
    """An object of `kind` added, modified or deleted, as an informer saw it."""

    kind: str
    event: str  # a WatchEvent, as the wire says it
    obj: Obj


@dataclass(frozen=True, slots=True)
class ReconcileRound:
    """The pods as the API lists them now, to compare with what the core holds."""

    pods: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class LookAtCore:
    """The core sent something to carry out, or went away."""


@dataclass(frozen=True, slots=True)
class Stop:
    """The shim is stopping."""


Item = InformerEvent | ReconcileRound | LookAtCore | Stop
_CORE, _STOP = LookAtCore(), Stop()


@dataclass(frozen=True)
class ApiLimits:
    """How hard the shim may drive the API server: YuniKorn's kubernetes.qps and kubernetes.burst, and
    how many requests may be in flight at once."""

    qps: float = DEFAULT_QPS
    burst: int = DEFAULT_BURST
    in_flight: int = DEFAULT_IN_FLIGHT


@dataclass(frozen=True)
class _Options:
    scheduler_name: str
    namespace: str
    rm_id: str
    tls: ClientTLS | None
    placeholder_image: str
    log_level: str
    reconcile_period: float
    own_pod: OwnPod | None = None


async def run_shim(
    core_address: str,
    kubeconfig: str | None = None,
    scheduler_name: str = "yunikorn",
    namespace: str = "yunikorn",
    rm_id: str = "mycluster",
    host: str | None = None,
    stop: asyncio.Event | None = None,
    tls: ClientTLS | None = None,
    placeholder_image: str = DEFAULT_PLACEHOLDER_IMAGE,
    limits: ApiLimits = ApiLimits(),
    election: LeaderElection | None = None,
    log_level: str = "info",
    reconcile_period: float = RECONCILE_PERIOD,
    metrics_listen: str = "",
    own_pod: OwnPod | None = None,
) -> None:
    """Run until `stop` is set. With `election`, only while this replica holds the Lease: it waits to
    lead first, and raises LeadershipLost (after stopping) when it cannot renew it. Every
    `reconcile_period` seconds the core's view is compared with the API's and repaired (0: never);
    `metrics_listen` (HOST:PORT) serves the shim's metrics; `own_pod` is labelled while this replica
    schedules (shim_k8s/api/own_pod.py)."""
    stop = stop or asyncio.Event()
    options = _Options(scheduler_name, namespace, rm_id, tls, placeholder_image, log_level,
                       reconcile_period, own_pod)  # fmt: skip
    http = KubeHTTP(cluster_access(kubeconfig, host), limits.qps, limits.burst, limits.in_flight)
    health = metrics.Health(http)
    # Served before the election, so that a standby answers the kubelet's probes too.
    try:
        endpoints = await metrics.serve(metrics_listen, health) if metrics_listen else None
    except OSError as exc:
        await http.close()
        raise ListenError(
            f"cannot listen on {metrics_listen} (--metrics-listen): {exc.strerror or exc}"
        ) from None
    elector: LeaderElector | None = None
    leading: asyncio.Task[None] | None = None
    lost = False
    if own_pod is not None:
        await own_pod.mark(http, leading=False)  # a label an earlier run of this container left
    else:
        log.info("no POD_NAME and POD_NAMESPACE: no pod is labelled as the leader's", label=LEADER_LABEL)
    try:
        if election is not None:
            elector = LeaderElector(http, election)
            health.state = "standby"
            if not await elector.acquire(stop):
                return
            health.state = "starting"
            leading = asyncio.create_task(elector.keep())
            leading.add_done_callback(lambda _: stop.set())  # lost: stop scheduling at once
        await _run_leading(core_address, http, stop, options, health)
    finally:
        health.state = "stopping"
        if own_pod is not None:  # set or not, cleared: the Service must not pick a stopping core
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(own_pod.mark(http, leading=False), UNMARK_SECONDS)
        if leading is not None:
            lost = leading.done()  # keep() returns only when the lease could not be renewed
            leading.cancel()
        if elector is not None and leading is not None:
            await elector.release()
        if endpoints is not None:
            await endpoints.cleanup()
        await http.close()
    if lost:
        raise LeadershipLost("the lease was not renewed within the renew deadline; stopped scheduling")


async def _unless_stopped(step: Coroutine[Any, Any, None], stop: asyncio.Event) -> bool:
    """`step` to its end (its error raised), or abandoned once `stop` is set: whether it ended."""
    doing, stopping = asyncio.ensure_future(step), asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({doing, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
    if not doing.done():
        doing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await doing
        return False
    doing.result()
    return True


async def _run_leading(
    core_address: str, http: KubeHTTP, stop: asyncio.Event, options: _Options, health: metrics.Health
) -> None:
    kube = Kube(http, options.namespace)
    # One queue wakes the loop: informer events, and a word that the core sent something.
    items: asyncio.Queue[Item] = asyncio.Queue()
    backlog = EventBacklog(items)
    client = SchedulerClient(core_address, options.rm_id, tls=options.tls)
    try:
        if not await _unless_stopped(client.connect(), stop):
            await client.close()
            return  # SIGTERM while the core did not answer yet: a clean stop
    except _CONNECT_ERRORS as exc:
        why = await asyncio.to_thread(unreachable_reason, core_address) or described(exc)
        raise StartupError(
            f"the core at {core_address} cannot be reached: {why} (is `pykorn core` running there? --core "
            "is its gRPC address)"
        ) from None
    shim = K8sShim(
        client,
        kube,
        options.scheduler_name,
        wake=lambda: items.put_nowait(_CORE),
        placeholder_image=options.placeholder_image,
    )
    shim.settings.log_level = options.log_level  # what the ConfigMaps' log.level falls back to
    stopping = asyncio.create_task(_forward_stop(stop, items))
    background: list[asyncio.Task[None]] = []
    informers: list[Informer] = []
    health.sources = metrics.Sources(shim, kube, http, lambda: informers)
    try:
        lists = await list_at_start(http, kube.paths, stop)
        if lists is None:
            return  # stopped while the API server did not answer
        shim.load(lists["priorityclasses"][0], *_configmaps(lists["configmaps"][0]))
        _apply_api_settings(shim, kube, http)
        # Before the pods: whether a pod may be asked for depends on its volumes, and its namespace's
        # labels go on its ask.
        for kind in (*VOLUME_KINDS, "namespaces", WORKLOADS, PODGROUPS):
            for obj in lists.get(kind, ([], ""))[0]:
                await shim.handle(kind, WatchEvent.ADDED, obj)
        await shim.register()
        await shim.resend(lists["nodes"][0], lists["pods"][0])
        log.info("synced with the core", rmID=options.rm_id, nodes=len(lists["nodes"][0]),
                 pods=len(lists["pods"][0]))  # fmt: skip
        informers.extend(
            Informer(
                kind, path, http, lambda k, e, o: items.put_nowait(InformerEvent(k, e, o)), room=backlog.room
            )
            for kind, path in kube.paths.items()
            if kind in lists  # a kind the cluster does not serve is not followed (api.startup.OPTIONAL)
        )
        for informer in informers:
            informer.start(*lists[informer.kind])
        health.state = "synced"
        if options.own_pod is not None:  # from now on the Service sends REST requests to this core
            await options.own_pod.mark(http, leading=True)
        if options.reconcile_period > 0:
            lister = _list_for_reconciliation(http, kube.paths["pods"], items, options.reconcile_period, stop)
            background.append(asyncio.create_task(lister))
        await _follow(shim, informers, items, stop, backlog)
    finally:
        for informer in informers:
            informer.stop()
        stopping.cancel()
        for task in background:
            task.cancel()
        with contextlib.suppress(TimeoutError, *SEND_ERRORS):
            await asyncio.wait_for(shim.carry_out(), STOP_GRACE)  # bindings under way finish
        await kube.close()
        await client.close()


async def _list_for_reconciliation(
    http: KubeHTTP, path: str, items: asyncio.Queue[Item], period: float, stop: asyncio.Event
) -> None:
    """Every `period`, the pods as the API lists them now (not the informer's cache, which is what
    is being checked), into the main loop, which compares them with what the core holds."""
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), period)
            return
        try:
            pods, _ = await http.list(path)
        except _LIST_ERRORS as exc:
            log.warning("reconciliation: listing pods failed; next round", error=repr(exc))
            continue
        items.put_nowait(ReconcileRound(pods))


async def _forward_stop(stop: asyncio.Event, items: asyncio.Queue[Item]) -> None:
    await stop.wait()
    items.put_nowait(_STOP)


async def _follow(
    shim: K8sShim,
    informers: list[Informer],
    items: asyncio.Queue[Item],
    stop: asyncio.Event,
    backlog: EventBacklog,
) -> None:
    """Hand informer events to the shim and start what the core decides, until stopped. What is
    queued is taken in one go (up to BATCH_ITEMS): the asks it makes go to the core in one request."""
    client = shim.client
    while not stop.is_set():
        if client.lost is not None:
            await _resync_after_core_loss(shim, informers, stop)
            continue
        batch = [await items.get()]
        while len(batch) < BATCH_ITEMS and not items.empty():
            batch.append(items.get_nowait())
        backlog.taken()
        try:
            async with shim.batch():
                for item in batch:
                    match item:
                        case InformerEvent(kind, event, obj):  # a bad object is refused, not fatal
                            await shim.handle(kind, event, obj)
                        case ReconcileRound(pods):
                            await shim.reconcile(pods)
                        case LookAtCore() | Stop():
                            pass  # they only wake the loop: decisions start below, a stop is seen above
            await shim.process_core()
        except SEND_ERRORS as exc:
            # The core went away mid-request; the event is not lost: the re-sync sends the
            # informers' current state.
            client.connection_lost(repr(exc))


async def _resync_after_core_loss(shim: K8sShim, informers: list[Informer], stop: asyncio.Event) -> None:
    """The core went away (a restart, say): reconnect with backoff, register again, and send everything
    the informers hold, so the core rebuilds its state; pods already bound are not bound again."""
    client = shim.client
    log.warning("lost the core; reconnecting", rmID=client.rm_id, error=client.lost)
    shim.volume_binder.volumes.wake_all()  # volume bindings under way stop: the new core places afresh
    with contextlib.suppress(*SEND_ERRORS):
        await shim.carry_out()  # what the old core decided before it went, as far as it goes

    async def resend() -> None:
        # Registered with it: the partitions it declares are what nodes and pods are judged by now.
        shim.settings.accepted = shim.config
        current = {i.kind: list(i.known.values()) for i in informers}
        await shim.resend(current["nodes"], current["pods"])

    def config() -> str:
        current = {i.kind: list(i.known.values()) for i in informers}
        shim.load(current["priorityclasses"], *_configmaps(current["configmaps"]))
        return shim.config

    while True:
        try:
            # config() loads the ConfigMaps first: the core's settings go with what it read.
            if await reconnect(client, config, resend, BACKOFF, stop, lambda: shim.settings.core) is not None:
                shim.settings.accepted = shim.config
                log.info("core back; state sent again", rmID=client.rm_id)
            return
        except grpc.aio.AioRpcError as exc:  # the ConfigMaps' queue configuration refused: the last good one
            if not shim.registration_refused(exc):
                raise


def _configmaps(configmaps: Sequence[Obj]) -> tuple[Obj | None, Obj | None]:
    """yunikorn-configs and yunikorn-defaults, when they exist."""
    by_name = {name_of(c): c for c in configmaps}
    return by_name.get(CONFIGMAP_NAME), by_name.get(DEFAULTS_NAME)


def _apply_api_settings(shim: K8sShim, kube: Kube, http: KubeHTTP) -> None:
    """The ConfigMaps' kubernetes.qps/burst (over the flags) and service.eventChannelCapacity."""
    service = shim.service
    if service.kube_qps is not None or service.kube_burst is not None:
        qps = service.kube_qps if service.kube_qps is not None else http.limiter.qps
        burst = service.kube_burst if service.kube_burst is not None else http.limiter.burst
        http.limiter = RateLimiter(qps, burst)
        http.event_limiter = RateLimiter(qps, burst)
        log.info("API rate limits from the ConfigMaps", qps=qps, burst=burst)
    if service.event_channel_capacity is not None:
        kube.event_capacity(service.event_channel_capacity)
