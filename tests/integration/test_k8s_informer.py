"""An informer against the HTTP emulation of the API server: objects as large as Kubernetes stores
(an etcd value may be 1.5 MiB) come through the watch whole, without the watch breaking."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from shim_k8s.api.informer import Informer
from shim_k8s.api.kube_http import KubeHTTP
from shim_k8s.api.kubeconfig import cluster_access
from tests.integration.kube_api import FakeKubeAPI
from tests.integration.manifests import SCHEDULER_SA
from tests.integration.test_k8s_shim import pod

Seen = asyncio.Queue[tuple[str, dict[str, Any]]]


@contextlib.asynccontextmanager
async def pods_informer(api: FakeKubeAPI) -> AsyncIterator[tuple[Informer, Seen]]:
    """An informer of the emulation's pods, started from a list; what it delivers, as (event, object)."""
    http = KubeHTTP(cluster_access(api.kubeconfig(SCHEDULER_SA)))
    seen: Seen = asyncio.Queue()
    informer = Informer("pods", "/api/v1/pods", http, lambda kind, event, obj: seen.put_nowait((event, obj)))
    try:
        informer.start(*await http.list("/api/v1/pods"))
        yield informer, seen
    finally:
        informer.stop()
        await http.close()


async def test_a_large_object_comes_through_the_watch_whole(api: FakeKubeAPI) -> None:
    async with pods_informer(api) as (informer, seen):
        big = pod("spark-driver")
        big["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": "x" * 1_400_000}
        await api.put("pods", big)
        await api.put("pods", pod("next"))  # the watch goes on after it
        event, obj = await asyncio.wait_for(seen.get(), 30)
        assert event == "ADDED" and obj["metadata"]["name"] == "spark-driver"
        assert obj["metadata"]["annotations"] == big["metadata"]["annotations"]
        event, obj = await asyncio.wait_for(seen.get(), 30)
        assert obj["metadata"]["name"] == "next"
        assert informer.relists == 0  # the watch never broke


async def test_a_watch_event_without_an_object_is_skipped_and_the_watch_goes_on(api: FakeKubeAPI) -> None:
    """Before, such an event ended the informer's task without a word: that kind was never followed
    again. Objects of any shape are handed on (the shim refuses what it cannot read); only an event
    with no object at all is dropped, and logged."""
    async with pods_informer(api) as (informer, seen):
        await api.inject_event("pods", "ADDED", ["not", "an", "object"])
        await api.inject_event("pods", "MODIFIED", {"metadata": ["odd"], "spec": 5})
        await api.put_raw("pods", '{"metadata": {"name": "twice", "uid": "u1", "name": "twice"}, "spec": {}}')
        await api.put("pods", pod("next"))
        names = []
        for _ in range(3):
            _, obj = await asyncio.wait_for(seen.get(), 30)
            meta = obj.get("metadata")
            names.append(meta.get("name") if isinstance(meta, dict) else meta)
        assert names == [["odd"], "twice", "next"]
        assert informer.relists == 0
