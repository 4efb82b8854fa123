"""The Kubernetes shim's logic against a real core over gRPC, with Kubernetes kept in memory: bindings
set the pod's node and come back as informer events, evictions delete the pod. (The HTTP API
emulation and informers come next; these tests pin the behaviour they will drive.)"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import pytest

from rmclient.logging_setup import LIVE, set_live_levels
from shim_k8s.api.kube import BindError
from shim_k8s.readers.task_groups import TASK_GROUPS
from shim_k8s.readers.translate import TASK_GROUP_NAME
from shim_k8s.shim import K8sShim
from tests.recording_client import RecordingClient, recorded

GI = 2**30
QUEUES = """
partitions:
  - name: default
    placementrules:
      - name: provided
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: capped
            resources: {max: {memory: %(max)s}}
"""


class MemoryKube:
    """Just enough of the Kubernetes API, in memory."""

    def __init__(self) -> None:
        self.shim: K8sShim | None = None
        self.bindings: list[tuple[str, str]] = []  # (pod name, node)
        self.podgroup_conditions: list[tuple[str, dict[str, Any]]] = []  # (PodGroup, condition)
        self.evictions: list[str] = []
        self.events: list[tuple[str, str, str]] = []  # (object name, reason, message)
        self.fail_binding: set[str] = set()
        self.created: list[dict[str, Any]] = []  # pods the shim created (placeholders)
        self.deleted: list[str] = []
        self.unschedulable: list[tuple[str, str]] = []  # (pod name, message) as patched
        self.failed: list[tuple[str, str, str]] = []  # (pod name, reason, message): phase Failed

    async def bind(self, pod: Mapping[str, Any], node: str) -> None:
        name = pod["metadata"]["name"]
        if name in self.fail_binding:
            raise BindError(f'pods "{name}" is being deleted')
        self.bindings.append((name, node))
        bound = copy.deepcopy(pod)
        bound["spec"]["nodeName"] = node
        assert self.shim is not None
        await self.shim.on_pod("MODIFIED", bound)

    async def evict(self, pod: Mapping[str, Any], reason: str) -> None:
        self.evictions.append(pod["metadata"]["name"])
        assert self.shim is not None
        await self.shim.on_pod("DELETED", pod)

    async def create_pod(self, pod: Mapping[str, Any]) -> None:
        made = copy.deepcopy(dict(pod))
        made["metadata"]["uid"] = f"uid-{made['metadata']['name']}"
        made["status"] = {"phase": "Pending"}
        self.created.append(made)
        assert self.shim is not None
        await self.shim.on_pod("ADDED", made)

    async def delete_pod(self, pod: Mapping[str, Any]) -> None:
        self.deleted.append(pod["metadata"]["name"])
        assert self.shim is not None
        await self.shim.on_pod("DELETED", pod)

    async def fail_pod(self, pod: Mapping[str, Any], reason: str, message: str) -> None:
        self.failed.append((pod["metadata"]["name"], reason, message))

    async def set_unschedulable(
        self, pod: Mapping[str, Any], message: str, reason: str = "Unschedulable"
    ) -> None:
        self.unschedulable.append((pod["metadata"]["name"], message))

    async def record_event(
        self, obj: Mapping[str, Any], reason: str, message: str, warning: bool = False
    ) -> None:
        self.events.append((obj["metadata"]["name"], reason, message))

    async def set_podgroup_condition(self, podgroup: Mapping[str, Any], condition: Mapping[str, Any]) -> None:
        self.podgroup_conditions.append((podgroup["metadata"]["name"], dict(condition)))

    async def read_object(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return None  # the volume binding's writes are exercised against the HTTP emulation

    async def replace_object(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        raise BindError(f"{kind} {obj['metadata']['name']}: not kept in memory")


def node(name: str, memory: str = "4Gi", cpu: str = "4", unschedulable: bool = False) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": f"node-{name}", "labels": {"zone": "a"}},
        "spec": {"unschedulable": unschedulable},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }


def pod(
    name: str,
    memory: str = "1Gi",
    namespace: str = "shop",
    scheduler: str = "yunikorn",
    node_name: str = "",
    created: str = "2026-11-22T10:00:00Z",
    **spec: Any,
) -> dict[str, Any]:
    requests = {"cpu": "100m", "memory": memory}
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "labels": {},
            "creationTimestamp": created,
        },
        "spec": {
            "schedulerName": scheduler,
            "nodeName": node_name,
            "containers": [{"name": "c", "resources": {"requests": requests}}],
            **spec,
        },
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def daemonset_pod(name: str, node_name: str) -> dict[str, Any]:
    """A DaemonSet pod for one node, at system-node-critical priority, as Kubernetes makes it."""
    match = {"key": "metadata.name", "operator": "In", "values": [node_name]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [match]}]}}}  # fmt: skip
    daemon = pod(name, priority=2_000_001_000, affinity=affinity)
    daemon["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "agent"}]
    return daemon


@pytest.fixture
async def kube_and_shim(core_address: str, rm_id: str) -> AsyncIterator[tuple[MemoryKube, K8sShim]]:
    kube = MemoryKube()
    async with RecordingClient(core_address, rm_id) as client:
        shim = K8sShim(client, kube)
        kube.shim = shim
        yield kube, shim


def _decided(client: RecordingClient) -> int:
    """How many decisions the core has sent this RM: allocations, releases, rejections."""
    seen = client.seen
    return len(seen.new_allocations) + len(seen.released) + len(seen.rejected_allocations)


async def settle(
    shim: K8sShim, until: Callable[[], object] | None = None, what: str = "", timeout: float = 15.0
) -> None:
    """Carry out the core's decisions as they arrive until `until()` holds; then until the core has
    nothing more to say: every message the shim sent answered (a barrier) and carried out, and no new
    decision among the answers (carrying one out may send more, so that is checked again)."""
    client = shim.client
    assert isinstance(client, RecordingClient)
    if until is not None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            await shim.carry_out()
            if until():
                break
            await client.wait_for(
                lambda: shim.has_decisions or bool(until()), deadline - loop.time(), what or "a condition"
            )
    await shim.carry_out()
    while True:
        decided = _decided(client)
        await client.barrier()
        await shim.carry_out()  # the probes' answers are decisions about no pod: nothing is done
        if _decided(client) == decided:
            return


def configmap(max_memory: str) -> dict[str, Any]:
    return {"metadata": {"name": "yunikorn-configs", "namespace": "yunikorn"},
            "data": {"queues.yaml": QUEUES % {"max": max_memory}}}  # fmt: skip


async def test_a_pod_is_bound_to_the_node_the_core_chose(kube_and_shim: tuple[MemoryKube, K8sShim]) -> None:
    kube, shim = kube_and_shim
    await shim.sync([node("n1"), node("n2", unschedulable=True)], [], configmap=configmap("8Gi"))
    await shim.on_pod("ADDED", pod("web-1"))
    await settle(shim, lambda: kube.bindings, "web-1 to be bound")
    assert kube.bindings == [("web-1", "n1")]  # n2 is cordoned: drained in the core
    assert ("web-1", "Scheduled", "bound to n1 by pykorn") in kube.events


async def test_priority_resolution_cases(kube_and_shim: tuple[MemoryKube, K8sShim]) -> None:
    kube, shim = kube_and_shim
    classes = [{"metadata": {"name": "high"}, "value": 1000},
               {"metadata": {"name": "dflt"}, "value": 7, "globalDefault": True}]  # fmt: skip
    await shim.sync([node("n1", memory="16Gi")], [], priority_classes=classes, configmap=configmap("8Gi"))
    cases: dict[str, tuple[dict[str, Any], int]] = {
        "admitted": ({"priority": 5, "priorityClassName": "high"}, 5),
        "by-class": ({"priorityClassName": "high"}, 1000),
        "system": ({"priorityClassName": "system-node-critical"}, 2_000_001_000),
        "default": ({}, 7),
    }
    for name, (spec, _) in cases.items():
        await shim.on_pod("ADDED", pod(name, memory="100Mi", **spec))
    await shim.on_pod("ADDED", pod("mystery", memory="100Mi", priorityClassName="nope"))
    await settle(shim, lambda: len(kube.bindings) == len(cases), "the four pods to be bound")
    got = {a.allocationKey: a.priority for a in recorded(shim.client).seen.new_allocations}
    assert got == {f"uid-{name}": want for name, (_, want) in cases.items()}
    assert ("mystery", "PriorityClassNotFound") in [(n, r) for n, r, _ in kube.events]
    assert "mystery" not in dict(kube.bindings)
    await shim.on_priority_class("ADDED", {"metadata": {"name": "nope"}, "value": 3})
    await settle(shim, lambda: "mystery" in dict(kube.bindings), "mystery to be bound")
    assert "mystery" in dict(kube.bindings)


async def test_a_preemption_evicts_the_victim_pod(kube_and_shim: tuple[MemoryKube, K8sShim]) -> None:
    kube, shim = kube_and_shim
    await shim.sync([node("n1", memory="2Gi")], [], configmap=configmap("8Gi"))
    await shim.on_pod("ADDED", pod("batch-1"))
    await shim.on_pod("ADDED", pod("batch-2", created="2026-11-22T10:05:00Z"))
    await settle(shim, lambda: len(kube.bindings) == 2, "both batch pods to be bound")
    assert len(kube.bindings) == 2  # n1 is full
    daemon = daemonset_pod("agent-n1", "n1")
    await shim.on_pod("ADDED", daemon)
    await settle(shim, lambda: ("agent-n1", "n1") in kube.bindings, "the DaemonSet pod to be bound")
    assert kube.evictions == ["batch-2"]  # the youngest goes
    assert any(r == "Preempted" and n == "batch-2" for n, r, _ in kube.events)
    assert ("agent-n1", "n1") in kube.bindings  # placed once the victim is gone


async def test_foreign_pods_shrink_a_nodes_room(kube_and_shim: tuple[MemoryKube, K8sShim]) -> None:
    kube, shim = kube_and_shim
    other = pod(
        "kube-dns", memory="3Gi", namespace="kube-system", scheduler="default-scheduler", node_name="n1"
    )
    await shim.sync([node("n1", memory="4Gi")], [other], configmap=configmap("8Gi"))
    await shim.on_pod("ADDED", pod("a", memory="1Gi"))
    await shim.on_pod("ADDED", pod("b", memory="1Gi"))
    await settle(shim, lambda: kube.bindings, "a pod to be bound")
    assert [p for p, _ in kube.bindings] == ["a"]  # 4Gi - 3Gi foreign: room for one
    await shim.on_pod("DELETED", other)
    await settle(shim, lambda: len(kube.bindings) == 2, "b to be bound")
    assert [p for p, _ in kube.bindings] == ["a", "b"]


async def test_a_configmap_change_reaches_the_core(kube_and_shim: tuple[MemoryKube, K8sShim]) -> None:
    kube, shim = kube_and_shim
    await shim.sync([node("n1", memory="8Gi")], [], configmap=configmap("1Gi"))
    await shim.on_pod("ADDED", _in_queue(pod("q1"), "root.capped"))
    await shim.on_pod("ADDED", _in_queue(pod("q2"), "root.capped"))
    await settle(shim, lambda: kube.bindings, "a pod to be bound")
    capped = [p for p, _ in kube.bindings if p.startswith("q")]
    assert capped == ["q1"]  # max 1Gi
    bad = configmap("1Gi")
    bad["data"]["queues.yaml"] = "partitions: [oops"
    await shim.on_configmap("MODIFIED", bad)
    assert any(r == "ConfigRejected" for _, r, _ in kube.events)
    await shim.on_configmap("MODIFIED", configmap("4Gi"))
    await settle(shim, lambda: "q2" in dict(kube.bindings), "q2 to be bound")
    assert [p for p, _ in kube.bindings if p.startswith("q")] == ["q1", "q2"]


async def test_a_failed_binding_goes_back_to_the_core(kube_and_shim: tuple[MemoryKube, K8sShim]) -> None:
    kube, shim = kube_and_shim
    kube.fail_binding.add("doomed")
    await shim.sync([node("n1", memory="1Gi")], [], configmap=configmap("8Gi"))
    await shim.on_pod("ADDED", pod("doomed"))
    await settle(shim, lambda: any(n == "doomed" for n, _, _ in kube.events), "doomed's event")
    assert any(r == "BindingFailed" for n, r, _ in kube.events if n == "doomed")
    await shim.on_pod("ADDED", pod("next"))
    await settle(shim, lambda: kube.bindings, "next to be bound")
    assert ("next", "n1") in kube.bindings  # the room the failed binding held was given back


async def test_a_shim_restart_rebuilds_the_core_without_binding_twice(core_address: str, rm_id: str) -> None:
    kube = MemoryKube()
    async with RecordingClient(core_address, rm_id) as client:
        shim = K8sShim(client, kube)
        kube.shim = shim
        await shim.sync([node("n1", memory="2Gi")], [], configmap=configmap("8Gi"))
        for name in ("a", "b", "c"):
            await shim.on_pod("ADDED", pod(name))
        await settle(shim, lambda: len(kube.bindings) == 2, "two pods to be bound")
        assert len(kube.bindings) == 2
        world = [copy.deepcopy(p) for _, p in shim.state.ledger.pods()]
        for p in world:
            p["spec"]["nodeName"] = dict(kube.bindings).get(p["metadata"]["name"], "")
    # A new shim process: it lists what exists and registers again.
    kube2 = MemoryKube()
    async with RecordingClient(core_address, rm_id) as client2:
        shim2 = K8sShim(client2, kube2)
        kube2.shim = shim2
        await shim2.sync([node("n1", memory="2Gi")], world, configmap=configmap("8Gi"))
        await settle(shim2)  # the new registration answered in full, every decision carried out
        assert kube2.bindings == []  # a and b keep running where they are; c still does not fit
        await shim2.on_pod("DELETED", next(p for p in world if p["metadata"]["name"] == "a"))
        await settle(shim2, lambda: kube2.bindings, "c to be bound")
        assert kube2.bindings == [("c", "n1")]


def _in_queue(p: dict[str, Any], queue: str) -> dict[str, Any]:
    p["metadata"]["labels"]["queue"] = queue
    return p


async def test_cordon_drains_uncordon_restores_and_delete_decommissions(
    kube_and_shim: tuple[MemoryKube, K8sShim],
) -> None:
    kube, shim = kube_and_shim
    await shim.sync([node("n1", memory="4Gi")], [], configmap=configmap("8Gi"))
    await shim.on_pod("ADDED", pod("running"))
    await settle(shim, lambda: kube.bindings, "running to be bound")
    assert kube.bindings == [("running", "n1")]
    client = shim.client
    assert isinstance(client, RecordingClient)
    await shim.on_node("MODIFIED", node("n1", memory="4Gi", unschedulable=True))  # cordon
    # The node's update and drain travel on the node stream: answered before the ask goes.
    await client.wait_nodes_answered(3)
    await shim.on_pod("ADDED", pod("waiting"))
    await settle(shim)
    assert "waiting" not in dict(kube.bindings)
    await shim.on_node("MODIFIED", node("n1", memory="4Gi"))  # uncordon
    await settle(shim, lambda: "waiting" in dict(kube.bindings), "waiting to be bound")
    assert ("waiting", "n1") in kube.bindings
    await shim.on_node("DELETED", node("n1", memory="4Gi"))
    await settle(shim, lambda: len(client.seen.released) >= 2, "the node's pods to be released")
    released = {
        r.allocationKey for r in recorded(shim.client).seen.released if r.message == "Node n1 Removed"
    }
    assert released == {"uid-running", "uid-waiting"}


async def test_a_pod_bound_by_someone_else_becomes_foreign(kube_and_shim: tuple[MemoryKube, K8sShim]) -> None:
    kube, shim = kube_and_shim
    await shim.sync([node("n1", memory="2Gi")], [], configmap=configmap("8Gi"))
    # Ours by name, but placed by hand (spec.nodeName set at creation): it occupies n1, in no queue.
    await shim.on_pod("ADDED", pod("pinned", node_name="n1"))
    await shim.on_pod("ADDED", pod("a"))
    await shim.on_pod("ADDED", pod("b"))
    await settle(shim, lambda: kube.bindings, "a pod to be bound")
    assert [n for n, _ in kube.bindings] == ["a"]  # 2Gi - 1Gi pinned: room for one
    assert "uid-pinned" not in {a.allocationKey for a in recorded(shim.client).seen.new_allocations}


async def test_a_pod_of_an_application_the_core_completed_adds_it_again(
    kube_and_shim: tuple[MemoryKube, K8sShim],
) -> None:
    """A Deployment's pods share an application; its pods may all go, the core completes and forgets
    it, and a new pod of it comes later: the shim adds the application again, and the pod is bound."""
    kube, shim = kube_and_shim
    await shim.sync([node("n1")], [], configmap=configmap("8Gi"))
    first = pod("web-1")
    first["metadata"]["labels"] = {"applicationId": "web"}
    await shim.on_pod("ADDED", first)
    await settle(shim, lambda: kube.bindings, "web-1 to be bound")
    await shim.on_pod("DELETED", first)
    # What the core does with an idle application once its completing timeout passes, at once here.
    await shim.client.remove_application("web")
    client = shim.client
    assert isinstance(client, RecordingClient)
    await client.wait_for(lambda: "Completed" in client.seen.app_states.get("web", []), what="web completed")
    second = pod("web-2")
    second["metadata"]["labels"] = {"applicationId": "web"}
    await shim.on_pod("ADDED", second)
    await settle(shim, lambda: ("web-2", "n1") in kube.bindings, "web-2 to be bound")
    assert client.seen.accepted_apps.count("web") == 2


async def test_a_finished_pod_frees_its_room_and_a_grown_node_takes_more(
    kube_and_shim: tuple[MemoryKube, K8sShim],
) -> None:
    kube, shim = kube_and_shim
    await shim.sync([node("n1", memory="2Gi")], [], configmap=configmap("64Gi"))
    for name in ("a", "b", "c"):
        await shim.on_pod("ADDED", pod(name, memory="1Gi"))
    await settle(shim, lambda: len(kube.bindings) == 2, "two pods bound")
    waiting = ({"a", "b", "c"} - {n for n, _ in kube.bindings}).pop()
    # A pod that ran to completion releases its room at once (the pod object stays, Succeeded).
    done = pod(kube.bindings[0][0], memory="1Gi", node_name="n1")
    done["status"] = {"phase": "Succeeded"}
    await shim.on_pod("MODIFIED", done)
    await settle(shim, lambda: (waiting, "n1") in kube.bindings, f"{waiting} bound in the room freed")
    # The node's allocatable grows (a resize, a device plugin): the core places on the new room.
    await shim.on_node("MODIFIED", node("n1", memory="4Gi"))
    for name in ("d", "e"):
        await shim.on_pod("ADDED", pod(name, memory="1Gi"))
    await settle(shim, lambda: {("d", "n1"), ("e", "n1")} <= set(kube.bindings), "d and e bound")


def _settings(**data: str) -> dict[str, Any]:
    return {"metadata": {"name": "yunikorn-configs", "namespace": "yunikorn"}, "data": data}


async def test_the_queues_may_come_from_yunikorn_defaults_and_hot_refresh_may_be_off(
    kube_and_shim: tuple[MemoryKube, K8sShim],
) -> None:
    kube, shim = kube_and_shim
    defaults = {"metadata": {"name": "yunikorn-defaults", "namespace": "yunikorn"},
                "data": {"queues.yaml": QUEUES % {"max": "1Gi"}}}  # fmt: skip
    settings = _settings(**{"service.enableConfigHotRefresh": "false", "service.schedulingInterval": "1s"})
    await shim.sync([node("n1", memory="8Gi")], [], configmap=settings, defaults=defaults)
    await shim.on_pod("ADDED", _in_queue(pod("q1"), "root.capped"))
    await shim.on_pod("ADDED", _in_queue(pod("q2"), "root.capped"))
    await settle(shim, lambda: kube.bindings, "a pod to be bound")
    assert [p for p, _ in kube.bindings] == ["q1"]  # root.capped from yunikorn-defaults: max 1Gi
    # A bigger max in yunikorn-configs is not applied while running: hot refresh is off.
    bigger = {**settings["data"], "queues.yaml": QUEUES % {"max": "4Gi"}}
    await shim.on_configmap("MODIFIED", {**settings, "data": bigger})
    await settle(shim)
    assert [p for p, _ in kube.bindings] == ["q1"]
    reasons = [(r, m) for _, r, m in kube.events if r == "ConfigKeyIgnored"]
    assert any("service.schedulingInterval: not used" in m for _, m in reasons)
    assert any("enableConfigHotRefresh is false" in m for _, m in reasons)


def _gang_driver(app_id: str) -> dict[str, Any]:
    groups = [{"name": "workers", "minMember": 2, "minResource": {"cpu": "100m", "memory": "1Gi"}}]
    driver = pod("driver")
    driver["metadata"]["labels"] = {"applicationId": app_id}
    driver["metadata"]["annotations"] = {TASK_GROUPS: json.dumps(groups), TASK_GROUP_NAME: "workers"}
    return driver


async def test_placeholder_image_and_identity_from_the_configmap(
    kube_and_shim: tuple[MemoryKube, K8sShim],
) -> None:
    kube, shim = kube_and_shim
    settings = _settings(**{"service.placeholderImage": "registry.local/pause:9",
                            "service.placeholderRunAsUser": "1000", "service.placeholderFsGroup": "2000",
                            "queues.yaml": QUEUES % {"max": "8Gi"}})  # fmt: skip
    await shim.sync([node("n1", memory="8Gi")], [], configmap=settings)
    await shim.on_pod("ADDED", _gang_driver("job-1"))
    await settle(shim, lambda: len(kube.created) == 2, "the placeholders made")
    for placeholder in kube.created:
        assert placeholder["spec"]["containers"][0]["image"] == "registry.local/pause:9"
        context = placeholder["spec"]["securityContext"]
        assert (context["runAsUser"], context["fsGroup"], context["runAsNonRoot"]) == (1000, 2000, True)
        assert "runAsGroup" not in context


async def test_with_gang_scheduling_off_a_gang_is_scheduled_pod_by_pod(
    kube_and_shim: tuple[MemoryKube, K8sShim],
) -> None:
    kube, shim = kube_and_shim
    off = _settings(**{"service.disableGangScheduling": "true", "queues.yaml": QUEUES % {"max": "8Gi"}})
    await shim.sync([node("n1", memory="8Gi")], [], configmap=off)
    await shim.on_pod("ADDED", _gang_driver("job-2"))
    await settle(shim, lambda: kube.bindings, "the driver bound")
    assert kube.created == [] and kube.bindings == [("driver", "n1")]


async def test_log_levels_from_the_configmap_apply_at_once(kube_and_shim: tuple[MemoryKube, K8sShim]) -> None:
    kube, shim = kube_and_shim
    await shim.sync([node("n1")], [], configmap=_settings(**{"queues.yaml": QUEUES % {"max": "8Gi"}}))
    try:
        assert LIVE.threshold("pykorn.k8s.informer") == logging.INFO
        await shim.on_configmap("MODIFIED", _settings(**{
            "queues.yaml": QUEUES % {"max": "8Gi"}, "log.level": "error", "log.k8s.informer.level": "debug",
        }))  # fmt: skip
        assert LIVE.threshold("pykorn.k8s.informer") == logging.DEBUG
        assert LIVE.threshold("pykorn.k8s") == logging.ERROR
        assert not [m for _, r, m in kube.events if r == "ConfigKeyIgnored"]  # nothing needs a restart
    finally:
        set_live_levels(logging.INFO, {})


async def test_an_unreadable_configmap_at_a_resync_keeps_the_last_good_queues(
    kube_and_shim: tuple[MemoryKube, K8sShim],
) -> None:
    kube, shim = kube_and_shim
    await shim.sync([node("n1", memory="8Gi")], [], configmap=configmap("1Gi"))
    good = shim.config
    broken = configmap("1Gi")
    broken["data"]["queues.yaml"] = 5  # not a string: the ConfigMap cannot be read
    shim.load(configmap=broken)  # what a re-sync after a core restart does with the informer's copy
    assert shim.config == good
    await shim.carry_out()
    assert any(name == "yunikorn-configs" and reason == "Refused" for name, reason, _ in kube.events)


async def test_a_pod_asked_for_an_application_the_core_no_longer_holds_is_asked_again(
    kube_and_shim: tuple[MemoryKube, K8sShim],
) -> None:
    """Its application completed or failed in the core while the ask was on its way: the
    reconciliation adds it again and asks again (before, the pod stayed pending, skipped as asked)."""
    kube, shim = kube_and_shim
    await shim.sync([node("n1", memory="1Gi")], [], configmap=configmap("8Gi"))
    waiting = pod("waiting", memory="2Gi")  # no node has room: it stays pending, asked
    await shim.on_pod("ADDED", waiting)
    await shim.flush()
    app_id = shim.state.ledger.asked_as("uid-waiting")
    assert app_id is not None
    # The core forgets the application (as when it completes or fails with the ask on its way), and
    # the shim is not told: what it is left with then.
    client = shim.client
    assert isinstance(client, RecordingClient)
    await client.remove_application(app_id)
    await client.barrier()
    shim.state.apps.discard(app_id)
    for _ in range(2):  # a mismatch is repaired when two rounds in a row see it
        await settle(shim)  # as the main loop: what the core sent is carried out between rounds
        await shim.reconcile([waiting])
    assert shim.reconciler.repairs["asked-unknown-application"] == 1
    assert app_id in shim.state.apps and shim.state.ledger.is_asked("uid-waiting")
    await settle(shim)
    assert ("waiting", "Reconciled") in [(name, reason) for name, reason, _ in kube.events]


async def test_bindings_start_at_most_max_binding_at_once_and_every_pod_is_bound_once(
    kube_and_shim: tuple[MemoryKube, K8sShim], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A burst of allocations does not become a task per binding: MAX_BINDING run at once, the rest
    wait in the queue in order, and each is started as one ends."""
    from shim_k8s import decisions

    monkeypatch.setattr(decisions, "MAX_BINDING", 3)
    kube, shim = kube_and_shim
    client = shim.client
    assert isinstance(client, RecordingClient)
    gate, three = asyncio.Event(), asyncio.Event()
    running: list[str] = []
    most = 0
    bind = kube.bind

    async def slow_bind(p: Mapping[str, Any], node_name: str) -> None:
        nonlocal most
        running.append(p["metadata"]["name"])
        most = max(most, len(running))
        if len(running) == 3:
            three.set()
        await gate.wait()
        running.remove(p["metadata"]["name"])
        await bind(p, node_name)

    monkeypatch.setattr(kube, "bind", slow_bind)
    await shim.sync([node("n1", memory="64Gi", cpu="64")], [], configmap=configmap("64Gi"))
    for i in range(10):
        await shim.on_pod("ADDED", pod(f"web-{i}", memory="1Gi"))
    await client.wait_for(lambda: len(client.seen.new_allocations) == 10, what="ten allocations")
    await shim.process_core()
    await asyncio.wait_for(three.wait(), 5.0)
    for _ in range(10):
        await asyncio.sleep(0)  # turns of the loop: nothing more starts while three bind
    assert (len(running), len(shim.decisions.queue)) == (3, 7)  # the rest wait as decisions, not tasks
    gate.set()
    await settle(shim, lambda: len(kube.bindings) == 10, "all ten to be bound")
    assert most == 3
    assert sorted(name for name, _ in kube.bindings) == sorted(f"web-{i}" for i in range(10))


