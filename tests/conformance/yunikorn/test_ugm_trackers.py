"""yunikorn-core's user, group and queue tracker tests, held against pykorn where what they test shows
through an interface: the usage per queue level on the REST usage views, the headroom and the
maxapplications checks as asks that are allocated or stay pending.

Ported from apache/yunikorn-core pkg/scheduler/ugm/{user_tracker,group_tracker,queue_tracker,
utilities,ugm_events}_test.go at the commit in `YUNIKORN_CORE_COMMIT` (tests/conformance/upstream.py);
the code under test is pkg/scheduler/ugm/{user_tracker,group_tracker,queue_tracker}.go, reached through
the manager (manager.go) as the scheduler reaches it. How a step is driven and read: ugm_helpers.py.

Upstream builds trackers by hand: it calls increaseTrackedResource on a tracker, sets limits on it
(setLimits, or the tracker's fields), links a group with setGroupForApp. Here:
* a tracker's limits are a queues.yaml's `limits` for that user or group, on that queue, and a change
  of them is a configuration update; upstream's Go-built limits (no configuration text upstream) are
  written as plain `memory`/`vcores` quantities, upstream's usage "mem 10M, vcore 10" as 10/10;
* a group tracker exists only for a group a limit names (manager.go ensureGroup), so the group tests,
  and the user tests that link a group to every application, name group `test` in a limit on root
  (maxapplications 100, which holds nothing back);
* applications run only in leaf queues. Upstream's paths root.parent.child1 (an application) and
  root.parent.child1.child12 (another) make child1 both; here the first runs in root.parent.child1.child11,
  so every level upstream asserts keeps its numbers (child1 sums both) and child11 is one level more.

Ported cases per upstream test function:
  user_tracker_test.go   TestIncreaseTrackedResource          2 checks
                         TestDecreaseTrackedResource          4 checks
                         TestSetAndClearMaxLimits             6 checks
                         TestUTCanRunApp                      2 checks
  group_tracker_test.go  TestGTIncreaseTrackedResource        2 checks
                         TestGTDecreaseTrackedResource        4 checks
                         TestGTSetAndClearMaxLimits           6 checks
                         TestGTCanRunApp                      2 checks
  queue_tracker_test.go  TestQTIncreaseTrackedResource        1 check
                         TestQTDecreaseTrackedResource        4 checks
                         TestQTQuotaEnforcement               2 checks
                         TestHeadroom                         6 checks
                         TestQTCanRunApp                      2 checks
                         TestNewQueueTracker                  1 check
                         TestCanBeRemoved                     2 checks
                         TestGetResourceUsageDAOInfo          1 check
  Total                                                      47 cases

Not ported (13):
  * TestDecreaseAllTrackedResourceUsage (group_tracker_test.go): a group tracker helper on a state no
    interface builds (an application in the tracker's queues but not in its application list); what it
    does on a configuration change is ported in test_ugm_config.py (TestUserGroupHeadroom) and
    test_ugm.py (TestMultipleGroupLimitChange).
  * TestSetLimit (queue_tracker_test.go): the tracker's internal wildcard flags (useWildCard,
    doWildCardCheck); what they decide (a named limit wins over the wildcard, the wildcard applies to
    a user named nowhere) is ported in test_ugm.py (TestUserGroupLimit) and test_ugm_config.py
    (TestUseWildCard, TestUpdateConfigClearEarlierSetLimits).
  * TestGetParentQueuePath (utilities_test.go): a string helper.
  * ugm_events_test.go, 10 tests (TestIncUsageUser, TestIncUsageGroup, TestDecUsageUser,
    TestDecUsageGroup, TestAppGroupLinked, TestAppGroupUnlinked, TestUserLimitSet, TestUserLimitCleared,
    TestGroupLimitSet, TestGroupLimitCleared): the UG_* events, held against pykorn in
    tests/unit/test_event_facts_*; so are the event assertions inside the tracker tests ported here.
Parts of ported tests not ported: TestQTDecreaseTrackedResource's last steps (an application in
root.parent, a parent queue, and a release in a queue that does not exist: no interface sends either);
the user/group trackers' nil-receiver calls (Go).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import pytest

from tests.conformance.core_probe import CoreProbe
from tests.conformance.upstream import YUNIKORN_CORE_COMMIT, yunikorn_case
from tests.conformance.yunikorn.ugm_helpers import (
    POD,
    Json,
    Lim,
    Q,
    Ugm,
    levels,
    limits_of,
    queues_yaml,
    usage_of,
)

UPSTREAM = f"apache/yunikorn-core@{YUNIKORN_CORE_COMMIT} pkg/scheduler/ugm"

PARENT = "root.parent"
CHILD1 = "root.parent.child1"
CHILD2 = "root.parent.child2"
CHILD11 = "root.parent.child1.child11"  # upstream's application in root.parent.child1 (see above)
CHILD1_12 = "root.parent.child1.child12"
CHILD12 = "root.parent.child12"
APP1, APP2, APP3, APP4 = "test-app-1", "test-app-2", "test-app-3", "test-app-4"
USER, GROUPS = "test", ("test",)
TRACK_GROUP = Lim((), ("test",), None, 100, "track group test")  # links every application to group test


def _mem(m: int) -> dict[str, int]:
    """upstream's {"mem": "<m>M", "vcore": "<m>"}"""
    return {"mem": m * 1_000_000, "vcore": m * 1_000}


