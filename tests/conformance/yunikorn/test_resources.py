"""yunikorn-core's resource tables, run where a user meets a resource: configuration, gRPC, REST, placement.

Upstream: pkg/common/resources/resources_test.go at YUNIKORN_CORE_COMMIT (tests/conformance/upstream.py),
testing resources.go. Each ported row drives the upstream function through the place YuniKorn calls it
from, and asserts what a user sees there:

- NewResourceFromConf: a queue's `resources.max` in queues.yaml, accepted or refused, and maxResource on
  REST. A configured max is kept only when StrictlyGreaterThanZero (queue.go setResources), so a max of
  zeros shows as no max at all.
- StrictlyGreaterThanZero: (a) an ask over gRPC: an empty or all-zero ask is refused (partition.go
  addAllocation, IsZero), one with a negative quantity is refused (same place, StrictlyGreaterThanZero),
  any other is allocated on a node that has room; (b) for the rows a user can write in queues.yaml
  (no negative quantity): a queue max shows on REST only when strictly above zero, and a limit's
  non-empty maxresources is refused unless strictly above zero (configvalidator.go checkLimit).
- NewResourceFromProto / DAOMap / Prune: a node the RM reports (objects/node.go NewNode takes the
  schedulableResource as sent, then prunes zero quantities; nothing refuses a negative one) and its
  capacity on REST (/ws/v1/partition/{p}/node/{id}, dao capacity = DAOMap, omitted when empty). The
  NewResourceFromProto rows also send the same resource as an ask, which upstream refuses (every row is
  empty or holds a negative quantity).
- FitIn: an ask against a node (node.go preAllocateCheck / addAllocationInternal): allocated when it
  fits, else left pending.
- FitInMaxUndef (TestFitInSkip, TestFinInNil): an ask against its queue's configured max (headroom,
  application.go tryAllocate): a type the max does not name is unlimited.
- CalculateAbsUsedCapacity: a queue's absUsedCapacity on REST (queue.go GetPartitionQueueDAOInfo), with
  capacity = the queue's configured max and usage = allocations the RM reports already bound to a node
  (partition.go UpdateAllocation counts those "at any cost", even over the max). Zero capacities are
  written with a companion `pods: 1` so that the max is kept (see above) with its zero entries.
- addVal (TestWrapSafe): two nodes' capacities summed into the partition's capacity (partition.go
  updatePartitionResource, AddTo), on REST /ws/v1/partitions: a sum past int64 saturates.
- NewResourceFromString: the namespace.resourcequota tag of an application placed in a queue a
  placement rule creates (partition.go addApplication, application.go getResourceFromTags): the queue's
  maxResource on REST, none when the tag does not parse or is not strictly above zero.
- CompUsageRatioSeparately: the order sibling queues are offered room (sorters.go, fair queue sorting):
  two queues with usage reported bound to the node, one ask each in the same request, room for one.

Ported (rows upstream -> cases):
  TestNewResourceFromConf 12 -> 12; TestStrictlyGreaterThanZero 6 -> 6; TestNewResourceFromProto 5 -> 5;
  TestDAOMap 3 -> 3; TestResource_Prune 4 -> 4; TestFitIn 8 -> 5; TestFitInSkip 6 -> 4;
  TestFinInNil 3 checks -> 1; TestCalculateAbsUsedCapacity 13 -> 11; TestWrapSafe 16 checks -> 7 here
  (+2 in test_resources_domain.py); TestNewResourceFromString 8 -> 8; TestCompUsageRatioSeparately 6 -> 4.
  Total 70 cases.

Not ported here (34 rows/checks; resources_test.go's other tests, the pure arithmetic, are in
test_resources_domain.py, which lists what it leaves out):
  - TestFitIn "nil larger", "nil smaller": an empty ask is refused before any fit (partition.go, IsZero).
  - TestFitIn "negative larger": the ask holds a negative quantity and is refused before any fit.
  - TestFitInSkip the two rows with a negative larger ({a: -10}, {a: -5}): a max is written in
    queues.yaml, where a negative quantity does not parse.
  - TestFinInNil "fitin nil should fit in nil", "...fit in empty resource": an empty ask is refused.
  - TestFitInActual (9 rows): used only inside preemption's victim arithmetic (preemption.go); no
    user-visible value of its own.
  - TestCalculateAbsUsedCapacity "negative overflow": needs negative usage, and an ask with a negative
    quantity is refused; "min used": needs a negative max, which queues.yaml cannot express.
  - TestWrapSafe mulVal / mulValRatio checks (7): Multiply only ever multiplies a node's capacity by -1
    on removal (partition.go removeNode), which cannot overflow for a capacity an RM can report.
    (The 2 subVal checks are ported as domain cases in test_resources_domain.py: no RM action subtracts
    from a sum already at the int64 bound.)
  - TestCompUsageRatioSeparately "empty resources", "no guarantees, tie": a tie falls through to the
    pending-resource comparison and then to the children's map order, so no order is determined.
  - TestToProtoNil (1), TestToProto (4 rows): ToProto's output reaches the RM only inside an allocation,
    and every row's resource (empty, or holding a negative quantity) makes the ask refused before it is
    allocated (the TestNewResourceFromProto and TestStrictlyGreaterThanZero cases show that refusal).
  - TestDAOMapNil, TestResource_PruneNil: Go nil-receiver safety, nothing a user sends.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from rmclient import messages
from si.v1 import si_pb2
from tests.conformance.core_probe import CoreProbe
from tests.conformance.upstream import YUNIKORN_CORE_COMMIT, deliberate, yunikorn_case

assert YUNIKORN_CORE_COMMIT  # the commit the tables below were read at

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
INT32_MAX = 2**31 - 1

Res = dict[str, int]

# root with one leaf, root.a, open to everyone; `resources` / `limits` indent under root.a.
LEAF = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
"""


