"""Several partitions on one cluster through the whole shim (informers, the official wire format)
against the HTTP emulation of the API server and a real core: nodes in partitions by a label
(`service.partitionNodeLabelKey`), pods by their namespace's annotation or their own label, each
partition with its own queues and quotas from queues.yaml, a node relabelled into another partition."""

from __future__ import annotations

from collections import Counter
from typing import Any

import aiohttp

from shim_k8s.readers.partitions import PARTITION_KEY
from tests.integration.kube_api import FakeKubeAPI, condition
from tests.integration.rest_helpers import get_json, partition_url, rest_until
from tests.integration.test_k8s_api import _until, shim_running
from tests.integration.test_k8s_shim import node, pod

POOL = "example.com/pool"
QUEUES = """
partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: "*"
  - name: gpu
    placementrules:
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: ml
            resources: {max: {memory: 2Gi}}
"""

FPGA = """  - name: fpga
    placementrules:
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: "*"
"""


def settings() -> dict[str, Any]:
    return {
        "metadata": {"name": "yunikorn-configs", "namespace": "yunikorn"},
        "data": {"queues.yaml": QUEUES, "service.partitionNodeLabelKey": POOL},
    }


def pool_node(name: str, pool: str = "") -> dict[str, Any]:
    made = node(name, memory="2Gi")
    if pool:
        made["metadata"]["labels"][POOL] = pool
    return made


def namespace(name: str, partition: str = "") -> dict[str, Any]:
    annotations = {PARTITION_KEY: partition} if partition else {}
    return {"metadata": {"name": name, "uid": f"uid-ns-{name}", "annotations": annotations}}


def placed(api: FakeKubeAPI) -> dict[str, str]:
    return dict(api.bindings)


def said(api: FakeKubeAPI, name: str, reason: str) -> str:
    found = [
        e["message"] for e in api.events if e["involvedObject"]["name"] == name and e["reason"] == reason
    ]
    return found[-1] if found else ""


async def _cluster(api: FakeKubeAPI) -> None:
    await api.put("configmaps", settings())
    await api.put("namespaces", namespace("ml", "gpu"))
    await api.put("namespaces", namespace("shop"))
    await api.put("nodes", pool_node("cpu-0"))
    await api.put("nodes", pool_node("gpu-0", "gpu"))
    await api.put("nodes", pool_node("gpu-1", "gpu"))


