"""The StreamEvents rpc over real gRPC: an RM's events as they happen, replay by number, type filters,
isolation between RMs, and the queue, preemption and reload events the interface enumerates."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable

import grpc
import pytest

from rmclient import messages
from rmclient.core_process import CoreProcess
from si.v1 import si_pb2
from tests.integration.rest_helpers import CONFIG, load_cluster
from tests.integration.test_rest_metrics import _scrape, _value
from tests.recording_client import RecordingClient

Record = si_pb2.EventRecord
Detail = Record.ChangeDetail


def _added(reader: EventReader) -> list[str]:
    """The nodes the reader saw added (NODE, ADD, DETAILS_NONE)."""
    return [
        r.event.objectID for r in reader.seen
        if r.event.eventChangeType == Record.ADD and r.event.eventChangeDetail == Detail.Value("DETAILS_NONE")
    ]  # fmt: skip


class EventReader:
    """Reads a StreamEvents call in the background and keeps what arrived."""

    def __init__(self, call: grpc.aio.UnaryStreamCall) -> None:
        self.call = call
        self.seen: list[si_pb2.EventStreamResponse] = []
        self._changed = asyncio.Event()
        self._task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for item in self.call:
            self.seen.append(item)
            self._changed.set()

    def details(self) -> list[str]:
        return [Detail.Name(r.event.eventChangeDetail) for r in self.seen]

    async def wait_for(self, done: Callable[[], bool], what: str, timeout: float = 20) -> None:
        async def loop() -> None:
            while not done():
                self._changed.clear()
                if self._task.done():
                    self._task.result()
                    raise AssertionError(f"the stream ended before {what}: {self.details()}")
                await self._changed.wait()

        await asyncio.wait_for(loop(), timeout)

    async def close(self) -> None:
        self.call.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


async def test_the_stream_delivers_this_rms_events_as_si_event_records(client: RecordingClient) -> None:
    await client.register(config=CONFIG)
    reader = EventReader(await client.stream_events())
    try:
        await load_cluster(client)
        await client.node_action("node-2", si_pb2.NodeInfo.DECOMISSION)
        await reader.wait_for(lambda: "NODE_DECOMISSION" in reader.details(), "the decommission")
    finally:
        await reader.close()
    by_detail = {Detail.Name(r.event.eventChangeDetail): r.event for r in reader.seen}
    assert by_detail["NODE_DECOMISSION"].objectID == "node-2"
    assert by_detail["NODE_DECOMISSION"].eventChangeType == Record.REMOVE
    allocated = [r.event for r in reader.seen if r.event.eventChangeDetail == Detail.Value("APP_ALLOC")]
    assert sorted(e.referenceID for e in allocated) == ["t0", "t1"]
    assert all(e.type == Record.APP and e.objectID == "app-1" for e in allocated)
    assert allocated[0].resource.resources["memory"].value == 3_000
    assert {"APP_NEW", "APP_ACCEPTED", "APP_RUNNING"} <= set(reader.details())
    ids = [r.id for r in reader.seen]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(r.event.timestampNano > 0 for r in reader.seen)


async def test_replay_from_a_number_then_follow_and_types_filter(
    client: RecordingClient, core_address: str
) -> None:
    await load_cluster(client)
    # Another RM's work is recorded in the same log, but never reaches this RM's stream.
    async with RecordingClient(core_address, client.rm_id + "-other") as other:
        await other.register(config=CONFIG)
        await other.add_node("other-node", {"memory": 1_000})
        await other.wait_nodes_answered(1)

    replay = EventReader(await client.stream_events(from_id=0))
    nodes_only = EventReader(await client.stream_events(from_id=0, types=[Record.NODE]))
    try:
        await replay.wait_for(lambda: replay.details().count("APP_ALLOC") == 2, "the held allocations")
        await nodes_only.wait_for(lambda: len(_added(nodes_only)) == 2, "the held node events")
        await client.add_node("node-3", {"memory": 4_000, "vcore": 4_000})  # t2 fits there
        await replay.wait_for(lambda: replay.details().count("APP_ALLOC") == 3, "the new allocation")
        await nodes_only.wait_for(lambda: len(_added(nodes_only)) == 3, "the new node")
    finally:
        await replay.close()
        await nodes_only.close()
    assert _added(nodes_only) == ["node-1", "node-2", "node-3"]
    assert {r.event.type for r in nodes_only.seen} == {
        Record.NODE
    }  # its schedulable flags and allocations too
    assert all(r.event.type == Record.NODE for r in nodes_only.seen)
    assert not any(r.event.objectID == "other-node" for r in replay.seen)
    assert all(0 <= r.lowestID <= r.id for r in replay.seen)
    ids = [r.id for r in replay.seen]
    assert ids == sorted(set(ids)), "held and followed events overlap or arrive out of order"


async def test_unregistered_or_missing_rm_ids_and_bad_types_are_refused(
    client: RecordingClient, core_address: str
) -> None:
    await client.register(config=CONFIG)
    calls = {
        grpc.StatusCode.FAILED_PRECONDITION: si_pb2.EventStreamRequest(rmID="nobody-registered-this"),
        grpc.StatusCode.INVALID_ARGUMENT: si_pb2.EventStreamRequest(),
    }
    for code, request in calls.items():
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            async for _ in client.stub.StreamEvents(request):
                pass
        assert refused.value.code() == code
        assert refused.value.details()
    with pytest.raises(grpc.aio.AioRpcError) as bad_type:
        await client.stream_events(types=[42])  # type: ignore[list-item]  # deliberately no such type
    assert bad_type.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "42" in (bad_type.value.details() or "")
    # The refusals touched nothing: the RM still works.
    await client.add_node("n", {"memory": 1_000})
    await client.wait_nodes_answered(1)


RELOADED = CONFIG.replace("max: {memory: 12000}", "max: {memory: 8000}").replace(
    "          - name: default\n", "          - name: default\n          - name: batch\n"
)


async def test_a_reload_sends_queue_max_and_config_events(client: RecordingClient) -> None:
    await client.register(config=CONFIG)
    reader = EventReader(await client.stream_events(types=[Record.QUEUE, Record.NODE]))
    try:
        response = await client.update_configuration(RELOADED)
        assert response.accepted, response.errors
        # A node added after the reload is a barrier: events arrive in order, so once its event is in,
        # every event of the reload is too.
        await client.add_node("barrier", {"memory": 1})
        await reader.wait_for(lambda: any(r.event.type == Record.NODE for r in reader.seen), "the barrier")
    finally:
        await reader.close()
    # (root's max follows the nodes: the barrier's QUEUE_MAX on root is not the reload's)
    queue_events = [
        r.event for r in reader.seen if r.event.type == Record.QUEUE and r.event.objectID != "root"
    ]
    events = {(e.objectID, Detail.Name(e.eventChangeDetail)): e for e in queue_events}
    lowered = events[("root.tenants", "QUEUE_MAX")]
    assert lowered.eventChangeType == Record.SET
    assert lowered.resource.resources["memory"].value == 8_000
    assert "12000" in lowered.message and "8000" in lowered.message
    added = events[("root.batch", "DETAILS_NONE")]  # a managed queue, as YuniKorn records it
    assert added.eventChangeType == Record.ADD
    assert len(queue_events) == 2, [(e.objectID, Detail.Name(e.eventChangeDetail)) for e in queue_events]


async def test_a_preemption_sends_alloc_preempt_and_moves_the_victims_metric(
    client: RecordingClient, rest_url: str
) -> None:

    await client.register(config=CONFIG)
    await client.add_node("n1", {"memory": 2_000})
    await client.wait_nodes_answered(1)
    await client.add_application("work", "root.default")
    await client.add_application("ds", "root.default")
    await client.wait_apps_answered(2)
    await client.ask("work", "w0", {"memory": 2_000}, priority=1)
    await client.wait_allocations(1)
    victims = "pykorn_preemption_victims_total"
    before = _value(await _scrape(rest_url), victims, kind="required_node")

    reader = EventReader(await client.stream_events(types=[Record.APP, Record.REQUEST]))
    try:
        await client.ask(
            "ds", "ds-n1", {"memory": 1_000}, priority=5, tags={"yunikorn.apache.org/requiredNode": "n1"}
        )

        # As YuniKorn: the victim's request says who preempted it when it is chosen ...
        def victim_said() -> list[si_pb2.EventRecord]:
            return [
                r.event for r in reader.seen if r.event.type == Record.REQUEST and r.event.objectID == "w0"
            ]

        await reader.wait_for(lambda: bool(victim_said()), "the victim's event")
        said = victim_said()[0]
        assert said.message == "Preempted by ds-n1 from application ds in root.default"
        assert said.referenceID == "work" and said.resource.resources["memory"].value == 2_000
        assert "ALLOC_PREEMPT" not in reader.details()
        # ... and its application records ALLOC_PREEMPT when the RM confirms the release.
        await client.release_many([("work", "w0")], termination=si_pb2.PREEMPTED_BY_SCHEDULER)
        await reader.wait_for(lambda: "ALLOC_PREEMPT" in reader.details(), "the preemption event")
    finally:
        await reader.close()
    preempt = next(r.event for r in reader.seen if r.event.eventChangeDetail == Detail.Value("ALLOC_PREEMPT"))
    assert (preempt.objectID, preempt.referenceID) == ("work", "w0")
    assert preempt.eventChangeType == Record.REMOVE
    after = _value(await _scrape(rest_url), victims, kind="required_node")
    assert after - before >= 1


async def test_a_burst_of_events_in_one_step_reaches_a_reader_whole(client: RecordingClient) -> None:
    await client.register(config=CONFIG)
    reader = EventReader(await client.stream_events(types=[Record.NODE]))
    try:
        await client.add_nodes(*(messages.node(f"burst-{i}", {"memory": 1_000}) for i in range(1_500)))
        await reader.wait_for(lambda: len(_added(reader)) == 1_500, "all 1,500 nodes added")
    finally:
        await reader.close()
    assert _added(reader) == [f"burst-{i}" for i in range(1_500)]


async def test_a_from_id_beyond_the_newest_event_is_refused(client: RecordingClient) -> None:
    """After a core restart the numbers start again: an old id must not silently swallow new events."""
    await client.register(config=CONFIG)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await client.stream_events(from_id=10**15)
    assert refused.value.code() == grpc.StatusCode.OUT_OF_RANGE
    assert "restarted" in (refused.value.details() or "")


@pytest.fixture
async def small_ring_core() -> AsyncIterator[CoreProcess]:
    async with CoreProcess(extra_args=["--event-log-size", "50"]) as core:
        yield core


async def test_a_reader_the_ring_outran_is_cut_off_with_where_to_resume(small_ring_core: CoreProcess) -> None:
    async with RecordingClient(small_ring_core.address, "rm-slow") as client:
        await client.register(config=CONFIG)
        call = await client.stream_events(types=[Record.NODE])
        live_from = int(dict(await call.initial_metadata())["pykorn-live-from-id"])
        # The reader takes nothing while 5,000 events are recorded: more than gRPC's flow-control
        # window holds, so the core's sender waits, and the 50-event ring drops what it has not sent.
        await client.add_nodes(*(messages.node(f"n-{i}", {"memory": 1_000}) for i in range(5_000)))
        await client.wait_nodes_answered(5_000, timeout=30)
        got: list[si_pb2.EventStreamResponse] = []
        with pytest.raises(grpc.aio.AioRpcError) as cut:
            async for item in call:
                got.append(item)
    assert cut.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    told = re.search(r"fromID=(\d+)", cut.value.details() or "")
    assert told is not None, cut.value.details()
    resume = int(told.group(1))
    # What it got (if anything: one step recorded all 5,000) runs on from the first live id with no
    # gap, and it is told to resume exactly at the first event it missed.
    ids = [r.id for r in got]
    assert ids == list(range(live_from, live_from + len(ids))) and len(ids) < 5_000
    assert resume == live_from + len(ids)


async def test_at_shutdown_an_open_event_stream_ends_cleanly() -> None:
    core = CoreProcess()
    await core.start()
    async with RecordingClient(core.address, "rm-shutdown") as client:
        await client.register(config=CONFIG)
        call = await client.stream_events()
        assert await core.stop() == 0
        async for _ in call:
            pass
        assert await call.code() == grpc.StatusCode.OK


LIMITED = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: team
            limits:
              - {limit: per group, groups: [dev], maxresources: {memory: 100000}}
"""


