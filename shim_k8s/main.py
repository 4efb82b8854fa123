"""`pykorn k8s`: list what exists, sync the core, then follow the API with informers and carry out
what the core decides, until stopped."""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

from shim_fake.client import SchedulerClient
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
) -> None:
    stop = stop or asyncio.Event()
    kube = Kube(api_client(kubeconfig, host), namespace)
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[tuple[str, str, dict[str, Any]]] = asyncio.Queue()
    async with SchedulerClient(core_address, rm_id) as client:
        shim = K8sShim(client, kube, scheduler_name)
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
        handlers = {
            "nodes": shim.on_node,
            "pods": shim.on_pod,
            "priorityclasses": shim.on_priority_class,
            "configmaps": shim.on_configmap,
        }
        try:
            while not stop.is_set():
                try:
                    kind, event, obj = await asyncio.wait_for(events.get(), POLL)
                except TimeoutError:
                    pass
                else:
                    await handlers[kind](event, obj)
                await shim.process_core()
        finally:
            for informer in informers:
                informer.stop()
