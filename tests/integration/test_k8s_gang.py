"""Gang scheduling through the whole Kubernetes shim (the official client, informers) against the HTTP
emulation of the API server and a real core: placeholder pods made from the annotation, bound,
deleted as the real pods take their places, and the real pods bound where their placeholders were."""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import aiohttp

from shim_k8s.readers.task_groups import SCHEDULING_POLICY, TASK_GROUPS
from shim_k8s.readers.translate import PLACEHOLDER, TASK_GROUP_NAME
from shim_k8s.shim import K8sShim
from tests.integration.kube_api import FakeKubeAPI
from tests.integration.rest_helpers import get_json, partition_url
from tests.integration.test_k8s_api import _until, shim_running
from tests.integration.test_k8s_shim import MemoryKube, node, pod, settle
from tests.recording_client import RecordingClient, recorded

GROUPS = [
    {"name": "driver", "minMember": 1, "minResource": {"cpu": "100m", "memory": "1Gi"}},
    {"name": "executors", "minMember": 2, "minResource": {"cpu": "100m", "memory": "1Gi"},
     "nodeSelector": {"zone": "a"}, "tolerations": [{"key": "spot", "operator": "Exists"}]},
]  # fmt: skip


def member(name: str, group: str, app: str = "spark-1", **annotations: str) -> dict[str, Any]:
    """A pod of the job, made just now: its application by label, its task group by annotation (1Gi,
    100m). Made now, as the placeholder timeout counts from the application's creation (a pod made
    days ago has a long expired timeout, and its placeholders go as soon as they are allocated)."""
    made = pod(name, created=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    made["metadata"]["labels"] = {"applicationId": app}
    made["metadata"]["annotations"] = {TASK_GROUP_NAME: group, **annotations}
    return made


def _placeholders(api: FakeKubeAPI) -> list[dict[str, Any]]:
    return [p for p in api.created if p["metadata"]["annotations"].get(PLACEHOLDER) == "true"]


def _nodes_of(api: FakeKubeAPI, names: set[str]) -> Counter[str]:
    return Counter(node_name for pod_name, node_name in api.bindings if pod_name in names)


async def test_placeholders_are_made_bound_and_replaced_by_the_real_pods_on_their_nodes(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await api.put("nodes", node("n1", memory="4Gi"))
    await api.put("nodes", node("n2", memory="4Gi"))
    policy = "placeholderTimeoutInSeconds=600 gangSchedulingStyle=Hard"
    driver = member("driver", "driver", **{TASK_GROUPS: json.dumps(GROUPS), SCHEDULING_POLICY: policy})
    await api.put("pods", driver)
    async with shim_running(api, core_address, rm_id, placeholder_image="example.org/pause:1"):
        await _until(lambda: len(_placeholders(api)) == 3, "three placeholder pods")
        made = _placeholders(api)
        by_group = Counter(p["metadata"]["annotations"][TASK_GROUP_NAME] for p in made)
        assert by_group == {"driver": 1, "executors": 2}
        for placeholder in made:  # as YuniKorn makes them: owned by the driver, its group's constraints
            meta, spec = placeholder["metadata"], placeholder["spec"]
            assert meta["ownerReferences"][0]["uid"] == "uid-driver" and meta["namespace"] == "shop"
            assert len(meta["name"]) <= 63 and meta["name"].startswith("tg-spark-1-")
            assert spec["containers"][0]["image"] == "example.org/pause:1"
            assert spec["containers"][0]["resources"]["requests"] == {"cpu": "100m", "memory": "1Gi"}
            assert spec["schedulerName"] == "yunikorn"
            if meta["annotations"][TASK_GROUP_NAME] == "executors":
                assert spec["nodeSelector"] == {"zone": "a"} and spec["tolerations"][0]["key"] == "spot"
        names = {p["metadata"]["name"] for p in made}
        placeholder_nodes = {
            group: _nodes_of(api, {p["metadata"]["name"] for p in made
                                   if p["metadata"]["annotations"][TASK_GROUP_NAME] == group})
            for group in ("driver", "executors")
        }  # fmt: skip
        # The driver's placeholder is bound, then replaced by the driver itself.
        await _until(lambda: "driver" in dict(api.bindings), "the driver in its placeholder's place")
        # The executors come once the driver runs, as Spark makes them.
        for name in ("exec-1", "exec-2"):
            await api.put("pods", member(name, "executors"))
        await _until(lambda: {"exec-1", "exec-2"} <= set(dict(api.bindings)), "the executors bound")
        await _until(lambda: names <= set(api.deleted), "every placeholder deleted")
        placeholder_nodes = {
            group: _nodes_of(api, {p["metadata"]["name"] for p in made
                                   if p["metadata"]["annotations"][TASK_GROUP_NAME] == group})
            for group in ("driver", "executors")
        }  # fmt: skip
        assert sum(placeholder_nodes["executors"].values()) == 2  # every placeholder was bound first
        assert _nodes_of(api, {"driver"}) == placeholder_nodes["driver"]
        assert _nodes_of(api, {"exec-1", "exec-2"}) == placeholder_nodes["executors"]
        assert len(api.bindings) == len(set(api.bindings))  # nothing bound twice
        assert api.evictions == []  # placeholders are deleted, never evicted


async def test_an_unusable_task_groups_annotation_is_an_event_and_the_pod_runs_without_a_gang(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await api.put("nodes", node("n1", memory="4Gi"))
    broken = member(
        "solo", "workers", app="broken-1", **{TASK_GROUPS: '[{"name": "workers", "minMember": 0}]'}
    )
    await api.put("pods", broken)
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: ("solo", "n1") in api.bindings, "the pod bound as an ordinary pod")
        reasons = {e["reason"]: e["message"] for e in api.events if e["involvedObject"]["name"] == "solo"}
        assert "minMember must be a whole number of at least 1" in reasons["TaskGroupsError"]
        assert "is not among the task groups" in reasons["TaskGroupNotDeclared"]
        assert api.created == []  # no placeholders for a gang that could not be read


async def test_a_gang_that_cannot_fit_gives_its_placeholders_up_and_its_pods_then_run(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await api.put("nodes", node("n1", memory="2Gi"))
    groups = [{"name": "workers", "minMember": 3, "minResource": {"cpu": "100m", "memory": "1Gi"}}]
    annotations = {TASK_GROUPS: json.dumps(groups), SCHEDULING_POLICY: "placeholderTimeoutInSeconds=1"}
    await api.put("pods", member("w-1", "workers", app="tight-1", **annotations))
    async with shim_running(api, core_address, rm_id):
        # Two of three placeholders fit; after the timeout (Soft) all three go, and w-1 runs alone.
        await _until(lambda: len(_placeholders(api)) == 3, "three placeholder pods")
        await _until(lambda: ("w-1", "n1") in api.bindings, "w-1 bound once the gang was given up")
        names = {p["metadata"]["name"] for p in _placeholders(api)}
        assert names <= set(api.deleted)
        assert len(_nodes_of(api, names)) == 1 and sum(_nodes_of(api, names).values()) == 2


async def test_a_resync_of_a_gang_that_already_runs_makes_no_new_placeholders(
    core_address: str, rm_id: str
) -> None:
    """After a restart the shim sends what exists; a gang whose pods run (its placeholders replaced
    and deleted) is not reserved again, as YuniKorn's shim skips reserving on recovery."""
    kube = MemoryKube()
    async with RecordingClient(core_address, rm_id) as client:
        shim = K8sShim(client, kube)
        kube.shim = shim
        driver = member("driver", "driver", **{TASK_GROUPS: json.dumps(GROUPS)})
        running = [driver, member("exec-1", "executors"), member("exec-2", "executors")]
        for made in running:
            made["spec"]["nodeName"] = "n1"
            made["status"]["phase"] = "Running"
        await shim.sync([node("n1", memory="8Gi")], running)
        await settle(shim)
        assert kube.created == []
        app = recorded(client).seen
        assert sorted(a.allocationKey for a in app.new_allocations) == [
            "uid-driver",
            "uid-exec-1",
            "uid-exec-2",
        ]


class LateEchoKube(MemoryKube):
    """As the API's watch may deliver it: a placeholder's binding is seen (MODIFIED, on its node) only
    after the shim has started to delete it, just before its DELETED event."""

    def __init__(self) -> None:
        super().__init__()
        self.late: dict[str, dict[str, Any]] = {}

    async def bind(self, pod: Mapping[str, Any], node: str) -> None:
        if pod["metadata"]["annotations"].get(PLACEHOLDER) != "true":
            await super().bind(pod, node)
            return
        self.bindings.append((pod["metadata"]["name"], node))
        bound = copy.deepcopy(dict(pod))
        bound["spec"]["nodeName"] = node
        self.late[pod["metadata"]["name"]] = bound

    async def delete_pod(self, pod: Mapping[str, Any]) -> None:
        echo = self.late.pop(pod["metadata"]["name"], None)
        assert self.shim is not None
        if echo is not None:
            await self.shim.on_pod("MODIFIED", echo)
        await super().delete_pod(pod)


async def test_a_placeholders_late_binding_echo_is_not_taken_for_another_schedulers_pod(
    core_address: str, rest_url: str, rm_id: str
) -> None:
    """The echo of a placeholder's binding that arrives while the shim deletes it is still the shim's
    own pod: the core is not told of a foreign pod, and the node holds the real task alone."""
    kube = LateEchoKube()
    groups = [{"name": "driver", "minMember": 1, "minResource": {"cpu": "100m", "memory": "1Gi"}}]
    async with RecordingClient(core_address, rm_id) as client, aiohttp.ClientSession() as session:
        shim = K8sShim(client, kube)
        kube.shim = shim
        await shim.sync(
            [node("n1", memory="4Gi")], [member("driver", "driver", **{TASK_GROUPS: json.dumps(groups)})]
        )
        await settle(shim, lambda: ("driver", "n1") in kube.bindings, "the driver in its placeholder's place")
        await settle(shim)
        assert [name for name in kube.deleted if name.startswith("tg-")] == [
            kube.created[0]["metadata"]["name"]
        ]
        assert not shim.state.ledger.any_foreign()
        nodes = await get_json(session, f"{partition_url(rest_url, rm_id)}/nodes")
        (n1,) = nodes
        assert n1["allocated"].get("memory") == 1024**3  # the driver's; not its placeholder's as well
        assert not n1.get("occupied")  # no foreign pod was made of the placeholder
