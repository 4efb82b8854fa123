"""Several RMs on one core, re-registration, configuration updates, health, reflection, shutdown."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection_pb2

from rmclient import messages
from rmclient.core_process import CoreProcess
from si.v1 import si_pb2
from tests.recording_client import RecordingClient

NODE = {"memory": 10_000, "vcore": 10_000}
TASK = {"memory": 5_000, "vcore": 100}

CAPPED = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: capped
            resources:
              max: {memory: 5000}
"""
RAISED = CAPPED.replace("memory: 5000", "memory: 20000")


async def _node_and_app(client: RecordingClient, config: str = "") -> None:
    await client.register(config=config)
    await client.add_node("node-1", NODE)
    queue = "root.capped" if config else "root.default"
    await client.add_application("app", queue)
    await client.wait_nodes_answered(1)
    await client.wait_apps_answered(1)


async def test_two_rms_on_one_core_stay_apart(core_address: str) -> None:
    async with RecordingClient(core_address, "tenant-a") as a, RecordingClient(core_address, "tenant-b") as b:
        await _node_and_app(a)
        await _node_and_app(b)  # same node ID, same application ID: different objects
        for c in (a, b):
            await c.ask("app", "k1", TASK)
            await c.ask("app", "k2", TASK)
        await a.wait_allocations(2)
        await b.wait_allocations(2)
        assert {x.nodeID for x in a.seen.new_allocations} == {"node-1"}
        # b's third task cannot fit on b's node, whatever a does.
        await b.ask("app", "k3", TASK)
        await a.release("app", "k1")
        await a.wait_released(1)
        await b.barrier()  # k3 and a's release are processed and scheduled after: k3 got nothing
        assert len(b.seen.new_allocations) == 2
        assert [r.allocationKey for r in b.seen.released] == []
        # b cannot reach a's partition by naming it: the name is always qualified with b's own rmID.
        await b.send_allocation_request(
            si_pb2.AllocationRequest(
                rmID="tenant-b",
                allocations=[messages.ask("app", "sneak", TASK, partition="[tenant-a]default")],
            )
        )
        rejected = await b.wait_rejected_allocations(1)
        assert "does not exist for resource manager tenant-b" in rejected[0].reason
        # A stream bound to one RM refuses another RM's messages.
        await b.send_allocation_request(
            si_pb2.AllocationRequest(rmID="tenant-a", allocations=[messages.ask("app", "hijack", TASK)])
        )
        rejected = await b.wait_rejected_allocations(2)
        assert "belongs to resource manager tenant-b" in rejected[1].reason
        assert "hijack" not in a.seen.allocations


async def test_asks_sent_before_their_application_run_once_it_comes(client: RecordingClient) -> None:
    # The application and allocation streams are apart: an RM that sends an application and its asks
    # without waiting may have the asks read first. Here they are sent first on purpose.
    await client.register(config=CAPPED.replace("capped", "work").replace("memory: 5000", "memory: 20000"))
    await client.add_node("node-1", NODE)
    await client.wait_nodes_answered(1)
    await client.ask("early", "k1", TASK)
    await client.ask("early", "k2", TASK)
    await client.barrier()  # read and held by the engine: nothing refused, nothing placed yet
    assert client.seen.rejected_allocations == [] and client.seen.new_allocations == []
    await client.add_application("early", "root.work")
    allocations = await client.wait_allocations(2)
    assert sorted(a.allocationKey for a in allocations) == ["k1", "k2"]
    await client.wait_apps_answered(1)  # on its own stream: it may come after the allocations
    assert client.seen.accepted_apps == ["early"]
    # One whose application is rejected: its asks are refused with the application's reason.
    await client.ask("refused", "k3", TASK)
    await client.barrier()
    await client.add_application("refused", "root.nope")
    [rejected] = await client.wait_rejected_allocations(1)
    await client.wait_apps_answered(2)
    assert rejected.allocationKey == "k3"
    assert rejected.reason.startswith("application refused was rejected: ")
    assert client.seen.rejected_apps[0].reason in rejected.reason


