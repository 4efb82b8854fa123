"""Queue-level scenarios over real gRPC with the fake shim's client: sharing, caps, node sorting,
placement, reload, draining queues, foreign allocations and reservations."""

from __future__ import annotations

from collections import Counter

import aiohttp

from rmclient import messages
from si.v1 import si_pb2
from tests.integration.rest_helpers import partition_url, rest_until
from tests.recording_client import RecordingClient

NODE = {"memory": 10_000, "vcore": 10_000}
TASK = {"memory": 1_000, "vcore": 1_000}

TWO_LEAVES = """
partitions:
  - name: default
    nodesortpolicy: {type: %(policy)s}
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            resources: {guaranteed: {memory: 50000, vcore: 50000}}
          - name: b
            resources: {guaranteed: {memory: 50000, vcore: 50000}}
          - name: fairleaf
            properties: {application.sort.policy: fair}
          - name: capped
            resources: {max: {memory: 3000, vcore: 3000}}
"""


def _config(policy: str = "fair") -> str:
    return TWO_LEAVES % {"policy": policy}


async def _register_with_apps(client: RecordingClient, apps: dict[str, str], policy: str = "fair") -> None:
    await client.register(config=_config(policy))
    await client.send_application_request(
        si_pb2.ApplicationRequest(
            rmID=client.rm_id, new=[messages.application(app, queue) for app, queue in apps.items()]
        )
    )
    await client.wait_apps_answered(len(apps))
    assert sorted(client.seen.accepted_apps) == sorted(apps), client.seen.rejected_apps


async def _asks(client: RecordingClient, per_app: dict[str, int], size: dict[str, int] = TASK) -> None:
    """All asks in one message, so one scheduling cycle sees every application's demand."""
    await client.asks(
        messages.ask(app, f"{app}-{i:03d}", size, tags={"creationTime": str(1_700_000_000 + i)})
        for app, count in per_app.items()
        for i in range(count)
    )


async def _nodes(client: RecordingClient, count: int, capacity: dict[str, int] = NODE) -> None:
    await client.add_nodes(*(messages.node(f"node-{i}", capacity) for i in range(1, count + 1)))
    await client.wait_nodes_answered(count)


def _per_app(client: RecordingClient) -> Counter[str]:
    return Counter(a.applicationID for a in client.seen.allocations.values())


async def test_two_leaf_queues_share_the_cluster_evenly(client: RecordingClient) -> None:
    await _register_with_apps(client, {"app-a": "root.a", "app-b": "root.b"})
    await _asks(client, {"app-a": 30, "app-b": 30})
    await _nodes(client, 2)  # room for 20 of the 60 tasks
    await client.wait_allocations(20)
    await client.barrier()  # every allocation those asks got has arrived: no more than 20
    assert _per_app(client) == {"app-a": 10, "app-b": 10}


async def test_two_apps_in_a_fair_leaf_share_evenly(client: RecordingClient) -> None:
    await _register_with_apps(client, {"fair-1": "root.fairleaf", "fair-2": "root.fairleaf"})
    await _asks(client, {"fair-1": 30, "fair-2": 30})
    await _nodes(client, 2)
    await client.wait_allocations(20)
    await client.barrier()
    assert _per_app(client) == {"fair-1": 10, "fair-2": 10}


async def test_a_leaf_max_caps_what_it_gets_and_the_rest_stays_pending(client: RecordingClient) -> None:
    await _register_with_apps(client, {"app-c": "root.capped", "app-a": "root.a"})
    await _nodes(client, 2)
    await _asks(client, {"app-c": 10})
    await client.wait_allocations(3)
    await _asks(client, {"app-a": 5})  # other queues still get the free room
    await client.wait_allocations(8)
    await client.barrier()
    assert _per_app(client) == {"app-c": 3, "app-a": 5}


async def test_binpacking_fills_one_node_before_the_next(client: RecordingClient) -> None:
    await _register_with_apps(client, {"app-a": "root.a"}, policy="binpacking")
    await _nodes(client, 3)
    await _asks(client, {"app-a": 12})
    allocations = await client.wait_allocations(12)
    per_node = Counter(a.nodeID for a in allocations)
    assert sorted(per_node.values()) == [2, 10]  # one node full before the next is touched


async def test_fair_node_sort_spreads_evenly(client: RecordingClient) -> None:
    await _register_with_apps(client, {"app-a": "root.a"}, policy="fair")
    await _nodes(client, 3)
    await _asks(client, {"app-a": 12})
    allocations = await client.wait_allocations(12)
    assert sorted(Counter(a.nodeID for a in allocations).values()) == [4, 4, 4]


async def test_an_app_for_a_missing_queue_with_no_rule_to_create_it_is_rejected(
    client: RecordingClient,
) -> None:
    await client.register(config=_config())  # no placement rules: provided, without create
    await client.add_application("lost", "root.nowhere")
    await client.wait_apps_answered(1)
    assert client.seen.accepted_apps == []
    reason = client.seen.rejected_apps[0].reason
    assert "root.nowhere does not exist and the rule does not create queues" in reason


