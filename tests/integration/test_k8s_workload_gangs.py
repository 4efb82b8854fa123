"""Kubernetes' Workload API gangs through the whole shim (informers, the official wire format) against
the HTTP emulation of the API server and a real core: v1alpha1 Workloads with `spec.workloadRef`,
v1alpha2 PodGroups with `spec.schedulingGroup`, each gang bound all together or not at all."""

from __future__ import annotations

from typing import Any

import aiohttp

from shim_k8s.readers.translate import TASK_GROUP_NAME
from tests.integration.kube_api import FakeKubeAPI, condition
from tests.integration.rest_helpers import get_json, partition_url
from tests.integration.test_k8s_api import _until, shim_running
from tests.integration.test_k8s_shim import node, pod

NS = "shop"


def workload(name: str, groups: dict[str, int | None]) -> dict[str, Any]:
    """A v1alpha1 Workload: each group a gang of its minCount, or basic (None)."""
    pod_groups: list[dict[str, Any]] = [
        {"name": group, "policy": {"basic": {}} if count is None else {"gang": {"minCount": count}}}
        for group, count in groups.items()
    ]
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-wl-{name}"},
        "spec": {"podGroups": pod_groups},
    }  # fmt: skip


def podgroup(name: str, min_count: int | None) -> dict[str, Any]:
    """A v1alpha2 PodGroup, as the Job controller makes it from its Workload's template."""
    policy = {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-pg-{name}", "generation": 1},
        "spec": {"podGroupTemplateRef": {"workload": {"workloadName": "job", "podGroupTemplateName": "t"}},
                 "schedulingPolicy": policy},
    }  # fmt: skip


def member(
    name: str, workload_name: str = "train", group: str = "workers", replica: str = ""
) -> dict[str, Any]:
    ref = {"name": workload_name, "podGroup": group}
    if replica:
        ref["podGroupReplicaKey"] = replica
    return pod(name, memory="1Gi", namespace=NS, workloadRef=ref)


def v2_member(name: str, group: str = "job-pg") -> dict[str, Any]:
    return pod(name, memory="1Gi", namespace=NS, schedulingGroup={"podGroupName": group})


async def nodes(api: FakeKubeAPI, count: int, first: int = 0) -> None:
    for i in range(first, first + count):
        await api.put("nodes", node(f"n{i}", memory="1Gi"))


def bound(api: FakeKubeAPI) -> set[str]:
    return {name for name, _ in api.bindings}


def said(api: FakeKubeAPI, name: str, reason: str) -> str:
    """The message of the latest event with `reason` on the pod ("" when none)."""
    found = [
        e["message"] for e in api.events if e["involvedObject"]["name"] == name and e["reason"] == reason
    ]
    return found[-1] if found else ""


def scheduled_message(api: FakeKubeAPI, name: str) -> str:
    found = condition(api.get("pods", name), "PodScheduled")
    return str(found.get("message", "")) if found is not None else ""


