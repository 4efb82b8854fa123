"""The allocation response as its RM reads it: assembled from the kept asks' bytes (core.rm.wire_frames),
it parses as the AllocationResponse a message-built one would be, and a response over a client's
receive limit is split between items with nothing lost or reordered."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from core.config.input_limits import Limits
from core.objects.allocation import Allocation
from core.objects.partition_key import PartitionKey
from core.resources import Resource
from core.rm.ask_cache import AskCache
from core.rm.si_inbound import allocation_from_si
from core.rm.si_outbound import allocation_response
from core.rm.wire_frames import FramedResponse, framed, tag, varint
from core.scheduler.results import RejectedItem, Released, ResultBatch, SchedulingState, Termination, Waiting
from rmclient import messages
from si.v1 import si_pb2

PART = PartitionKey("rm-1", "default")


def _placed(wire: si_pb2.Allocation, node: str) -> Allocation:
    alloc = allocation_from_si("rm-1", wire, Limits())
    alloc.node_id = node
    return alloc


def test_an_allocated_ask_goes_back_as_the_rms_own_message_with_its_node_and_partition() -> None:
    asks = AskCache()
    sent = messages.ask("app-1", "t1", {"memory": 5, "vcore": 2}, tags={"kubernetes.io/meta/namespace": "ns"})
    sent.priority, sent.taskGroupName = 7, "group-a"
    asks.hold(sent, most_per_app=10)
    unkept = Allocation("t2", "app-1", PART, Resource({"memory": 3}), node_id="node-2")
    batch = ResultBatch("rm-1", new_allocations=[_placed(sent, "node-1"), unkept])

    read = si_pb2.AllocationResponse.FromString(allocation_response(batch, asks).SerializeToString())

    expected = si_pb2.Allocation()
    expected.CopyFrom(sent)
    expected.nodeID, expected.partitionName = "node-1", "default"
    assert read.new[0] == expected
    assert (read.new[1].allocationKey, read.new[1].nodeID, read.new[1].partitionName) == (
        "t2",
        "node-2",
        "default",
    )
    assert read.new[1].resourcePerAlloc.resources["memory"].value == 3
    assert asks.take("app-1", "t1") is None  # answered: no longer held


def test_releases_refusals_and_waiting_states_go_in_their_own_fields() -> None:
    asks = AskCache()
    asks.hold(messages.ask("app-1", "gone", {"memory": 1}), most_per_app=10)
    batch = ResultBatch(
        "rm-1",
        released=[Released(PART, "app-1", "a1", Termination.PREEMPTED_BY_SCHEDULER, "preempted")],
        rejected_allocations=[RejectedItem("gone", "app-1", "too large")],
        scheduling_states=[SchedulingState("app-1", "t9", Waiting.NO_NODE, "no node fits")],
    )
    read = si_pb2.AllocationResponse.FromString(allocation_response(batch, asks).SerializeToString())
    assert [(r.allocationKey, r.terminationType, r.message) for r in read.released] == [
        ("a1", si_pb2.TerminationType.PREEMPTED_BY_SCHEDULER, "preempted")
    ]
    assert [(r.allocationKey, r.reason) for r in read.rejectedAllocations] == [("gone", "too large")]
    assert [(s.allocationKey, s.state) for s in read.schedulingStates] == [
        ("t9", si_pb2.UpdateContainerSchedulingStateRequest.FAILED)
    ]
    assert asks.take("app-1", "gone") is None  # a refused ask is no longer held


@given(st.integers(min_value=0, max_value=2**63 - 1))
def test_a_varint_reads_back_as_protobuf_reads_it(value: int) -> None:
    message = si_pb2.Quantity()
    message.MergeFromString(b"\x08" + varint(value))  # Quantity.value: field 1, varint
    assert message.value == value


@given(st.lists(st.text(max_size=300), max_size=40), st.integers(min_value=1, max_value=2_000))
def test_a_split_keeps_every_item_in_order_within_the_limit(keys: list[str], limit: int) -> None:
    response = FramedResponse()
    for key in keys:
        response.add(framed(tag(1), si_pb2.Allocation(allocationKey=key).SerializeToString()))
    assert response.ByteSize() == len(response.SerializeToString())
    parts = response.split(limit)
    read = [si_pb2.AllocationResponse.FromString(part) for part in parts]
    assert [a.allocationKey for r in read for a in r.new] == keys
    for part, message in zip(parts, read, strict=True):
        assert len(part) <= limit or len(message.new) == 1  # only an item larger than the limit alone