async def test_a_pod_whose_deletion_began_leaves_the_spread_counts_at_once(
    kube_and_shim: tuple[MemoryKube, K8sShim],
) -> None:
    """kube-scheduler leaves terminating pods out of topology spread: so does the core as soon as the
    MODIFIED event that sets metadata.deletionTimestamp reaches the shim, while the pod still runs."""
    kube, shim = kube_and_shim
    zones = {"n1": "a", "n2": "b"}
    nodes = [
        {**node(n), "metadata": {"name": n, "uid": f"node-{n}", "labels": {"zone": z}}}
        for n, z in zones.items()
    ]
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]  # fmt: skip

    def web(name: str, node_name: str = "", memory: str = "1Gi") -> dict[str, Any]:
        made = pod(name, memory=memory, node_name=node_name, topologySpreadConstraints=spread)
        made["metadata"]["labels"] = {"app": "web"}
        return made

    # n1 is the fuller node: the fair policy would try n2 first, and the counts (1 and 1) would allow it.
    await shim.sync(nodes, [web("web-a", "n1", memory="2Gi"), web("web-b", "n2")], configmap=configmap("8Gi"))
    deleting = web("web-a", "n1", memory="2Gi")
    deleting["metadata"]["deletionTimestamp"] = "2026-11-22T10:05:00Z"
    await shim.on_pod("MODIFIED", deleting)
    await shim.on_pod("ADDED", web("web-2"))
    await settle(shim, lambda: any(name == "web-2" for name, _ in kube.bindings), "web-2 bound")
    assert ("web-2", "n1") in kube.bindings  # zone a counts 0 now: zone b would make 2 against 0


async def test_an_application_id_given_twice_differently_is_said_on_the_pod(
    kube_and_shim: tuple[MemoryKube, K8sShim],
) -> None:
    kube, shim = kube_and_shim
    await shim.sync([node("n1")], [], configmap=configmap("8Gi"))
    both = pod("web-1")
    both["metadata"]["labels"] = {"yunikorn.apache.org/app-id": "shop-web"}
    both["metadata"]["annotations"] = {"yunikorn.apache.org/app-id": "shop-other"}
    await shim.on_pod("ADDED", both)
    await settle(shim, lambda: kube.bindings, "web-1 to be bound")
    warned = [message for name, reason, message in kube.events if reason == "ApplicationIDConflict"]
    assert warned == [
        "application ID 'shop-web' from the label yunikorn.apache.org/app-id is used; "
        "it overrides annotation yunikorn.apache.org/app-id 'shop-other'"
    ]
