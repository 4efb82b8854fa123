"""End to end over real gRPC on loopback: register, nodes, applications, asks, allocations, releases."""

from __future__ import annotations

from si.v1 import si_pb2
from tests.recording_client import RecordingClient

NODE = {"memory": 10_000, "vcore": 10_000}
TASK = {"memory": 4_000, "vcore": 1_000}


async def _setup(client: RecordingClient, nodes: int = 2, app: str = "app-1") -> None:
    await client.register()
    for i in range(1, nodes + 1):
        await client.add_node(f"node-{i}", NODE)
    await client.wait_nodes_answered(nodes)
    assert client.seen.accepted_nodes == [f"node-{i}" for i in range(1, nodes + 1)]
    await client.add_application(app, "root.default")
    await client.wait_apps_answered(1)
    assert client.seen.accepted_apps == [app]


async def test_asks_are_allocated_where_there_is_room_and_released_room_comes_back(
    client: RecordingClient,
) -> None:
    await _setup(client)
    await client.asks(
        [
            si_pb2.Allocation(allocationKey=f"t{i}", applicationID="app-1", resourcePerAlloc=_res(TASK))
            for i in range(6)
        ]
    )
    allocations = await client.wait_allocations(4)
    placed = {a.allocationKey: a.nodeID for a in allocations}
    assert sorted(placed.values()) == [
        "node-1",
        "node-1",
        "node-2",
        "node-2",
    ]  # two 4000 tasks per 10000 node
    for node in ("node-1", "node-2"):
        assert client.seen.on_node_usage(node)["memory"] <= NODE["memory"]
    assert all(a.partitionName == "default" for a in allocations)

    # Two finish, one on each node: the two pending tasks take exactly that room.
    finished = [min(k for k, n in placed.items() if n == node) for node in ("node-1", "node-2")]
    for key in finished:
        await client.release("app-1", key)
    await client.wait_allocations(6)
    released = await client.wait_released(2)
    assert sorted(r.allocationKey for r in released) == sorted(finished)
    assert all(r.terminationType == si_pb2.STOPPED_BY_RM for r in released)
    late = client.seen.new_allocations[4:]
    assert sorted(a.allocationKey for a in late) == ["t4", "t5"]
    assert sorted(a.nodeID for a in late) == ["node-1", "node-2"]
    for node in ("node-1", "node-2"):
        assert client.seen.on_node_usage(node)["memory"] == 8_000


async def test_decommission_releases_the_nodes_allocations(client: RecordingClient) -> None:
    await _setup(client)
    await client.asks(
        [
            si_pb2.Allocation(allocationKey=f"t{i}", applicationID="app-1", resourcePerAlloc=_res(TASK))
            for i in range(4)
        ]
    )
    await client.wait_allocations(4)
    on_node_2 = sorted(k for k, a in client.seen.allocations.items() if a.nodeID == "node-2")
    assert len(on_node_2) == 2
    await client.node_action("node-2", si_pb2.NodeInfo.DECOMISSION)
    released = await client.wait_released(2)
    assert sorted(r.allocationKey for r in released) == on_node_2
    assert all(r.message == "Node node-2 Removed" for r in released)
    assert all(a.nodeID == "node-1" for a in client.seen.allocations.values())

    # The released tasks come back as new asks and land on the node that is left, if there is room.
    await client.asks(
        [
            si_pb2.Allocation(allocationKey=f"again-{k}", applicationID="app-1", resourcePerAlloc=_res(TASK))
            for k in on_node_2
        ]
    )
    await client.add_node("node-3", NODE)
    await client.wait_allocations(6)
    assert {a.nodeID for a in client.seen.new_allocations[4:]} == {"node-3"}


async def test_application_state_updates_arrive(client: RecordingClient) -> None:
    await _setup(client)
    await client.ask("app-1", "only", TASK)
    await client.wait_allocations(1)
    await client.release("app-1", "only")
    await client.wait_for(
        lambda: client.seen.app_states.get("app-1") == ["Accepted", "Running", "Completing"],
        what="Accepted, Running, Completing",
    )


async def test_pending_asks_wait_for_a_node(client: RecordingClient) -> None:
    await client.register()
    await client.add_application("app-1", "root.default")
    await client.wait_apps_answered(1)
    await client.ask("app-1", "early", TASK)
    await client.add_node("late-node", NODE)
    allocations = await client.wait_allocations(1)
    assert allocations[0].nodeID == "late-node"


def _res(values: dict[str, int]) -> si_pb2.Resource:
    return si_pb2.Resource(resources={k: si_pb2.Quantity(value=v) for k, v in values.items()})


async def test_an_allocation_comes_back_as_the_ask_that_was_sent_plus_its_node(
    client: RecordingClient,
) -> None:
    await _setup(client)
    sent = si_pb2.Allocation(
        allocationKey="rich",
        applicationID="app-1",
        resourcePerAlloc=_res(TASK),
        priority=42,
        allocationTags={"creationTime": "1700000000", "kubernetes.io/meta/podName": "rich-pod"},
        originator=True,
        preemptionPolicy=si_pb2.PreemptionPolicy(allowPreemptSelf=False, allowPreemptOther=True),
    )
    await client.asks([sent])
    [received] = await client.wait_allocations(1)
    assert received.nodeID in ("node-1", "node-2")
    assert received.partitionName == "default"
    expected = si_pb2.Allocation()
    expected.CopyFrom(sent)
    expected.nodeID = received.nodeID
    expected.partitionName = "default"
    assert received == expected


async def test_a_barrier_follows_every_decision_about_what_was_sent_before_it(
    client: RecordingClient,
) -> None:
    """The tests' barrier (RecordingClient.barrier), which they use to check that nothing more
    happened: once it returns, every allocation and release the core made for what was sent before it
    has arrived, with no wait for them; its probes are not counted as rejections."""
    await _setup(client)
    await client.asks(
        si_pb2.Allocation(allocationKey=f"t{i}", applicationID="app-1", resourcePerAlloc=_res(TASK))
        for i in range(6)
    )
    await client.barrier()
    assert len(client.seen.new_allocations) == 4  # two per node, without waiting for them
    await client.release("app-1", client.seen.new_allocations[0].allocationKey)
    await client.barrier()
    assert len(client.seen.released) == 1 and len(client.seen.new_allocations) == 5
    assert client.seen.rejected_allocations == [] and len(client.seen.probe_answers) == 4
