"""Hypothesis-generated requests against a running `pykorn core`, over real gRPC on loopback.

Every example is checked the same way: the daemon is alive, every item of the message was answered
(rejected with a non-empty reason, accepted, allocated, or pending in the core, counted against the
items sent, so nothing is dropped silently), and a well-behaved RM registered beside the fuzzer still
gets its ask allocated. A barrier on the fuzzed stream (an ask, application or node update the core
always accepts) marks the moment all answers to the example are in.

The core is this module's own, started with a few limits lowered (a 4 MiB message, 200 pending asks
per application, 5,000 items a second) so that the limits are cheap to reach; at the end its log must
hold no Python traceback. Examples are derandomized: the same inputs every run.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote

import aiohttp
import grpc
import pytest
from google.protobuf.message import DecodeError, Message
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.config.input_limits import Limits
from rmclient import messages
from rmclient.core_process import CoreProcess
from si.v1 import si_pb2
from tests.integration.fuzz_strategies import (
    INT32_MIN,
    INT64_MAX,
    KNOWN_APP,
    SENTINEL_APP,
    SENTINEL_NODE,
    allocation_requests,
    application_requests,
    node_requests,
)
from tests.recording_client import RecordingClient

T = TypeVar("T")
M = TypeVar("M", bound=Message)

LIMITS = Limits(
    max_message_bytes=4 * 1024 * 1024,
    max_pending_asks_per_application=200,
    rate_items_per_second=5_000,
    rate_burst=5_000,
    # Every item is answered by the barrier that follows it: an ask of an unknown application refused
    # at once, not held for it (held asks have their own tests: test_early_asks*, test_rms_and_lifecycle).
    max_early_asks=0,
)
FUZZ = settings(
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
          - name: capped
            resources: {max: {memory: 100}}
"""
NODE = {"memory": 1_000, "vcore": 1_000}
SENTINEL = {"sentinel": 1}  # a resource only the sentinel node has: the barrier ask always fits there


# The rig: one core, one well-behaved RM, one event loop for all examples ------------------------------


@dataclass
class Rig:
    runner: asyncio.Runner
    core: CoreProcess
    good: RecordingClient | None = None
    http: aiohttp.ClientSession | None = None
    examples: int = 0
    clients: list[RecordingClient] = field(default_factory=list)

    def run(self, coro: Awaitable[T]) -> T:
        return self.runner.run(asyncio.wait_for(coro, 30))

    async def client(self, rm_id: str, config: str = CONFIG) -> RecordingClient:
        client = RecordingClient(self.core.address, rm_id)
        await client.connect()
        await client.register(config=config)
        self.clients.append(client)
        return client

    async def start(self) -> None:
        self.http = aiohttp.ClientSession()
        self.good = await self.client("good-rm")
        await self.good.add_node("good-node", {"memory": 10**9, "vcore": 10**9})
        await self.good.add_application("good-app", "root.default")
        await self.good.wait_nodes_answered(1)
        await self.good.wait_apps_answered(1)

    async def good_traffic_works(self) -> None:
        """The well-behaved RM: an ask is allocated on its node, and released again."""
        good = self.good
        assert good is not None
        self.examples += 1
        key = f"good-{self.examples}"
        count = len(good.seen.new_allocations)
        await good.ask("good-app", key, {"memory": 1, "vcore": 1})
        allocations = await good.wait_allocations(count + 1)
        assert (allocations[-1].allocationKey, allocations[-1].nodeID) == (key, "good-node")
        await good.release("good-app", key)
        assert (
            not good.seen.rejected_allocations
            and not good.seen.rejected_nodes
            and not good.seen.rejected_apps
        )
        assert good.seen.stream_errors == [] and good.seen.stream_ends == []
        assert self.core.process is not None and self.core.process.poll() is None, "the core died"

    async def pending(self, rm_id: str, app_id: str) -> int:
        assert self.http is not None
        part = quote(f"[{rm_id}]default", safe="")
        url = f"{self.core.rest_url}/ws/v1/partition/{part}/application/{quote(app_id, safe='')}"
        async with self.http.get(url) as response:
            assert response.status == 200, await response.text()
            return len((await response.json()).get("requests", []))

    async def close(self) -> None:
        for client in self.clients:
            await client.close()
        if self.http is not None:
            await self.http.close()


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    names = (
        "max_message_bytes", "rate_items_per_second", "max_pending_asks_per_application", "rate_burst",
        "max_early_asks",
    )  # fmt: skip
    overrides = [f"{name}={getattr(LIMITS, name)}" for name in names]
    core = CoreProcess(extra_args=[arg for item in overrides for arg in ("--limit", item)])
    core.start_blocking()
    runner = asyncio.Runner()
    rig = Rig(runner, core)
    try:
        rig.run(rig.start())
        yield rig
        rig.run(rig.close())
    finally:
        runner.close()
        code = core.stop_blocking(timeout=20)
        log = core.log_text()
        assert code == 0, f"core exited with {code}:\n{log[-4000:]}"
        assert "Traceback" not in log, log[max(0, log.index("Traceback") - 2000) :][:6000]


