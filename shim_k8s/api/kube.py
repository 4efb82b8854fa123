"""The Kubernetes API as the shim uses it: the collections it lists and watches; KubeActions, what the
shim asks of the API (bindings, evictions, placeholder pods, status conditions, events); and `Kube`,
which does it over `KubeHTTP` (the shim's tests do it in memory).

Objects read stay plain dicts (what the API serves), which is what shim_k8s.readers.translate reads; what the
shim writes is the API's own JSON (core/v1 Binding, policy/v1 Eviction, core/v1 Event).

Events never wait in front of a binding: `record_event` queues them, and a few senders of their own
post them (bounded; when the queue is full an event is dropped and counted, as client-go's event
broadcaster drops them, with a warning that says how many).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from functools import partial
from typing import Protocol
from urllib.parse import quote

import structlog

from shim_k8s.api.kube_http import TRANSPORT_ERRORS, ApiError, KubeHTTP
from shim_k8s.api.objects import Obj

log = structlog.get_logger("pykorn.k8s")

EVENT_QUEUE = 10_000  # events waiting to be posted; beyond this they are dropped and counted
EVENT_SENDERS = 4
# A binding with no answer, a 5xx or a 429 (API Priority and Fairness throttling) is tried again.
BIND_ATTEMPTS = 3
BIND_PAUSE = 0.1  # seconds, times the attempt number, unless a 429 says how long to wait
MAX_RETRY_AFTER = 10.0  # seconds: the most a 429's retryAfterSeconds makes a binding wait
WRITE_ATTEMPTS = 5  # an eviction or a deletion, before giving up (logged)
WRITE_PAUSE = 0.2  # seconds, times the attempt number
CLUSTER_SCOPED = frozenset({"Node", "Namespace", "PriorityClass", "PersistentVolume", "StorageClass"})
EVICTION_PAUSE_MAX = 30.0  # seconds between attempts at an eviction a disruption budget refuses


_WRITE_ERRORS: tuple[type[BaseException], ...] = (ApiError, *TRANSPORT_ERRORS)


class BindError(RuntimeError):
    pass


class Conflict(RuntimeError):
    """An update the API refused (409): the object changed since it was read."""


# The objects the shim updates (binding volumes), by kind: their path.
_OBJECT_PATHS = {
    "persistentvolumes": "/api/v1/persistentvolumes/{name}",
    "persistentvolumeclaims": "/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}",
}


class KubeActions(Protocol):
    """What the shim asks of the Kubernetes API."""

    async def bind(self, pod: Obj, node: str) -> None: ...  # pods/binding; raises BindError

    async def evict(self, pod: Obj, reason: str) -> None: ...  # policy/v1 Eviction

    async def record_event(self, obj: Obj, reason: str, message: str, warning: bool = False) -> None: ...

    async def create_pod(self, pod: Obj) -> None: ...  # a placeholder pod

    async def delete_pod(self, pod: Obj) -> None: ...  # a placeholder the core released; gone already is fine

    # PodScheduled: False, with kube-scheduler's reason (Unschedulable, SchedulerError, SchedulingGated)
    async def set_unschedulable(self, pod: Obj, message: str, reason: str = "Unschedulable") -> None: ...

    async def fail_pod(self, pod: Obj, reason: str, message: str) -> None: ...  # phase Failed, as YuniKorn

    # A volume or claim, read afresh (None: gone); and replaced with the resourceVersion it was read
    # at (binding volumes): raises Conflict when it changed since, BindError when the API will not.
    async def read_object(self, kind: str, namespace: str, name: str) -> Obj | None: ...

    async def replace_object(self, kind: str, obj: Obj) -> Obj: ...  # the object as stored

    # A v1alpha2 PodGroup's status condition (PodGroupScheduled), the others it has kept; best effort.
    async def set_podgroup_condition(self, podgroup: Obj, condition: Obj) -> None: ...


def collection_paths(namespace: str) -> dict[str, str]:
    """What the shim lists and watches, by kind."""
    return {
        "nodes": "/api/v1/nodes",
        "pods": "/api/v1/pods",
        "priorityclasses": "/apis/scheduling.k8s.io/v1/priorityclasses",
        "configmaps": f"/api/v1/namespaces/{quote(namespace)}/configmaps",
        "persistentvolumeclaims": "/api/v1/persistentvolumeclaims",
        "persistentvolumes": "/api/v1/persistentvolumes",
        "storageclasses": "/apis/storage.k8s.io/v1/storageclasses",
        "csinodes": "/apis/storage.k8s.io/v1/csinodes",
        "csidrivers": "/apis/storage.k8s.io/v1/csidrivers",
        "namespaces": "/api/v1/namespaces",
        # Kubernetes' Workload API (alpha, behind GenericWorkload): v1alpha1 in 1.35, v1alpha2 in 1.36.
        # Served or not by the cluster: one it does not serve is not followed (api.startup.OPTIONAL).
        "workloads": "/apis/scheduling.k8s.io/v1alpha1/workloads",
        "podgroups": "/apis/scheduling.k8s.io/v1alpha2/podgroups",
    }


_PLAIN = re.compile(r"[a-z0-9.-]*")  # DNS-1123 names, all Kubernetes allows here: nothing to quote


def _segment(name: str) -> str:
    return name if _PLAIN.fullmatch(name) else quote(name, safe="")


def _pod_path(pod: Obj, sub: str = "") -> str:
    meta = pod["metadata"]
    path = f"/api/v1/namespaces/{_segment(meta['namespace'])}/pods/{_segment(meta['name'])}"
    return f"{path}/{sub}" if sub else path


def _passing(exc: ApiError, throttled_passes: bool = True) -> bool:
    """An answer worth trying again after a pause: a server error, or (unless told otherwise) a 429,
    the API's throttling."""
    return exc.status >= 500 or (exc.status == 429 and throttled_passes)


