"""Change details of nodes, queues, reservations and configurations, as YuniKorn records them (the
fact table and its check: tests/unit/event_facts.py)."""

from __future__ import annotations

from collections import Counter

import pytest

from core.objects.allocation import Allocation
from core.objects.app_lifecycle import TERMINATED_TIMEOUT
from core.resources import Resource
from core.scheduler.commands import NodeAction, UpdateAllocations
from core.scheduler.cycle.parking import RESERVATION_DELAY
from core.scheduler.results import Termination
from tests.unit.domain_helpers import Cluster, drained
from tests.unit.event_facts import (
    CONFIG,
    MEM,
    NO_DEFAULT,
    NODE,
    RELOADED,
    ROOT_MAX,
    SIX,
    Fact,
    app,
    busy,
    check,
    cluster,
    ev,
    key,
    release,
    reload,
    running,
)

WILDCARD = CONFIG.replace(
    "          - name: small\n",
    "          - name: small\n            limits:\n              - {users: ['*'], maxapplications: 1}\n",
)


def foreign(c: Cluster, key: str, node_id: str, resource: dict[str, int]) -> None:
    """Another scheduler's pod on `node_id` (an allocation of no application)."""
    pod = Allocation(key, "", c.pname(), Resource(resource), node_id=node_id, foreign=True)
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(pod,)))