# Checks -------------------------------------------------------------------------------------------


def check_reasons(items: list[Any], outcomes: Counter[str]) -> None:
    for item in items:
        assert item.reason.strip(), f"rejected without a reason: {item}"
        assert len(item.reason) < 2_000, f"an over-long reason: {item.reason[:300]}..."
        outcomes[_kind_of(item.reason)] += 1


def _kind_of(reason: str) -> str:
    """A rejection reason by kind: the limit it names, or its words without the IDs in it."""
    named = re.search(r"\((max_\w+|rate_items_per_second)", reason)
    if named:
        return named.group(1)
    return " ".join(w for w in reason.split() if w.isalpha() and w.islower())[:50]


def expected_answers(items: int) -> int:
    return items or 1  # an empty message is refused as a whole


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _advised_wait(reason: str) -> str:
    """The seconds a rate-limit rejection says to wait before retrying."""
    found = re.search(r"retry it in ([0-9.]+)s", reason)
    assert found is not None, reason
    return found.group(1)


def fresh(rig: Rig, msg: M) -> M:
    """A copy whose generated IDs (UUIDs) are this example's own: hypothesis repeats its values, and
    a key reused from an earlier example would only ever test the duplicate check."""
    copy = type(msg)()
    copy.CopyFrom(msg)
    items = [(a, "allocationKey") for a in getattr(copy, "allocations", [])]
    items += [(a, "applicationID") for a in getattr(copy, "new", [])]
    items += [(n, "nodeID") for n in getattr(copy, "nodes", [])]
    for item, name in items:
        if _UUID.fullmatch(getattr(item, name)):
            setattr(item, name, f"e{rig.examples}-{getattr(item, name)}")
    return copy


async def fuzz_rm(rig: Rig, rm_id: str) -> RecordingClient:
    """A registered RM with a node, the known application, and the barrier's node and application."""
    client = await rig.client(rm_id)
    await client.add_node("fuzz-node", NODE)
    await client.add_node(SENTINEL_NODE, {"sentinel": 10**12})
    await client.add_application(KNOWN_APP, "root.default")
    await client.add_application(SENTINEL_APP, "root.default")
    await client.wait_nodes_answered(2)
    await client.wait_apps_answered(2)
    assert not client.seen.rejected_nodes and not client.seen.rejected_apps
    return client


# Allocation requests ------------------------------------------------------------------------------


async def allocation_example(
    rig: Rig, client: RecordingClient, msg: si_pb2.AllocationRequest, outcomes: Counter[str]
) -> None:
    rig.examples += 1
    msg = fresh(rig, msg)
    seen = client.seen
    rejected, allocated = len(seen.rejected_allocations), len(seen.new_allocations)
    pending = await rig.pending(client.rm_id, KNOWN_APP)
    await client.send_allocation_request(msg)
    barrier = f"barrier-{rig.examples}"
    await client.ask(SENTINEL_APP, barrier, SENTINEL)
    await client.wait_for(lambda: barrier in seen.allocations, what=f"the barrier ask {barrier}")
    new_rejections = seen.rejected_allocations[rejected:]
    new_allocations = [a for a in seen.new_allocations[allocated:] if a.applicationID != SENTINEL_APP]
    check_reasons(new_rejections, outcomes)
    assert all(a.nodeID for a in new_allocations)
    now_pending = await rig.pending(client.rm_id, KNOWN_APP)
    outcomes["allocated"] += len(new_allocations)
    outcomes["pending"] += now_pending - pending
    items = len(msg.allocations) + len(msg.releases.allocationsToRelease)
    answered = len(new_rejections) + len(new_allocations) + (now_pending - pending)
    assert answered == expected_answers(items), (
        f"{items} items, {len(new_rejections)} rejected, {len(new_allocations)} allocated, "
        f"{now_pending - pending} more pending: {[r.reason[:120] for r in new_rejections]}"
    )
    assert seen.stream_errors == []
    await rig.good_traffic_works()