def _sq(n: int) -> dict[str, str]:
    return {"memory": str(n), "vcores": str(n)}


def cases(test: str, checks: Sequence[str]) -> list[object]:
    return [pytest.param(c, id=yunikorn_case(test, c)) for c in checks]


Scenario = Callable[[Ugm, str], Awaitable[None]]


# The queue trees ------------------------------------------------------------------------------------------
def four_paths(root_limits: Sequence[Lim] = ()) -> str:
    """root.parent.{child1.{child11, child12}, child2, child12}: upstream's path1..path4."""
    child1 = Q("child1", children=(Q("child11"), Q("child12")))
    return queues_yaml(Q("root", root_limits, (Q("parent", children=(child1, Q("child2"), Q("child12"))),)))


def two_children(
    root_limits: Sequence[Lim] = (),
    parent_limits: Sequence[Lim] = (),
    child1_limits: Sequence[Lim] = (),
    child2_limits: Sequence[Lim] = (),
) -> str:
    """root.parent.{child1, child2}: upstream's path1, path2 and path5 (root.parent)."""
    children = (Q("child1", child1_limits), Q("child2", child2_limits))
    return queues_yaml(Q("root", root_limits, (Q("parent", parent_limits, children),)))


# Usage per level (TestIncreaseTrackedResource, TestGTIncreaseTrackedResource, TestQTIncreaseTrackedResource)
INCREASED = {
    "root": _mem(80),
    PARENT: _mem(80),
    CHILD1: _mem(40),
    CHILD1_12: _mem(30),
    CHILD2: _mem(20),
    CHILD12: _mem(20),
}
INCREASE_APPS = ((APP1, CHILD11, 10), (APP2, CHILD2, 20), (APP3, CHILD1_12, 30), (APP4, CHILD12, 20))


async def _increase(s: Ugm) -> None:
    for app, queue, size in INCREASE_APPS:
        await s.app(app, queue, USER, GROUPS)
        await s.alloc(app, _mem(size))


def _usage_levels(tracker: Json | None) -> dict[str, dict[str, int]]:
    got = usage_of(tracker)
    return {p: got.get(p, ({}, []))[0] for p in INCREASED}


INCREASE = ["usage per queue level", "every application is tracked"]


@pytest.mark.parametrize("check", cases("TestIncreaseTrackedResource", INCREASE))
async def test_increase_tracked_resource(probe: CoreProbe, check: str) -> None:
    s = await Ugm.start(probe, four_paths([TRACK_GROUP]))
    await _increase(s)
    user = await s.user(USER)
    if check == INCREASE[0]:
        assert _usage_levels(user) == INCREASED
        return
    assert (user or {}).get("groups") == dict.fromkeys((APP1, APP2, APP3, APP4), "test")