def _retry_after(exc: ApiError) -> float:
    """The wait a 429's Status asks for (details.retryAfterSeconds), at most MAX_RETRY_AFTER; 0 when
    it names none."""
    if exc.status != 429:
        return 0.0
    try:
        details = json.loads(exc.body).get("details") or {}
        return min(MAX_RETRY_AFTER, max(0.0, float(details.get("retryAfterSeconds") or 0)))
    except (ValueError, TypeError, AttributeError):
        return 0.0


_stamp: tuple[int, str] = (0, "")


def _now() -> str:
    """The time in seconds, as RFC 3339 (made once a second: every event of a burst asks for it)."""
    global _stamp
    second = int(time.time())
    if _stamp[0] != second:
        _stamp = (second, datetime.fromtimestamp(second, UTC).isoformat().replace("+00:00", "Z"))
    return _stamp[1]


class Kube:
    """KubeActions for the shim, over one KubeHTTP."""

    def __init__(self, http: KubeHTTP, namespace: str = "yunikorn") -> None:
        self.http = http
        self.namespace = namespace
        self.paths = collection_paths(namespace)
        self._events: asyncio.Queue[tuple[str, Obj]] = asyncio.Queue(EVENT_QUEUE)
        self._senders: list[asyncio.Task[None]] = []
        self.events_dropped = 0

    async def close(self) -> None:
        """Post what events are queued (for a moment at most), then stop the senders."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._events.join(), 2.0)
        for sender in self._senders:
            sender.cancel()
        await asyncio.gather(*self._senders, return_exceptions=True)

    # KubeActions ------------------------------------------------------------------------------
    async def bind(self, pod: Obj, node: str) -> None:
        meta = pod["metadata"]
        body = {
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"], "uid": meta.get("uid", "")},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }  # fmt: skip
        for attempt in range(1, BIND_ATTEMPTS + 1):
            try:
                await self.http.request("POST", _pod_path(pod, "binding"), body, answer=False)
                return
            except ApiError as exc:
                # Already bound: by an attempt of ours whose answer was lost (a 5xx after the write, a
                # cut connection), or by a replica before it lost the lease. Where we wanted: done.
                if exc.status == 409 and await self._bound_to(pod, node):
                    return
                if not _passing(exc) or attempt == BIND_ATTEMPTS:
                    raise BindError(f"{exc.status} {exc.reason}") from None
                pause = _retry_after(exc) or BIND_PAUSE * attempt
            except TRANSPORT_ERRORS as exc:  # no answer: it may not have reached the server
                if attempt == BIND_ATTEMPTS:
                    raise BindError(f"no answer from the API server: {exc!r}") from None
                pause = BIND_PAUSE * attempt
            await asyncio.sleep(pause)

    async def _bound_to(self, pod: Obj, node: str) -> bool:
        """Whether the API has this pod (its UID: not another one made since under the same name) on
        `node` now."""
        with contextlib.suppress(ApiError, *TRANSPORT_ERRORS):
            current = await self.http.request("GET", _pod_path(pod))
            same = (current.get("metadata") or {}).get("uid") == pod["metadata"].get("uid")
            return same and (current.get("spec") or {}).get("nodeName") == node
        return False

    async def evict(self, pod: Obj, reason: str) -> None:
        """A policy/v1 Eviction. One a PodDisruptionBudget refuses (429) is tried again until the
        budget allows it or the pod goes, as `kubectl drain` does, with a growing pause (at most
        EVICTION_PAUSE_MAX) and one `EvictionBlocked` event that says why: the core keeps the
        victim's room for the preempting pod meanwhile. Other failures as `_persist`."""
        meta = pod["metadata"]
        body = {"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": meta["name"], "namespace": meta["namespace"]}}  # fmt: skip
        send = partial(self.http.request, "POST", _pod_path(pod, "eviction"), body)
        blocked = 0
        while True:
            try:
                await self._persist(send, throttled_is_final=True)
                return
            except ApiError as exc:
                if exc.status != 429:
                    raise
                blocked += 1
                if blocked == 1:
                    why = f"preempted, not evicted yet: {exc.reason}"
                    await self.record_event(pod, "EvictionBlocked", why, warning=True)
                    log.warning(
                        "eviction blocked", pod=f"{meta['namespace']}/{meta['name']}", reason=exc.reason
                    )
                await asyncio.sleep(min(EVICTION_PAUSE_MAX, WRITE_PAUSE * 2**blocked))

    async def create_pod(self, pod: Obj) -> None:
        """Create a pod (a placeholder); the informer brings it back like any other pod."""
        namespace = pod["metadata"]["namespace"]
        await self.http.request("POST", f"/api/v1/namespaces/{quote(namespace)}/pods", dict(pod))

    async def delete_pod(self, pod: Obj) -> None:
        """Delete a pod at once (a placeholder has nothing to shut down); already gone is fine."""
        await self._persist(
            lambda: self.http.request("DELETE", _pod_path(pod), params={"gracePeriodSeconds": "0"})
        )

    async def _persist(self, send: Callable[[], Awaitable[object]], throttled_is_final: bool = False) -> None:
        """A write that must happen (an eviction, a placeholder's deletion): tried again on no answer,
        a 5xx or a 429 (throttled; unless `throttled_is_final`), with a growing pause; already gone
        (404) is done. Raises what the last attempt got."""
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                await send()
                return
            except ApiError as exc:
                if exc.status == 404:
                    return
                if not _passing(exc, throttled_passes=not throttled_is_final) or attempt == WRITE_ATTEMPTS:
                    raise
            except TRANSPORT_ERRORS:
                if attempt == WRITE_ATTEMPTS:
                    raise
            await asyncio.sleep(WRITE_PAUSE * attempt)

    async def set_unschedulable(self, pod: Obj, message: str, reason: str = "Unschedulable") -> None:
        """PodScheduled=False with kube-scheduler's reason (Unschedulable: no node fits, the cluster
        autoscaler's signal; SchedulerError: the scheduler cannot handle the pod) and the message (a
        strategic merge of the pod's status conditions, by type); best effort, as kube-scheduler's."""
        condition = {"type": "PodScheduled", "status": "False", "reason": reason, "message": message,
                     "lastTransitionTime": _now()}  # fmt: skip
        with contextlib.suppress(ApiError, *TRANSPORT_ERRORS):
            await self.http.request(
                "PATCH", _pod_path(pod, "status"), {"status": {"conditions": [condition]}},
                content_type="application/strategic-merge-patch+json",
            )  # fmt: skip

    async def set_podgroup_condition(self, podgroup: Obj, condition: Obj) -> None:
        """A JSON merge patch of the PodGroup's status subresource: its conditions, this one replacing
        the one of its type (a merge patch replaces a list whole, so the others are sent as read)."""
        meta = podgroup.get("metadata") or {}
        kept = [c for c in (podgroup.get("status") or {}).get("conditions") or []
                if isinstance(c, dict) and c.get("type") != condition["type"]]  # fmt: skip
        path = (f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{_segment(meta.get('namespace') or 'default')}"
                f"/podgroups/{_segment(meta.get('name', ''))}/status")  # fmt: skip
        try:
            await self.http.request(
                "PATCH", path, {"status": {"conditions": [*kept, condition]}},
                content_type="application/merge-patch+json",
            )  # fmt: skip
        except _WRITE_ERRORS as exc:
            log.warning("pod group status not written", podgroup=meta.get("name"), error=repr(exc))

    async def fail_pod(self, pod: Obj, reason: str, message: str) -> None:
        """Phase Failed, with the reason and message, through the status subresource (a strategic
        merge), as YuniKorn's shim fails a pod it will not schedule (ApplicationRejected,
        ResourceReservationTimeout); its PodScheduled condition says the same, instead of a reason that
        no longer holds. A write that must happen: as `_persist` (gone already is fine)."""
        condition = {"type": "PodScheduled", "status": "False", "reason": reason, "message": message,
                     "lastTransitionTime": _now()}  # fmt: skip
        body = {
            "status": {"phase": "Failed", "reason": reason, "message": message, "conditions": [condition]}
        }
        await self._persist(
            lambda: self.http.request(
                "PATCH", _pod_path(pod, "status"), body, content_type="application/strategic-merge-patch+json"
            )
        )

    async def read_object(self, kind: str, namespace: str, name: str) -> Obj | None:
        path = _OBJECT_PATHS[kind].format(namespace=_segment(namespace), name=_segment(name))
        try:
            found: Obj = await self.http.request("GET", path)
            return found
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise BindError(f"reading {kind} {name}: {exc.status} {exc.reason}") from None
        except TRANSPORT_ERRORS as exc:
            raise BindError(f"reading {kind} {name}: no answer from the API: {exc!r}") from None

    async def replace_object(self, kind: str, obj: Obj) -> Obj:
        """A PUT of the object as read and changed: its resourceVersion makes a stale one a Conflict.
        Tried again on no answer, a 5xx or a 429 (a write that landed and lost its answer is then a
        Conflict, which the caller reads again); BindError with the last answer otherwise."""
        meta = obj["metadata"]
        namespace, name = _segment(meta.get("namespace", "")), _segment(meta["name"])
        path = _OBJECT_PATHS[kind].format(namespace=namespace, name=name)
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                stored: Obj = await self.http.request("PUT", path, dict(obj))
                return stored
            except ApiError as exc:
                if exc.status == 409:
                    raise Conflict(exc.reason) from None
                if not _passing(exc) or attempt == WRITE_ATTEMPTS:
                    raise BindError(f"updating {kind} {name}: {exc.status} {exc.reason}") from None
                pause = _retry_after(exc) or WRITE_PAUSE * attempt
            except TRANSPORT_ERRORS as exc:
                if attempt == WRITE_ATTEMPTS:
                    raise BindError(f"updating {kind} {name}: no answer from the API: {exc!r}") from None
                pause = WRITE_PAUSE * attempt
            await asyncio.sleep(pause)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def event_capacity(self, capacity: int) -> None:
        """How many events may wait to be sent (service.eventChannelCapacity); set before the first."""
        if self._events.empty():
            self._events = asyncio.Queue(capacity)

    async def record_event(self, obj: Obj, reason: str, message: str, warning: bool = False) -> None:
        """An event on `obj` (a pod unless its `kind` says otherwise). A cluster-scoped object's event
        goes in namespace `default`, where `kubectl describe` looks for it (as the kubelet's on nodes)."""
        meta = obj.get("metadata") or {}
        kind = obj.get("kind", "Pod")
        cluster_scoped = kind in CLUSTER_SCOPED
        namespace = "default" if cluster_scoped else meta.get("namespace") or self.namespace
        now = _now()
        body = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{meta.get('name', 'pykorn')}.", "namespace": namespace},
            "involvedObject": {"kind": kind, "name": meta.get("name", ""),
                               "namespace": "" if cluster_scoped else namespace, "uid": meta.get("uid", "")},
            "reason": reason, "message": message, "type": "Warning" if warning else "Normal",
            "source": {"component": "pykorn"}, "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        }  # fmt: skip
        if not self._senders:
            self._senders = [asyncio.create_task(self._send_events()) for _ in range(EVENT_SENDERS)]
        try:
            self._events.put_nowait((namespace, body))
        except asyncio.QueueFull:
            self.events_dropped += 1
            if self.events_dropped % 1000 == 1:
                log.warning(
                    "events dropped: the API is not taking them fast enough", dropped=self.events_dropped
                )

    async def _send_events(self) -> None:
        while True:
            namespace, body = await self._events.get()
            try:
                with contextlib.suppress(ApiError, *TRANSPORT_ERRORS):  # events are best effort
                    path = f"/api/v1/namespaces/{quote(namespace)}/events"
                    await self.http.request("POST", path, body, event=True, answer=False)
            finally:
                self._events.task_done()