def leaf_config(extra: str = "") -> str:
    return LEAF + "".join(f"            {line}\n" for line in extra.splitlines())


def flow(values: Mapping[str, str]) -> str:
    """A resource map as a YAML flow mapping of quoted strings."""
    return "{" + ", ".join(f"{name}: {json.dumps(text)}" for name, text in values.items()) + "}"


def config_text(values: Mapping[str, int]) -> dict[str, str]:
    return {name: str(value) for name, value in values.items()}


# Driving the core -------------------------------------------------------------------------------------


async def report_node(probe: CoreProbe, node_id: str, capacity: Mapping[str, int] | None) -> str:
    """Report a node (`capacity` None: without schedulableResource): "accepted", or why it was refused."""
    seen = probe.client.seen

    def refusal() -> str | None:
        return next((r.reason for r in seen.rejected_nodes if r.nodeID == node_id), None)

    await probe.client.add_nodes(messages.node(node_id, capacity))
    await probe.client.wait_for(
        lambda: node_id in seen.accepted_nodes or refusal() is not None, 10.0, f"the answer to node {node_id}"
    )
    return "accepted" if node_id in seen.accepted_nodes else f"refused: {refusal()}"


async def node_capacity(probe: CoreProbe, node_id: str) -> Res:
    node = await probe.get(f"{probe.partition_path()}/node/{node_id}")
    capacity: Res = node.get("capacity") or {}
    return capacity


async def partition_capacity(probe: CoreProbe) -> Res:
    for part in await probe.get("/ws/v1/partitions"):
        if part.get("clusterId") == probe.rm_id and part.get("name") == "default":
            capacity: Res = (part.get("capacity") or {}).get("capacity") or {}
            return capacity
    raise AssertionError(f"no partition default of {probe.rm_id} on /ws/v1/partitions")


def ask_message(
    app_id: str, key: str, resources: Mapping[str, int] | None, node_id: str = ""
) -> si_pb2.Allocation:
    """An ask (`resources` None: without resourcePerAlloc); with `node_id`, one the RM already runs."""
    item = messages.ask(app_id, key, resources or {}, node_id=node_id)
    if resources is None:
        item.ClearField("resourcePerAlloc")
    return item