def test_fuzzed_allocation_requests(rig: Rig) -> None:
    client = rig.run(fuzz_rm(rig, "fuzz-alloc"))
    thousands = messages.ask(KNOWN_APP, "tags", {"memory": 1}, tags={f"t{i}": "v" for i in range(5_000)})
    extremes = messages.ask(
        KNOWN_APP, "extreme", {"memory": INT64_MAX, "vcore": INT64_MAX}, priority=INT32_MIN
    )
    outcomes: Counter[str] = Counter()

    @settings(FUZZ, max_examples=150)
    @given(allocation_requests("fuzz-alloc"))
    @example(si_pb2.AllocationRequest(rmID="fuzz-alloc", allocations=[thousands, extremes]))
    @example(si_pb2.AllocationRequest(rmID="fuzz-alloc"))
    @example(
        si_pb2.AllocationRequest(
            rmID="fuzz-alloc", allocations=[messages.ask(KNOWN_APP, "dup", {"memory": 5_000})] * 2
        )
    )
    @example(
        si_pb2.AllocationRequest(
            rmID="good-rm", allocations=[messages.ask("good-app", "steal", {"memory": 1})]
        )
    )
    def check(msg: si_pb2.AllocationRequest) -> None:
        rig.run(allocation_example(rig, client, msg, outcomes))

    check()

    # The fuzzing went deep: asks were allocated and left pending, and the limits were reached.
    assert outcomes["allocated"] > 0 and outcomes["pending"] > 0, outcomes
    reached = {"max_id_length", "max_tags", "max_key_length", "max_value_length", "max_resource_types"}
    assert reached <= outcomes.keys(), outcomes


# Application requests -----------------------------------------------------------------------------


async def application_example(
    rig: Rig, client: RecordingClient, msg: si_pb2.ApplicationRequest, outcomes: Counter[str]
) -> None:
    rig.examples += 1
    msg = fresh(rig, msg)
    seen = client.seen
    accepted, rejected = len(seen.accepted_apps), len(seen.rejected_apps)
    await client.send_application_request(msg)
    barrier = f"barrier-app-{rig.examples}"
    await client.add_application(barrier, "root.default")
    await client.wait_for(lambda: barrier in seen.accepted_apps, what=f"the barrier application {barrier}")
    new_rejections = seen.rejected_apps[rejected:]
    new_accepted = [a for a in seen.accepted_apps[accepted:] if a != barrier]
    check_reasons(new_rejections, outcomes)
    outcomes["accepted"] += len(new_accepted)
    # Every application to add is answered, accepted or rejected; removals of applications the core
    # does not know are ignored, as YuniKorn does, so those may go unanswered.
    answers = Counter(new_accepted + [r.applicationID for r in new_rejections])
    missing = Counter(LIMITS.clip(add.applicationID) for add in msg.new) - answers
    assert not missing, f"no answer for {dict(missing)}; answers {dict(answers)}"
    assert sum(answers.values()) <= expected_answers(len(msg.new) + len(msg.remove))
    assert seen.stream_errors == []
    await rig.good_traffic_works()


def test_fuzzed_application_requests(rig: Rig) -> None:
    client = rig.run(fuzz_rm(rig, "fuzz-apps"))
    tagged = messages.application("tagged", "root.default", tags={f"t{i}": "v" for i in range(3_000)})
    outcomes: Counter[str] = Counter()

    @settings(FUZZ, max_examples=100)
    @given(application_requests("fuzz-apps"))
    @example(
        si_pb2.ApplicationRequest(rmID="fuzz-apps", new=[tagged, messages.application("x" * 10_000, "root")])
    )
    def check(msg: si_pb2.ApplicationRequest) -> None:
        rig.run(application_example(rig, client, msg, outcomes))

    check()
    assert outcomes["accepted"] > 0, outcomes
    reached = {"max_id_length", "max_name_length", "max_tags", "max_key_length", "max_value_length"}
    assert reached <= outcomes.keys(), outcomes