async def test_two_partitions_on_one_cluster_with_their_own_nodes_queues_and_quotas(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    await _cluster(api)
    for i in range(3):
        await api.put("pods", pod(f"train-{i}", memory="1Gi", namespace="ml"))
    await api.put("pods", pod("web", memory="1Gi", namespace="shop"))
    async with shim_running(api, core_address, rm_id), aiohttp.ClientSession() as session:
        await _until(lambda: len(api.bindings) == 3, "two of ml's pods and shop's bound")
        bound = placed(api)
        assert bound["web"] == "cpu-0"  # the default partition's only node
        trained = {name: at for name, at in bound.items() if name.startswith("train-")}
        assert len(trained) == 2 and set(trained.values()) <= {"gpu-0", "gpu-1"}
        # The third waits for root.ml's max in gpu (2Gi), though cpu-0 has room: not its partition.
        (third,) = {"train-0", "train-1", "train-2"} - set(trained)
        await _until(lambda: "root.ml" in str((condition(api.get("pods", third), "PodScheduled") or {})
                                              .get("message", "")), "the third says why")  # fmt: skip
        # Each partition as the REST API (and so the web UI) shows it.
        names = {p["name"] for p in await get_json(session, f"{rest_url}/ws/v1/partitions")}
        assert {"default", "gpu"} <= names
        gpu_nodes = await get_json(session, f"{partition_url(rest_url, rm_id, 'gpu')}/nodes")
        assert sorted(n["nodeID"] for n in gpu_nodes) == ["gpu-0", "gpu-1"]
        default_nodes = await get_json(session, f"{partition_url(rest_url, rm_id)}/nodes")
        assert [n["nodeID"] for n in default_nodes] == ["cpu-0"]
        ml = await get_json(session, f"{partition_url(rest_url, rm_id, 'gpu')}/queue/root.ml")
        assert ml["allocatedResource"]["memory"] == 2 * 1024**3


async def test_a_pod_for_a_partition_not_declared_waits_with_the_reason(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await _cluster(api)
    stray = pod("stray", memory="1Gi", namespace="shop")
    stray["metadata"]["labels"][PARTITION_KEY] = "fpga"  # a pod's own label wins over its namespace
    await api.put("pods", stray)
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: said(api, "stray", "PartitionNotFound") != "", "the wait said")
        assert "partition 'fpga' is not in the queue configuration" in said(api, "stray", "PartitionNotFound")
        found = condition(api.get("pods", "stray"), "PodScheduled")
        assert found is not None and found["reason"] == "SchedulingSkipped"
        assert api.bindings == []
        # The configuration declares it now: the pod is asked for, and bound on that partition's node.
        await api.put("nodes", pool_node("fpga-0", "fpga"))
        fpga = QUEUES + FPGA
        await api.put("configmaps", {**settings(), "data": {**settings()["data"], "queues.yaml": fpga}})
        await _until(lambda: placed(api).get("stray") == "fpga-0", "bound in its partition")


async def test_a_node_relabelled_moves_with_its_running_pods_counted_there(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    await _cluster(api)
    await api.put("pods", pod("train-0", memory="1Gi", namespace="ml"))
    async with shim_running(api, core_address, rm_id), aiohttp.ClientSession() as session:
        await _until(lambda: "train-0" in placed(api), "bound in gpu")
        where = placed(api)["train-0"]
        moved = pool_node(where)  # its pool label taken away: it joins the default partition
        await api.put("nodes", moved)
        default = partition_url(rest_url, rm_id)

        def occupied_there(nodes: list[dict[str, Any]]) -> bool:
            found = next((n for n in nodes if n["nodeID"] == where), None)
            return found is not None and (found.get("occupied") or {}).get("memory") == 1024**3

        # ml's pod still runs there: it occupies the node in default (its queue is in gpu); gpu's
        # root.ml no longer counts it, nor has the node.
        await rest_until(session, f"{default}/nodes", occupied_there, "the node in default, occupied")
        gpu = partition_url(rest_url, rm_id, "gpu")
        assert where not in {n["nodeID"] for n in await get_json(session, f"{gpu}/nodes")}
        ml = await get_json(session, f"{gpu}/queue/root.ml")
        assert not (ml.get("allocatedResource") or {}).get("memory")
        said_on_node = [e for e in api.events if e["reason"] == "NodePartitionChanged"]
        assert said_on_node and said_on_node[0]["involvedObject"]["name"] == where
        # Shop's pods may use the node's other half, and cpu-0: three of 1Gi fit, two there, one here.
        for i in range(3):
            await api.put("pods", pod(f"web-{i}", memory="1Gi", namespace="shop"))
        await _until(lambda: all(f"web-{i}" in placed(api) for i in range(3)), "the three webs bound")
        assert Counter(placed(api)[f"web-{i}"] for i in range(3)) == {"cpu-0": 2, where: 1}
        assert len(api.bindings) == len(set(api.bindings))


async def test_a_node_moving_with_a_running_pod_takes_no_work_into_the_room_that_pod_holds(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    """gpu-0 (2Gi) runs a 1Gi pod and is relabelled into default, where a 2Gi pod waits: the node joins
    closed until its pod is counted there, so only the 1Gi that is free is ever given out."""
    await _cluster(api)
    await api.put("pods", pod("train-0", memory="1Gi", namespace="ml"))
    await api.put("pods", pod("fill", memory="2Gi", namespace="shop"))  # cpu-0, default's only node, full
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: {"train-0", "fill"} <= set(placed(api)), "both bound")
        await api.put("pods", pod("big", memory="2Gi", namespace="shop"))  # waits: no room in default
        await _until(lambda: condition(api.get("pods", "big"), "PodScheduled") is not None, "big waits")
        where = placed(api)["train-0"]
        await api.put("nodes", pool_node(where))  # into default
        await _until(lambda: any(e["reason"] == "NodePartitionChanged" for e in api.events), "the move")
        await api.put("pods", pod("small", memory="1Gi", namespace="shop"))
        await _until(lambda: placed(api).get("small") == where, "the free 1Gi taken by a pod that fits it")
        assert "big" not in placed(api)


async def test_a_node_moved_away_and_back_counts_its_pod_in_its_queue_again(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    await _cluster(api)
    await api.put("pods", pod("train-0", memory="1Gi", namespace="ml"))
    async with shim_running(api, core_address, rm_id), aiohttp.ClientSession() as session:
        await _until(lambda: "train-0" in placed(api), "bound in gpu")
        where = placed(api)["train-0"]
        ml = f"{partition_url(rest_url, rm_id, 'gpu')}/queue/root.ml"

        def counted(memory: int) -> Any:
            return lambda body: (body.get("allocatedResource") or {}).get("memory", 0) == memory

        await rest_until(session, ml, counted(1024**3), "root.ml counts the pod")
        await api.put("nodes", pool_node(where))  # into default: root.ml no longer has it
        await rest_until(session, ml, counted(0), "root.ml without it")
        await api.put("nodes", pool_node(where, "fpga"))  # into a partition not declared: out of all
        await _until(lambda: said(api, where, "PartitionNotFound") != "", "the node says why it waits")
        await api.put("nodes", pool_node(where, "gpu"))  # back: its pod in its queue again
        await rest_until(session, ml, counted(1024**3), "root.ml counts it again")
        nodes = await get_json(session, f"{partition_url(rest_url, rm_id, 'gpu')}/nodes")
        assert where in {n["nodeID"] for n in nodes}


async def test_a_pod_waiting_for_its_partition_fails_nothing_and_a_fixed_namespace_wakes_it(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    """A gated pod and its sibling of a partition not declared (a typo in the namespace's annotation):
    both wait for the partition, their application is not sent (so not refused, and nothing fails);
    the annotation corrected, the sibling is bound in gpu."""
    await _cluster(api)
    await api.put("namespaces", namespace("lab", "gpuu"))
    gated = pod("gated", memory="1Gi", namespace="lab", schedulingGates=[{"name": "example.com/hold"}])
    await api.put("pods", gated)
    await api.put("pods", pod("sibling", memory="1Gi", namespace="lab"))
    async with shim_running(api, core_address, rm_id):

        def waits(name: str) -> bool:
            return "'gpuu'" in said(api, name, "PartitionNotFound")

        await _until(lambda: waits("gated") and waits("sibling"), "both wait for their partition")
        assert not [e for e in api.events if e["reason"] in ("ApplicationFailed", "SchedulingRejected")]
        await api.put("namespaces", namespace("lab", "gpu"))
        await _until(lambda: placed(api).get("sibling", "").startswith("gpu-"), "bound in gpu")
        assert "gated" not in placed(api)  # still gated