async def test_one_pods_life_reaches_the_stream_as_yunikorn_records_it(client: RecordingClient) -> None:
    """A node, an application of a user whose group a limit names, one ask placed and released, the
    application removed: each event over the wire with YuniKorn's type, objects, reference and resource
    (the fact tables in tests/unit/test_event_facts_*.py hold the whole set, driven in the domain)."""
    await client.register(config=LIMITED)
    reader = EventReader(await client.stream_events())
    try:
        await client.add_node("n1", {"memory": 4_000})
        await client.wait_nodes_answered(1)
        await client.add_application("web", "root.team", user="ann", groups=("dev",))
        await client.wait_apps_answered(1)
        await client.ask("web", "pod-1", {"memory": 1_000})
        await client.wait_allocations(1)
        await client.release("web", "pod-1")
        await client.remove_application("web")
        await reader.wait_for(
            lambda: any(r.event.type == Record.APP and r.event.eventChangeType == Record.REMOVE
                        and r.event.eventChangeDetail == Detail.Value("DETAILS_NONE") for r in reader.seen),
            "the application leaving",
        )  # fmt: skip
    finally:
        await reader.close()

    def seen(kind: int, obj: str, change: int, detail: str, ref: str = "") -> list[si_pb2.EventRecord]:
        return [
            r.event for r in reader.seen
            if (r.event.type, r.event.objectID, r.event.eventChangeType, r.event.referenceID)
            == (kind, obj, change, ref) and r.event.eventChangeDetail == Detail.Value(detail)
        ]  # fmt: skip

    mem = {"memory": 1_000}

    def res(event: si_pb2.EventRecord) -> dict[str, int]:
        return {k: v.value for k, v in event.resource.resources.items()}

    [added] = seen(Record.NODE, "n1", Record.ADD, "DETAILS_NONE")
    assert added.message == "Node added to the scheduler" and res(added) == {"memory": 4_000}
    assert seen(Record.APP, "web", Record.ADD, "APP_NEW")
    assert seen(Record.QUEUE, "root.team", Record.ADD, "QUEUE_APP", "web")
    assert [res(e) for e in seen(Record.APP, "web", Record.ADD, "APP_REQUEST", "pod-1")] == [mem]
    assert [res(e) for e in seen(Record.APP, "web", Record.ADD, "APP_ALLOC", "pod-1")] == [mem]
    assert [res(e) for e in seen(Record.NODE, "n1", Record.ADD, "NODE_ALLOC", "pod-1")] == [mem]
    assert [res(e) for e in seen(Record.USERGROUP, "ann", Record.ADD, "UG_USER_RESOURCE", "root.team")] == [
        mem
    ]
    assert seen(Record.USERGROUP, "dev", Record.SET, "UG_APP_LINK", "web")
    assert [res(e) for e in seen(Record.USERGROUP, "dev", Record.ADD, "UG_GROUP_RESOURCE", "root.team")] == [
        mem
    ]
    assert [res(e) for e in seen(Record.APP, "web", Record.REMOVE, "ALLOC_CANCEL", "pod-1")] == [mem]
    assert seen(Record.NODE, "n1", Record.REMOVE, "NODE_ALLOC", "pod-1")
    assert seen(Record.APP, "web", Record.REMOVE, "REQUEST_CANCEL", "pod-1")
    assert seen(Record.USERGROUP, "ann", Record.REMOVE, "UG_USER_RESOURCE", "root.team")
    assert seen(Record.USERGROUP, "dev", Record.REMOVE, "UG_APP_LINK", "web")
    assert seen(Record.QUEUE, "root.team", Record.REMOVE, "QUEUE_APP", "web")
    assert not [r for r in reader.seen if r.event.eventChangeDetail == Detail.Value("REQUEST_ALLOC")]
