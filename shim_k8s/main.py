"""`pykorn k8s`: list what exists, sync the core, then follow the API with informers and carry out
what the core decides, until stopped."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import grpc
import structlog

from shim_fake.client import SchedulerClient
from shim_fake.tls import ClientTLS
from shim_k8s.informer import Informer
from shim_k8s.kube import Kube, api_client
from shim_k8s.shim import CONFIGMAP_NAME, K8sShim

log = structlog.get_logger("pykorn.k8s")

POLL = 0.05  # seconds between looks at the core's answers when the API is quiet


async def run_shim(
    core_address: str,
    kubeconfig: str | None = None,
    scheduler_name: str = "yunikorn",
    namespace: str = "yunikorn",
    rm_id: str = "mycluster",
    host: str | None = None,
    stop: asyncio.Event | None = None,
    tls: ClientTLS | None = None,
) -> None:
    stop = stop or asyncio.Event()
    kube = Kube(api_client(kubeconfig, host), namespace)
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[tuple[str, str, dict[str, Any]]] = asyncio.Queue()
    client = SchedulerClient(core_address, rm_id, tls=tls)
    await client.connect()
    shim = K8sShim(client, kube, scheduler_name)
    try:
        functions = kube.list_functions()
        lists = {kind: await asyncio.to_thread(Kube.list_raw, func) for kind, func in functions.items()}
        configmap = next((c for c in lists["configmaps"][0] if c["metadata"]["name"] == CONFIGMAP_NAME), None)
        await shim.sync(lists["nodes"][0], lists["pods"][0], lists["priorityclasses"][0], configmap)
        log.info("synced with the core", rmID=rm_id, nodes=len(lists["nodes"][0]), pods=len(lists["pods"][0]))
        informers = [
            Informer(kind, func, lambda k, e, o: events.put_nowait((k, e, o)), loop)
            for kind, func in functions.items()
        ]
        for informer in informers:
            informer.start(*lists[informer.kind])
        kind, event, obj = "", "", {}
        handlers = {
            "nodes": shim.on_node,
            "pods": shim.on_pod,
            "priorityclasses": shim.on_priority_class,
            "configmaps": shim.on_configmap,
        }
        try:
            while not stop.is_set():
                seen = shim.client.seen
                if seen.stream_errors or seen.stream_ends:
                    await _resync_after_core_loss(shim, core_address, rm_id, informers, stop)
                    continue
                with contextlib.suppress(TimeoutError):  # a quiet API: look at the core's answers anyway
                    kind, event, obj = await asyncio.wait_for(events.get(), POLL)
                try:
                    if kind:
                        await handlers[kind](event, obj)
                    await shim.process_core()
                except (grpc.aio.AioRpcError, asyncio.InvalidStateError) as exc:
                    # The core went away mid-request; the event is not lost: the re-sync sends the
                    # informers' current state.
                    seen.stream_errors.append(repr(exc))
                kind = ""
        finally:
            for informer in informers:
                informer.stop()
    finally:
        await shim.client.close()


async def _resync_after_core_loss(
    shim: K8sShim, core_address: str, rm_id: str, informers: list[Informer], stop: asyncio.Event
) -> None:
    """The core went away (a restart, say): reconnect with backoff, register again, and send everything
    the informers hold, so the core rebuilds its state; pods already bound are not bound again."""
    seen = shim.client.seen
    log.warning("lost the core; reconnecting", rmID=rm_id, error=(seen.stream_errors or seen.stream_ends)[-1])
    await shim.client.close()
    delay = 0.2
    while not stop.is_set():
        client = SchedulerClient(core_address, rm_id, tls=shim.client.tls)
        try:
            await client.connect(timeout=2.0)
            shim.client = client
            current = {i.kind: list(i.known.values()) for i in informers}
            configmap = next(
                (c for c in current["configmaps"] if c["metadata"]["name"] == CONFIGMAP_NAME), None
            )
            await shim.sync(current["nodes"], current["pods"], current["priorityclasses"], configmap)
            log.info("core back; state sent again", rmID=rm_id)
            return
        except Exception as exc:  # not up yet
            await client.close()
            log.info("core not reachable yet", rmID=rm_id, error=repr(exc))
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
