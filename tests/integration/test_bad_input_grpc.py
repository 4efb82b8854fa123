"""Bad input over real gRPC: each bad item is rejected with a readable reason, the stream and the
daemon keep serving, and the next good request works."""

from __future__ import annotations

import grpc
import pytest

from rmclient import messages
from si.v1 import si_pb2
from tests.integration.core_helpers import WORK_CONFIG
from tests.recording_client import RecordingClient

NODE = {"memory": 10_000, "vcore": 10_000}
TASK = {"memory": 1_000, "vcore": 100}


async def _ready(client: RecordingClient) -> None:
    await client.register()
    await client.add_node("node-1", NODE)
    await client.add_application("app-1", "root.default")
    await client.wait_nodes_answered(1)
    await client.wait_apps_answered(1)


async def _rejected_then_good(client: RecordingClient, bad: si_pb2.AllocationRequest, expect: str) -> str:
    before = len(client.seen.rejected_allocations)
    await client.send_allocation_request(bad)
    rejected = await client.wait_rejected_allocations(before + 1)
    reason = rejected[before].reason
    assert expect in reason, reason
    # The same stream keeps working: a good ask right after is allocated.
    good_key = f"good-after-{before}"
    count = len(client.seen.new_allocations)
    await client.ask("app-1", good_key, TASK)
    allocations = await client.wait_allocations(count + 1)
    assert allocations[-1].allocationKey == good_key
    assert client.seen.stream_errors == []
    return reason


async def test_ask_for_unknown_application(client: RecordingClient) -> None:
    await _ready(client)
    bad = si_pb2.AllocationRequest(rmID=client.rm_id, allocations=[messages.ask("no-such-app", "k", TASK)])
    reason = await _rejected_then_good(client, bad, "application no-such-app is not known")
    assert "add it first" in reason


async def test_duplicate_allocation_key(client: RecordingClient) -> None:
    await _ready(client)
    await client.ask("app-1", "dup", TASK)
    await client.wait_allocations(1)
    bad = si_pb2.AllocationRequest(rmID=client.rm_id, allocations=[messages.ask("app-1", "dup", TASK)])
    await _rejected_then_good(client, bad, "allocation key dup already exists")


async def test_negative_resource(client: RecordingClient) -> None:
    await _ready(client)
    bad = si_pb2.AllocationRequest(
        rmID=client.rm_id, allocations=[messages.ask("app-1", "neg", {"memory": -5})]
    )
    await _rejected_then_good(client, bad, "negative amount of memory (-5)")


async def test_missing_resource(client: RecordingClient) -> None:
    await _ready(client)
    bad = si_pb2.AllocationRequest(
        rmID=client.rm_id, allocations=[si_pb2.Allocation(allocationKey="nores", applicationID="app-1")]
    )
    await _rejected_then_good(client, bad, "has no resourcePerAlloc")


async def test_zero_resource(client: RecordingClient) -> None:
    await _ready(client)
    bad = si_pb2.AllocationRequest(
        rmID=client.rm_id, allocations=[messages.ask("app-1", "zero", {"memory": 0})]
    )
    await _rejected_then_good(client, bad, "asks for zero resources")


async def test_ask_for_unknown_partition(client: RecordingClient) -> None:
    await _ready(client)
    bad = si_pb2.AllocationRequest(
        rmID=client.rm_id, allocations=[messages.ask("app-1", "k", TASK, partition="gpu")]
    )
    await _rejected_then_good(client, bad, "partition gpu does not exist")


async def test_existing_allocation_on_unknown_node(client: RecordingClient) -> None:
    await _ready(client)
    bad = si_pb2.AllocationRequest(
        rmID=client.rm_id, allocations=[messages.ask("app-1", "k", TASK, node_id="ghost")]
    )
    await _rejected_then_good(client, bad, "node ghost is not registered")


async def test_missing_rmid_on_allocation_stream(client: RecordingClient) -> None:
    await _ready(client)
    bad = si_pb2.AllocationRequest(allocations=[messages.ask("app-1", "k", TASK)])
    await _rejected_then_good(client, bad, "rmID is missing")


async def test_empty_allocation_request(client: RecordingClient) -> None:
    await _ready(client)
    await _rejected_then_good(client, si_pb2.AllocationRequest(rmID=client.rm_id), "empty AllocationRequest")


async def test_release_of_unknown_key(client: RecordingClient) -> None:
    await _ready(client)
    bad = si_pb2.AllocationRequest(
        rmID=client.rm_id,
        releases=si_pb2.AllocationReleasesRequest(allocationsToRelease=[messages.release("app-1", "nope")]),
    )
    await _rejected_then_good(client, bad, "has no ask or allocation with key nope")


async def test_one_bad_item_does_not_spoil_its_message(client: RecordingClient) -> None:
    await _ready(client)
    mixed = si_pb2.AllocationRequest(
        rmID=client.rm_id,
        allocations=[messages.ask("app-1", "bad", {"memory": -1}), messages.ask("app-1", "fine", TASK)],
    )
    await client.send_allocation_request(mixed)
    await client.wait_rejected_allocations(1)
    allocations = await client.wait_allocations(1)
    assert [a.allocationKey for a in allocations] == ["fine"]
    assert client.seen.rejected_allocations[0].allocationKey == "bad"