async def outcomes(probe: CoreProbe, asks: Sequence[si_pb2.Allocation]) -> dict[str, str]:
    """Send `asks` in one request; once the core has decided everything: each one's fate by key,
    "rejected", "allocated" or "pending"."""
    await probe.client.asks(asks)
    await probe.client.barrier()
    seen = probe.client.seen
    rejected = {r.allocationKey for r in seen.rejected_allocations}
    allocated = {a.allocationKey for a in seen.new_allocations}

    def fate(key: str) -> str:
        if key in rejected:
            return "rejected"
        return "allocated" if key in allocated else "pending"

    return {a.allocationKey: fate(a.allocationKey) for a in asks}


async def submit(
    probe: CoreProbe, app_id: str, queue: str = "root.a", tags: Mapping[str, str] | None = None
) -> str:
    placed = await probe.place(app_id, queue, user="alice", tags=tags)
    assert not placed.rejected, f"application {app_id} refused: {placed.reason}"
    return placed.queue


async def queue_view(probe: CoreProbe, queue: str = "root.a") -> dict[str, Any]:
    return (await probe.queues())[queue]


# TestNewResourceFromConf --------------------------------------------------------------------------------

# (row, configured max or None for no resources at all, accepted, maxResource on REST)
NEW_FROM_CONF: list[tuple[str, dict[str, str] | None, bool, Res]] = [
    ("resource with nil input", None, True, {}),
    ("resource without any resource mappings", {}, True, {}),
    ("resource with zero value", {"zero": "0"}, True, {}),  # kept by the parser, dropped by setResources
    ('normal multipliers with "M"', {"memory": "10M"}, True, {"memory": 10000000}),
    ('normal multipliers with "Mi"', {"memory": "10Mi"}, True, {"memory": 10485760}),
    ('vcore multipliers with "k"', {"vcore": "10k"}, True, {"vcore": 10000000}),
    ("vcore multipliers", {"vcore": "10"}, True, {"vcore": 10000}),
    ('vcore multipliers with "m"', {"vcore": "10m"}, True, {"vcore": 10}),
    ("failure case: parse error", {"fail": "xx"}, False, {}),
    ("negative resource", {"memory": "-15"}, False, {}),
    ("nagative resource for vcore", {"vcore": "-15"}, False, {}),
    ('"milli" used for anything other than vcore', {"memory": "10m"}, False, {}),
]


@pytest.mark.parametrize(
    ("configured", "accepted", "shown"),
    [pytest.param(c, a, s, id=yunikorn_case("TestNewResourceFromConf", n)) for n, c, a, s in NEW_FROM_CONF],
)
async def test_new_resource_from_conf(
    probe: CoreProbe, configured: dict[str, str] | None, accepted: bool, shown: Res
) -> None:
    text = leaf_config() if configured is None else leaf_config(f"resources:\n  max: {flow(configured)}")
    verdict = await probe.update(text)
    assert verdict.accepted == accepted, verdict
    if accepted:
        assert (await queue_view(probe)).get("maxResource", {}) == shown


# TestStrictlyGreaterThanZero ----------------------------------------------------------------------------

# (row, resource or None for nil, strictly greater than zero)
STRICTLY_GREATER_THAN_ZERO: list[tuple[str, Res | None, bool]] = [
    ("nil resource should be smaller than zero", None, False),
    ("no resource entries should be smaller than zero", {}, False),
    ("only zero resources should be smaller than zero", {"zero": 0}, False),
    ("only positive resource should be greater than zero", {"first": 10}, True),
    ("negative resource should be smaller than zero", {"first": -1}, False),
    (
        "multiple resources containing negative resources should be smaller than zero",
        {"first": -1, "second": 1, "third": -1},
        False,
    ),
]