FACTS = [
    Fact(
        "a node is added",
        "context.go addNode: SetSchedulable (node.go SendNodeSchedulableChangedEvent), SendNodeAddedEvent; "
        "partition.go addNodeToList: root's max (queue.go SetMaxResource, QUEUE_MAX)",
        [],
        [lambda c: c.node("n1", NODE)],
        [
            ev("NODE", "n1", "SET", "NODE_SCHEDULABLE"),
            ev("NODE", "n1", "ADD", "DETAILS_NONE", res=NODE),
            ROOT_MAX,
        ],
        {
            ("n1", "NODE_SCHEDULABLE"): "schedulable: true",
            ("n1", "DETAILS_NONE"): "Node added to the scheduler",
        },
    ),
    Fact(
        "a node is added draining",
        "context.go addNode with schedulable false",
        [],
        [lambda c: c.node("n1", NODE, NodeAction.CREATE_DRAIN)],
        [
            ev("NODE", "n1", "SET", "NODE_SCHEDULABLE"),
            ev("NODE", "n1", "ADD", "DETAILS_NONE", res=NODE),
            ROOT_MAX,
        ],
        {("n1", "NODE_SCHEDULABLE"): "schedulable: false"},
    ),
    Fact(
        "a node's capacity changes",
        "context.go updateNode: node.go SetCapacity (NODE_CAPACITY), root's max",
        [lambda c: c.node("n1", NODE)],
        [lambda c: c.node_action("n1", NodeAction.UPDATE, {"memory": 12})],
        [
            ev("NODE", "n1", "SET", "NODE_CAPACITY", res={"memory": 12}),
            ev("QUEUE", "root", "SET", "QUEUE_MAX", res={"memory": 12}),
        ],
    ),
    Fact(
        "a node is drained",
        "context.go updateNode DRAIN_NODE: SetSchedulable(false) when schedulable",
        [lambda c: c.node("n1", NODE)],
        [lambda c: c.node_action("n1", NodeAction.DRAIN)],
        [ev("NODE", "n1", "SET", "NODE_SCHEDULABLE")],
        {("n1", "NODE_SCHEDULABLE"): "schedulable: false"},
    ),
    Fact(
        "a drained node is schedulable again",
        "context.go updateNode DRAIN_TO_SCHEDULABLE: SetSchedulable(true) when not schedulable",
        [lambda c: c.node("n1", NODE), lambda c: c.node_action("n1", NodeAction.DRAIN)],
        [lambda c: c.node_action("n1", NodeAction.DRAIN_TO_SCHEDULABLE)],
        [ev("NODE", "n1", "SET", "NODE_SCHEDULABLE")],
        {("n1", "NODE_SCHEDULABLE"): "schedulable: true"},
    ),
    Fact(
        "a node with a running allocation is decommissioned",
        "context.go updateNode DECOMISSION: SetSchedulable(false), SendNodeRemovedEvent; partition.go "
        "removeNodeAllocations: application.go RemoveAllocation(UNKNOWN_TERMINATION_TYPE) -> "
        "ALLOC_NODEREMOVED, ugm DecreaseTrackedResource -> UG_USER_RESOURCE REMOVE; the last allocation "
        "gone: Running -> Completing",
        [running],
        [lambda c: c.node_action("n1", NodeAction.DECOMMISSION)],
        [
            ev("NODE", "n1", "SET", "NODE_SCHEDULABLE"),
            ev("NODE", "n1", "REMOVE", "NODE_DECOMISSION"),
            ev("APP", "app", "REMOVE", "ALLOC_NODEREMOVED", "t0", MEM),
            ev("USERGROUP", "u", "REMOVE", "UG_USER_RESOURCE", "root.default", MEM),
            ev("APP", "app", "SET", "APP_COMPLETING"),
            ev("QUEUE", "root", "SET", "QUEUE_MAX"),  # no node left: root has no max
        ],
        {("n1", "NODE_DECOMISSION"): "Node removed from the scheduler"},
    ),
    Fact(
        "a node is reserved for an ask that fits no node's free room",
        "node.go Reserve: SendReservedEvent (NODE_RESERVATION ADD, the ask's key and resource)",
        [lambda c: busy(c), lambda c: c.ask("app", "t1", {"memory": 8}), lambda c: c.schedule()],
        [lambda c: c.clock.advance(RESERVATION_DELAY + 1), lambda c: c.schedule()],
        [ev("NODE", "n1", "ADD", "NODE_RESERVATION", "t1", {"memory": 8})],
    ),
    Fact(
        "the reserved node takes its ask",
        "node.go unReserve: SendUnreservedEvent (NODE_RESERVATION REMOVE); then the allocation's events",
        [
            lambda c: busy(c),
            lambda c: c.ask("app", "t1", {"memory": 8}),
            lambda c: c.schedule(),
            lambda c: c.clock.advance(RESERVATION_DELAY + 1),
            lambda c: c.schedule(),
        ],
        [lambda c: release(c, "app", "f1", Termination.STOPPED_BY_RM), lambda c: c.schedule()],
        [
            ev("USERGROUP", "u", "REMOVE", "UG_USER_RESOURCE", "root.default", SIX),
            ev("APP", "app", "REMOVE", "ALLOC_CANCEL", "f1", SIX),
            ev("NODE", "n1", "REMOVE", "NODE_ALLOC", "f1", SIX),
            ev("APP", "app", "REMOVE", "REQUEST_CANCEL", "f1", SIX),
            ev("NODE", "n1", "REMOVE", "NODE_RESERVATION", "t1", {"memory": 8}),
            ev("NODE", "n1", "ADD", "NODE_ALLOC", "t1", {"memory": 8}),
            ev("USERGROUP", "u", "ADD", "UG_USER_RESOURCE", "root.default", {"memory": 8}),
            ev("APP", "app", "ADD", "APP_ALLOC", "t1", {"memory": 8}),
        ],
    ),
    Fact(
        "a queue's maxapplications holds an application back, then lets it run",
        "application.go (queue runnable check): SendAppNotRunnableInQueueEvent / SendAppRunnableInQueueEvent "
        "(APP, NONE, APP_CANNOTRUN_QUEUE / APP_RUNNABLE_QUEUE)",
        [
            lambda c: running(c, "a1", "t0", "root.small"),
            lambda c: app(c, "a2", "root.small"),
            lambda c: c.ask("a2", "t1", MEM),
        ],
        [
            lambda c: c.schedule(),
            lambda c: release(c, "a1", "t0", Termination.STOPPED_BY_RM),
            lambda c: c.schedule(),
        ],
        [
            ev("APP", "a2", "NONE", "APP_CANNOTRUN_QUEUE"),
            ev("USERGROUP", "u", "REMOVE", "UG_USER_RESOURCE", "root.small", MEM),
            ev("APP", "a1", "SET", "APP_COMPLETING"),
            ev("APP", "a1", "REMOVE", "ALLOC_CANCEL", "t0", MEM),
            ev("NODE", "n1", "REMOVE", "NODE_ALLOC", "t0", MEM),
            ev("APP", "a1", "REMOVE", "REQUEST_CANCEL", "t0", MEM),
            ev("APP", "a2", "NONE", "APP_RUNNABLE_QUEUE"),
            ev("NODE", "n1", "ADD", "NODE_ALLOC", "t1", MEM),
            ev("USERGROUP", "u", "ADD", "UG_USER_RESOURCE", "root.small", MEM),
            ev("APP", "a2", "SET", "APP_RUNNING"),
            ev("APP", "a2", "ADD", "APP_ALLOC", "t1", MEM),
        ],
    ),
    Fact(
        "a user's maxapplications holds an application back",
        "application.go (user quota runnable check): SendAppNotRunnableQuotaEvent (APP, NONE, "
        "APP_CANNOTRUN_QUOTA)",
        [
            lambda c: running(c, "a1", "t0", "root.limited"),
            lambda c: app(c, "a2", "root.limited"),
            lambda c: c.ask("a2", "t1", MEM),
        ],
        [lambda c: c.schedule()],
        [ev("APP", "a2", "NONE", "APP_CANNOTRUN_QUOTA")],
    ),
    Fact(
        "a reload adds, resizes, reshapes and removes queues, and sets and drops user limits",
        "partition.go updatePartitionDetails -> queue.go NewConfiguredQueue (ADD DETAILS_NONE), "
        "applyConf (QUEUE_TYPE 'leaf queue: false'), setResources (QUEUE_MAX), RemoveQueue (REMOVE "
        "DETAILS_NONE); ugm manager.go UpdateConfig: setUserLimits (UG_USER_LIMIT SET), "
        "clearEarlierSetUserLimits (UG_USER_LIMIT REMOVE), setGroupLimits (UG_GROUP_LIMIT SET)",
        [],
        [lambda c: reload(c, RELOADED)],
        [
            ev("QUEUE", "root.default", "SET", "QUEUE_MAX", res={"memory": 8}),
            ev("QUEUE", "root.small", "SET", "QUEUE_TYPE"),
            ev("QUEUE", "root.small.child", "ADD", "DETAILS_NONE"),
            ev("QUEUE", "root.fresh", "ADD", "DETAILS_NONE"),
            ev("QUEUE", "root.limited", "REMOVE", "DETAILS_NONE"),
            ev("QUEUE", "root.small", "SET", "QUEUE_CONFIG"),  # pykorn's: maxapplications 1 -> 0
            ev("USERGROUP", "u", "REMOVE", "UG_USER_LIMIT", "root.limited"),
            ev("USERGROUP", "dev", "REMOVE", "UG_GROUP_LIMIT", "root.limited"),
        ],
        {("root.small", "QUEUE_TYPE"): "leaf queue: false"},
    ),
    Fact(
        "a configuration sets user and group limits",
        "ugm manager.go UpdateConfig on every configuration: setUserLimits / setGroupLimits "
        "(UG_USER_LIMIT, UG_GROUP_LIMIT SET, on the user or group, the queue as the reference)",
        [],
        [lambda c: reload(c, CONFIG)],
        [
            ev("USERGROUP", "u", "SET", "UG_USER_LIMIT", "root.limited"),
            ev("USERGROUP", "dev", "SET", "UG_GROUP_LIMIT", "root.limited"),
        ],
    ),
    Fact(
        "a node with other schedulers' pods is decommissioned",
        "partition.go removeNode: removeNodeAllocations walks the node's own allocations only (nothing for "
        "foreign ones), updatePartitionResource once",
        [lambda c: c.node("n1", NODE), lambda c: foreign(c, "other", "n1", {"memory": 3})],
        [lambda c: c.node_action("n1", NodeAction.DECOMMISSION)],
        [
            ev("NODE", "n1", "SET", "NODE_SCHEDULABLE"),
            ev("NODE", "n1", "REMOVE", "NODE_DECOMISSION"),
            ev("QUEUE", "root", "SET", "QUEUE_MAX"),
        ],
    ),
    Fact(
        "another scheduler's pod comes to a node, and goes",
        "node.go addAllocationInternal / RemoveAllocation record NODE_ALLOC for a foreign allocation too; "
        "root's max is the nodes' (no QUEUE_MAX)",
        [lambda c: c.node("n1", NODE)],
        [lambda c: foreign(c, "other", "n1", {"memory": 3}), lambda c: release(c, "", "other", None)],
        [
            ev("NODE", "n1", "ADD", "NODE_ALLOC", "other", {"memory": 3}),
            ev("NODE", "n1", "REMOVE", "NODE_ALLOC", "other", {"memory": 3}),
        ],
    ),
    Fact(
        "a configuration with a wildcard user limit",
        "ugm manager.go UpdateConfig: applyWildCardUserLimits sets it on every user tracker without a limit "
        "of its own on that queue (UG_USER_LIMIT SET); the named limits set again",
        [lambda c: running(c)],  # user u runs in root.default: YuniKorn tracks u
        [lambda c: reload(c, WILDCARD)],
        [
            ev("USERGROUP", "u", "SET", "UG_USER_LIMIT", "root.limited"),
            ev("USERGROUP", "dev", "SET", "UG_GROUP_LIMIT", "root.limited"),
            ev("USERGROUP", "u", "SET", "UG_USER_LIMIT", "root.small"),
        ],
    ),
    Fact(
        "a new user's first application, where a wildcard user limit applies",
        "ugm manager.go getUserTracker: a new user's tracker takes the wildcard limits (user_tracker.go "
        "setLimits: UG_USER_LIMIT SET on the user, the queue as the reference)",
        [lambda c: reload(c, WILDCARD)],
        [lambda c: c.app("app", "root.default", user="w")],
        [
            ev("APP", "app", "ADD", "APP_NEW"),
            ev("QUEUE", "root.default", "ADD", "QUEUE_APP", "app"),
            ev("USERGROUP", "w", "SET", "UG_USER_LIMIT", "root.small"),
        ],
    ),
    Fact(
        "a refused application is forgotten after the terminated timeout",
        "application_state.go enter_Rejected: setStateTimer(terminatedTimeout, ExpireApplication) -> "
        "Rejected -> Expired (APP_EXPIRED); partition.go cleanupExpiredApps drops it",
        [lambda c: reload(c, NO_DEFAULT), lambda c: app(c, "app", "root.nowhere")],
        [lambda c: c.clock.advance(TERMINATED_TIMEOUT + 1), lambda c: c.ctx.tick()],
        [ev("APP", "app", "SET", "APP_EXPIRED")],
    ),
]


@pytest.mark.parametrize("fact", FACTS, ids=[f.situation for f in FACTS])
def test_the_core_records_what_yunikorn_records(fact: Fact) -> None:
    check(fact)


def test_a_new_partition_records_its_queues_and_limits() -> None:
    """partition.go newPartitionContext (not silenced): NewConfiguredQueue per queue, ADD DETAILS_NONE;
    ugm UpdateConfig: the limits set. No QUEUE_MAX: no node yet."""
    c = cluster()
    drained(c)
    recorded = Counter(key(e) for e in c.ctx.events)
    assert recorded == Counter(
        [
            ev("QUEUE", q, "ADD", "DETAILS_NONE")
            for q in ("root", "root.default", "root.small", "root.limited")
        ]
        + [
            ev("USERGROUP", "u", "SET", "UG_USER_LIMIT", "root.limited"),
            ev("USERGROUP", "dev", "SET", "UG_GROUP_LIMIT", "root.limited"),
        ]
    )