async def test_a_gang_of_four_on_room_for_three_binds_nothing_and_on_room_for_four_binds_all(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    await nodes(api, 3)
    await api.put("workloads", workload("train", {"workers": 4}))
    for i in range(4):
        await api.put("pods", member(f"w{i}"))
    async with shim_running(api, core_address, rm_id):
        why = "pod group workload/shop/train/workers: 3 of the 4 pods that must start together can be placed"
        await _until(
            lambda: all(why in scheduled_message(api, f"w{i}") for i in range(4)), "each pod says why"
        )
        assert api.bindings == []
        await nodes(api, 1, first=3)  # room for the fourth
        await _until(lambda: bound(api) == {"w0", "w1", "w2", "w3"}, "all four bound")
        assert sorted(n for _, n in api.bindings) == ["n0", "n1", "n2", "n3"]
        assert len(api.bindings) == 4  # each once
        # The Workload is the application (no applicationId label): its pods, its queue, its user.
        async with aiohttp.ClientSession() as session:
            url = f"{partition_url(rest_url, rm_id)}/application/workload-shop-train"
            app = await get_json(session, url)
        assert app["applicationState"] == "Running" and len(app["allocations"]) == 4


async def test_a_gang_with_fewer_pods_than_its_minimum_waits_for_them_and_says_so(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await nodes(api, 4)
    await api.put("workloads", workload("train", {"workers": 4}))
    for i in range(3):
        await api.put("pods", member(f"w{i}"))
    async with shim_running(api, core_address, rm_id):
        waiting = "waiting for minCount pods from a gang to appear in scheduling queue: 3 of 4 pods"
        await _until(
            lambda: all(waiting in said(api, f"w{i}", "WaitingForGang") for i in range(3)), "the waits"
        )
        found = condition(api.get("pods", "w0"), "PodScheduled")
        assert found is not None and found["reason"] == "SchedulingSkipped"  # no scale-up for it
        assert api.bindings == []
        await api.put("pods", member("w3"))
        await _until(lambda: bound(api) == {"w0", "w1", "w2", "w3"}, "all four bound once the fourth exists")


async def test_a_replica_key_makes_two_gangs(api: FakeKubeAPI, core_address: str, rm_id: str) -> None:
    await nodes(api, 3)
    await api.put("workloads", workload("train", {"workers": 2}))
    for name, replica in (("a0", "0"), ("a1", "0"), ("b0", "1"), ("b1", "1")):
        await api.put("pods", member(name, replica=replica))
    async with shim_running(api, core_address, rm_id):
        # Room for three: one gang of two starts whole, the other waits whole.
        await _until(lambda: len(api.bindings) == 2, "one gang bound")
        assert bound(api) in ({"a0", "a1"}, {"b0", "b1"})
        other = "b0" if "a0" in bound(api) else "a0"
        await _until(
            lambda: "must start together" in scheduled_message(api, other), "the other gang says why"
        )
        await nodes(api, 1, first=3)
        await _until(lambda: len(api.bindings) == 4, "the second gang bound")


async def test_a_basic_group_binds_pod_by_pod(api: FakeKubeAPI, core_address: str, rm_id: str) -> None:
    await nodes(api, 2)
    await api.put("workloads", workload("serve", {"web": None}))
    for i in range(3):
        await api.put("pods", member(f"s{i}", workload_name="serve", group="web"))
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: len(api.bindings) == 2, "two of three bound, as room allows")
        (waiting,) = {"s0", "s1", "s2"} - bound(api)
        await _until(lambda: scheduled_message(api, waiting) != "", "the third says why it waits")
        assert "pod group" not in scheduled_message(api, waiting), scheduled_message(api, waiting)


async def test_a_missing_workload_or_group_waits_with_the_reason(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await nodes(api, 2)
    await api.put("pods", member("early", workload_name="later", group="workers"))
    await api.put("workloads", workload("other", {"ps": 1}))
    await api.put("pods", member("stray", workload_name="other", group="workers"))
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: said(api, "early", "WaitingForPodGroup") != "", "the missing workload said")
        assert said(api, "early", "WaitingForPodGroup") == (
            "waiting for pod's workload 'later' to appear in scheduling queue"
        )
        await _until(lambda: said(api, "stray", "WaitingForPodGroup") != "", "the missing group said")
        assert "pod group 'workers' doesn't exist for a workload 'other'" in said(
            api, "stray", "WaitingForPodGroup"
        )
        await api.put("workloads", workload("later", {"workers": 1}))
        await _until(lambda: bound(api) == {"early"}, "bound once its workload exists")


async def test_v1alpha2_pod_groups_bind_together_and_their_status_says_scheduled(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await nodes(api, 2)
    await api.put("pods", v2_member("p0"))
    await api.put("pods", v2_member("p1"))
    async with shim_running(api, core_address, rm_id):
        await _until(
            lambda: "pod group 'job-pg'" in said(api, "p0", "WaitingForPodGroup"), "the missing PodGroup"
        )
        # Created through the API as the Job controller does: validated, then seen by the shim's watch.
        await api.put("podgroups", podgroup("job-pg", 2))
        await _until(lambda: bound(api) == {"p0", "p1"}, "both bound")

        def scheduled() -> dict[str, Any] | None:
            status = (api.get("podgroups", "job-pg") or {}).get("status") or {}
            return next((c for c in status.get("conditions") or [] if c["type"] == "PodGroupScheduled"), None)

        await _until(lambda: (scheduled() or {}).get("status") == "True", "PodGroupScheduled True")
        found = scheduled()
        assert found is not None and found["reason"] == "Scheduled" and found["observedGeneration"] == 1
        assert ("patch-status", "podgroups", "job-pg") in api.writes


async def test_a_v1alpha2_gang_without_room_says_so_on_its_pod_group(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await nodes(api, 1)
    await api.put("podgroups", podgroup("job-pg", 2))
    await api.put("pods", v2_member("p0"))
    await api.put("pods", v2_member("p1"))
    async with shim_running(api, core_address, rm_id):

        def status_of() -> dict[str, Any]:
            status = (api.get("podgroups", "job-pg") or {}).get("status") or {}
            return next((c for c in status.get("conditions") or [] if c["type"] == "PodGroupScheduled"), {})

        await _until(lambda: status_of().get("reason") == "Unschedulable", "PodGroupScheduled False")
        assert "1 of the 2 pods that must start together" in status_of()["message"]
        assert api.bindings == []


async def test_task_group_annotations_win_over_a_workload_reference_and_the_pod_is_told(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await nodes(api, 1)
    await api.put("workloads", workload("train", {"workers": 4}))
    both = member("both")
    both["metadata"]["annotations"] = {TASK_GROUP_NAME: "workers"}
    await api.put("pods", both)
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: bound(api) == {"both"}, "bound as its task group says (none declared: alone)")
        assert "its task group decides its gang" in said(api, "both", "WorkloadGangIgnored")


async def test_with_the_workload_api_off_a_gang_binds_pod_by_pod_and_each_pod_is_told(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await api.put("configmaps", {
        "metadata": {"name": "yunikorn-configs", "namespace": "yunikorn"},
        "data": {"service.disableWorkloadAPI": "true"},
    })  # fmt: skip
    await nodes(api, 2)
    await api.put("workloads", workload("train", {"workers": 4}))
    for i in range(3):
        await api.put("pods", member(f"w{i}"))
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: len(api.bindings) == 2, "two bound, as room allows")
        assert "Workload API gangs are off" in said(api, "w0", "WorkloadGangIgnored")


async def test_a_cluster_without_the_workload_api_is_served_as_before(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    api.unserved |= {"workloads", "podgroups"}  # GenericWorkload off: both lists answer 404
    await nodes(api, 1)
    await api.put("pods", pod("plain", memory="1Gi", namespace=NS))
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: bound(api) == {"plain"}, "an ordinary pod bound")


async def test_workloads_of_one_name_in_two_namespaces_are_two_gangs(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await nodes(api, 4)
    for namespace in ("shop", "lab"):
        await api.put("workloads", {**workload("train", {"workers": 2}), "metadata": {
            "name": "train", "namespace": namespace, "uid": f"uid-{namespace}-train"}})  # fmt: skip
        for i in range(2):
            made = member(f"{namespace}-{i}")
            made["metadata"]["namespace"] = namespace
            await api.put("pods", made)
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: len(api.bindings) == 4, "both gangs bound")


async def test_the_member_that_completes_a_gang_wakes_the_others_even_if_it_must_wait_itself(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    """The third of a gang of three names a PriorityClass not made yet: it waits for it, and the two
    waiting for the gang are asked for all the same; the class made, all three bind together."""
    await nodes(api, 3)
    await api.put("workloads", workload("train", {"workers": 3}))
    await api.put("pods", member("w0"))
    await api.put("pods", member("w1"))
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: said(api, "w1", "WaitingForGang") != "", "the first two wait for the gang")
        late = member("w2")
        late["spec"]["priorityClassName"] = "training"
        await api.put("pods", late)
        await _until(lambda: said(api, "w2", "PriorityClassNotFound") != "", "the third waits for its class")
        await _until(
            lambda: "2 of the 3 pods it starts with" in scheduled_message(api, "w0"), "the two asked"
        )
        await api.put("priorityclasses", {"metadata": {"name": "training"}, "value": 100})
        await _until(lambda: bound(api) == {"w0", "w1", "w2"}, "all three bound")