@pytest.mark.parametrize(
    ("resource", "strict"),
    [
        pytest.param(r, s, id=yunikorn_case("TestStrictlyGreaterThanZero", n))
        for n, r, s in STRICTLY_GREATER_THAN_ZERO
    ],
)
async def test_strictly_greater_than_zero(probe: CoreProbe, resource: Res | None, strict: bool) -> None:
    writable = resource is None or all(v >= 0 for v in resource.values())
    if writable:
        # A configured max is kept only when strictly above zero.
        text = (
            leaf_config()
            if resource is None
            else leaf_config(f"resources:\n  max: {flow(config_text(resource))}")
        )
        assert await probe.update(text)
        assert (await queue_view(probe)).get("maxResource", {}) == (resource if strict else {})
    if resource:  # a limit checks non-empty maxresources only
        limit = (
            f"limits:\n  - limit: one\n    users: [alice]\n    maxresources: {flow(config_text(resource))}"
        )
        verdict = await probe.update(leaf_config(limit))
        assert verdict.accepted == strict, ("limit maxresources", verdict)
    # The same resource as an ask, on a node with room for any of the rows.
    assert await probe.register(LEAF)
    assert (
        await report_node(probe, "node-1", {"first": 100, "second": 100, "third": 100, "zero": 100})
        == "accepted"
    )
    await submit(probe, "app-1")
    fate = await outcomes(probe, [ask_message("app-1", "ask-1", resource)])
    assert fate["ask-1"] == ("allocated" if strict else "rejected")


# TestNewResourceFromProto / TestDAOMap / TestResource_Prune: node capacity on REST --------------------

# (test, row, schedulableResource as sent or None for none, capacity on REST)
NODE_CAPACITY: list[tuple[str, str, Res | None, Res]] = [
    ("TestNewResourceFromProto", "Proto is nil", None, {}),
    ("TestNewResourceFromProto", "nil resource", {}, {}),
    ("TestNewResourceFromProto", "empty resource", {}, {}),
    ("TestNewResourceFromProto", "setting resource", {"first": 5, "second": -5}, {"first": 5, "second": -5}),
    (
        "TestNewResourceFromProto",
        "resource including 0",
        {"first": 5, "second": 0, "third": -5},
        {"first": 5, "third": -5},
    ),
    ("TestDAOMap", "empty resource", {}, {}),
    ("TestDAOMap", "single value", {"first": 1}, {"first": 1}),
    ("TestDAOMap", "two values", {"first": 10, "second": -10}, {"first": 10, "second": -10}),
    ("TestResource_Prune", "no types", {}, {}),
    (
        "TestResource_Prune",
        "all types with value",
        {"first": 1, "second": -2, "third": 3},
        {"first": 1, "second": -2, "third": 3},
    ),
    ("TestResource_Prune", "zero type", {"first": 1, "zero": 0, "third": 3}, {"first": 1, "third": 3}),
    ("TestResource_Prune", "no types with value", {"first": 0, "second": 0}, {}),
]


@pytest.mark.parametrize(
    ("test", "reported", "shown"),
    [pytest.param(t, r, s, id=yunikorn_case(t, n)) for t, n, r, s in NODE_CAPACITY],
)
async def test_node_capacity(probe: CoreProbe, test: str, reported: Res | None, shown: Res) -> None:
    assert await probe.register(LEAF)
    if test == "TestNewResourceFromProto":
        # The same resource as an ask: empty, or holding a negative quantity, so refused.
        await submit(probe, "app-1")
        fate = await outcomes(probe, [ask_message("app-1", "ask-1", reported)])
        assert fate["ask-1"] == "rejected"
    if _negative(reported):
        # Upstream takes a negative capacity as sent; pykorn refuses the node, naming it.
        assert (await report_node(probe, "node-1", reported)).startswith("refused: "), NEGATIVE_NODES
        return
    # Upstream takes any schedulableResource, or none, and prunes its zero quantities.
    assert await report_node(probe, "node-1", reported) == "accepted"
    assert await node_capacity(probe, "node-1") == shown


NEGATIVE_NODES = deliberate("negative-node-resources")


def _negative(resource: Res | None) -> bool:
    return any(v < 0 for v in (resource or {}).values())


