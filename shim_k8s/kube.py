"""The Kubernetes API through the official `kubernetes` client.

The client is synchronous; every call runs in a worker thread so the shim's event loop stays free.
Objects read stay plain dicts (what the API serves, read as raw JSON), which is what
shim_k8s.translate reads; what the shim writes (bindings, evictions, events) is built as the client's
typed models, which it serialises to the same JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, cast

from kubernetes import client, config

from shim_k8s.shim import BindError

Obj = dict[str, Any]  # an object as the API serves it (decoded JSON)
PodLike = Mapping[str, Any]


def api_client(kubeconfig: str | None = None, host: str | None = None) -> client.ApiClient:
    """From a kubeconfig file, the in-cluster service account, or (tests) a plain host URL."""
    if host is not None:
        configuration = client.Configuration()
        configuration.host = host
        return client.ApiClient(configuration)
    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig)
    else:
        config.load_incluster_config()
    return client.ApiClient()


class Kube:
    """Lists, binding, eviction, placeholder pods and events; KubeActions for the shim."""

    def __init__(self, api: client.ApiClient, namespace: str = "yunikorn") -> None:
        self.api = api
        self.core = client.CoreV1Api(api)
        self.scheduling = client.SchedulingV1Api(api)
        self.policy = client.PolicyV1Api(api)
        self.storage = client.StorageV1Api(api)
        self.namespace = namespace

    # Lists: (items, resourceVersion) ----------------------------------------------------------
    def list_functions(self) -> dict[str, Callable[..., Any]]:
        return {
            "nodes": self.core.list_node,
            "pods": self.core.list_pod_for_all_namespaces,
            "priorityclasses": self.scheduling.list_priority_class,
            "configmaps": lambda **kw: self.core.list_namespaced_config_map(self.namespace, **kw),
            "persistentvolumeclaims": self.core.list_persistent_volume_claim_for_all_namespaces,
            "persistentvolumes": self.core.list_persistent_volume,
            "storageclasses": self.storage.list_storage_class,
            "namespaces": self.core.list_namespace,
        }

    @staticmethod
    def list_raw(func: Callable[..., Any]) -> tuple[list[Obj], str]:
        response = func(_preload_content=False)
        body = json.loads(response.data)
        return body.get("items") or [], (body.get("metadata") or {}).get("resourceVersion", "")

    # KubeActions ------------------------------------------------------------------------------
    async def bind(self, pod: PodLike, node: str) -> None:
        meta = pod["metadata"]
        body = client.V1Binding(
            metadata=client.V1ObjectMeta(
                name=meta["name"], namespace=meta["namespace"], uid=meta.get("uid", "")
            ),
            target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
        )
        try:
            await asyncio.to_thread(
                self.core.create_namespaced_pod_binding,
                meta["name"],
                meta["namespace"],
                body,
                _preload_content=False,
            )
        except client.ApiException as exc:
            raise BindError(f"{exc.status} {exc.reason}") from None

    async def evict(self, pod: PodLike, reason: str) -> None:
        meta = pod["metadata"]
        body = client.V1Eviction(
            api_version="policy/v1",
            kind="Eviction",
            metadata=client.V1ObjectMeta(name=meta["name"], namespace=meta["namespace"]),
        )
        try:
            await asyncio.to_thread(
                self.core.create_namespaced_pod_eviction, meta["name"], meta["namespace"], body,
                _preload_content=False,
            )  # fmt: skip
        except client.ApiException as exc:
            if exc.status != 404:  # already gone is fine
                raise

    async def create_pod(self, pod: PodLike) -> None:
        """Create a pod (a placeholder); the informer brings it back like any other pod."""
        namespace = pod["metadata"]["namespace"]
        # The client sends a dict body as it is (sanitize_for_serialization), the pod's JSON unchanged.
        body = cast(client.V1Pod, dict(pod))
        await asyncio.to_thread(self.core.create_namespaced_pod, namespace, body, _preload_content=False)

    async def delete_pod(self, pod: PodLike) -> None:
        """Delete a pod at once (a placeholder has nothing to shut down); already gone is fine."""
        meta = pod["metadata"]
        try:
            await asyncio.to_thread(
                self.core.delete_namespaced_pod, meta["name"], meta["namespace"],
                grace_period_seconds=0, _preload_content=False,
            )  # fmt: skip
        except client.ApiException as exc:
            if exc.status != 404:
                raise

    async def set_unschedulable(self, pod: PodLike, message: str) -> None:
        """PodScheduled=False with reason Unschedulable and the core's pending reason (a strategic
        merge of the pod's status conditions, by type); best effort, as kube-scheduler's."""
        meta = pod["metadata"]
        now = datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message,
                     "lastTransitionTime": now}  # fmt: skip
        with contextlib.suppress(client.ApiException):
            await asyncio.to_thread(
                self.core.patch_namespaced_pod_status, meta["name"], meta["namespace"],
                {"status": {"conditions": [condition]}}, _preload_content=False,
            )  # fmt: skip

    async def record_event(self, obj: PodLike, reason: str, message: str, warning: bool = False) -> None:
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or self.namespace
        now = datetime.now(UTC).replace(microsecond=0)
        body = client.CoreV1Event(
            metadata=client.V1ObjectMeta(generate_name=f"{meta.get('name', 'pykorn')}.", namespace=namespace),
            involved_object=client.V1ObjectReference(
                kind=obj.get("kind", "Pod"), name=meta.get("name", ""), namespace=namespace,
                uid=meta.get("uid", ""),
            ),
            reason=reason, message=message, type="Warning" if warning else "Normal",
            source=client.V1EventSource(component="pykorn"), first_timestamp=now, last_timestamp=now, count=1,
        )  # fmt: skip
        with contextlib.suppress(client.ApiException):  # events are best effort
            await asyncio.to_thread(
                self.core.create_namespaced_event, namespace, body, _preload_content=False
            )