@pytest.mark.parametrize("check", cases("TestGTIncreaseTrackedResource", INCREASE))
async def test_gt_increase_tracked_resource(probe: CoreProbe, check: str) -> None:
    s = await Ugm.start(probe, four_paths([TRACK_GROUP]))
    await _increase(s)
    group = await s.group("test")
    if check == INCREASE[0]:
        assert _usage_levels(group) == INCREASED
        return
    assert sorted((group or {}).get("applications") or []) == [APP1, APP2, APP3, APP4]


@pytest.mark.parametrize(
    "check", cases("TestQTIncreaseTrackedResource", ["usage and applications per queue level"])
)
async def test_qt_increase_tracked_resource(probe: CoreProbe, check: str) -> None:
    s = await Ugm.start(probe, four_paths())
    await _increase(s)
    user = await s.user(USER)
    assert _usage_levels(user) == INCREASED
    assert usage_of(user)["root"][1] == [APP1, APP2, APP3, APP4]


# Releases (TestDecreaseTrackedResource, TestGTDecreaseTrackedResource, TestQTDecreaseTrackedResource) -------
DECREASE = [
    "usage per queue level before any release",
    "partial releases lower every level",
    "an application's last release drops it and its queue",
    "the last application's last release leaves nothing",
]


async def _decrease(s: Ugm, check: str, kind: str) -> None:
    """app1 holds 70 in child1 (60 + 10), app2 20 in child2 (10 + 10); kind: user, group or queue."""
    await s.app(APP1, CHILD1, USER, GROUPS)
    await s.app(APP2, CHILD2, USER, GROUPS)
    app1_rest, app1_part = await s.alloc(APP1, _mem(60)), await s.alloc(APP1, _mem(10))
    app2_rest, app2_part = await s.alloc(APP2, _mem(10)), await s.alloc(APP2, _mem(10))

    async def tracker() -> Json | None:
        return await (s.group("test") if kind == "group" else s.user(USER))

    def apps(t: Json | None) -> list[str]:
        if kind == "user":
            return sorted(((t or {}).get("groups") or {}).keys())
        if kind == "group":
            return sorted((t or {}).get("applications") or [])
        return usage_of(t).get("root", ({}, []))[1]

    def usage(t: Json | None) -> dict[str, dict[str, int]]:
        got = usage_of(t)
        return {p: got[p][0] for p in ("root", PARENT, CHILD1, CHILD2) if p in got}

    if check == DECREASE[0]:
        t = await tracker()
        assert usage(t) == {"root": _mem(90), PARENT: _mem(90), CHILD1: _mem(70), CHILD2: _mem(20)}
        assert apps(t) == [APP1, APP2]
        return
    await s.release(*app1_part, *app2_part)
    if check == DECREASE[1]:
        t = await tracker()
        assert usage(t) == {"root": _mem(70), PARENT: _mem(70), CHILD1: _mem(60), CHILD2: _mem(10)}
        assert {CHILD1, CHILD2} <= set(levels(t)), sorted(levels(t))
        return
    await s.release(*app1_rest)
    if check == DECREASE[2]:
        t = await tracker()
        assert apps(t) == [APP2]
        assert CHILD1 not in levels(t) and CHILD2 in levels(t), sorted(levels(t))
        assert usage(t) == {"root": _mem(10), PARENT: _mem(10), CHILD2: _mem(10)}
        return
    await s.release(*app2_rest)
    assert check == DECREASE[3]
    if kind == "group":  # the group's limit on root keeps it tracked, with nothing else on it
        t = await tracker()
        assert t is not None and not t.get("applications"), t
        assert set(levels(t)) == {"root"} and not levels(t)["root"].get("resourceUsage"), t
    else:  # nothing is left on the user's trackers: the manager drops the user (manager.go:157)
        assert await s.user(USER) is None


@pytest.mark.parametrize("check", cases("TestDecreaseTrackedResource", DECREASE))
async def test_decrease_tracked_resource(probe: CoreProbe, check: str) -> None:
    await _decrease(await Ugm.start(probe, two_children([TRACK_GROUP])), check, "user")