# TestFitIn: an ask against a node ---------------------------------------------------------------------

# (row, node capacity, ask, allocated)
FIT_IN: list[tuple[str, Res, Res, bool]] = [
    ("zero set", {}, {"a": 1}, False),
    ("same type", {"a": 5}, {"a": 1}, True),
    ("not in smaller", {"not-in-smaller": 1}, {"a": 1}, False),
    ("not in larger", {"not-in-smaller": 1}, {"not-in-larger": 1}, False),
    ("negative smaller", {"a": -5}, {"a": 0, "b": 10}, False),
]


@pytest.mark.parametrize(
    ("capacity", "ask", "fits"),
    [pytest.param(c, a, f, id=yunikorn_case("TestFitIn", n)) for n, c, a, f in FIT_IN],
)
async def test_fit_in_node(probe: CoreProbe, capacity: Res, ask: Res, fits: bool) -> None:
    assert await probe.register(LEAF)
    if _negative(capacity):
        assert (await report_node(probe, "node-1", capacity)).startswith("refused: "), NEGATIVE_NODES
        return
    assert await report_node(probe, "node-1", capacity) == "accepted"
    await submit(probe, "app-1")
    fate = await outcomes(probe, [ask_message("app-1", "ask-1", ask)])
    assert fate["ask-1"] == ("allocated" if fits else "pending")


# TestFitInSkip / TestFinInNil: an ask against its queue's max -------------------------------------------

BIG_NODE = {"a": 100, "not-in-smaller": 100, "not-in-larger": 100}

# (test, row, queue max or None for none, ask); every row fits
FIT_IN_MAX_UNDEF: list[tuple[str, str, Res | None, Res]] = [
    ("TestFitInSkip", "defined resource %+v should fit in empty (skip undefined)", None, {"a": 1}),
    (
        "TestFitInSkip",
        "fitin smaller resource with value %+v should fit in larger %+v (skip undefined)",
        {"a": 5},
        {"a": 1},
    ),
    (
        "TestFitInSkip",
        "different type in smaller %+v should fit in larger %+v (skip undefined)",
        {"not-in-smaller": 1},
        {"a": 1},
    ),
    (
        "TestFitInSkip",
        "different type in smaller %+v should fit in larger %+v (skip undefined)#01",
        {"not-in-smaller": 1},
        {"not-in-larger": 1},
    ),
    ("TestFinInNil", "defined resource should fit in nil resource (skip undefined)", None, {"a": 1}),
]


@pytest.mark.parametrize(
    ("maximum", "ask"),
    [pytest.param(m, a, id=yunikorn_case(t, n)) for t, n, m, a in FIT_IN_MAX_UNDEF],
)
async def test_fit_in_queue_max(probe: CoreProbe, maximum: Res | None, ask: Res) -> None:
    text = (
        leaf_config() if maximum is None else leaf_config(f"resources:\n  max: {flow(config_text(maximum))}")
    )
    assert await probe.register(text)
    assert await report_node(probe, "node-1", BIG_NODE) == "accepted"
    await submit(probe, "app-1")
    fate = await outcomes(probe, [ask_message("app-1", "ask-1", ask)])
    assert fate["ask-1"] == "allocated"


# TestCalculateAbsUsedCapacity: absUsedCapacity of a queue on REST ---------------------------------------

ZERO_CAPACITY = {"memory": 0, "vcores": 0, "pods": 1}  # zeros kept: pods makes the max strictly positive
RESOURCE_SET = {"memory": 2048, "vcores": 3}
USAGE_SET = {"memory": 1024, "vcores": 1}