# Node requests ------------------------------------------------------------------------------------


async def node_example(
    rig: Rig, client: RecordingClient, msg: si_pb2.NodeRequest, outcomes: Counter[str]
) -> None:
    rig.examples += 1
    msg = fresh(rig, msg)
    seen = client.seen
    accepted, rejected = len(seen.accepted_nodes), len(seen.rejected_nodes)
    barriers = seen.accepted_nodes.count(SENTINEL_NODE)
    await client.send_node_request(msg)
    await client.node_action(SENTINEL_NODE, si_pb2.NodeInfo.UPDATE, {"sentinel": 10**12})
    await client.wait_for(
        lambda: seen.accepted_nodes.count(SENTINEL_NODE) > barriers, what="the barrier update"
    )
    new_rejections = seen.rejected_nodes[rejected:]
    check_reasons(new_rejections, outcomes)
    outcomes["accepted"] += len(seen.accepted_nodes) - accepted - 1
    answered = len(seen.accepted_nodes) - accepted - 1 + len(new_rejections)
    assert answered == expected_answers(len(msg.nodes)), (
        f"{len(msg.nodes)} nodes, {answered} answers: {[r.reason[:120] for r in new_rejections]}"
    )
    assert seen.stream_errors == []
    await rig.good_traffic_works()


def test_fuzzed_node_requests(rig: Rig) -> None:
    client = rig.run(fuzz_rm(rig, "fuzz-nodes"))
    extreme = messages.node("extreme", {"memory": INT64_MAX, "vcore": INT64_MAX})
    outcomes: Counter[str] = Counter()

    @settings(FUZZ, max_examples=100)
    @given(node_requests("fuzz-nodes"))
    @example(
        si_pb2.NodeRequest(
            rmID="fuzz-nodes", nodes=[extreme, messages.node("extreme-2", {"memory": INT64_MAX})]
        )
    )
    def check(msg: si_pb2.NodeRequest) -> None:
        rig.run(node_example(rig, client, msg, outcomes))

    check()
    assert outcomes["accepted"] > 0, outcomes
    reached = {
        "max_id_length",
        "max_node_attributes",
        "max_key_length",
        "max_value_length",
        "max_resource_types",
    }
    assert reached <= outcomes.keys(), outcomes


# Raw bytes ----------------------------------------------------------------------------------------

STREAMS = {
    "/si.v1.Scheduler/UpdateAllocation": si_pb2.AllocationRequest,
    "/si.v1.Scheduler/UpdateApplication": si_pb2.ApplicationRequest,
    "/si.v1.Scheduler/UpdateNode": si_pb2.NodeRequest,
}
UNARIES = {
    "/si.v1.Scheduler/RegisterResourceManager": si_pb2.RegisterResourceManagerRequest,
    "/si.v1.Scheduler/UpdateConfiguration": si_pb2.UpdateConfigurationRequest,
    "/si.v1.Scheduler/DryRunConfiguration": si_pb2.UpdateConfigurationRequest,
}


@st.composite
def raw_payloads(draw: st.DrawFn) -> bytes:
    """Random bytes, or a real message's bytes cut short or with some bytes changed."""
    if draw(st.booleans()):
        return draw(st.binary(max_size=300))
    real = si_pb2.AllocationRequest(
        rmID=draw(st.sampled_from(["", "fuzz-raw"])),
        allocations=[messages.ask("a", "k", {"memory": 5}, tags={"t": "ü"})],
    ).SerializeToString()
    data = bytearray(real)
    for _ in range(draw(st.integers(1, 4))):
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data[: draw(st.integers(0, len(data)))])


def _decodes(kind: type[Message], payload: bytes) -> bool:
    try:
        kind.FromString(payload)
    except DecodeError:
        return False
    return True