async def test_a_tag_rule_creates_a_dynamic_queue_from_the_namespace(client: RecordingClient) -> None:
    await client.register()  # bundled default: provided, then tag namespace with create
    await client.add_application("ns-app", "", tags={"namespace": "team-x"})
    await client.wait_apps_answered(1)
    assert client.seen.accepted_apps == ["ns-app"]
    await _nodes(client, 1)
    await client.ask("ns-app", "k", TASK)
    allocation = (await client.wait_allocations(1))[0]
    assert allocation.applicationID == "ns-app"


async def test_a_removed_queue_drains_and_goes(client: RecordingClient) -> None:
    await _register_with_apps(client, {"app-b": "root.b"})
    await _nodes(client, 1)
    await _asks(client, {"app-b": 2})
    await client.wait_allocations(2)
    without_b = _config().replace(
        "          - name: b\n            resources: {guaranteed: {memory: 50000, vcore: 50000}}\n", ""
    )
    response = await client.update_configuration(without_b)
    assert response.accepted, list(response.errors)
    # Draining: the running app keeps its allocations and may even get more, but no new app comes in.
    await client.add_application("late", "root.b")
    await client.wait_apps_answered(2)
    assert client.seen.rejected_apps[-1].applicationID == "late"
    assert len(client.seen.allocations) == 2
    # Once its last application is gone, the queue goes: naming it now finds nothing.
    await client.remove_application("app-b")
    await client.wait_for(lambda: not client.seen.allocations, what="app-b's allocations released")
    await client.add_application("later", "root.b")
    await client.wait_apps_answered(3)
    assert "root.b does not exist" in client.seen.rejected_apps[-1].reason


async def test_foreign_allocations_shrink_a_nodes_room(client: RecordingClient) -> None:
    await _register_with_apps(client, {"app-a": "root.a"})
    await _nodes(client, 1)
    foreign = si_pb2.Allocation(
        allocationKey="kube-proxy-xyz",
        nodeID="node-1",
        resourcePerAlloc=messages.resource({"memory": 7_000, "vcore": 1_000}),
        allocationTags={"foreign": "default"},
    )
    await client.asks([foreign])
    await _asks(client, {"app-a": 5})
    await client.wait_allocations(3)
    await client.barrier()
    assert len(client.seen.allocations) == 3  # 10000 - 7000 foreign leaves room for three
    # The pod of the other scheduler finishes: the room comes back.
    await client.send_allocation_request(
        si_pb2.AllocationRequest(
            rmID=client.rm_id,
            releases=si_pb2.AllocationReleasesRequest(
                allocationsToRelease=[si_pb2.AllocationRelease(allocationKey="kube-proxy-xyz")]
            ),
        )
    )
    await client.wait_allocations(5)


async def test_a_reserved_node_is_not_used_by_other_asks(client: RecordingClient, rest_url: str) -> None:
    await _register_with_apps(client, {"big": "root.a", "small": "root.b"})
    await _nodes(client, 2)
    # Two big tasks take 6000 on each node; the third fits the cluster (8000 free) but no node (4000 each).
    await _asks(client, {"big": 3}, size={"memory": 6_000, "vcore": 1_000})
    await client.wait_allocations(2)
    # Created long ago, big-002 is past the 2 s reservation delay already: it reserves one node.
    async with aiohttp.ClientSession() as session:
        nodes = await rest_until(
            session,
            f"{partition_url(rest_url, client.rm_id)}/nodes",
            lambda body: any(n.get("reservations", []) == ["big|big-002"] for n in body),
            "big-002 to reserve a node",
        )
    (reserved_node,) = [n["nodeID"] for n in nodes if n["isReserved"]]
    # Five small tasks of 1000: the unreserved node takes four; the fifth stays pending although the
    # reserved node has 4000 free.
    await _asks(client, {"small": 5}, size={"memory": 1_000, "vcore": 100})
    await client.wait_allocations(6)
    await client.barrier()
    small_nodes = {a.nodeID for a in client.seen.allocations.values() if a.applicationID == "small"}
    assert len(small_nodes) == 1 and len(client.seen.new_allocations) == 6
    assert small_nodes == {"node-2" if reserved_node == "node-1" else "node-1"}
    # The big task on the reserved node ends: the reserved ask gets that node, then the last small fits.
    on_reserved = next(k for k, a in client.seen.allocations.items() if a.nodeID == reserved_node)
    await client.release("big", on_reserved)
    await client.wait_allocations(8)
    placed = {a.allocationKey: a.nodeID for a in client.seen.new_allocations[6:]}
    assert placed == {"big-002": reserved_node, "small-004": reserved_node}