# (row, queue max or None, usage reported bound to the node or None, absUsedCapacity on REST)
ABS_USED: list[tuple[str, Res | None, Res | None, Res]] = [
    ("nil resource, nil usage", None, None, {}),
    ("zero resource, nil usage", ZERO_CAPACITY, None, {}),
    ("resource set, nil usage", RESOURCE_SET, None, {}),
    (
        "resource set, zero usage",
        RESOURCE_SET,
        {"memory": 0, "vcores": 0, "pods": 1},
        {"memory": 0, "vcores": 0},
    ),
    ("resource set, usage set", RESOURCE_SET, USAGE_SET, {"memory": 50, "vcores": 33}),
    ("partial resource set, usage set", {"memory": 1024}, USAGE_SET, {"memory": 100}),
    ("resource set, partial usage set", RESOURCE_SET, {"memory": 1024}, {"memory": 50}),
    ("positive limit", {"memory": 1}, {"memory": INT64_MAX}, {"memory": INT32_MAX}),
    ("zero resource, non zero used", ZERO_CAPACITY, USAGE_SET, {"memory": 100, "vcores": 100}),
    ("max used", {"memory": INT64_MAX}, {"memory": INT64_MAX}, {"memory": 100}),
    (
        "multiple resources not in used",
        {"memory": 1024, "vcores": 2, "gpu": 1},
        {"memory": 512},
        {"memory": 50},
    ),
]


@pytest.mark.parametrize(
    ("maximum", "used", "shown"),
    [pytest.param(m, u, s, id=yunikorn_case("TestCalculateAbsUsedCapacity", n)) for n, m, u, s in ABS_USED],
)
async def test_abs_used_capacity(probe: CoreProbe, maximum: Res | None, used: Res | None, shown: Res) -> None:
    text = (
        leaf_config() if maximum is None else leaf_config(f"resources:\n  max: {flow(config_text(maximum))}")
    )
    assert await probe.register(text)
    if used is not None:
        room = {"memory": INT64_MAX, "vcores": INT64_MAX, "pods": INT64_MAX, "gpu": INT64_MAX}
        assert await report_node(probe, "node-1", room) == "accepted"
        await submit(probe, "app-1")
        fate = await outcomes(probe, [ask_message("app-1", "running-1", used, node_id="node-1")])
        assert fate["running-1"] != "rejected", probe.client.seen.rejected_allocations
        assert (await queue_view(probe)).get("allocatedResource", {}) == used
    assert (await queue_view(probe)).get("absUsedCapacity", {}) == shown


# TestWrapSafe (addVal): two nodes summed into the partition's capacity -----------------------------------

# (check, first node's memory, second node's memory, partition capacity)
WRAP_SAFE_ADD: list[tuple[str, int, int, int]] = [
    ("addVal(MaxInt64, 1) is MaxInt64", INT64_MAX, 1, INT64_MAX),
    ("addVal(MinInt64, -1) is MinInt64", INT64_MIN, -1, INT64_MIN),
    ("addVal(10, 10) is 20", 10, 10, 20),
    ("addVal(10, -20) is -10", 10, -20, -10),
    ("addVal(-10, 20) is 10", -10, 20, 10),
    ("addVal(-20, 10) is -10", -20, 10, -10),
    ("addVal(20, -10) is 10", 20, -10, 10),
]


@pytest.mark.parametrize(
    ("first", "second", "total"),
    [pytest.param(a, b, t, id=yunikorn_case("TestWrapSafe", n)) for n, a, b, t in WRAP_SAFE_ADD],
)
async def test_wrap_safe_partition_capacity(probe: CoreProbe, first: int, second: int, total: int) -> None:
    assert await probe.register(LEAF)
    if first < 0 or second < 0:
        refused = await report_node(probe, "node-x", {"memory": min(first, second), "pods": 1})
        assert refused.startswith("refused: ") and "negative" in refused, NEGATIVE_NODES
        return
    assert await report_node(probe, "node-1", {"memory": first, "pods": 1}) == "accepted"
    assert await report_node(probe, "node-2", {"memory": second, "pods": 1}) == "accepted"
    assert (await partition_capacity(probe)).get("memory") == total


# TestNewResourceFromString: the namespace.resourcequota tag on a queue a rule creates --------------------

DYNAMIC = """
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: "*"
"""

