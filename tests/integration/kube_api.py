"""A small HTTP emulation of the Kubernetes API server, for testing the shim with the official client.

Serves list and watch (chunked JSON lines) for nodes, pods, priority classes, config maps, volumes,
claims, storage classes and CSINodes, with resource versions; pods/binding, pods/eviction, events,
creating and deleting pods (placeholders), and Leases with resourceVersion conflicts (leader election).
Secrets, the admission webhook configurations, volumes and claims are kept with get, create and update
(resourceVersion conflicts as the API server's); the cluster's volume controllers that act on volumes
and claims are tests/integration/kube_volumes.py. Given an RBAC (tests/integration/kube_rbac.py, made
from the rendered deploy/kubernetes), every API request is authenticated by its bearer token and
authorized as the API server does: 401 for a token nobody was given, 403 with the API server's message
for what the roles do not grant. `kubeconfig()` writes a kubeconfig for a ServiceAccount, which a
client reads as it would a real cluster's.
`expire_watches()` makes the next watches answer 410 Gone, as a real API server does when a resource
version is too old. `stop()` ends the open watches at once (as an API server going away does), so
stopping does not wait out their timeouts.

Run on its own (`python -m tests.integration.kube_api --port-file F`) for the benchmarks, it also
serves `/emulator/*`: make nodes and pending pods in bulk (at once or at a rate) and read when each
pod was made and bound, by the emulation's own clock.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

from pykorn_cli.gc_tuning import tune_garbage_collector
from tests.integration.kube_http import (
    Encoded,
    Handler,
    HttpServer,
    Request,
    Response,
    StreamResponse,
)
from tests.integration.kube_rbac import RBAC, Attributes, attributes

Obj = dict[str, Any]
KINDS = {
    "nodes": "NodeList",
    "pods": "PodList",
    "priorityclasses": "PriorityClassList",
    "configmaps": "ConfigMapList",
    "persistentvolumeclaims": "PersistentVolumeClaimList",
    "persistentvolumes": "PersistentVolumeList",
    "storageclasses": "StorageClassList",
    "csinodes": "CSINodeList",
    "csidrivers": "CSIDriverList",
    "namespaces": "NamespaceList",
    "workloads": "WorkloadList",
    "podgroups": "PodGroupList",
    "leases": "LeaseList",
    "secrets": "SecretList",
    "mutatingwebhookconfigurations": "MutatingWebhookConfigurationList",
    "validatingwebhookconfigurations": "ValidatingWebhookConfigurationList",
}
LEASES = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BENCH_CLASS = "bench-wffc"  # the StorageClass `serve` makes for its volume driver
# Kept with get, create and update: kind -> its collection's path.
WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/"
STORED = {
    "secrets": "/api/v1/namespaces/{ns}/secrets",
    # A scheduler binding volumes writes these (a PV's claimRef, a claim's selected-node annotation).
    "persistentvolumes": "/api/v1/persistentvolumes",
    "persistentvolumeclaims": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    # Kubernetes' Workload API (scheduling.k8s.io, alpha): 1.35's Workloads, 1.36's PodGroups.
    "workloads": "/apis/scheduling.k8s.io/v1alpha1/namespaces/{ns}/workloads",
    "podgroups": "/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}/podgroups",
    "mutatingwebhookconfigurations": WEBHOOKS + "mutatingwebhookconfigurations",
    "validatingwebhookconfigurations": WEBHOOKS + "validatingwebhookconfigurations",
}
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: emulation, cluster: {server: "http://127.0.0.1:%(port)d"}}]
users: [{name: %(user)s, user: {token: "%(token)s"}}]
contexts: [{name: emulation, context: {cluster: emulation, user: %(user)s}}]
current-context: emulation
"""