@pytest.mark.parametrize("check", cases("TestGTDecreaseTrackedResource", DECREASE))
async def test_gt_decrease_tracked_resource(probe: CoreProbe, check: str) -> None:
    await _decrease(await Ugm.start(probe, two_children([TRACK_GROUP])), check, "group")


@pytest.mark.parametrize("check", cases("TestQTDecreaseTrackedResource", DECREASE))
async def test_qt_decrease_tracked_resource(probe: CoreProbe, check: str) -> None:
    await _decrease(await Ugm.start(probe, two_children()), check, "queue")


# Limits set, lowered and cleared (TestSetAndClearMaxLimits, TestGTSetAndClearMaxLimits) -------------------
SET_AND_CLEAR = [
    "higher limits leave the child's room",
    "higher limits leave the parent's room",
    "higher limits let another application start",
    "lower limits hold every ask and any new application",
    "the child's limit cleared, the parent's lower limit still holds",
    "both limits cleared, nothing holds",
]
U10 = {"memory": 10, "vcores": 10}


async def _set_and_clear(s: Ugm, check: str, kind: str) -> None:
    def limits(child1: tuple[int, int] | None, parent: tuple[int, int] | None) -> str:
        users, groups = ((USER,), ()) if kind == "user" else ((), ("test",))
        return two_children(
            [] if kind == "user" else [TRACK_GROUP],
            [Lim(users, groups, _sq(parent[0]), parent[1])] if parent else [],
            [Lim(users, groups, _sq(child1[0]), child1[1])] if child1 else [],
        )

    for app in (APP1, APP2, APP3, APP4):
        await s.app(app, CHILD1, USER, GROUPS)
    await s.alloc(APP1, U10)
    await s.update(limits((50, 5), (100, 10)))
    # child1: 30 in use; upstream's user runs two applications there, its group three
    for app in (APP1, APP2) if kind == "user" else (APP2, APP3):
        await s.alloc(app, U10)
    if check == SET_AND_CLEAR[0]:
        await s.assert_room(APP1, {"memory": 20, "vcores": 20})
        return
    if check == SET_AND_CLEAR[1]:  # the parent's headroom, read from a sibling leaf without limits
        await s.app("test-app-5", CHILD2, USER, GROUPS)
        await s.assert_room("test-app-5", {"memory": 70, "vcores": 70})
        return
    if check == SET_AND_CLEAR[2]:
        assert await s.fits(APP4, POD)
        return
    await s.update(limits((10, 1), (20, 1)))
    if check == SET_AND_CLEAR[3]:
        assert await s.pending(APP1, {"memory": 1}) and await s.pending(APP1, {"vcores": 1})
        assert await s.pending(APP4, POD)
        return
    await s.update(limits(None, (20, 1)))
    if check == SET_AND_CLEAR[4]:
        assert await s.pending(APP1, {"memory": 1}) and await s.pending(APP1, {"vcores": 1})
        assert await s.pending(APP4, POD)
        return
    await s.update(limits(None, None))
    assert check == SET_AND_CLEAR[5]
    assert await s.fits(APP1, {"memory": 1000, "vcores": 1000})
    assert await s.fits(APP4, POD)


@pytest.mark.parametrize("check", cases("TestSetAndClearMaxLimits", SET_AND_CLEAR))
async def test_set_and_clear_max_limits(probe: CoreProbe, check: str) -> None:
    await _set_and_clear(await Ugm.start(probe, two_children()), check, "user")


@pytest.mark.parametrize("check", cases("TestGTSetAndClearMaxLimits", SET_AND_CLEAR))
async def test_gt_set_and_clear_max_limits(probe: CoreProbe, check: str) -> None:
    await _set_and_clear(await Ugm.start(probe, two_children([TRACK_GROUP])), check, "group")


# TestUTCanRunApp / TestGTCanRunApp ------------------------------------------------------------------------
CAN_RUN = [
    "the wildcard user limit on the parent",
    "maxapplications 1 on the leaf: the running application goes on, a second waits",
]
WILDCARD_CPU = Lim(("*",), (), {"cpu": "1000"}, 3, "wildcard user limit")


