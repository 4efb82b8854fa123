"""Change details of applications, asks and allocations, as YuniKorn records them (the fact table
and its check: tests/unit/event_facts.py)."""

from __future__ import annotations

import pytest

from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler.commands import AppRemove, UpdateAllocations, UpdateApplications
from core.scheduler.results import Termination
from tests.unit.domain_helpers import drained
from tests.unit.event_facts import (
    MEM,
    NO_DEFAULT,
    NODE,
    USER_A1,
    Fact,
    app,
    check,
    cluster,
    ev,
    gang,
    real_task,
    release,
    reload,
    running,
)

FACTS = [
    Fact(
        "an application is added",
        "application.go NewApplication: SendNewApplicationEvent (APP_NEW); queue.go AddApplication: "
        "QUEUE_APP",
        [],
        [lambda c: app(c)],
        [ev("APP", "app", "ADD", "APP_NEW"), ev("QUEUE", "root.default", "ADD", "QUEUE_APP", "app")],
    ),
    Fact(
        "an ask is added to a new application",
        "application.go AddAllocationAsk: New -> Accepted (SendStateChangeEvent), SendNewAskEvent",
        [lambda c: app(c)],
        [lambda c: c.ask("app", "t0", MEM)],
        [ev("APP", "app", "ADD", "APP_REQUEST", "t0", MEM), ev("APP", "app", "SET", "APP_ACCEPTED")],
    ),
    Fact(
        "an ask is allocated",
        "node.go addAllocationInternal: NODE_ALLOC ADD; application.go addAllocationInternal: "
        "Accepted -> Running, ugm IncreaseTrackedResource (UG_USER_RESOURCE ADD), SendNewAllocationEvent",
        [lambda c: c.node("n1", NODE), lambda c: app(c), lambda c: c.ask("app", "t0", MEM)],
        [lambda c: c.schedule()],
        [
            ev("NODE", "n1", "ADD", "NODE_ALLOC", "t0", MEM),
            USER_A1,
            ev("APP", "app", "SET", "APP_RUNNING"),
            ev("APP", "app", "ADD", "APP_ALLOC", "t0", MEM),
        ],
    ),
    Fact(
        "an ask is allocated to a user whose group has limits",
        "ugm manager.go IncreaseTrackedResource: ensureGroupTrackerForApp -> user_tracker.go "
        "setGroupForApp (UG_APP_LINK SET); group_tracker.go increaseTrackedResource (UG_GROUP_RESOURCE ADD)",
        [
            lambda c: c.node("n1", NODE),
            lambda c: app(c, queue="root.limited", groups=("dev",)),
            lambda c: c.ask("app", "t0", MEM),
        ],
        [lambda c: c.schedule()],
        [
            ev("NODE", "n1", "ADD", "NODE_ALLOC", "t0", MEM),
            ev("USERGROUP", "u", "ADD", "UG_USER_RESOURCE", "root.limited", MEM),
            ev("USERGROUP", "dev", "SET", "UG_APP_LINK", "app"),
            ev("USERGROUP", "dev", "ADD", "UG_GROUP_RESOURCE", "root.limited", MEM),
            ev("APP", "app", "SET", "APP_RUNNING"),
            ev("APP", "app", "ADD", "APP_ALLOC", "t0", MEM),
        ],
    ),
    Fact(
        "the RM removes a pending ask",
        "partition.go removeAllocation -> application.go RemoveAllocationAsk: REQUEST_CANCEL",
        [lambda c: running(c), lambda c: c.ask("app", "t1", {"memory": 50})],
        [lambda c: release(c, "app", "t1", Termination.STOPPED_BY_RM)],
        [ev("APP", "app", "REMOVE", "REQUEST_CANCEL", "t1", {"memory": 50})],
    ),
    Fact(
        "the RM releases an allocation (STOPPED_BY_RM)",
        "partition.go removeAllocation: application.go RemoveAllocation -> ugm decrease (UG_USER_RESOURCE "
        "REMOVE), Running -> Completing, ALLOC_CANCEL; node.go RemoveAllocation (NODE_ALLOC REMOVE); "
        "RemoveAllocationAsk (REQUEST_CANCEL: the ask goes with its allocation)",
        [running],
        [lambda c: release(c, "app", "t0", Termination.STOPPED_BY_RM)],
        [
            ev("USERGROUP", "u", "REMOVE", "UG_USER_RESOURCE", "root.default", MEM),
            ev("APP", "app", "SET", "APP_COMPLETING"),
            ev("APP", "app", "REMOVE", "ALLOC_CANCEL", "t0", MEM),
            ev("NODE", "n1", "REMOVE", "NODE_ALLOC", "t0", MEM),
            ev("APP", "app", "REMOVE", "REQUEST_CANCEL", "t0", MEM),
        ],
    ),
    Fact(
        "a group-linked application's last allocation is released",
        "user_tracker.go decreaseTrackedResource with removeApp: UG_APP_LINK REMOVE; "
        "UG_GROUP_RESOURCE REMOVE",
        [
            lambda c: c.node("n1", NODE),
            lambda c: app(c, queue="root.limited", groups=("dev",)),
            lambda c: c.ask("app", "t0", MEM),
            lambda c: c.schedule(),
        ],
        [lambda c: release(c, "app", "t0", Termination.STOPPED_BY_RM)],
        [
            ev("USERGROUP", "u", "REMOVE", "UG_USER_RESOURCE", "root.limited", MEM),
            ev("USERGROUP", "dev", "REMOVE", "UG_GROUP_RESOURCE", "root.limited", MEM),
            ev("USERGROUP", "dev", "REMOVE", "UG_APP_LINK", "app"),
            ev("APP", "app", "SET", "APP_COMPLETING"),
            ev("APP", "app", "REMOVE", "ALLOC_CANCEL", "t0", MEM),
            ev("NODE", "n1", "REMOVE", "NODE_ALLOC", "t0", MEM),
            ev("APP", "app", "REMOVE", "REQUEST_CANCEL", "t0", MEM),
        ],
    ),
    Fact(
        "the RM removes an application with an allocation and a pending ask",
        "partition.go removeApplication: application.go RemoveAllAllocations (ALLOC_CANCEL each), node.go "
        "RemoveAllocation (NODE_ALLOC REMOVE), RemoveAllocationAsk('') (REQUEST_CANCEL for every request, "
        "the allocated one too); queue.go RemoveApplication (QUEUE_APP REMOVE, app REMOVE DETAILS_NONE)",
        [lambda c: running(c), lambda c: c.ask("app", "t1", {"memory": 50})],
        [lambda c: c.ctx.apply(UpdateApplications(c.rm_id, removes=(AppRemove("app", c.pname()),)))],
        [
            ev("APP", "app", "REMOVE", "REQUEST_CANCEL", "t1", {"memory": 50}),
            ev("USERGROUP", "u", "REMOVE", "UG_USER_RESOURCE", "root.default", MEM),
            ev("APP", "app", "REMOVE", "ALLOC_CANCEL", "t0", MEM),
            ev("NODE", "n1", "REMOVE", "NODE_ALLOC", "t0", MEM),
            ev("APP", "app", "REMOVE", "REQUEST_CANCEL", "t0", MEM),
            ev("APP", "app", "SET", "APP_COMPLETING"),
            ev("APP", "app", "SET", "APP_COMPLETED"),  # pykorn's: listed as Completed (YuniKorn's is dropped)
            ev("QUEUE", "root.default", "REMOVE", "QUEUE_APP", "app"),
            ev("APP", "app", "REMOVE", "DETAILS_NONE"),
        ],
    ),
    Fact(
        "a required-node ask preempts an allocation, and the RM confirms",
        "preemption.go / required_node_preemptor.go: victim SendPreemptedBySchedulerEvent (a REQUEST "
        "event on the victim); partition.go removeAllocation(PREEMPTED_BY_SCHEDULER): ALLOC_PREEMPT, "
        "NODE_ALLOC REMOVE, REQUEST_CANCEL",
        [
            lambda c: c.node("n1", {"memory": 2}),
            lambda c: app(c, "work"),
            lambda c: c.ask("work", "w0", MEM),
            lambda c: c.schedule(),
            lambda c: app(c, "ds"),
        ],
        [
            lambda c: c.ctx.apply(
                UpdateAllocations(
                    c.rm_id,
                    allocations=(
                        Allocation(
                            "ds-0",
                            "ds",
                            c.pname(),
                            Resource(MEM),
                            priority=5,
                            tags={"yunikorn.apache.org/requiredNode": "n1"},
                        ),
                    ),
                )
            ),
            lambda c: c.schedule(),
            lambda c: release(c, "work", "w0", Termination.PREEMPTED_BY_SCHEDULER),
        ],
        [
            ev("APP", "ds", "ADD", "APP_REQUEST", "ds-0", MEM),
            ev("APP", "ds", "SET", "APP_ACCEPTED"),
            ev("NODE", "n1", "ADD", "NODE_RESERVATION", "ds-0", MEM),  # its required node, held for it
            ev("REQUEST", "w0", "NONE", "DETAILS_NONE", "work", MEM),
            ev("USERGROUP", "u", "REMOVE", "UG_USER_RESOURCE", "root.default", MEM),
            ev("APP", "work", "SET", "APP_COMPLETING"),
            ev("APP", "work", "REMOVE", "ALLOC_PREEMPT", "w0", MEM),
            ev("NODE", "n1", "REMOVE", "NODE_ALLOC", "w0", MEM),
            ev("APP", "work", "REMOVE", "REQUEST_CANCEL", "w0", MEM),
        ],
        {("w0", "DETAILS_NONE"): "Preempted by ds-0 from application ds in root.default"},
        requests=frozenset({"w0"}),
    ),
    Fact(
        "a placeholder is replaced by its real task",
        "application.go ReplaceAllocation: removeAllocationInternal(PLACEHOLDER_REPLACED) -> ALLOC_REPLACED "
        "on the placeholder, the real allocation added (APP_ALLOC); RemoveAllocationAsk (REQUEST_CANCEL)",
        [
            lambda c: c.node("n1", NODE),
            lambda c: gang(c, 2),  # (with one, YuniKorn's app goes Completing and back to Running)
            lambda c: c.schedule(),
            lambda c: real_task(c, "real-0"),
            lambda c: c.schedule(),
        ],
        [lambda c: release(c, "job", "ph-1", Termination.PLACEHOLDER_REPLACED)],  # the one real-0 took
        [
            ev("USERGROUP", "u", "REMOVE", "UG_USER_RESOURCE", "root.default", MEM),
            ev("APP", "job", "REMOVE", "ALLOC_REPLACED", "ph-1", MEM),
            # pykorn's: the swap on the node shows as the placeholder out and the task in (YuniKorn's
            # node.ReplaceAllocation records nothing); docs/rest.md says so.
            ev("NODE", "n1", "REMOVE", "NODE_ALLOC", "ph-1", MEM),
            ev("NODE", "n1", "ADD", "NODE_ALLOC", "real-0", MEM),
            ev("APP", "job", "REMOVE", "REQUEST_CANCEL", "ph-1", MEM),
            ev("USERGROUP", "u", "ADD", "UG_USER_RESOURCE", "root.default", MEM),
            ev("APP", "job", "ADD", "APP_ALLOC", "real-0", MEM),
        ],
    ),
    Fact(
        "a gang's placeholder timeout passes before the gang is allocated (Soft)",
        "application.go timeoutPlaceholderProcessing: Accepted -> Resuming, removeAsksInternal('', "
        "REQUEST_TIMEOUT) for every request, the allocated placeholder's too; its ALLOC_TIMEOUT when the RM "
        "confirms",
        [lambda c: c.node("n1", {"memory": 2}), lambda c: gang(c, 2), lambda c: c.schedule()],
        [
            lambda c: c.clock.advance(60),
            lambda c: c.ctx.tick(),
            lambda c: release(c, "job", "ph-0", Termination.TIMEOUT),
        ],
        [
            ev("APP", "job", "SET", "APP_RESUMING"),
            ev("APP", "job", "REMOVE", "REQUEST_TIMEOUT", "ph-0", MEM),
            ev("APP", "job", "REMOVE", "REQUEST_TIMEOUT", "ph-1", MEM),
            ev("USERGROUP", "u", "REMOVE", "UG_USER_RESOURCE", "root.default", MEM),
            ev("APP", "job", "REMOVE", "ALLOC_TIMEOUT", "ph-0", MEM),
            ev("NODE", "n1", "REMOVE", "NODE_ALLOC", "ph-0", MEM),
            ev("APP", "job", "SET", "APP_ACCEPTED"),  # Resuming -> Accepted, its placeholders gone
            ev("APP", "job", "SET", "APP_COMPLETING"),  # (pykorn's: nothing left to run)
        ],
    ),
    Fact(
        "a completed application leaves its queue",
        "partition.go cleanupExpiredApps / moveTerminatedApp: queue.go RemoveApplication (QUEUE_APP REMOVE, "
        "app REMOVE DETAILS_NONE) once Completing -> Completed",
        [lambda c: running(c), lambda c: release(c, "app", "t0", Termination.STOPPED_BY_RM)],
        [lambda c: c.clock.advance(31), lambda c: c.ctx.tick()],
        [
            ev("APP", "app", "SET", "APP_COMPLETED"),
            ev("QUEUE", "root.default", "REMOVE", "QUEUE_APP", "app"),
            ev("APP", "app", "REMOVE", "DETAILS_NONE"),
        ],
    ),
    Fact(
        "the RM ends a real task while it takes its placeholder's place",
        "partition.go removeAllocation: the task is no allocation of its application yet (RemoveAllocation "
        "finds none), but a request: RemoveAllocationAsk (REQUEST_CANCEL)",
        [
            lambda c: c.node("n1", NODE),
            lambda c: gang(c, 2),
            lambda c: c.schedule(),
            lambda c: real_task(c, "real-0"),
            lambda c: real_task(c, "real-1"),
            lambda c: c.schedule(),
        ],
        [lambda c: release(c, "job", "real-0", Termination.STOPPED_BY_RM)],
        [ev("APP", "job", "REMOVE", "REQUEST_CANCEL", "real-0", MEM)],
    ),
    Fact(
        "the RM releases everything an application holds (no allocation key)",
        "partition.go processAllocationRelease with an empty key: application.go RemoveAllAllocations "
        "(ALLOC_CANCEL each, the user's usage down by the total in one event, Running -> Completing); "
        "node.go RemoveAllocation each; RemoveAllocationAsk('') (REQUEST_CANCEL each)",
        [lambda c: running(c), lambda c: c.ask("app", "t1", MEM), lambda c: c.schedule()],
        [lambda c: release(c, "app", "", Termination.STOPPED_BY_RM)],
        [
            ev("APP", "app", "REMOVE", "ALLOC_CANCEL", "t0", MEM),
            ev("APP", "app", "REMOVE", "ALLOC_CANCEL", "t1", MEM),
            ev("USERGROUP", "u", "REMOVE", "UG_USER_RESOURCE", "root.default", {"memory": 4}),
            ev("APP", "app", "SET", "APP_COMPLETING"),
            ev("NODE", "n1", "REMOVE", "NODE_ALLOC", "t0", MEM),
            ev("NODE", "n1", "REMOVE", "NODE_ALLOC", "t1", MEM),
            ev("APP", "app", "REMOVE", "REQUEST_CANCEL", "t0", MEM),
            ev("APP", "app", "REMOVE", "REQUEST_CANCEL", "t1", MEM),
        ],
    ),
    Fact(
        "a group-linked application's last allocation goes while it still asks for more",
        "application.go removeAllocationInternal: removeApp only once nothing is allocated or pending "
        "(hasZeroAllocations), so the group stays linked (no UG_APP_LINK REMOVE) and it stays Running",
        [
            lambda c: c.node("n1", NODE),
            lambda c: app(c, queue="root.limited", groups=("dev",)),
            lambda c: c.ask("app", "t0", MEM),
            lambda c: c.schedule(),
            lambda c: c.ask("app", "t1", {"memory": 50}),
        ],
        [lambda c: release(c, "app", "t0", Termination.STOPPED_BY_RM)],
        [
            ev("USERGROUP", "u", "REMOVE", "UG_USER_RESOURCE", "root.limited", MEM),
            ev("USERGROUP", "dev", "REMOVE", "UG_GROUP_RESOURCE", "root.limited", MEM),
            ev("APP", "app", "REMOVE", "ALLOC_CANCEL", "t0", MEM),
            ev("NODE", "n1", "REMOVE", "NODE_ALLOC", "t0", MEM),
            ev("APP", "app", "REMOVE", "REQUEST_CANCEL", "t0", MEM),
        ],
    ),
    Fact(
        "an allocation is resized in place",
        "application.go UpdateAllocationResources: incUserResourceUsage(delta) (UG_USER_RESOURCE ADD of the "
        "difference)",
        [lambda c: running(c)],
        [lambda c: c.ask("app", "t0", {"memory": 3}, node_id="n1")],
        [
            ev("USERGROUP", "u", "ADD", "UG_USER_RESOURCE", "root.default", {"memory": 1}),
            ev("APP", "app", "SET", "APP_ALLOC", "t0", {"memory": 3}),  # pykorn's: the new size
        ],
    ),
    Fact(
        "an application is rejected",
        "context.go handleRMUpdateApplicationEvent: objects.NewApplication (APP_NEW), then "
        "partition.AddRejectedApplication (New -> Rejected, APP_REJECT)",
        [lambda c: reload(c, NO_DEFAULT)],  # (no root.default to fall back to)
        [lambda c: app(c, "app", "root.nowhere")],
        [ev("APP", "app", "ADD", "APP_NEW"), ev("APP", "app", "SET", "APP_REJECT")],
    ),
    Fact(
        "an application ID already there is refused",
        "context.go handleRMUpdateApplicationEvent: AddApplication fails, the new one rejected (APP_NEW, "
        "APP_REJECT); the running one untouched",
        [lambda c: app(c)],
        [lambda c: app(c)],
        [ev("APP", "app", "ADD", "APP_NEW"), ev("APP", "app", "SET", "APP_REJECT")],
    ),
    Fact(
        "a real task needs more than its placeholder holds",
        "application.go tryPlaceholderAllocate: SendPlaceholderLargerEvent (a REQUEST event on the "
        "placeholder's key, the real task's resource), the placeholder released",
        [lambda c: c.node("n1", NODE), lambda c: gang(c, 1), lambda c: c.schedule()],
        [lambda c: real_task(c, "big", {"memory": 3}), lambda c: c.schedule()],
        [
            ev("APP", "job", "ADD", "APP_REQUEST", "big", {"memory": 3}),
            ev("REQUEST", "ph-0", "NONE", "DETAILS_NONE", "job", {"memory": 3}),
        ],
        {
            ("ph-0", "DETAILS_NONE"): "Task group 'tg' in application 'job': allocation resources "
            "'map[memory:3]' are not matching placeholder 'map[memory:2]' allocation with ID 'ph-0'"
        },
        requests=frozenset({"ph-0"}),
    ),
]


@pytest.mark.parametrize("fact", FACTS, ids=[f.situation for f in FACTS])
def test_the_core_records_what_yunikorn_records(fact: Fact) -> None:
    check(fact)


def test_tracking_off_records_nothing_of_any_of_it() -> None:
    c = cluster()
    c.ctx.events.tracking = False
    running(c)
    c.release("app", "t0")
    drained(c)
    assert len(c.ctx.events) == 0 and c.ctx.events.highest_id == -1