async def raw_example(rig: Rig, channel: grpc.aio.Channel, method: str, payload: bytes) -> None:
    if method in STREAMS:
        # No serializers: the bytes go as they are, and what comes back is bytes too.
        call: grpc.aio.StreamStreamCall[bytes, bytes] = channel.stream_stream(method)()
        await call.write(payload)
        await call.done_writing()
        answers = []
        try:
            async for answer in call:
                answers.append(answer)
        except grpc.aio.AioRpcError:
            pass
        code = await call.code()
        if _decodes(STREAMS[method], payload):
            assert code == grpc.StatusCode.OK and answers, (code, await call.details())
        else:
            assert code == grpc.StatusCode.INVALID_ARGUMENT, (code, await call.details())
            assert "not a valid si.v1 message" in (await call.details() or "")
    else:
        try:
            unary: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(method)
            await unary(payload, timeout=10)
            code = grpc.StatusCode.OK
        except grpc.aio.AioRpcError as exc:
            code = exc.code()
        if not _decodes(UNARIES[method], payload):
            # gRPC itself answers a request it cannot parse, before the core sees it: UNKNOWN.
            assert code in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INVALID_ARGUMENT), code
    await rig.good_traffic_works()


def test_fuzzed_raw_bytes(rig: Rig) -> None:
    async def open_channel() -> grpc.aio.Channel:
        return grpc.aio.insecure_channel(rig.core.address)

    channel = rig.run(open_channel())

    @settings(FUZZ, max_examples=150)
    @given(st.sampled_from([*STREAMS, *UNARIES]), raw_payloads())
    @example("/si.v1.Scheduler/UpdateAllocation", b"\xff\xff\xff\x01garbage")
    @example("/si.v1.Scheduler/UpdateNode", b"")
    @example("/si.v1.Scheduler/RegisterResourceManager", b"\x0a\xff\xfe")
    def check(method: str, payload: bytes) -> None:
        rig.run(raw_example(rig, channel, method, payload))

    try:
        check()
    finally:
        rig.run(channel.close())


# Limits, one by one -------------------------------------------------------------------------------


def test_an_oversize_message_is_refused_by_grpc_and_harms_nothing_else(rig: Rig) -> None:
    async def go() -> None:
        client = await rig.client("oversize")
        huge = "v" * (LIMITS.max_message_bytes + 1_000)
        ask = messages.ask("a", "k", {"memory": 1}, tags={"t": huge})
        await client.send_allocation_request(si_pb2.AllocationRequest(rmID="oversize", allocations=[ask]))
        await client.wait_for(lambda: bool(client.seen.stream_errors), what="the stream's error")
        assert client.seen.stream_errors[0].startswith("RESOURCE_EXHAUSTED"), client.seen.stream_errors
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await client.update_configuration(huge)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        # Under the message limit but over the configuration limit: refused by the core, by name.
        reply = await client.update_configuration("#" + "x" * LIMITS.max_config_bytes + "\n" + CONFIG)
        assert not reply.accepted and "(max_config_bytes)" in reply.errors[0], list(reply.errors)
        # Its other streams, and everyone else, carry on.
        await client.add_node("n", NODE)
        await client.wait_nodes_answered(1)
        assert client.seen.accepted_nodes == ["n"]
        await rig.good_traffic_works()

    rig.run(go())


def test_the_rate_limit_rejects_the_excess_with_a_retry_and_then_lets_it_in(rig: Rig) -> None:
    async def go() -> None:
        client = await rig.client("rate")
        sent = LIMITS.rate_burst + 300
        started = time.monotonic()
        await client.add_nodes(*(messages.node(f"n{i}", {"memory": 1}) for i in range(sent)))
        await client.wait_nodes_answered(sent, timeout=30)
        # The bucket starts full and refills at rate_items_per_second while the message travels.
        refilled = int((time.monotonic() - started) * LIMITS.rate_items_per_second)
        rejected = client.seen.rejected_nodes
        assert 300 - refilled <= len(rejected) <= 300, (len(rejected), refilled)
        assert [r.nodeID for r in rejected] == [f"n{i}" for i in range(sent - len(rejected), sent)]
        for r in rejected:
            assert (
                "rate limit exceeded" in r.reason
                and "retry it in" in r.reason
                and "(rate_items_per_second" in r.reason
            )
        # The bucket refills on the daemon's real clock: wait as long as the core says (each reason
        # names the same wait, to the millisecond, rounded), and a little more for that rounding;
        # then the retry must go through whole.
        advised = max(float(_advised_wait(r.reason)) for r in rejected)
        assert advised <= 300 / LIMITS.rate_items_per_second + 0.001, advised
        await asyncio.sleep(advised + 0.002)
        await client.add_nodes(*(messages.node(r.nodeID, {"memory": 1}) for r in rejected))
        await client.wait_for(lambda: len(client.seen.accepted_nodes) == sent, what="every node accepted")
        assert len(client.seen.rejected_nodes) == len(rejected)  # none refused again
        await rig.good_traffic_works()

    rig.run(go())