async def _can_run(s: Ugm, check: str, kind: str) -> None:
    for app in (APP1, APP2):
        await s.app(app, CHILD1, USER, GROUPS)
    if check == CAN_RUN[0]:
        await s.alloc(APP1, POD)
        if kind == "user":  # applied to a new user's tracker (queue_tracker.go newQueueTracker)
            assert limits_of(await s.user(USER)).get(PARENT) == ({"cpu": 1000}, 3)
        else:  # not to a group's
            assert limits_of(await s.group("test")).get(PARENT, ({}, 0)) == ({}, 0)
        return
    own = Lim((USER,), (), None, 1) if kind == "user" else Lim((), ("test",), None, 1)
    root = [] if kind == "user" else [TRACK_GROUP]
    await s.update(two_children(root, [WILDCARD_CPU], [own]))
    await s.alloc(APP1, {"cpu": 1000})
    assert await s.fits(APP1, POD), "the running application was held back"
    assert await s.pending(APP2, POD), "a second application started past maxapplications 1"


@pytest.mark.parametrize("check", cases("TestUTCanRunApp", CAN_RUN))
async def test_ut_can_run_app(probe: CoreProbe, check: str) -> None:
    await _can_run(await Ugm.start(probe, two_children([], [WILDCARD_CPU])), check, "user")


@pytest.mark.parametrize("check", cases("TestGTCanRunApp", CAN_RUN))
async def test_gt_can_run_app(probe: CoreProbe, check: str) -> None:
    await _can_run(await Ugm.start(probe, two_children([TRACK_GROUP], [WILDCARD_CPU])), check, "group")


# TestQTQuotaEnforcement -----------------------------------------------------------------------------------
QUOTA = ["child2 at its limit holds the next ask", "the parent at its limit holds an ask in another child"]


@pytest.mark.parametrize("check", cases("TestQTQuotaEnforcement", QUOTA))
async def test_qt_quota_enforcement(probe: CoreProbe, check: str) -> None:
    def user_limit(n: int) -> list[Lim]:
        return [Lim((USER,), (), _sq(10 * n), n)]

    child1 = Q("child1", user_limit(2), (Q("child11"), Q("child12")))
    parent = Q("parent", user_limit(5), (child1, Q("child2", user_limit(2)), Q("child12")))
    s = await Ugm.start(probe, queues_yaml(Q("root", user_limit(6), (parent,))))
    for app, queue in ((APP1, CHILD11), (APP2, CHILD2), (APP3, CHILD1_12), (APP4, CHILD12)):
        await s.app(app, queue, USER, GROUPS)
    await s.alloc(APP1, U10)
    await s.alloc(APP2, U10, 2)
    if check == QUOTA[0]:
        assert await s.pending(APP2, U10)
        return
    await s.alloc(APP3, U10)
    await s.alloc(APP4, U10)
    assert await s.pending(APP4, U10)


# TestHeadroom ---------------------------------------------------------------------------------------------
HEADROOM = [
    "no limits: nothing is held",
    "the leaf's limit with no usage",
    "the leaf's limit less the usage",
    "a parent with no room left holds its children",
    "a type only the parent limits shows in the headroom",
    "usage of a type no limit names is ignored",
]


async def _headroom(s: Ugm, check: str) -> None:
    def limits(leaf: dict[str, str], parent: dict[str, str]) -> str:
        return two_children([], [Lim((USER,), (), parent, 0)], [Lim((USER,), (), leaf, 0)])

    await s.app("leaf-app", CHILD1, USER, GROUPS)
    await s.app("sibling-app", CHILD2, USER, GROUPS)
    if check == HEADROOM[0]:
        assert await s.fits("leaf-app", {"memory": 1000, "vcores": 1000})
        return
    await s.update(limits(_sq(20), _sq(40)))
    if check == HEADROOM[1]:
        await s.assert_room("leaf-app", {"memory": 20, "vcores": 20})
        return
    await s.alloc("leaf-app", U10)
    if check == HEADROOM[2]:
        await s.assert_room("leaf-app", U10)
        return
    if check == HEADROOM[3]:
        await s.update(limits(_sq(20), _sq(20)))
        await s.alloc("sibling-app", U10)
        for app in ("leaf-app", "sibling-app"):
            assert await s.pending(app, {"memory": 1}) and await s.pending(app, {"vcores": 1}), app
        return
    await s.update(limits(_sq(20), {"gpu": "1"}))
    if check == HEADROOM[5]:
        await s.alloc("sibling-app", {"unknown": 100})
    await s.assert_room("leaf-app", {"memory": 10, "vcores": 10, "gpu": 1})