def _dumps(value: object) -> bytes:
    """JSON by orjson (a fraction of json's CPU: the benchmarks measure the emulation beside the
    shim); by json for what orjson refuses, such as a hostile object's integer beyond 64 bits."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value).encode()


def _json_response(data: object, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(_dumps(data), status=status, headers=headers)


# The API server's answer to a binding or an eviction it took, encoded once.
_SUCCESS = orjson.dumps(
    {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
)


_SCHEDULED = {"type": "PodScheduled", "status": "True"}
_SUCCESS_ANSWER = Encoded(_SUCCESS, status=201)


def _success() -> Response:
    return _SUCCESS_ANSWER


async def _small_body(request: Request) -> Any:
    """A request body of a known small shape (a binding, an event, a status patch), by orjson. Not for
    objects a test may make hostile: orjson reads an integer beyond 64 bits as a float."""
    return orjson.loads(await request.read())


class FakeKubeAPI:
    def __init__(self, rbac: RBAC | None = None) -> None:
        self.rbac = rbac  # None: every request is allowed
        self.forbidden: list[tuple[str, Attributes]] = []  # (user, what) the roles did not grant
        self.forbidden_expected = False  # a test that takes a rule away on purpose sets it
        self.reads: list[tuple[str, str]] = []  # (kind, name) of the stored kinds read, in order
        self.conflicts: list[tuple[str, str]] = []  # (kind, name) of updates answered 409
        # Updates of a stored kind wait for its event (a test holding writers back, to make them race).
        self.hold_updates: dict[str, asyncio.Event] = {}
        self.pod_patches: list[tuple[str, Obj]] = []  # (pod name, merge patch) of PATCH .../pods/{name}
        self.writes: list[tuple[str, str, str]] = []  # (verb, kind, name) of the stored kinds, in order
        self._files: tempfile.TemporaryDirectory[str] | None = None  # the kubeconfigs written
        self.rv = 0
        self.unserved: set[str] = set()  # kinds answered 404, as an API server without their API
        self.objects: dict[str, dict[str, Obj]] = {k: {} for k in KINDS}
        self.by_name: dict[str, dict[str, str]] = {k: {} for k in KINDS}  # name -> key in objects
        self.history: dict[str, list[tuple[int, str, Obj]]] = {k: [] for k in KINDS}
        self.history_rvs: dict[str, list[int]] = {k: [] for k in KINDS}  # for a watch to start where it is
        self.changed = asyncio.Condition()
        self.expired_before = 0  # watches from an older resource version get 410
        self.bindings: list[tuple[str, str]] = []
        self.made_at: dict[str, float] = {}  # pod name -> when /emulator/pods made it (monotonic)
        self.bound_at: dict[str, float] = {}  # pod name -> when it was bound
        # Per prefix of /emulator/pods: how many it made and how many of those are bound (polled by a
        # benchmark while the pods are scheduled: counted as they change, not by a walk of every pod).
        self.made_of: dict[str, str] = {}  # pod name -> its prefix
        self.counts: dict[str, list[int]] = {}  # prefix -> [made, bound]
        # Binding volumes, for the benchmarks: claim key -> when a client annotated it for a node, and
        # when the PV controller (tests/integration/kube_volumes.py) bound it.
        self.selected_at: dict[str, float] = {}
        self.claim_bound_at: dict[str, float] = {}
        self.status_patches: list[tuple[str, Obj]] = []  # (pod name, the patch)
        self.evictions: list[str] = []
        self.events: list[Obj] = []
        self.created: list[Obj] = []  # pods created through the API, as stored
        self.deleted: list[str] = []  # pods deleted through the API, by name
        self.server: HttpServer | None = None
        self.port = 0
        self._closing = False  # set by stop(): open watches end, new ones end at once
        # The watches of each kind waiting for its next change (woken by that kind's changes only: a
        # binding wakes the pod watches, not every watch of every kind).
        self._watching: dict[str, set[asyncio.Future[bool]]] = {k: set() for k in KINDS}
        # Faults to inject: bindings answered 201 but not made (once each), bindings that fail with a
        # 500 (the count left, by pod name).
        self.swallow_bindings: set[str] = set()
        self.fail_bindings: dict[str, int] = {}
        self.throttle_bindings: dict[str, int] = {}  # answered 429 (retryAfterSeconds 1), the count left
        self.fail_after_binding: set[str] = set()  # bound, then answered 500 (the answer was lost)
        self.fail_evictions: dict[str, int] = {}  # evictions answered 500, the count left, by pod name
        self.raw: dict[tuple[str, str], str] = {}  # (kind, key) -> the text put_raw stored it from
        self.raw_events: dict[int, str] = {}  # resourceVersion -> that text, for the watch
        self.budget_refusals: dict[
            str, int
        ] = {}  # evictions a disruption budget refuses (429), the count left

    # Test-side changes ------------------------------------------------------------------------
    async def put(self, kind: str, obj: Obj) -> None:
        async with self.changed:
            self._put(kind, json.loads(json.dumps(obj)))  # a copy: the caller may change its object

    async def delete(self, kind: str, obj: Obj) -> None:
        async with self.changed:
            self._delete(kind, json.loads(json.dumps(obj)))

    def _put(self, kind: str, obj: Obj) -> None:
        """Store `obj`, which is the emulation's own from now on (stored objects are never changed in
        place: a change stores a new object)."""
        key = self._key(obj)
        if self.raw:
            self.raw.pop((kind, key), None)  # stored anew: served as stored
        self._record(kind, "MODIFIED" if key in self.objects[kind] else "ADDED", obj, key=key)

    def put_locked(self, kind: str, obj: Obj) -> None:
        """Store a changed object while holding `changed`: for the emulation's own controllers
        (tests/integration/kube_volumes.py), whose read, change and write are one step, as a
        controller's resourceVersion-checked update is on a real API server."""
        self._put(kind, json.loads(json.dumps(obj)))

    def _delete(self, kind: str, obj: Obj) -> None:
        if self.objects[kind].pop(self._key(obj), None) is not None:
            self.by_name[kind].pop(obj["metadata"]["name"], None)
            self._record(kind, "DELETED", obj, store=False)

    async def put_raw(self, kind: str, text: str) -> None:
        """Store the object a JSON text decodes to (a duplicated key: the last wins, as the API server's
        decoder takes it) and serve that very text in watches and lists, so that a client decodes the
        duplicates itself. The text is served as written (without the resourceVersion the store adds)."""
        async with self.changed:
            obj = json.loads(text)
            self._put(kind, obj)
            self.raw[(kind, self._key(obj))] = text
            self.raw_events[self.rv] = text

    async def inject_event(self, kind: str, event: str, obj: object) -> None:
        """A watch event whose object is whatever is given (not even an object, say), stored nowhere:
        a fault, for a client's watch to survive."""
        async with self.changed:
            self.rv += 1
            self.history[kind].append((self.rv, event, obj))  # type: ignore[arg-type]
            self.history_rvs[kind].append(self.rv)
            self.changed.notify_all()
            self._wake_watches(kind)

    def forget(self, kind: str, name: str) -> None:
        """Remove an object without a watch event (a fault: only a fresh list shows it is gone)."""
        key = self.by_name[kind].pop(name, None)
        if key is not None:
            self.objects[kind].pop(key, None)

    def expire_watches(self) -> None:
        self.expired_before = self.rv + 1

    def get(self, kind: str, name: str) -> Obj | None:
        key = self.by_name[kind].get(name)
        return self.objects[kind].get(key) if key is not None else None

    @staticmethod
    def _key(obj: Obj) -> str:
        return f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"

    def _record(self, kind: str, event: str, obj: Obj, store: bool = True, key: str = "") -> None:
        """Under `changed`: each change is atomic, as on a real API server (a read, the change and
        its write never interleave with another request's)."""
        self.rv = rv = self.rv + 1
        meta = {**obj["metadata"], "resourceVersion": str(rv)}
        obj = {**obj, "metadata": meta}
        if store:
            key = key or self._key(obj)
            self.objects[kind][key] = obj
            self.by_name[kind][meta["name"]] = key
        self.history[kind].append((rv, event, obj))
        self.history_rvs[kind].append(rv)
        self.changed.notify_all()
        self._wake_watches(kind)

    def _wake_watches(self, kind: str) -> None:
        for waiting in self._watching[kind]:
            if not waiting.done():
                waiting.set_result(True)

    async def _next_change(self, kind: str, timeout: float) -> bool:
        """Wait for a change of `kind` (or the emulation stopping): False when `timeout` passed first.
        A future and a timer, not a lock and a task per wait: a watch waits once per change."""
        loop = asyncio.get_running_loop()
        waiting: asyncio.Future[bool] = loop.create_future()
        timer = loop.call_later(timeout, _timed_out, waiting)
        self._watching[kind].add(waiting)
        try:
            return await waiting
        finally:
            timer.cancel()
            self._watching[kind].discard(waiting)

    def kubeconfig(self, service_account: str, namespace: str = "yunikorn") -> str:
        """A kubeconfig file with a token for the ServiceAccount (any token when nothing is enforced),
        in a directory of the emulation's own that stop() removes."""
        if self._files is None:
            self._files = tempfile.TemporaryDirectory(prefix="kube-api-")
        token = self.rbac.token_for(namespace, service_account) if self.rbac is not None else "unchecked"
        path = (
            Path(self._files.name)
            / f"kubeconfig-{namespace}-{service_account}-{len(os.listdir(self._files.name))}"
        )
        path.write_text(KUBECONFIG % {"port": self.port, "user": service_account, "token": token})
        return str(path)

    async def _authorize(self, request: Request, handler: Handler) -> Response | StreamResponse:
        if self.rbac is None:  # the benchmarks' emulation: nobody to authorize against
            return await handler(request)
        wanted = attributes(request.method, request.path, dict(request.query))
        if wanted is None:
            return await handler(request)
        user = self.rbac.user_of(request.headers.get("Authorization"))
        if user is None:
            status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": "Unauthorized", "reason": "Unauthorized", "code": 401}  # fmt: skip
            return _json_response(status, status=401)
        if not self.rbac.allows(user, wanted):
            self.forbidden.append((user, wanted))
            details = {"name": wanted.name, "group": wanted.group, "kind": wanted.resource.split("/")[0]}
            status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": wanted.forbidden_message(user), "reason": "Forbidden",
                      "details": details, "code": 403}  # fmt: skip
            return _json_response(status, status=403)
        return await handler(request)

    # Stored kinds: get, create, update with resourceVersion conflicts, as the API server's ---------
    def _stored_key(self, request: Request, name: str) -> str:
        return f"{request.match_info.get('ns', '')}/{name}"

    def _stored_get(self, kind: str) -> Callable[[Request], Awaitable[Response]]:
        async def handler(request: Request) -> Response:
            name = request.match_info["name"]
            found = self.objects[kind].get(self._stored_key(request, name))
            self.reads.append((kind, name))
            if found is None:
                return _status(404, "NotFound", f'{kind} "{name}" not found', kind, name)
            return _json_response(found)

        return handler

    def _stored_create(self, kind: str) -> Callable[[Request], Awaitable[Response]]:
        async def handler(request: Request) -> Response:
            obj = await request.json()
            meta = obj.setdefault("metadata", {})
            if request.match_info.get("ns"):
                meta["namespace"] = request.match_info["ns"]
            name = meta.get("name", "")
            invalid = _default_and_validate(kind, obj)
            if invalid:
                return _status(422, "Invalid", f'{kind} "{name}" is invalid: {invalid}', kind, name)
            async with self.changed:
                if self._stored_key(request, name) in self.objects[kind]:
                    return _status(409, "AlreadyExists", f'{kind} "{name}" already exists', kind, name)
                meta["uid"] = f"uid-{kind}-{name}"
                self._put(kind, obj)
                self.writes.append(("create", kind, name))
                return _json_response(self.objects[kind][self._stored_key(request, name)], status=201)

        return handler

    def _stored_update(self, kind: str) -> Callable[[Request], Awaitable[Response]]:
        async def handler(request: Request) -> Response:
            obj = await request.json()
            name = request.match_info["name"]
            meta = obj.setdefault("metadata", {})
            if request.match_info.get("ns"):
                meta["namespace"] = request.match_info["ns"]
            invalid = _default_and_validate(kind, obj)
            if invalid:
                return _status(422, "Invalid", f'{kind} "{name}" is invalid: {invalid}', kind, name)
            if kind in self.hold_updates:
                await self.hold_updates[kind].wait()
            async with self.changed:
                stored = self.objects[kind].get(self._stored_key(request, name))
                if stored is None:
                    return _status(404, "NotFound", f'{kind} "{name}" not found', kind, name)
                sent = meta.get("resourceVersion")
                if sent and sent != stored["metadata"]["resourceVersion"]:
                    message = (
                        f'Operation cannot be fulfilled on {kind} "{name}": the object has been '
                        "modified; please apply your changes to the latest version and try again"
                    )
                    self.conflicts.append((kind, name))
                    return _status(409, "Conflict", message, kind, name)
                meta["uid"] = stored["metadata"].get("uid")
                if kind == "persistentvolumeclaims" and SELECTED_NODE in (meta.get("annotations") or {}):
                    self.selected_at.setdefault(self._key(obj), time.monotonic())
                self._put(kind, obj)
                self.writes.append(("update", kind, name))
                return _json_response(self.objects[kind][self._stored_key(request, name)])

        return handler

    # HTTP -------------------------------------------------------------------------------------
    async def start(self) -> str:
        # Authorization runs only for an emulation given an RBAC when made (it may be narrowed later,
        # never added): the benchmarks' has none, and a middleware is a coroutine more per request.
        app = HttpServer(middlewares=[self._authorize] if self.rbac is not None else [])
        # The routes a scheduler hits once per pod first: routes are tried in the order added.
        app.router.add("POST", "/api/v1/namespaces/{ns}/pods/{name}/binding", self._bind)
        app.router.add("POST", "/api/v1/namespaces/{ns}/events", self._event)
        for kind, collection in STORED.items():
            app.router.add("POST", collection, self._stored_create(kind))
            app.router.add("GET", collection + "/{name}", self._stored_get(kind))
            app.router.add("PUT", collection + "/{name}", self._stored_update(kind))
        app.router.add("GET", "/api/v1/nodes", self._list_or_watch("nodes"))
        app.router.add("GET", "/api/v1/namespaces", self._list_or_watch("namespaces"))
        app.router.add("GET", "/api/v1/pods", self._list_or_watch("pods"))
        app.router.add(
            "GET", "/apis/scheduling.k8s.io/v1/priorityclasses", self._list_or_watch("priorityclasses")
        )
        app.router.add("GET", "/api/v1/namespaces/{ns}/configmaps", self._list_or_watch("configmaps"))
        app.router.add("GET", "/api/v1/persistentvolumeclaims", self._list_or_watch("persistentvolumeclaims"))
        app.router.add("GET", "/api/v1/persistentvolumes", self._list_or_watch("persistentvolumes"))
        app.router.add("GET", "/apis/storage.k8s.io/v1/storageclasses", self._list_or_watch("storageclasses"))
        app.router.add("GET", "/apis/storage.k8s.io/v1/csinodes", self._list_or_watch("csinodes"))
        app.router.add("GET", "/apis/storage.k8s.io/v1/csidrivers", self._list_or_watch("csidrivers"))
        app.router.add("GET", "/apis/scheduling.k8s.io/v1alpha1/workloads", self._list_or_watch("workloads"))
        app.router.add("GET", "/apis/scheduling.k8s.io/v1alpha2/podgroups", self._list_or_watch("podgroups"))
        app.router.add("PATCH", STORED["podgroups"] + "/{name}/status", self._patch_podgroup_status)
        app.router.add("POST", "/api/v1/namespaces/{ns}/pods/{name}/eviction", self._evict)
        app.router.add("POST", "/api/v1/namespaces/{ns}/pods", self._create_pod)
        app.router.add("GET", "/api/v1/namespaces/{ns}/pods/{name}", self._get_pod)
        app.router.add("DELETE", "/api/v1/namespaces/{ns}/pods/{name}", self._delete_pod)
        app.router.add("PATCH", "/api/v1/namespaces/{ns}/pods/{name}/status", self._patch_status)
        app.router.add("PATCH", "/api/v1/namespaces/{ns}/pods/{name}", self._patch_pod)
        app.router.add("POST", LEASES, self._create_lease)
        app.router.add("GET", LEASES + "/{name}", self._get_lease)
        app.router.add("PUT", LEASES + "/{name}", self._update_lease)
        app.router.add("POST", "/emulator/nodes", self._make_nodes)
        app.router.add("POST", "/emulator/pods", self._make_pods)
        app.router.add("GET", "/emulator/times", self._times)
        self.server = app
        self.port = await app.start()
        return f"http://127.0.0.1:{self.port}"

    async def stop(self) -> None:
        async with self.changed:
            self._closing = True
            self.changed.notify_all()
            for kind in KINDS:  # every watch wakes, and ends its response
                self._wake_watches(kind)
        if self.server is not None:
            await self.server.stop()
        if self._files is not None:
            self._files.cleanup()

    def _list_or_watch(self, kind: str) -> Callable[[Request], Awaitable[Response | StreamResponse]]:
        async def handler(request: Request) -> Response | StreamResponse:
            if kind in self.unserved:  # an alpha API this cluster's feature gates leave off
                return _status(404, "NotFound", "the server could not find the requested resource", kind, "")
            if request.query.get("watch") in ("true", "1"):
                return await self._watch(kind, request)
            items = list(self.objects[kind].values())
            if kind == "configmaps":
                items = [o for o in items if o["metadata"].get("namespace") == request.match_info["ns"]]
            body = {"kind": KINDS[kind], "apiVersion": _API_VERSIONS.get(kind, "v1"),
                    "metadata": {"resourceVersion": str(self.rv)}, "items": items}  # fmt: skip
            if not self.raw:
                return _json_response(body)
            texts = [self.raw.get((kind, self._key(o))) or json.dumps(o) for o in items]
            head = json.dumps({**body, "items": []})[:-2]  # '..."items": [' as written by json.dumps
            return Response(text=head + ", ".join(texts) + "]}", content_type="application/json")

        return handler

    async def _watch(self, kind: str, request: Request) -> StreamResponse:
        response = StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        since = int(request.query.get("resourceVersion") or 0)
        if since < self.expired_before:
            gone = {"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                                "message": "too old resource version", "reason": "Expired",
                                                "code": 410}}  # fmt: skip
            await response.write((json.dumps(gone) + "\n").encode())
            return response
        # Open as long as asked (a real server's default is minutes), not cut short: the shim re-watches
        # from its last version when one ends, as it would against a real server.
        deadline = asyncio.get_running_loop().time() + float(request.query.get("timeoutSeconds") or 300)
        sent = since
        history, rvs = self.history[kind], self.history_rvs[kind]
        try:
            while True:
                news = history[bisect.bisect_right(rvs, sent) :]
                if news:  # what changed since the last write, in one write
                    lines = [self._event_line(rv, event, obj) for rv, event, obj in news]
                    await response.write(b"".join(lines))
                    sent = news[-1][0]
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    return response
                # No await between these looks and the wait: nothing can change in between.
                if self._closing:
                    return response
                if rvs and rvs[-1] > sent:
                    continue  # changed while writing: no need to wait
                if not await self._next_change(kind, remaining):
                    return response
        except ConnectionResetError:  # the client went away (an informer stopping)
            return response

    def _event_line(self, rv: int, event: str, obj: object) -> bytes:
        raw = self.raw_events.get(rv)
        if raw is not None:
            return f'{{"type": {json.dumps(event)}, "object": {raw}}}\n'.encode()
        return _dumps({"type": event, "object": obj}) + b"\n"

    async def _bind(self, request: Request) -> Response:
        body = await _small_body(request)
        name = request.match_info["name"]
        if self.fail_bindings.get(name, 0) > 0:
            self.fail_bindings[name] -= 1
            return _json_response({"kind": "Status", "code": 500, "message": "etcd timeout"}, status=500)
        if self.throttle_bindings.get(name, 0) > 0:
            self.throttle_bindings[name] -= 1
            status = {"kind": "Status", "code": 429, "reason": "TooManyRequests",
                      "message": "too many requests, please try again later",
                      "details": {"retryAfterSeconds": 1}}  # fmt: skip
            return _json_response(status, status=429, headers={"Retry-After": "1"})
        if name in self.swallow_bindings:
            self.swallow_bindings.discard(name)
            return _success()
        async with self.changed:
            pod = self.get("pods", name)
            if pod is None:
                return _json_response({"kind": "Status", "code": 404, "message": "not found"}, status=404)
            if pod["spec"].get("nodeName"):
                return _json_response({"kind": "Status", "code": 409, "message": "already bound"}, status=409)
            target = body["target"]["name"]
            status = dict(pod.get("status") or {})
            pod = {**pod, "spec": {**pod["spec"], "nodeName": target}, "status": status}
            # As the API server's binding does: the pod is scheduled.
            if status.get("conditions"):
                _merge_conditions(pod, [_SCHEDULED])
            else:
                status["conditions"] = [dict(_SCHEDULED)]
            self.bindings.append((name, target))
            self.bound_at[name] = time.monotonic()
            made_by = self.made_of.get(name)
            if made_by is not None:
                self.counts[made_by][1] += 1
            self._put("pods", pod)
        if name in self.fail_after_binding:
            self.fail_after_binding.discard(name)
            return _json_response({"kind": "Status", "code": 500, "message": "etcd timeout"}, status=500)
        return _success()

    async def _evict(self, request: Request) -> Response:
        name = request.match_info["name"]
        if self.fail_evictions.get(name, 0) > 0:
            self.fail_evictions[name] -= 1
            return _json_response({"kind": "Status", "code": 500, "message": "etcd timeout"}, status=500)
        if self.budget_refusals.get(name, 0) > 0:  # as the API server's eviction answers it
            self.budget_refusals[name] -= 1
            cause = {"reason": "DisruptionBudget", "message": "The disruption budget web-pdb needs 2"}
            status = {"kind": "Status", "code": 429, "reason": "TooManyRequests",
                      "message": "Cannot evict pod as it would violate the pod's disruption budget.",
                      "details": {"causes": [cause]}}  # fmt: skip
            return _json_response(status, status=429)
        async with self.changed:
            pod = self.get("pods", request.match_info["name"])
            if pod is None:
                return _json_response({"kind": "Status", "code": 404}, status=404)
            self.evictions.append(pod["metadata"]["name"])
            self._delete("pods", pod)
        return _success()

    async def _create_pod(self, request: Request) -> Response:
        pod = await request.json()
        meta = pod.setdefault("metadata", {})
        meta["namespace"] = request.match_info["ns"]
        if self.get("pods", meta.get("name", "")) is not None:
            return _json_response({"kind": "Status", "code": 409, "reason": "AlreadyExists"}, status=409)
        meta["uid"] = f"uid-{meta['name']}"
        meta.setdefault("creationTimestamp", "2026-11-23T10:00:00Z")
        pod.setdefault("spec", {}).setdefault("nodeName", "")
        pod["status"] = {"phase": "Pending"}
        async with self.changed:
            if self.get("pods", meta["name"]) is not None:
                return _json_response({"kind": "Status", "code": 409, "reason": "AlreadyExists"}, status=409)
            self._put("pods", pod)
        stored = self.get("pods", meta["name"])
        assert stored is not None
        self.created.append(stored)
        return _json_response(stored, status=201)

    async def _delete_pod(self, request: Request) -> Response:
        async with self.changed:
            pod = self.get("pods", request.match_info["name"])
            if pod is None:
                return _json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)
            self.deleted.append(pod["metadata"]["name"])
            self._delete("pods", pod)
        return _json_response(pod, status=200)

    # Leases (leader election): optimistic concurrency on resourceVersion, as the API server's ---------
    async def _get_pod(self, request: Request) -> Response:
        pod = self.get("pods", request.match_info["name"])
        if pod is None or (pod["metadata"].get("namespace") or "default") != request.match_info["ns"]:
            return _json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)
        return _json_response(pod)

    async def _patch_pod(self, request: Request) -> Response:
        """A JSON merge patch (RFC 7386) of a pod, the one patch type emulated here: a key set to null
        is removed. As the API server: 415 for another patch type, 404 for a pod not in the namespace,
        the new resourceVersion in the answer and a MODIFIED event to the watchers."""
        if request.content_type != "application/merge-patch+json":
            message = f"the body of the request was in an unknown format - accepted media types include: " \
                f"application/json-patch+json, application/merge-patch+json, " \
                f"application/apply-patch+yaml (got {request.content_type})"  # fmt: skip
            return _json_response({"kind": "Status", "code": 415, "reason": "UnsupportedMediaType",
                                      "message": message}, status=415)  # fmt: skip
        patch = await request.json()
        async with self.changed:
            pod = self.get("pods", request.match_info["name"])
            if pod is None or (pod["metadata"].get("namespace") or "default") != request.match_info["ns"]:
                return _json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)
            patched = _merge_patch(pod, patch)
            kept = patched.setdefault("metadata", {})
            for immutable in ("name", "namespace", "uid"):  # as the API server, whatever the patch says
                if immutable in pod["metadata"]:
                    kept[immutable] = pod["metadata"][immutable]
            self.pod_patches.append((pod["metadata"]["name"], patch))
            self._put("pods", patched)
            return _json_response(self.get("pods", pod["metadata"]["name"]))

    async def _get_lease(self, request: Request) -> Response:
        lease = self.objects["leases"].get(f"{request.match_info['ns']}/{request.match_info['name']}")
        if lease is None:
            return _json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)
        return _json_response(lease)

    async def _create_lease(self, request: Request) -> Response:
        lease = await request.json()
        lease["metadata"]["namespace"] = request.match_info["ns"]
        async with self.changed:
            if self._key(lease) in self.objects["leases"]:
                return _json_response({"kind": "Status", "code": 409, "reason": "AlreadyExists"}, status=409)
            self._put("leases", lease)
            return _json_response(self.objects["leases"][self._key(lease)], status=201)

    async def _update_lease(self, request: Request) -> Response:
        lease = await request.json()
        lease["metadata"]["namespace"] = request.match_info["ns"]
        async with self.changed:
            stored = self.objects["leases"].get(self._key(lease))
            if stored is None:
                return _json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)
            if lease["metadata"].get("resourceVersion") != stored["metadata"]["resourceVersion"]:
                message = "the object has been modified; please apply your changes to the latest version"
                conflict = {"kind": "Status", "code": 409, "reason": "Conflict", "message": message}
                return _json_response(conflict, status=409)
            self._put("leases", lease)
            return _json_response(self.objects["leases"][self._key(lease)])

    def lease_holder(self, name: str, namespace: str = "yunikorn") -> str:
        lease = self.objects["leases"].get(f"{namespace}/{name}") or {}
        return str((lease.get("spec") or {}).get("holderIdentity") or "")

    async def _patch_status(self, request: Request) -> Response:
        """A strategic merge patch of the pod's status: conditions merge by type, the phase, reason and
        message are replaced, as Kubernetes does (and, as its validation, a terminal phase stays)."""
        patch = await _small_body(request)
        async with self.changed:
            pod = self.get("pods", request.match_info["name"])
            if pod is None:
                return _json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)
            pod = {**pod, "status": dict(pod.get("status") or {})}
            changes = patch.get("status") or {}
            if pod["status"].get("phase") in ("Failed", "Succeeded") and changes.get("phase") not in (
                None,
                pod["status"]["phase"],
            ):
                message = "may not change phase from a terminal one"
                invalid = {"kind": "Status", "code": 422, "reason": "Invalid", "message": message}
                return _json_response(invalid, status=422)
            for field in ("phase", "reason", "message"):
                if field in changes:
                    pod["status"][field] = changes[field]
            _merge_conditions(pod, changes.get("conditions") or [])
            self.status_patches.append((pod["metadata"]["name"], patch))
            self._put("pods", pod)
        return _json_response(pod, status=200)

    async def _patch_podgroup_status(self, request: Request) -> Response:
        """The PodGroup's status subresource, as the API server serves it: a JSON merge patch of
        `status` only (what else the patch says is left alone), the spec kept, the resourceVersion
        moved on; 404 for a PodGroup that does not exist, 415 for another patch type."""
        name = request.match_info["name"]
        if request.headers.get("Content-Type", "").split(";")[0].strip() != "application/merge-patch+json":
            why = "the body of the request was in an unknown format - accepted media types include: "
            return _status(
                415, "UnsupportedMediaType", why + "application/merge-patch+json", "podgroups", name
            )
        patch = await _small_body(request)
        async with self.changed:
            stored = self.objects["podgroups"].get(self._stored_key(request, name))
            if stored is None:
                return _status(
                    404, "NotFound", f'podgroups.scheduling.k8s.io "{name}" not found', "podgroups", name
                )
            invalid = _podgroup_conditions_invalid((patch.get("status") or {}).get("conditions"))
            if invalid:
                message = f'PodGroup.scheduling.k8s.io "{name}" is invalid: {invalid}'
                return _status(422, "Invalid", message, "podgroups", name)
            updated = {
                **stored,
                "status": _merge_patch(dict(stored.get("status") or {}), patch.get("status") or {}),
            }
            self._put("podgroups", updated)
            self.writes.append(("patch-status", "podgroups", name))
            return _json_response(self.objects["podgroups"][self._stored_key(request, name)])

    async def _event(self, request: Request) -> Response:
        event = await _small_body(request)
        self.events.append(event)
        return _json_response(event, status=201)

    # Bulk set-up and timings, for the benchmarks -------------------------------------------------
    async def _make_nodes(self, request: Request) -> Response:
        spec = await request.json()
        async with self.changed:
            for i in range(int(spec["count"])):
                name = f"{spec.get('prefix', 'node')}-{i}"
                allocatable = {"cpu": str(spec.get("cpu", "4")), "memory": spec.get("memory", "32Gi"),
                               "pods": str(spec.get("pods", 110))}  # fmt: skip
                labels = {"kubernetes.io/hostname": name}
                if spec.get("zones"):  # spread over that many zones, in turn
                    labels["topology.kubernetes.io/zone"] = f"zone-{i % int(spec['zones'])}"
                meta = {"name": name, "uid": f"uid-{name}", "labels": labels}
                self._put("nodes", {"metadata": meta, "status": {"allocatable": allocatable}})
        return _json_response({"nodes": len(self.objects["nodes"])})

    async def _make_pods(self, request: Request) -> Response:
        """`count` pending pods of `scheduler`, spread over `apps` applications: all at once, or `rate` a
        second (made in steps of a millisecond's worth); answers when the last is made. With a
        `storageClass`, each pod has a claim of it (`data-<pod>`, made just before it, as a StatefulSet's
        volumeClaimTemplates are)."""
        spec = await request.json()
        count, prefix, rate = int(spec["count"]), spec.get("prefix", "pod"), float(spec.get("rate") or 0)
        namespace, apps, claims = (
            spec.get("namespace", "bench"),
            int(spec.get("apps", 10)),
            spec.get("storageClass"),
        )
        # Parts every pod of the batch has alike, shared: stored objects are never changed in place (a
        # change stores a new object), so sharing them is as safe as copying them, and cheaper.
        containers = [{"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}}}]
        labels = [{"applicationId": f"{prefix}-app-{a}"} for a in range(apps)]
        # Gangs of `gang.size` pods, one application each: a Workload per gang (`gang.kind` "workload")
        # or YuniKorn's task-group annotations (its first pod declares them, "taskgroups").
        gang = spec.get("gang") or {}
        size, gang_kind = int(gang.get("size", 0)), gang.get("kind", "")
        if size:
            labels = [{"applicationId": f"{prefix}-gang-{g}"} for g in range(-(-count // size))]
        scheduler = spec.get("scheduler", "yunikorn")
        start = time.monotonic()
        made = self.counts.setdefault(prefix, [0, 0])
        for i in range(count):
            if rate:
                due = start + i / rate
                if due > time.monotonic():
                    await asyncio.sleep(due - time.monotonic())
            name = f"{prefix}-{i}"
            pod = {
                "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                             "labels": labels[i % apps], "creationTimestamp": "2026-11-23T10:00:00Z"},
                "spec": {"schedulerName": scheduler, "nodeName": "", "containers": containers},
                "status": {"phase": "Pending"},
            }  # fmt: skip
            async with self.changed:
                if size:
                    pod["metadata"]["labels"] = labels[i // size]
                    self._gang_member(pod, f"{prefix}-gang-{i // size}", i % size == 0, size, gang_kind)
                if claims:
                    self._put("persistentvolumeclaims", _bench_claim(pod, claims))
                    pod["spec"]["volumes"] = [
                        {"name": "data", "persistentVolumeClaim": {"claimName": f"data-{name}"}}
                    ]
                self._put("pods", pod)
                self.made_at[name] = time.monotonic()
                if name not in self.made_of:
                    self.made_of[name] = prefix
                    made[0] += 1
        return _json_response({"made": count})

    def _gang_member(self, pod: Obj, gang: str, first: bool, size: int, kind: str) -> None:
        """The pod made a member of its gang (its Workload stored with its first member)."""
        if kind == "workload":
            if first:
                namespace = pod["metadata"]["namespace"]
                policy = {"gang": {"minCount": size}}
                self._put("workloads", {
                    "apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
                    "metadata": {"name": gang, "namespace": namespace, "uid": f"uid-{gang}"},
                    "spec": {"podGroups": [{"name": "workers", "policy": policy}]},
                })  # fmt: skip
            pod["spec"] = {**pod["spec"], "workloadRef": {"name": gang, "podGroup": "workers"}}
            return
        annotations = {"yunikorn.apache.org/task-group-name": "workers"}
        if first:
            groups = [{"name": "workers", "minMember": size,
                       "minResource": {"cpu": "100m", "memory": "100Mi"}}]  # fmt: skip
            annotations["yunikorn.apache.org/task-groups"] = json.dumps(groups)
        pod["metadata"]["annotations"] = annotations

    async def _times(self, request: Request) -> Response:
        """For the pods made by /emulator/pods with `prefix`: how many are bound; with `full`, per pod
        [made, bound or null] in seconds, and for those with a claim [annotated for a node, bound]."""
        asked = request.query.get("prefix", "")
        counts = self.counts.get(asked, [0, 0])
        body: Obj = {"made": counts[0], "bound": counts[1]}
        if request.query.get("full"):
            prefix = asked + "-"
            made = [n for n in self.made_at if n.startswith(prefix)]
            body["times"] = {n: [self.made_at[n], self.bound_at.get(n)] for n in made}
            claims = {n: f"bench/data-{n}" for n in made}
            body["claims"] = {
                n: [self.selected_at.get(key), self.claim_bound_at.get(key)]
                for n, key in claims.items()
                if key in self.selected_at
            }
        return _json_response(body)


def _timed_out(waiting: asyncio.Future[bool]) -> None:
    if not waiting.done():
        waiting.set_result(False)


def _bench_claim(pod: Obj, storage_class: str) -> Obj:
    meta = pod["metadata"]
    name = f"data-{meta['name']}"
    return {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": meta["namespace"], "uid": f"uid-pvc-{name}"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                 "resources": {"requests": {"storage": "10Gi"}}},
        "status": {"phase": "Pending"},
    }  # fmt: skip


_API_VERSIONS = {
    "workloads": "scheduling.k8s.io/v1alpha1", "podgroups": "scheduling.k8s.io/v1alpha2",
    "priorityclasses": "scheduling.k8s.io/v1", "storageclasses": "storage.k8s.io/v1",
    "csinodes": "storage.k8s.io/v1", "csidrivers": "storage.k8s.io/v1",
}  # fmt: skip


def _policy_invalid(policy: Any, where: str) -> str:
    """A pod group policy as the API server validates it: exactly one of basic and gang, minCount > 0."""
    if not isinstance(policy, dict) or (policy.get("basic") is None) == (policy.get("gang") is None):
        return f"{where}: Invalid value: exactly one of `basic`, `gang` is required"
    gang = policy.get("gang")
    if gang is not None and not (isinstance(gang.get("minCount"), int) and gang["minCount"] > 0):
        return f"{where}.gang.minCount: Invalid value: {gang.get('minCount')}: must be greater than zero"
    return ""


def _workload_invalid(kind: str, obj: Obj) -> str:
    """scheduling.k8s.io validation of a Workload (v1alpha1) or PodGroup (v1alpha2)."""
    spec = obj.get("spec") or {}
    if kind == "podgroups":
        return _policy_invalid(spec.get("schedulingPolicy"), "spec.schedulingPolicy")
    groups = spec.get("podGroups")
    if not groups:
        return "spec.podGroups: Required value: must have at least one item"
    if len(groups) > 8:
        return f"spec.podGroups: Too many: {len(groups)}: must have at most 8 items"
    names = [g.get("name") for g in groups]
    for i, group in enumerate(groups):
        if names.count(group.get("name")) > 1:
            return f'spec.podGroups[{i}]: Duplicate value: {{"name":"{group.get("name")}"}}'
        invalid = _policy_invalid(group.get("policy"), f"spec.podGroups[{i}].policy")
        if invalid:
            return invalid
    return ""


def _podgroup_conditions_invalid(conditions: Any) -> str:
    """metav1.Condition's required fields, as the API server checks a status write."""
    for i, condition in enumerate(conditions or []):
        for required in ("type", "status", "reason", "lastTransitionTime"):
            if not condition.get(required):
                return f"status.conditions[{i}].{required}: Required value"
        if condition["status"] not in ("True", "False", "Unknown"):
            return f'status.conditions[{i}].status: Unsupported value: "{condition["status"]}"'
    return ""


def _default_and_validate(kind: str, obj: Obj) -> str:
    """As the API server does for admissionregistration.k8s.io/v1 webhook configurations: the defaults
    filled in (so a client that compares what it reads with what it wants must give them itself), and
    the checks a client may trip over refused with the field at fault ("" when valid)."""
    if kind in ("workloads", "podgroups"):
        return _workload_invalid(kind, obj)
    if not kind.endswith("webhookconfigurations"):
        return ""
    for i, hook in enumerate(obj.get("webhooks") or []):
        if hook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            return f"webhooks[{i}].sideEffects: Required value: must be None or NoneOnDryRun"
        if not hook.get("admissionReviewVersions"):
            return f"webhooks[{i}].admissionReviewVersions: Required value"
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        hook.setdefault("namespaceSelector", {})
        hook.setdefault("objectSelector", {})
        hook.setdefault("timeoutSeconds", 10)
        if kind.startswith("mutating"):
            hook.setdefault("reinvocationPolicy", "Never")
        service = (hook.get("clientConfig") or {}).get("service")
        if service is not None:
            service.setdefault("port", 443)
        for rule in hook.get("rules") or []:
            rule.setdefault("scope", "*")
        for selector in ("namespaceSelector", "objectSelector"):
            for expression in hook[selector].get("matchExpressions") or []:
                if expression.get("operator") in ("In", "NotIn") and not expression.get("values"):
                    return (f"webhooks[{i}].{selector}.matchExpressions.values: Required value: must be "
                            "specified when `operator` is 'In' or 'NotIn'")  # fmt: skip
    return ""


def _status(code: int, reason: str, message: str, kind: str, name: str) -> Response:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "details": {"name": name, "kind": kind}, "code": code}  # fmt: skip
    return _json_response(body, status=code)


async def serve(port_file: Path, volume_driver: str = "") -> None:
    """The emulation on its own, until killed; its port written to `port_file` once it serves. With a
    `volume_driver`, the cluster's PV controller and a provisioner of that CSI driver run in it
    (tests/integration/kube_volumes.py), with a WaitForFirstConsumer StorageClass of it, BENCH_CLASS."""
    api = FakeKubeAPI()
    await api.start()
    if volume_driver:
        from tests.integration.kube_volumes import Provisioner, PVController  # they import this module

        PVController(api).start()
        Provisioner(api, volume_driver).start()
        await api.put("storageclasses", {"metadata": {"name": BENCH_CLASS}, "provisioner": volume_driver,
                                         "volumeBindingMode": "WaitForFirstConsumer"})  # fmt: skip
    port_file.write_text(str(api.port))
    await asyncio.Event().wait()


def _merge_conditions(pod: Obj, conditions: list[Obj]) -> None:
    status = pod.setdefault("status", {})
    merged = {c["type"]: c for c in status.get("conditions") or []}
    for condition in conditions:
        merged[condition["type"]] = {**merged.get(condition["type"], {}), **condition}
    status["conditions"] = list(merged.values())


def condition(pod: Obj | None, kind: str) -> Obj | None:
    """The pod's status condition of that type, or None."""
    for found in ((pod or {}).get("status") or {}).get("conditions") or []:
        if found.get("type") == kind:
            return found
    return None


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="the Kubernetes API emulation, on its own")
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument("--volume-driver", default="", help="run the volume controllers, provisioning for it")
    parser.add_argument(
        "--loop", choices=["uvloop", "asyncio"], default="uvloop",
        help="the event loop: uvloop's (libuv: less CPU per request; the dev extra installs it) or asyncio's",
    )  # fmt: skip
    options = parser.parse_args()
    # As the daemons run it (pykorn_cli/gc_tuning.py): the emulation holds every pod, and the default
    # collector's passes over them grow with their number and land on whichever request allocates.
    tune_garbage_collector()
    if options.loop == "uvloop":
        import uvloop

        uvloop.run(serve(options.port_file, options.volume_driver))
    else:
        asyncio.run(serve(options.port_file, options.volume_driver))


def _merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: a mapping merges key by key, null removes the key, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = _merge_patch(merged.get(key), value)
    return merged