def test_pending_asks_per_application_are_limited_over_the_wire(rig: Rig) -> None:
    async def go() -> None:
        client = await rig.client("pending")
        await client.add_application("app", "root.default")
        await client.wait_apps_answered(1)
        most = LIMITS.max_pending_asks_per_application
        await client.asks(messages.ask("app", f"k{i}", {"memory": 10}) for i in range(most + 1))  # no node
        rejected = await client.wait_rejected_allocations(1)
        assert rejected[0].allocationKey == f"k{most}"
        assert f"already has {most} pending asks" in rejected[0].reason
        assert "(max_pending_asks_per_application)" in rejected[0].reason
        await client.release("app", "k0")
        await client.ask("app", f"k{most}", {"memory": 10})  # its place is free again
        await client.add_node("n", {"memory": 10 * (most + 1)})
        await client.wait_allocations(most + 0)
        assert len(client.seen.rejected_allocations) == 1
        await rig.good_traffic_works()

    rig.run(go())


# Configuration reloads ----------------------------------------------------------------------------

CAPPED_ONLY = CONFIG.replace("memory: 100", "memory: 100}}\n").replace("}}\n}}", "}}")


def test_fuzzed_invalid_reloads_keep_the_last_good_configuration(rig: Rig) -> None:
    """Invalid configurations, hostile ones among them (alias bombs, nesting too deep, escapes that are
    not Unicode), are refused with their problems; the configuration in force stays in force."""
    from core.config import ConfigError, load_config
    from tests.unit.test_fuzz_config import mutated

    async def setup() -> RecordingClient:
        client = await rig.client("reload")
        await client.add_node("n", NODE)
        await client.add_application("app", "root.capped")
        await client.wait_nodes_answered(1)
        await client.wait_apps_answered(1)
        await client.asks(
            [messages.ask("app", "k1", {"memory": 60}), messages.ask("app", "k2", {"memory": 60})]
        )
        await client.wait_allocations(1)
        return client

    client = rig.run(setup())
    bomb = ["x0: &x0 [{name: a}]"]
    bomb += [f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * 9) + "]" for i in range(1, 10)]
    bomb.append("partitions: [{name: default, queues: [{name: root, queues: *x9}]}]")
    hostile = [
        "\n".join(bomb),
        "partitions: " + "[" * 3000 + "]" * 3000,
        'partitions:\n  - name: "\\ud800"\n    queues: [{name: root}]\n',
        "partitions:\n  - name: default\n    queues: &q\n      - name: root\n        queues: *q\n",
        "partitions:\n  - name: default\n    queues: [{name: root, maxapplications: " + "9" * 5000 + "}]\n",
    ]

    async def reload(text: str) -> None:
        started = time.monotonic()
        reply = await client.update_configuration(text)
        assert not reply.accepted and reply.errors, list(reply.errors)
        assert time.monotonic() - started < 5
        await rig.good_traffic_works()

    for text in hostile:
        rig.run(reload(text))

    @settings(FUZZ, max_examples=15)
    @given(mutated())
    def check(text: str) -> None:
        try:
            load_config(text)
        except ConfigError:
            rig.run(reload(text))

    check()

    async def still_capped() -> None:
        await client.barrier()  # everything the reloads led to has arrived
        assert [a.allocationKey for a in client.seen.new_allocations] == ["k1"]  # the max still holds k2
        assert await rig.pending("reload", "app") == 1
        raised = await client.update_configuration(CONFIG.replace("memory: 100", "memory: 200"))
        assert raised.accepted, list(raised.errors)
        await client.wait_allocations(2)

    rig.run(still_capped())