# (row, tag value, maxResource on REST of the created queue)
FROM_STRING: list[tuple[str, str, Res]] = [
    ("empty string", "", {}),
    ("empty json", '{"resources":{}}', {}),
    ("not a map", '{"resources":{error}}', {}),
    ("illegal json", '{"resources":{"missing curly bracket":{"value":5}}', {}),
    ("illegal value", '{"resources":{"invalid":{"value":"error"}}}', {}),
    ("simple", '{"resources":{"valid":{"value":10}}}', {"valid": 10}),
    ("double", '{"resources":{"valid":{"value":10}, "other":{"value":5}}}', {"valid": 10, "other": 5}),
    ("same twice", '{"resources":{"negative":{"value":10}, "negative":{"value":-10}}}', {}),
]


@pytest.mark.parametrize(
    ("tag", "shown"),
    [pytest.param(t, s, id=yunikorn_case("TestNewResourceFromString", n)) for n, t, s in FROM_STRING],
)
async def test_quota_tag(probe: CoreProbe, tag: str, shown: Res) -> None:
    assert await probe.register(DYNAMIC)
    queue = await submit(probe, "app-1", "root.tagged", tags={"namespace.resourcequota": tag})
    assert queue == "root.tagged"
    view = await queue_view(probe, "root.tagged")
    assert not view.get("isManaged")
    assert view.get("maxResource", {}) == shown


# TestCompUsageRatioSeparately: which of two sibling queues is offered room first -------------------------

FAIR_MAX = {"ephemeral-storage": 1000, "memory": 1000, "pods": 1000, "vcore": 1000}
USED_100 = {"ephemeral-storage": 100, "memory": 100, "pods": 100, "vcore": 100}
USED_200 = {"ephemeral-storage": 200, "memory": 200, "pods": 200, "vcore": 200}

# (row, left used, left guaranteed, right used, right guaranteed, the queue allocated first)
SEPARATELY: list[tuple[str, Res, Res | None, Res, Res | None, str]] = [
    ("with gaurantees, left has larger share", USED_100, {"pods": 200}, USED_100, {"pods": 800}, "right"),
    ("with gaurantees, right has larger share", USED_100, {"pods": 800}, USED_100, {"pods": 200}, "left"),
    ("no gaurantees, left has larger share", USED_200, None, USED_100, None, "right"),
    ("no gaurantees, right has larger share", USED_100, None, USED_200, None, "left"),
]


def _sibling(name: str, guaranteed: Res | None) -> str:
    out = f"          - name: {name}\n"
    if guaranteed is not None:
        out += f"            resources:\n              guaranteed: {flow(config_text(guaranteed))}\n"
    return out


@pytest.mark.parametrize(
    ("left_used", "left_guaranteed", "right_used", "right_guaranteed", "first"),
    [
        pytest.param(lu, lg, ru, rg, f, id=yunikorn_case("TestCompUsageRatioSeparately", n))
        for n, lu, lg, ru, rg, f in SEPARATELY
    ],
)
async def test_fair_queue_order(
    probe: CoreProbe,
    left_used: Res,
    left_guaranteed: Res | None,
    right_used: Res,
    right_guaranteed: Res | None,
    first: str,
) -> None:
    text = (
        'partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: "*"\n'
        "        queues:\n" + _sibling("left", left_guaranteed) + _sibling("right", right_guaranteed)
    )
    assert await probe.register(text)
    assert await report_node(probe, "node-1", FAIR_MAX) == "accepted"
    for side, used in (("left", left_used), ("right", right_used)):
        await submit(probe, f"app-{side}", f"root.{side}")
        fate = await outcomes(probe, [ask_message(f"app-{side}", f"running-{side}", used, node_id="node-1")])
        assert fate[f"running-{side}"] != "rejected", probe.client.seen.rejected_allocations
    # Room for one of the two: 600 memory each, with 800 or 700 free.
    fate = await outcomes(
        probe, [ask_message(f"app-{s}", f"ask-{s}", {"memory": 600}) for s in ("left", "right")]
    )
    other = "left" if first == "right" else "right"
    assert (fate[f"ask-{first}"], fate[f"ask-{other}"]) == ("allocated", "pending")