@pytest.mark.parametrize("check", cases("TestHeadroom", HEADROOM))
async def test_headroom(probe: CoreProbe, check: str) -> None:
    await _headroom(await Ugm.start(probe, two_children()), check)


# TestQTCanRunApp ------------------------------------------------------------------------------------------
QT_CAN_RUN = [
    "maxapplications on the leaf: the running applications go on, a third waits",
    "maxapplications on the parent: the running applications go on, a third waits",
]


@pytest.mark.parametrize("check", cases("TestQTCanRunApp", QT_CAN_RUN))
async def test_qt_can_run_app(probe: CoreProbe, check: str) -> None:
    two = [Lim((USER,), (), None, 2)]
    s = await Ugm.start(probe, two_children([], [], two))
    for app in (APP1, APP2, APP3):
        await s.app(app, CHILD1, USER, GROUPS)
    await s.alloc(APP1, U10)
    await s.alloc(APP2, U10)
    if check == QT_CAN_RUN[1]:
        await s.update(two_children([], two, []))
    assert await s.fits(APP1, POD) and await s.fits(APP2, POD)
    assert await s.pending(APP3, POD)
    assert await s.state(APP3) == "Accepted"


# TestNewQueueTracker --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "check", cases("TestNewQueueTracker", ["a wildcard user limit on root applies to the root only"])
)
async def test_new_queue_tracker(probe: CoreProbe, check: str) -> None:
    s = await Ugm.start(probe, two_children([Lim(("*",), (), {"cpu": "100"}, 3)]))
    await s.app(APP1, CHILD1, USER, GROUPS)
    await s.alloc(APP1, POD)
    assert limits_of(await s.user(USER)) == {"root": ({"cpu": 100}, 3), PARENT: ({}, 0), CHILD1: ({}, 0)}


# TestCanBeRemoved -----------------------------------------------------------------------------------------
CAN_BE_REMOVED = ["the user is tracked while its application runs", "the user goes once nothing is left"]


@pytest.mark.parametrize("check", cases("TestCanBeRemoved", CAN_BE_REMOVED))
async def test_can_be_removed(probe: CoreProbe, check: str) -> None:
    s = await Ugm.start(probe, two_children())
    await s.app(APP1, CHILD1, USER, GROUPS)
    keys = await s.alloc(APP1, _mem(10))
    if check == CAN_BE_REMOVED[0]:
        assert set(levels(await s.user(USER))) == {"root", PARENT, CHILD1}
        return
    await s.release(*keys)
    assert await s.user(USER) is None
    assert USER not in await s.users()


# TestGetResourceUsageDAOInfo ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "check", cases("TestGetResourceUsageDAOInfo", ["the user's usage tree in YuniKorn's shape"])
)
async def test_get_resource_usage_dao_info(probe: CoreProbe, check: str) -> None:
    s = await Ugm.start(
        probe,
        two_children([], [Lim((USER,), (), None, 3)], [Lim((USER,), (), {"first": "123"}, 2)]),
    )
    await s.app(APP1, CHILD1, USER, GROUPS)
    await s.alloc(APP1, U10)
    used = {"resourceUsage": U10, "runningApplications": [APP1]}
    child = {"queuePath": CHILD1, **used, "maxResources": {"first": 123}, "maxApplications": 2}
    parent = {"queuePath": PARENT, **used, "maxApplications": 3, "children": [child]}
    assert await s.user(USER) == {
        "userName": USER,
        "queues": {"queuePath": "root", **used, "children": [parent]},
    }
