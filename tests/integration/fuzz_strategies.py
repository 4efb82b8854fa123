"""Hypothesis strategies for the gRPC fuzz suite (test_fuzz_grpc.py): si requests with random and
missing fields, int64 extremes, unicode, empty and over-long ids, thousands of tags, unknown objects.

Each request kind starts from a valid message and applies a few drawn mutations, so examples stay
close enough to valid to reach deep into the core, and far enough to hit every check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from hypothesis import strategies as st

from rmclient import messages
from si.v1 import si_pb2

T = TypeVar("T")

# Objects the fuzz rig sets up before the examples; generated ids stay clear of them.
KNOWN_APP = "known-app"
SENTINEL_APP = "sentinel-app"
SENTINEL_NODE = "sentinel-node"
RESERVED_IDS = {KNOWN_APP, SENTINEL_APP, SENTINEL_NODE}


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
HUGE = st.integers(min_value=254, max_value=100_000).map(lambda n: "x" * n)
UNICODE = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)
ODD_IDS = st.one_of(
    st.sampled_from(["", " ", "a/b", "ünïcødé", "🙂🙂", "\x00", "x" * 253, "x" * 254, "[rm]default", "*"]),
    UNICODE,
    HUGE,
)
QUANTITY = st.one_of(
    st.integers(min_value=1, max_value=50),
    st.sampled_from([0, -1, INT64_MAX, INT64_MIN, INT64_MAX - 1, 2**32]),
    st.integers(min_value=INT64_MIN, max_value=INT64_MAX),
)
RESOURCE_NAME = st.one_of(st.sampled_from(["memory", "vcore", "gpu", ""]), UNICODE, HUGE).filter(
    lambda name: name != "sentinel"
)


def resources(max_size: int = 3) -> st.SearchStrategy[si_pb2.Resource]:
    many = st.integers(min_value=65, max_value=300).map(lambda n: {f"r{i}": 1 for i in range(n)})
    values = st.one_of(st.dictionaries(RESOURCE_NAME, QUANTITY, max_size=max_size), many)
    return values.map(
        lambda v: si_pb2.Resource(resources={k: si_pb2.Quantity(value=q) for k, q in v.items()})
    )


TAG_KEYS = st.one_of(
    st.sampled_from(["creationTime", "pykorn.io/node-selector", "pykorn.io/tolerations", "namespace", ""]),
    UNICODE,
    st.integers(min_value=513, max_value=2_000).map(lambda n: "k" * n),
).filter(lambda key: key != "foreign")  # a foreign allocation is taken without an answer, by design
LONG_KEY = st.integers(min_value=513, max_value=2_000).map(lambda n: "k" * n)
LONG_VALUE = st.integers(min_value=65_537, max_value=70_000).map(lambda n: "v" * n)
ONE_LONG = st.one_of(st.tuples(LONG_KEY, st.just("v")), st.tuples(st.just("k"), LONG_VALUE)).map(
    lambda kv: dict([kv])
)
TAG_VALUES = st.one_of(
    st.sampled_from(
        ["", "{}", "[]", "{not json", '{"a": "b"}', '[{"key": "x", "operator": "Exists"}]', "1e400"]
    ),
    st.integers().map(str),
    UNICODE,
    st.integers(min_value=65_537, max_value=70_000).map(lambda n: "v" * n),
)
TAGS = st.one_of(
    st.dictionaries(TAG_KEYS, TAG_VALUES, max_size=4),
    st.integers(min_value=200, max_value=3_000).map(lambda n: {f"tag-{i}": str(i) for i in range(n)}),
)
PRIORITY = st.one_of(
    st.integers(min_value=INT32_MIN, max_value=INT32_MAX), st.sampled_from([INT32_MIN, INT32_MAX])
)


def mutate(draw: st.DrawFn, target: T, mutations: list[Callable[[st.DrawFn, T], None]]) -> T:
    """A good item spoiled in up to three ways (none, sometimes): the core must cope with each, and
    an item that is good but for one field shows that field's check, not an earlier one's."""
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        draw(st.sampled_from(mutations))(draw, target)
    return target


def _key(draw: st.DrawFn, ask: si_pb2.Allocation) -> None:
    ask.allocationKey = draw(st.one_of(st.sampled_from(["k1", "k2"]), ODD_IDS))


def _app(draw: st.DrawFn, ask: si_pb2.Allocation) -> None:
    ask.applicationID = draw(st.one_of(st.just("ghost"), ODD_IDS))


def _resources(draw: st.DrawFn, ask: si_pb2.Allocation) -> None:
    ask.resourcePerAlloc.CopyFrom(draw(resources()))


def _no_resources(draw: st.DrawFn, ask: si_pb2.Allocation) -> None:
    ask.ClearField("resourcePerAlloc")


def _node(draw: st.DrawFn, ask: si_pb2.Allocation) -> None:
    ask.nodeID = draw(st.one_of(st.just("fuzz-node"), st.just("fuzz-node"), ODD_IDS))


def _partition(draw: st.DrawFn, ask: si_pb2.Allocation) -> None:
    ask.partitionName = draw(st.one_of(st.sampled_from(["default", "gpu"]), ODD_IDS))


def _tags(draw: st.DrawFn, ask: si_pb2.Allocation) -> None:
    ask.allocationTags.update(draw(TAGS))


def _long_tag(draw: st.DrawFn, ask: si_pb2.Allocation) -> None:
    ask.allocationTags.update(draw(ONE_LONG))


def _gang(draw: st.DrawFn, ask: si_pb2.Allocation) -> None:
    ask.taskGroupName = draw(st.one_of(st.just("tg"), ODD_IDS))
    ask.placeholder = draw(st.booleans())


def _extremes(draw: st.DrawFn, ask: si_pb2.Allocation) -> None:
    ask.priority = draw(st.sampled_from([INT32_MIN, INT32_MAX]))
    ask.resourcePerAlloc.resources[draw(st.sampled_from(["memory", "vcore"]))].value = draw(
        st.sampled_from([INT64_MAX, INT64_MAX - 1, 2**32])
    )
    ask.originator = draw(st.booleans())
    ask.preemptionPolicy.allowPreemptOther = draw(st.booleans())


ASK_MUTATIONS: list[Callable[[st.DrawFn, si_pb2.Allocation], None]] = [
    _key,
    _app,
    _resources,
    _no_resources,
    _node,
    _partition,
    _tags,
    _long_tag,
    _gang,
    _extremes,
]


@st.composite
def asks(draw: st.DrawFn) -> si_pb2.Allocation:
    key = str(draw(st.uuids()))
    memory, vcore = draw(st.integers(1, 300)), draw(st.integers(1, 300))
    ask = messages.ask(KNOWN_APP, key, {"memory": memory, "vcore": vcore}, priority=draw(PRIORITY))
    return mutate(draw, ask, ASK_MUTATIONS)


@st.composite
def releases(draw: st.DrawFn) -> si_pb2.AllocationRelease:
    # Never of the known application: each release here must be refused (and so answered).
    app = draw(st.one_of(st.just("ghost"), ODD_IDS).filter(lambda a: a not in RESERVED_IDS))
    return si_pb2.AllocationRelease(
        applicationID=app,
        allocationKey=draw(st.one_of(st.uuids().map(str), ODD_IDS)),
        partitionName=draw(st.one_of(st.just(""), st.just("default"), ODD_IDS)),
        terminationType=draw(st.sampled_from(si_pb2.TerminationType.keys())),  # by name
        message=draw(st.one_of(UNICODE, st.just(""), st.integers(65_537, 70_000).map(lambda n: "m" * n))),
    )


def rm_ids(own: str) -> st.SearchStrategy[str]:
    """Nearly always the sender's own rmID; sometimes none, an unregistered one, or another RM's."""
    others = st.one_of(st.sampled_from(["", "stranger", "good-rm"]), HUGE)
    return st.integers(min_value=0, max_value=11).flatmap(lambda i: others if i == 11 else st.just(own))


@st.composite
def allocation_requests(draw: st.DrawFn, own: str) -> si_pb2.AllocationRequest:
    msg = si_pb2.AllocationRequest(rmID=draw(rm_ids(own)), allocations=draw(st.lists(asks(), max_size=6)))
    if msg.allocations and draw(st.integers(min_value=0, max_value=3)) == 3:
        msg.allocations.append(draw(st.sampled_from(msg.allocations)))  # the same ask again: a duplicate key
    if draw(st.integers(min_value=0, max_value=3)) == 3:
        gone = draw(st.lists(releases(), max_size=3))
        msg.releases.CopyFrom(si_pb2.AllocationReleasesRequest(allocationsToRelease=gone))
    return msg


def _app_id(draw: st.DrawFn, add: si_pb2.AddApplicationRequest) -> None:
    app = draw(st.one_of(st.sampled_from(["app-a", "app-b"]), ODD_IDS))
    add.applicationID = app if app not in RESERVED_IDS else ""


def _queue(draw: st.DrawFn, add: si_pb2.AddApplicationRequest) -> None:
    names = st.sampled_from(["root.capped", "root", "root.nope", "", "ROOT.DEFAULT"])
    add.queueName = draw(st.one_of(names, ODD_IDS, st.integers(1_025, 3_000).map("q".__mul__)))


def _app_partition(draw: st.DrawFn, add: si_pb2.AddApplicationRequest) -> None:
    add.partitionName = draw(st.one_of(st.sampled_from(["default", "gpu"]), ODD_IDS))


def _ugi(draw: st.DrawFn, add: si_pb2.AddApplicationRequest) -> None:
    add.ugi.user = draw(st.one_of(st.just(""), ODD_IDS, st.integers(1_025, 3_000).map("u".__mul__)))
    add.ugi.groups.extend(draw(st.lists(st.one_of(st.just("g"), ODD_IDS), max_size=3)))


def _app_tags(draw: st.DrawFn, add: si_pb2.AddApplicationRequest) -> None:
    add.tags.update(draw(TAGS))


def _app_long_tag(draw: st.DrawFn, add: si_pb2.AddApplicationRequest) -> None:
    add.tags.update(draw(ONE_LONG))


def _app_extremes(draw: st.DrawFn, add: si_pb2.AddApplicationRequest) -> None:
    add.executionTimeoutMilliSeconds = draw(st.sampled_from([-1, INT64_MAX, INT64_MIN]))
    add.gangSchedulingStyle = draw(st.sampled_from(["Soft", "Hard", "nonsense"]))


APP_MUTATIONS: list[Callable[[st.DrawFn, si_pb2.AddApplicationRequest], None]] = [
    _app_id,
    _queue,
    _app_partition,
    _ugi,
    _app_tags,
    _app_long_tag,
    _app_extremes,
]


@st.composite
def application_requests(draw: st.DrawFn, own: str) -> si_pb2.ApplicationRequest:
    def add() -> si_pb2.AddApplicationRequest:
        app = messages.application(str(draw(st.uuids())), "root.default", user="alice")
        return mutate(draw, app, APP_MUTATIONS)

    def remove() -> si_pb2.RemoveApplicationRequest:
        app = draw(st.one_of(st.sampled_from(["app-a", "ghost"]), ODD_IDS))
        return si_pb2.RemoveApplicationRequest(
            applicationID=app if app not in RESERVED_IDS else "",
            partitionName=draw(st.one_of(st.sampled_from(["", "default", "gpu"]), ODD_IDS)),
        )

    new = [add() for _ in range(draw(st.integers(0, 5)))]
    gone = [remove() for _ in range(draw(st.integers(0, 2)))]
    return si_pb2.ApplicationRequest(rmID=draw(rm_ids(own)), new=new, remove=gone)


def _node_id(draw: st.DrawFn, info: si_pb2.NodeInfo) -> None:
    node_id = draw(st.one_of(st.sampled_from(["n1", "n2", "n3"]), ODD_IDS))
    info.nodeID = node_id if node_id not in RESERVED_IDS else ""


def _action(draw: st.DrawFn, info: si_pb2.NodeInfo) -> None:
    # Deliberately also a number no ActionFromRM has: the core must refuse it, not crash.
    info.action = draw(st.sampled_from([*si_pb2.NodeInfo.ActionFromRM.values(), 77]))  # type: ignore[assignment]


def _attributes(draw: st.DrawFn, info: si_pb2.NodeInfo) -> None:
    keys = st.one_of(
        st.sampled_from(["si/node-partition", "pykorn.io/taints", "kubernetes.io/label/x"]), TAG_KEYS
    )
    many = st.integers(1_025, 3_000).map(lambda n: {f"a{i}": "v" for i in range(n)})
    info.attributes.update(draw(st.one_of(st.dictionaries(keys, TAG_VALUES, max_size=3), many)))


def _long_attribute(draw: st.DrawFn, info: si_pb2.NodeInfo) -> None:
    info.attributes.update(draw(ONE_LONG))


def _capacity(draw: st.DrawFn, info: si_pb2.NodeInfo) -> None:
    info.schedulableResource.CopyFrom(draw(resources()))


def _no_capacity(draw: st.DrawFn, info: si_pb2.NodeInfo) -> None:
    info.ClearField("schedulableResource")


NODE_MUTATIONS: list[Callable[[st.DrawFn, si_pb2.NodeInfo], None]] = [
    _node_id,
    _action,
    _attributes,
    _long_attribute,
    _capacity,
    _no_capacity,
]


@st.composite
def node_requests(draw: st.DrawFn, own: str) -> si_pb2.NodeRequest:
    def node() -> si_pb2.NodeInfo:
        info = messages.node(str(draw(st.uuids())), {"memory": draw(st.integers(1, 10**6))})
        return mutate(draw, info, NODE_MUTATIONS)

    return si_pb2.NodeRequest(rmID=draw(rm_ids(own)), nodes=[node() for _ in range(draw(st.integers(0, 5)))])
