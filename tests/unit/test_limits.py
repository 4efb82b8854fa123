"""The limits on what an RM may send (core/config/input_limits.py), enforced by rmproxy: each item over a
limit is rejected with a reason naming the limit, the rest of its message is used, and the counts stay
right as asks are allocated, released and withdrawn. Driven in-process with a ClusterContext behind
rmproxy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from core.config.input_limits import Limits
from core.rm.proxy import InvalidRequest, RMProxy
from core.rm.response_stream import ResponseStream, StreamKind
from core.rm.token_bucket import TokenBucket
from core.scheduler.cluster import ClusterContext
from core.scheduler.commands import Command
from rmclient import messages
from si.v1 import si_pb2
from tests.unit.domain_helpers import ONE_LEAF, FakeClock

RM = "rm-1"
SMALL = {"memory": 10, "vcore": 10}


class Harness:
    """rmproxy in front of a ClusterContext that applies each command at once and schedules."""

    def __init__(self, limits: Limits) -> None:
        self.clock = FakeClock()
        self.ctx = ClusterContext(self.clock, max_pending_asks=limits.max_pending_asks_per_application)
        self.proxy = RMProxy(ONE_LEAF, self._apply, limits=limits, clock=self.clock)
        self.alloc = self.proxy.open_stream(StreamKind.ALLOCATION)
        self.apps = self.proxy.open_stream(StreamKind.APPLICATION)
        self.nodes = self.proxy.open_stream(StreamKind.NODE)

    def _apply(self, command: Command) -> None:
        self.ctx.apply(command)
        self.ctx.schedule(10_000)
        self.proxy.deliver(self.ctx.drain_results())

    async def register(self) -> None:
        await self.proxy.register(si_pb2.RegisterResourceManagerRequest(rmID=RM, config=ONE_LEAF))

    def asks(self, *items: si_pb2.Allocation) -> None:
        self.proxy.on_allocation_request(
            si_pb2.AllocationRequest(rmID=RM, allocations=list(items)), self.alloc
        )

    def release(self, app_id: str, key: str) -> None:
        releases = si_pb2.AllocationReleasesRequest(allocationsToRelease=[messages.release(app_id, key)])
        self.proxy.on_allocation_request(si_pb2.AllocationRequest(rmID=RM, releases=releases), self.alloc)

    def node(self, node_id: str, capacity: Mapping[str, int], **kwargs: Any) -> None:
        info = messages.node(node_id, capacity, **kwargs)
        self.proxy.on_node_request(si_pb2.NodeRequest(rmID=RM, nodes=[info]), self.nodes)

    def app(self, app_id: str, **kwargs: Any) -> None:
        add = messages.application(app_id, "root.default", **kwargs)
        self.proxy.on_application_request(si_pb2.ApplicationRequest(rmID=RM, new=[add]), self.apps)


_RESPONSES: dict[StreamKind, Any] = {
    StreamKind.ALLOCATION: si_pb2.AllocationResponse,
    StreamKind.APPLICATION: si_pb2.ApplicationResponse,
    StreamKind.NODE: si_pb2.NodeResponse,
}


def drain(stream: ResponseStream) -> list[Any]:
    """The responses queued on the stream now, read back (they are queued serialized, with sizes)."""
    out = []
    while not stream.queue.empty():
        data, _size, _queued = stream.queue.get_nowait()
        if data is not None:
            out.append(_RESPONSES[stream.kind].FromString(data))
    return out


def rejected_allocations(h: Harness) -> list[si_pb2.RejectedAllocation]:
    return [r for m in drain(h.alloc) for r in m.rejectedAllocations]


def allocated(h: Harness) -> list[str]:
    return [a.allocationKey for m in drain(h.alloc) for a in m.new]


async def ready(limits: Limits, node: Mapping[str, int] = SMALL) -> Harness:
    h = Harness(limits)
    await h.register()
    h.node("node-1", node)
    h.app("app-1")
    assert [n.nodeID for m in drain(h.nodes) for n in m.accepted] == ["node-1"]
    assert "app-1" in [a.applicationID for m in drain(h.apps) for a in m.accepted]
    return h


def test_overrides_parse_and_refuse_nonsense() -> None:
    limits = Limits.from_overrides(["max_tags=10", "rate-items-per-second=2.5", "max_id_length=1_000"])
    assert (limits.max_tags, limits.rate_items_per_second, limits.max_id_length) == (10, 2.5, 1000)
    assert limits.max_pending_asks_per_application == Limits().max_pending_asks_per_application
    for bad, expect in [
        (["max_tagz=1"], "unknown limit"),
        (["max_tags"], "unknown limit"),
        (["max_tags=ten"], "not a number"),
        (["max_tags=-1"], "at least 0"),
        (["rate_items_per_second=nan"], "at least 0"),
        (["rate_items_per_second=inf"], "finite"),
        (["rate_burst=0"], "rate_burst must be at least 1"),
    ]:
        with pytest.raises(ValueError, match=expect):
            Limits.from_overrides(bad)


def test_clip_cuts_only_overlong_ids() -> None:
    limits = Limits(max_id_length=5)
    assert limits.clip("abcde") == "abcde"
    assert limits.clip("abcdefgh") == "abcde…"


def test_token_bucket_bursts_then_refills() -> None:
    bucket = TokenBucket(rate=10.0, burst=20, now=0.0)
    assert bucket.take(15, 0.0) == 15
    assert bucket.take(15, 0.0) == 5  # the burst is spent
    assert bucket.take(1, 0.05) == 0  # half a token accrued
    assert bucket.wait_for(3) == pytest.approx(0.25)
    assert bucket.take(3, 0.3) == 3
    assert bucket.take(100, 100.0) == 20  # refills up to the burst, not beyond
    assert TokenBucket(rate=0, burst=0, now=0).take(10**9, 0.0) == 10**9  # 0 turns it off


async def test_overlong_rmid_cannot_register() -> None:
    h = Harness(Limits(max_id_length=8))
    with pytest.raises(
        InvalidRequest, match=r"rmID is 9 characters long, over the limit of 8 \(max_id_length\)"
    ):
        await h.proxy.register(si_pb2.RegisterResourceManagerRequest(rmID="x" * 9))


@pytest.mark.parametrize(
    "field", ["allocationKey", "applicationID", "nodeID", "partitionName", "taskGroupName"]
)
async def test_overlong_ids_of_an_ask_are_rejected_and_echoed_clipped(field: str) -> None:
    h = await ready(Limits(max_id_length=20))
    ask = messages.ask("app-1", "k", {"memory": 1})
    setattr(ask, field, "z" * 5000)
    h.asks(ask, messages.ask("app-1", "fine", {"memory": 1}))
    answers = drain(h.alloc)
    rejected = [r for m in answers for r in m.rejectedAllocations]
    assert len(rejected) == 1
    assert f"{field} is 5,000 characters long, over the limit of 20 (max_id_length)" in rejected[0].reason
    assert len(rejected[0].allocationKey) <= 21 and len(rejected[0].applicationID) <= 21
    assert len(rejected[0].reason) < 200
    assert [a.allocationKey for m in answers for a in m.new] == ["fine"]


async def test_tags_over_the_limits_are_rejected() -> None:
    h = await ready(Limits(max_tags=3, max_key_length=10, max_value_length=20))
    many = messages.ask("app-1", "many", {"memory": 1})
    many.allocationTags.update({f"t{i}": "v" for i in range(4)})
    long_key = messages.ask("app-1", "long-key", {"memory": 1})
    long_key.allocationTags["k" * 11] = "v"
    long_value = messages.ask("app-1", "long-value", {"memory": 1})
    long_value.allocationTags["k"] = "v" * 21
    at_limit = messages.ask("app-1", "at-limit", {"memory": 1})
    at_limit.allocationTags.update({"k" * 10: "v" * 20, "a": "", "b": ""})
    h.asks(many, long_key, long_value, at_limit)
    reasons = {r.allocationKey: r.reason for r in rejected_allocations(h)}
    assert reasons.keys() == {"many", "long-key", "long-value"}
    assert "has 4 tags, over the limit of 3 (max_tags)" in reasons["many"]
    assert "tag key of 11 characters, over the limit of 10 (max_key_length)" in reasons["long-key"]
    assert "value is 21 characters, over the limit of 20 (max_value_length)" in reasons["long-value"]


async def test_resource_types_over_the_limit_are_rejected() -> None:
    h = await ready(Limits(max_resource_types=2, max_key_length=8))
    h.asks(
        messages.ask("app-1", "three", {"memory": 1, "vcore": 1, "gpu": 1}),
        messages.ask("app-1", "long-name", {"m" * 9: 1}),
    )
    reasons = {r.allocationKey: r.reason for r in rejected_allocations(h)}
    assert "names 3 resource types, over the limit of 2 (max_resource_types)" in reasons["three"]
    assert "resource name of 9 characters, over the limit of 8 (max_key_length)" in reasons["long-name"]
    h.node("big", {f"r{i}": 1 for i in range(3)})
    rejected = [r for m in drain(h.nodes) for r in m.rejected]
    assert "max_resource_types" in rejected[0].reason


async def test_node_attributes_and_application_fields_over_the_limits() -> None:
    h = await ready(Limits(max_node_attributes=2, max_tags=1, max_name_length=12, max_id_length=12))
    h.node("n2", SMALL, attributes={"a": "1", "b": "2", "c": "3"})
    h.node("n3", SMALL, attributes={"si/node-partition": "p" * 13})
    node_reasons = {r.nodeID: r.reason for m in drain(h.nodes) for r in m.rejected}
    assert "has 3 attributes, over the limit of 2 (max_node_attributes)" in node_reasons["n2"]
    assert "partitionName is 13 characters long" in node_reasons["n3"]
    h.proxy.on_application_request(
        si_pb2.ApplicationRequest(
            rmID=RM,
            new=[
                messages.application("q", "root." + "x" * 10),
                messages.application("u", "root.default", user="u" * 13),
                messages.application("g", "root.default", groups=("ok", "g" * 13)),
                messages.application("t", "root.default", tags={"a": "1", "b": "2"}),
                messages.application("i" * 13, "root.default"),
            ],
            remove=[si_pb2.RemoveApplicationRequest(applicationID="r" * 13)],
        ),
        h.apps,
    )
    rejected = [r for m in drain(h.apps) for r in m.rejected]
    assert len(rejected) == 6
    text = [r.reason for r in rejected]
    assert "queueName is 15 characters long, over the limit of 12 (max_name_length)" in text[0]
    assert "user is 13 characters long" in text[1]
    assert "group is 13 characters long" in text[2]
    assert "has 2 tags, over the limit of 1 (max_tags)" in text[3]
    assert "applicationID is 13 characters long, over the limit of 12 (max_id_length)" in text[4]
    assert rejected[4].applicationID == "i" * 12 + "…"
    assert text[5].startswith("removal of ")


async def test_pending_asks_per_application_are_bounded_and_counted_back_down() -> None:
    h = await ready(Limits(max_pending_asks_per_application=3))
    big = {"vcore": 20}  # never fits node-1 (vcore 10); three fit the queue (max vcore 100)
    h.asks(*(messages.ask("app-1", f"p{i}", big) for i in range(4)))
    rejected = rejected_allocations(h)
    assert [r.allocationKey for r in rejected] == ["p3"]
    assert "already has 3 pending asks, the limit (max_pending_asks_per_application)" in rejected[0].reason
    h.release("app-1", "p0")  # a withdrawn ask frees its place
    h.asks(messages.ask("app-1", "p4", big), messages.ask("app-1", "p5", big))
    assert [r.allocationKey for r in rejected_allocations(h)] == ["p5"]
    # Allocated asks free theirs too.
    h.node("node-2", {"memory": 10, "vcore": 1_000})
    assert sorted(allocated(h)) == ["p1", "p2", "p4"]
    h.asks(*(messages.ask("app-1", f"q{i}", big) for i in range(3)))
    assert rejected_allocations(h) == []
    # An existing allocation (with a nodeID) is not pending and does not count.
    h.asks(messages.ask("app-1", "running", {"memory": 1}, node_id="node-2"))
    assert rejected_allocations(h) == []
    # Other applications have their own count; removing an application clears its count.
    h.app("app-2")
    h.asks(messages.ask("app-2", "other", big))
    assert rejected_allocations(h) == []
    h.proxy.on_application_request(
        si_pb2.ApplicationRequest(rmID=RM, remove=[si_pb2.RemoveApplicationRequest(applicationID="app-1")]),
        h.apps,
    )
    h.app("app-1")
    h.asks(*(messages.ask("app-1", f"r{i}", big) for i in range(3)))
    assert rejected_allocations(h) == []


async def test_a_key_already_pending_is_refused_without_losing_the_pending_ask() -> None:
    h = await ready(Limits(max_pending_asks_per_application=2))
    big = {"vcore": 20}
    h.asks(messages.ask("app-1", "dup", big))
    for _ in range(3):  # before, each duplicate's rejection dropped the first ask from the count
        h.asks(messages.ask("app-1", "dup", big))
        h.asks(messages.ask("app-1", "dup", {"memory": 1}, node_id="node-1"))
    reasons = [r.reason for r in rejected_allocations(h)]
    assert len(reasons) == 6 and all("already exists in application app-1" in r for r in reasons)
    h.asks(messages.ask("app-1", "second", big), messages.ask("app-1", "third", big))
    assert [r.allocationKey for r in rejected_allocations(h)] == ["third"]
    # The pending ask is still answered with its own message when it is allocated.
    h.node("node-2", {"memory": 10, "vcore": 1_000})
    assert sorted(allocated(h)) == ["dup", "second"]


async def test_rate_limit_admits_the_burst_then_rejects_with_retry_until_refilled() -> None:
    h = await ready(Limits(rate_items_per_second=100, rate_burst=10))  # ready() used 1 node, 1 app
    h.asks(*(messages.ask("app-1", f"k{i}", {"memory": 1}) for i in range(12)))
    rejected = rejected_allocations(h)
    assert [r.allocationKey for r in rejected] == ["k10", "k11"]
    assert "rate limit exceeded" in rejected[0].reason and "retry it in" in rejected[0].reason
    assert "rate_items_per_second" in rejected[0].reason
    h.asks(messages.ask("app-1", "late", {"memory": 1}))
    assert [r.allocationKey for r in rejected_allocations(h)] == ["late"]
    h.clock.advance(0.0501)  # five items' worth (and a little: floats)
    h.asks(*(messages.ask("app-1", f"m{i}", {"memory": 1}) for i in range(6)))
    assert [r.allocationKey for r in rejected_allocations(h)] == ["m5"]
    # Each kind of stream has its own budget: nodes still go in.
    h.node("node-2", SMALL)
    assert [n.nodeID for m in drain(h.nodes) for n in m.accepted] == ["node-2"]


async def test_a_pending_ask_limit_of_zero_refuses_even_the_first_ask() -> None:
    h = await ready(Limits(max_pending_asks_per_application=0))
    h.asks(messages.ask("app-1", "first", {"vcore": 1}))
    rejected = rejected_allocations(h)
    assert [r.allocationKey for r in rejected] == ["first"]
    assert "already has 0 pending asks" in rejected[0].reason
    h.asks(messages.ask("app-1", "running", {"memory": 1}, node_id="node-1"))  # not pending: allowed
    assert rejected_allocations(h) == []