async def test_reregistration_replaces_everything(client: RecordingClient) -> None:
    await _node_and_app(client)
    await client.ask("app", "k1", TASK)
    await client.wait_allocations(1)
    await client.register()  # same rmID again: a fresh start
    await client.ask("app", "k2", TASK)
    rejected = await client.wait_rejected_allocations(1)
    assert "application app is not known" in rejected[0].reason
    await client.add_node("node-1", NODE)  # the node is new again, not a duplicate
    await client.wait_for(
        lambda: client.seen.accepted_nodes.count("node-1") == 2, what="node-1 accepted again"
    )


async def test_update_configuration_raises_a_max_and_rejects_bad_configs(client: RecordingClient) -> None:
    await _node_and_app(client, CAPPED)
    await client.ask("app", "k1", TASK)
    await client.ask("app", "k2", TASK)
    await client.wait_allocations(1)
    await client.barrier()
    assert len(client.seen.new_allocations) == 1  # the max holds k2 back

    bad = await client.update_configuration("partitions:\n  - name: default\n    queues: 7\n")
    assert not bad.accepted
    assert any("partitions[0].queues (line 3)" in e for e in bad.errors), list(bad.errors)
    await client.barrier()
    assert len(client.seen.new_allocations) == 1  # the old config still holds

    good = await client.update_configuration(RAISED)
    assert good.accepted, list(good.errors)
    allocations = await client.wait_allocations(2)
    assert allocations[1].allocationKey == "k2"


async def test_update_configuration_from_an_unregistered_rm(core_address: str) -> None:
    async with RecordingClient(core_address, "nobody-here") as c:
        response = await c.update_configuration(RAISED)
        assert not response.accepted
        assert "not registered" in response.errors[0]


async def test_health_and_reflection(core_address: str) -> None:
    async with grpc.aio.insecure_channel(core_address) as channel:
        # Called by method name, as any gRPC client may (typeshed's stubs of these two are sync-only).
        check = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )
        for service in ("", "si.v1.Scheduler"):
            reply = await check(health_pb2.HealthCheckRequest(service=service))
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        reflect = channel.stream_stream(
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )

        async def one() -> AsyncIterator[reflection_pb2.ServerReflectionRequest]:
            yield reflection_pb2.ServerReflectionRequest(list_services="")

        names: list[str] = []
        async for response in reflect(one()):
            names = [s.name for s in response.list_services_response.service]
        assert "si.v1.Scheduler" in names
        assert "grpc.health.v1.Health" in names


async def test_sigterm_ends_open_streams_cleanly_and_exits_zero() -> None:
    core = CoreProcess()
    await core.start()
    try:
        client = RecordingClient(core.address, "shutdown-rm")
        await client.connect()
        await _node_and_app(client)
        await client.ask("app", "k1", TASK)
        await client.wait_allocations(1)
        code = await core.stop()
        assert code == 0, core.log_text()[-3000:]
        # Each of the three streams ends, one way or the other: with status OK, not an error.
        seen = client.seen
        await client.wait_for(lambda: len(seen.stream_ends) + len(seen.stream_errors) == 3, what="3 ends")
        assert client.seen.stream_errors == []
        assert client.seen.stream_ends == ["ended by the core"] * 3
        await client.close()
        log = core.log_text()
        assert '"event": "core stopped"' in log
        assert "Traceback" not in log
    finally:
        await core.stop()


async def test_sigint_also_stops_cleanly() -> None:
    core = CoreProcess()
    await core.start()
    assert core.process is not None
    core.process.send_signal(signal.SIGINT)
    assert await asyncio.to_thread(core.process.wait, 15) == 0


def test_core_refuses_an_invalid_default_config(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("partitions:\n  - name: default\n    oops: true\n")
    result = subprocess.run(
        [sys.executable, "-m", "pykorn_cli", "core", "--listen", "127.0.0.1:0", "--config", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "partitions[0].oops (line 3)" in result.stderr