async def test_unknown_node_and_bad_node_requests(client: RecordingClient) -> None:
    await _ready(client)
    cases = [
        (
            si_pb2.NodeRequest(
                rmID=client.rm_id, nodes=[messages.node("ghost", NODE, action=si_pb2.NodeInfo.UPDATE)]
            ),
            "node ghost is not registered",
        ),
        (
            si_pb2.NodeRequest(
                rmID=client.rm_id, nodes=[messages.node("ghost", None, action=si_pb2.NodeInfo.DECOMISSION)]
            ),
            "node ghost is not registered",
        ),
        (si_pb2.NodeRequest(rmID=client.rm_id, nodes=[messages.node("node-1", NODE)]), "already registered"),
        (si_pb2.NodeRequest(rmID=client.rm_id, nodes=[messages.node("", NODE)]), "nodeID is empty"),
        (
            si_pb2.NodeRequest(
                rmID=client.rm_id,
                nodes=[messages.node("x", NODE, action=si_pb2.NodeInfo.UNKNOWN_ACTION_FROM_RM)],
            ),
            "has no action",
        ),
        (si_pb2.NodeRequest(rmID=client.rm_id, nodes=[messages.node("neg", {"memory": -1})]), "negative"),
        (si_pb2.NodeRequest(nodes=[messages.node("n", NODE)]), "rmID is missing"),
        (si_pb2.NodeRequest(rmID=client.rm_id), "empty NodeRequest"),
    ]
    for i, (request, expect) in enumerate(cases):
        await client.send_node_request(request)
        await client.wait_more(client.seen.rejected_nodes, i, what=f"rejection {i}")
        assert expect in client.seen.rejected_nodes[i].reason, (expect, client.seen.rejected_nodes[i].reason)
    # Still serving: a new good node is accepted and used.
    await client.add_node("node-2", NODE)
    await client.wait_for(lambda: "node-2" in client.seen.accepted_nodes, what="node-2 accepted")
    assert client.seen.stream_errors == []


NO_DEFAULT_QUEUE = WORK_CONFIG  # one leaf, root.work: there is no root.default to fall back to


async def test_bad_application_requests(client: RecordingClient) -> None:
    # Without a root.default queue, an application no rule places is rejected (YuniKorn falls back
    # to root.default when it exists).
    await client.register(config=NO_DEFAULT_QUEUE)
    await client.add_application("app-1", "root.work")
    await client.wait_apps_answered(1)
    cases = [
        (
            si_pb2.ApplicationRequest(rmID=client.rm_id, new=[messages.application("app-1", "root.work")]),
            "already exists",
        ),
        (
            si_pb2.ApplicationRequest(rmID=client.rm_id, new=[messages.application("app-x", "root.missing")]),
            "queue root.missing does not exist",
        ),
        (
            si_pb2.ApplicationRequest(rmID=client.rm_id, new=[messages.application("app-y", "")]),
            "names no queue",
        ),
        (
            si_pb2.ApplicationRequest(rmID=client.rm_id, new=[messages.application("", "root.default")]),
            "applicationID is empty",
        ),
        (si_pb2.ApplicationRequest(new=[messages.application("app-z", "root.work")]), "rmID is missing"),
        (si_pb2.ApplicationRequest(rmID=client.rm_id), "empty ApplicationRequest"),
    ]
    for i, (request, expect) in enumerate(cases):
        await client.send_application_request(request)
        await client.wait_more(client.seen.rejected_apps, i, what=f"rejection {i}")
        assert expect in client.seen.rejected_apps[i].reason, (expect, client.seen.rejected_apps[i].reason)
    # Removing an application the core does not know is ignored, as YuniKorn does: RMs remove
    # applications that already completed, and a rejection would make a Kubernetes shim fail it.
    rejected = len(client.seen.rejected_apps)
    await client.send_application_request(
        si_pb2.ApplicationRequest(
            rmID=client.rm_id, remove=[si_pb2.RemoveApplicationRequest(applicationID="never-added")]
        )
    )
    await client.add_application("app-2", "root.work")
    await client.wait_for(lambda: "app-2" in client.seen.accepted_apps, what="app-2 accepted")
    assert len(client.seen.rejected_apps) == rejected


async def test_requests_from_an_unregistered_rm_are_refused(core_address: str) -> None:
    async with RecordingClient(core_address, "never-registered") as stranger:
        stranger.open_streams()
        await stranger.add_node("n", NODE)
        await stranger.add_application("a", "root.default")
        await stranger.ask("a", "k", TASK)
        await stranger.wait_for(
            lambda: bool(
                stranger.seen.rejected_nodes
                and stranger.seen.rejected_apps
                and stranger.seen.rejected_allocations
            ),
            what="three refusals",
        )
        for reason in (
            stranger.seen.rejected_nodes[0].reason,
            stranger.seen.rejected_apps[0].reason,
            stranger.seen.rejected_allocations[0].reason,
        ):
            assert "never-registered is not registered" in reason
        # Registering now makes the very same streams work.
        await stranger.register()
        await stranger.add_node("n", NODE)
        await stranger.wait_for(lambda: "n" in stranger.seen.accepted_nodes, what="node accepted")


async def test_registration_without_rmid_is_invalid_argument(core_address: str) -> None:
    async with RecordingClient(core_address, "") as nameless:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await nameless.register()
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "rmID is missing" in (err.value.details() or "")


async def test_invalid_config_is_invalid_argument_with_path_and_line(client: RecordingClient) -> None:
    config = "partitions:\n  - name: default\n    queues:\n      - name: root\n        bogus: 1\n"
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await client.register(config=config)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = err.value.details() or ""
    assert "partitions[0].queues[0].bogus (line 5)" in details, details
    # A good registration right after works.
    await client.register()
    await client.add_node("n", NODE)
    await client.wait_nodes_answered(1)
    assert client.seen.accepted_nodes == ["n"]
