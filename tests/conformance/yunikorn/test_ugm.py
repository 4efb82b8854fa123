"""yunikorn-core's user and group limit tables (the user/group manager), held against pykorn.

Ported from apache/yunikorn-core pkg/scheduler/ugm/manager_test.go, the table tests (TestCanRunApp,
TestSeparateUserGroupHeadroom, TestUserGroupLimit, TestUserGroupMaxResourcesChange,
TestUserGroupLimitChange, TestMultipleGroupLimitChange), at the commit in `YUNIKORN_CORE_COMMIT`
(tests/conformance/upstream.py). The code under test is pkg/scheduler/ugm/manager.go with
queue_tracker.go, user_tracker.go and group_tracker.go, reached the way the scheduler reaches it:
CanRunApp before an Accepted application may allocate (objects/queue.go TryAllocate), Headroom before
each ask (objects/application.go tryAllocate), Increase/DecreaseTrackedResource on each allocation and
release. The sequence tests of the same file are in test_ugm_config.py; the tracker tests in
test_ugm_trackers.py. How a row is driven and read: tests/conformance/yunikorn/ugm_helpers.py.

Upstream's configuration helper (createConfigWithLimits) puts the limits on root.parent, a queue with
no children; here root.parent is that leaf and the applications run in it (upstream's queuePathParent).

Ported cases per upstream test function:
  TestCanRunApp                     6 of 6 rows
  TestSeparateUserGroupHeadroom     4 of 4 rows
  TestUserGroupLimit               18 of 18 rows
  TestUserGroupMaxResourcesChange   5 of 5 rows
  TestUserGroupLimitChange         12 of 12 rows
  TestMultipleGroupLimitChange      3 of 3 checks ("TestMultipleGroupLimitChange/<check>")
  Total                            48 cases

Adapted, so that the configuration passes upstream's own checks (pkg/common/configs/configvalidator.go
checkLimit: a queue whose only group limit is the wildcard is refused): the two TestUserGroupLimit rows
"maxresources/maxapplications with a wildcard user limit" (which set only a `*` group limit) add a limit
for a group no user has ("nonexistent-group", as upstream's own TestCanRunApp row "wildcard group limit"
does). It matches no user's group, so the `*` group limit is still the one that applies.

TestUserGroupMaxResourcesChange reads the limits on the trackers of user1 and group1, which upstream
creates from the configuration alone; here user1 also runs one application (an ask of `pods`, a type
no limit names), so the limit values are read while the user is tracked on both sides (whether a user
named only in the configuration is tracked is ported in test_ugm_config.py,
TestUpdateConfigClearEarlierSetLimits).

Not ported: none (0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pytest

from tests.conformance.core_probe import CoreProbe
from tests.conformance.upstream import YUNIKORN_CORE_COMMIT, yunikorn_case
from tests.conformance.yunikorn.ugm_helpers import (
    LARGE,
    MEDIUM,
    MEDIUM_MEM,
    MEDIUM_VCORES,
    POD,
    TINY,
    Lim,
    Q,
    Ugm,
    level,
    limit,
    queues_yaml,
    res,
    usage_of,
)

UPSTREAM = f"apache/yunikorn-core@{YUNIKORN_CORE_COMMIT} pkg/scheduler/ugm/manager_test.go"
PARENT = "root.parent"  # upstream queuePathParent, a leaf here
APP1, APP2, APP3 = "test-app-1", "test-app-2", "test-app-3"


def with_limits(limits: Sequence[Lim]) -> str:
    """upstream createConfigWithLimits: the limits on root.parent."""
    return queues_yaml(Q("root", children=(Q("parent", limits),)))


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...]


USER1 = User("user1", ("group1",))
USER2 = User("user2", ("group2",))
USER3 = User("user3", ("group3",))


# TestCanRunApp --------------------------------------------------------------------------------------------
CAN_RUN_APP = {
    "specific user limit": [Lim(users=("user1",), max_apps=1)],
    "specific group limit": [Lim(groups=("group1",), max_apps=1)],
    "wildcard user limit": [Lim(users=("*",), max_apps=1)],
    "wildcard group limit": [
        Lim(groups=("nonexistent-group",), max_apps=100),
        Lim(groups=("*",), max_apps=1),
    ],
    "specific user lower than specific group limit": [
        Lim(users=("user1",), max_apps=1),
        Lim(groups=("group1",), max_apps=100),
    ],
    "specific group lower than specific user limit": [
        Lim(users=("user1",), max_apps=100),
        Lim(groups=("group1",), max_apps=1),
    ],
}


@pytest.mark.parametrize(
    "limits", [pytest.param(v, id=yunikorn_case("TestCanRunApp", k)) for k, v in CAN_RUN_APP.items()]
)
async def test_can_run_app(probe: CoreProbe, limits: list[Lim]) -> None:
    """One application may run under maxapplications 1; a second one of the same user may not."""
    config = queues_yaml(Q("root", children=(Q("default", limits),)))
    s = await Ugm.start(probe, config)
    for app in (APP1, APP2):
        await s.app(app, "root.default", USER1.name, USER1.groups)
    assert await s.fits(APP1, {"memory": 50}), "the first application may run"
    assert await s.pending(APP2, POD), "a second application runs past maxapplications 1"
    assert await s.state(APP2) == "Accepted"


# TestSeparateUserGroupHeadroom ----------------------------------------------------------------------------
SEPARATE_HEADROOM = {
    "headroom with only user limit": [limit(["user1"], None, MEDIUM, 2)],
    "headroom with only group limit": [limit(None, ["group1"], MEDIUM, 2)],
    "headroom with user limit lower than group limit": [
        limit(["user1"], None, MEDIUM, 2),
        limit(None, ["group1"], LARGE, 2),
    ],
    "headroom with group limit lower than user limit": [
        limit(["user1"], None, LARGE, 2),
        limit(None, ["group1"], MEDIUM, 2),
    ],
}


@pytest.mark.parametrize(
    "limits",
    [
        pytest.param(v, id=yunikorn_case("TestSeparateUserGroupHeadroom", k))
        for k, v in SEPARATE_HEADROOM.items()
    ],
)
async def test_separate_user_group_headroom(probe: CoreProbe, limits: list[Lim]) -> None:
    """Headroom is the smaller of what the user's and the group's limits leave: 50 - 25."""
    s = await Ugm.start(probe, with_limits(limits))
    await s.app(APP1, PARENT, USER1.name, USER1.groups)
    await s.alloc(APP1, res(TINY))
    await s.assert_room(APP1, res(TINY))


# TestUserGroupLimit ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LimitRow:
    user: User
    limits: list[Lim]
    init_headroom: Mapping[str, str]
    final_headroom: Mapping[str, str] | None  # None: no room left (upstream's nil)
    can_run_app: bool = False
    headroom_available: bool = False


def _nonexistent_group() -> Lim:
    return limit(None, ["nonexistent-group"], LARGE, 2)


USER_GROUP_LIMIT = {
    # unmixed user and group limit
    "maxresources with a specific user limit": LimitRow(
        USER1, [limit(["user1"], None, MEDIUM, 2)], MEDIUM, None, can_run_app=True
    ),
    "maxapplications with a specific user limit": LimitRow(
        USER1, [limit(["user1"], None, LARGE, 1)], LARGE, MEDIUM, headroom_available=True
    ),
    "maxresources with a specific user limit and a wildcard user limit for a not specific user": LimitRow(
        USER2,
        [limit(["user1"], None, LARGE, 2), limit(["*"], None, MEDIUM, 2)],
        MEDIUM,
        None,
        can_run_app=True,
    ),
    "maxapplications with a specific user limit and a wildcard user limit for a not specific user": LimitRow(
        USER2,
        [limit(["user1"], None, LARGE, 2), limit(["*"], None, LARGE, 1)],
        LARGE,
        MEDIUM,
        headroom_available=True,
    ),
    "maxresources with a specific user limit and a wildcard user limit for a specific user": LimitRow(
        USER1,
        [limit(["user1"], None, MEDIUM, 2), limit(["*"], None, LARGE, 2)],
        MEDIUM,
        None,
        can_run_app=True,
    ),
    "maxapplications with a specific user limit and a wildcard user limit for a specific user": LimitRow(
        USER1,
        [limit(["user1"], None, LARGE, 1), limit(["*"], None, LARGE, 2)],
        LARGE,
        MEDIUM,
        headroom_available=True,
    ),
    "maxresources with a wildcard user limit": LimitRow(
        USER1, [_nonexistent_group(), limit(None, ["*"], MEDIUM, 2)], MEDIUM, None, can_run_app=True
    ),
    "maxapplications with a wildcard user limit": LimitRow(
        USER1, [_nonexistent_group(), limit(None, ["*"], LARGE, 1)], LARGE, MEDIUM, headroom_available=True
    ),
    "maxresources with a specific group limit": LimitRow(
        USER1, [limit(None, ["group1"], MEDIUM, 2)], MEDIUM, None, can_run_app=True
    ),
    "maxapplications with a specific group limit": LimitRow(
        USER1, [limit(None, ["group1"], LARGE, 1)], LARGE, MEDIUM, headroom_available=True
    ),
    "maxresources with a specific group limit and a wildcard group limit for a not specific group user": (
        LimitRow(
            USER2,
            [limit(None, ["group1"], LARGE, 2), limit(None, ["*"], MEDIUM, 2)],
            MEDIUM,
            None,
            can_run_app=True,
        )
    ),
    "maxapplications with a specific group limit and a wildcard group limit for a not specific group user": (
        LimitRow(
            USER2,
            [limit(None, ["group1"], LARGE, 2), limit(None, ["*"], LARGE, 1)],
            LARGE,
            MEDIUM,
            headroom_available=True,
        )
    ),
    "maxresources with a specific group limit and a wildcard group limit for a specific group user": LimitRow(
        USER1,
        [limit(None, ["group1"], MEDIUM, 2), limit(None, ["*"], LARGE, 2)],
        MEDIUM,
        None,
        can_run_app=True,
    ),
    "maxapplications with a specific group limit and a wildcard group limit for a specific group user": (
        LimitRow(
            USER1,
            [limit(None, ["group1"], LARGE, 1), limit(None, ["*"], LARGE, 2)],
            LARGE,
            MEDIUM,
            headroom_available=True,
        )
    ),
    # mixed user and group limit
    "maxresources with user limit lower than group limit": LimitRow(
        USER1,
        [limit(["user1"], None, MEDIUM, 2), limit(None, ["group1"], LARGE, 2)],
        MEDIUM,
        None,
        can_run_app=True,
    ),
    "maxapplications with user limit lower than group limit": LimitRow(
        USER1,
        [limit(["user1"], None, LARGE, 1), limit(None, ["group1"], LARGE, 2)],
        LARGE,
        MEDIUM,
        headroom_available=True,
    ),
    "maxresources with gorup limit lower than user limit": LimitRow(
        USER1,
        [limit(["user1"], None, LARGE, 2), limit(None, ["group1"], MEDIUM, 2)],
        MEDIUM,
        None,
        can_run_app=True,
    ),
    "maxapplications with group limit lower than user limit": LimitRow(
        USER1,
        [limit(["user1"], None, LARGE, 2), limit(None, ["group1"], LARGE, 1)],
        LARGE,
        MEDIUM,
        headroom_available=True,
    ),
}


@pytest.mark.parametrize(
    "row", [pytest.param(v, id=yunikorn_case("TestUserGroupLimit", k)) for k, v in USER_GROUP_LIMIT.items()]
)
async def test_user_group_limit(probe: CoreProbe, row: LimitRow) -> None:
    """Headroom before and after a medium allocation, the user's usage on REST, whether a second
    application may start, and whether another medium ask fits."""
    s = await Ugm.start(probe, with_limits(row.limits))
    for app in (APP1, APP2):
        await s.app(app, PARENT, row.user.name, row.user.groups)
    # the headroom before any usage: one more than it, in any type, does not fit
    init = res(row.init_headroom)
    over_keys = {k: (await s.ask(APP1, {k: v + 1}))[0] for k, v in init.items()}
    await s.settle()
    assert not any(s.allocated(k) for k in over_keys.values()), (
        f"an ask over the headroom {init} was allocated"
    )
    # IncreaseTrackedResource(medium), exactly the headroom of the maxresources rows
    await s.alloc(APP1, res(MEDIUM))
    tracked = usage_of(await s.user(row.user.name))
    assert tracked.get("root") == (res(MEDIUM), [APP1]), tracked
    assert tracked.get(PARENT) == (res(MEDIUM), [APP1]), tracked
    # the headroom after it: nothing over it fits
    final = res(row.final_headroom) if row.final_headroom is not None else {"memory": 0, "vcores": 0}
    over_keys = {k: (await s.ask(APP1, {k: v + 1}))[0] for k, v in final.items()}
    await s.settle()
    assert not any(s.allocated(k) for k in over_keys.values()), (
        f"an ask over the headroom {final} was allocated"
    )
    # CanRunApp for a second application of the user
    assert await s.fits(APP2, POD) == row.can_run_app
    assert (await s.state(APP2) == "Running") == row.can_run_app
    # Headroom: does another medium ask fit
    assert await s.fits(APP1, res(MEDIUM)) == row.headroom_available


# TestUserGroupMaxResourcesChange --------------------------------------------------------------------------
def _ug(max_res: Mapping[str, str] | None) -> list[Lim]:
    return [limit(["user1"], ["group1"], max_res, 2)]


MAX_RESOURCES_CHANGE = {
    "Updated specific user & group max resources": (_ug(LARGE), _ug(MEDIUM)),
    "Updated specific user & group max resources with mem only": (_ug(MEDIUM), _ug(MEDIUM_MEM)),
    "Updated specific user & group max resources with vcores only": (_ug(MEDIUM_MEM), _ug(MEDIUM_VCORES)),
    "Updated specific user & group max resources with nil resource": (_ug(MEDIUM_MEM), _ug({})),
    "Updated specific user & group max resources with nil": (_ug(MEDIUM_MEM), _ug(None)),
}


@pytest.mark.parametrize(
    ("limits", "new_limits"),
    [
        pytest.param(*v, id=yunikorn_case("TestUserGroupMaxResourcesChange", k))
        for k, v in MAX_RESOURCES_CHANGE.items()
    ],
)
async def test_user_group_max_resources_change(
    probe: CoreProbe, limits: list[Lim], new_limits: list[Lim]
) -> None:
    """The maxResources on user1's and group1's root.parent follow the configuration."""
    s = await Ugm.start(probe, with_limits(limits))
    await s.app(APP1, PARENT, USER1.name, USER1.groups)
    await s.alloc(APP1, POD)
    for lims in (limits, new_limits):
        if lims is new_limits:
            await s.update(with_limits(new_limits))
        expected = res(lims[0].max_resources)
        for who, tracker in (("user1", await s.user("user1")), ("group1", await s.group("group1"))):
            assert tracker is not None, f"{who} is not tracked"
            got = level(tracker, PARENT).get("maxResources") or {}
            assert got == expected, f"{who} maxResources on {PARENT}: {got}, expected {expected}"


# TestUserGroupLimitChange ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ChangeRow:
    user: User
    limits: list[Lim]
    new_limits: list[Lim]
    max_apps_exceeded: bool = False
    max_resources_exceeded: bool = False


def _named(
    name: str, users: Sequence[str], groups: Sequence[str], max_res: Mapping[str, str], apps: int
) -> Lim:
    return Lim(tuple(users), tuple(groups), max_res, apps, name)


LIMIT_CHANGE = {
    # user limit only
    "maxresources with an updated specific user limit": ChangeRow(
        USER1,
        [limit(["user1"], None, LARGE, 2)],
        [limit(["user1"], None, MEDIUM, 2)],
        max_resources_exceeded=True,
    ),
    "maxapplications with an updated specific user limit": ChangeRow(
        USER1, [limit(["user1"], None, LARGE, 2)], [limit(["user1"], None, LARGE, 1)], max_apps_exceeded=True
    ),
    # group limit only
    "maxresources with an updated specific group limit": ChangeRow(
        USER1,
        [limit(None, ["group1"], LARGE, 2)],
        [limit(None, ["group1"], MEDIUM, 2)],
        max_resources_exceeded=True,
    ),
    "maxapplications with an updated specific group limit": ChangeRow(
        USER1,
        [limit(None, ["group1"], LARGE, 2)],
        [limit(None, ["group1"], LARGE, 1)],
        max_apps_exceeded=True,
    ),
    # user wildcard limit
    "maxresources with an updated wildcard user limit": ChangeRow(
        USER2,
        [limit(["user1"], None, TINY, 2), limit(["*"], None, LARGE, 2)],
        [limit(["user1"], None, LARGE, 2), limit(["*"], None, MEDIUM, 2)],
        max_resources_exceeded=True,
    ),
    "maxapplications with an updated wildcard user limit": ChangeRow(
        USER2,
        [limit(["user1"], None, TINY, 1), limit(["*"], None, LARGE, 2)],
        [limit(["user1"], None, LARGE, 2), limit(["*"], None, LARGE, 1)],
        max_apps_exceeded=True,
    ),
    # group wildcard limit
    "maxresources with an updated wildcard group limit": ChangeRow(
        USER2,
        [limit(None, ["group1"], TINY, 2), limit(None, ["*"], LARGE, 2)],
        [limit(None, ["group1"], LARGE, 2), limit(None, ["*"], MEDIUM, 2)],
        max_resources_exceeded=True,
    ),
    "maxapplications with an updated wildcard group limit": ChangeRow(
        USER2,
        [limit(None, ["group1"], TINY, 1), limit(None, ["*"], LARGE, 2)],
        [limit(None, ["group1"], LARGE, 2), limit(None, ["*"], LARGE, 1)],
        max_apps_exceeded=True,
    ),
    # in a different limit
    "maxresources with a new specific user limit": ChangeRow(
        USER1,
        [_named("parent queue limit for specific user", ["user1"], [], LARGE, 2)],
        [_named("new parent queue limit for specific user", ["user1"], [], MEDIUM, 2)],
        max_resources_exceeded=True,
    ),
    "maxapplications with a new specific user limit": ChangeRow(
        USER1,
        [_named("parent queue limit for specific user", ["user1"], [], LARGE, 2)],
        [_named("new parent queue limit for specific user", ["user1"], [], LARGE, 1)],
        max_apps_exceeded=True,
    ),
    "maxresources with a new specific group limit": ChangeRow(
        USER1,
        [_named("parent queue limit for specific group", [], ["group1"], LARGE, 2)],
        [_named("new parent queue limit for specific group", [], ["group1"], MEDIUM, 2)],
        max_resources_exceeded=True,
    ),
    "maxapplications with a new specific group limit": ChangeRow(
        USER1,
        [_named("parent queue limit for specific group", [], ["group1"], LARGE, 2)],
        [_named("new parent queue limit for specific group", [], ["group1"], LARGE, 1)],
        max_apps_exceeded=True,
    ),
}


@pytest.mark.parametrize(
    "row", [pytest.param(v, id=yunikorn_case("TestUserGroupLimitChange", k)) for k, v in LIMIT_CHANGE.items()]
)
async def test_user_group_limit_change(probe: CoreProbe, row: ChangeRow) -> None:
    """Two medium applications, one ends; after the limits change, may a new application start, and
    does another medium ask fit?"""
    s = await Ugm.start(probe, with_limits(row.limits))
    for app in (APP1, APP2, APP3):
        await s.app(app, PARENT, row.user.name, row.user.groups)
    await s.alloc(APP1, res(MEDIUM))
    (second,) = await s.alloc(APP2, res(MEDIUM))
    await s.release(second)  # the application's last allocation: it leaves the trackers
    await s.update(with_limits(row.new_limits))
    # CanRunApp for a new application (upstream asks for TestApp2, which no longer runs)
    assert await s.fits(APP3, POD) == (not row.max_apps_exceeded)
    # Headroom: does another medium ask fit
    assert await s.fits(APP1, res(MEDIUM)) == (not row.max_resources_exceeded)


# TestMultipleGroupLimitChange -----------------------------------------------------------------------------
MULTIPLE_GROUP_CHECKS = [
    "user1 still can increase usage within the quota",
    "user2 can't increase usage more than wildcard limit",
    "user3 can't increase usage more than wildcard limit",
]


@pytest.mark.parametrize(
    "check",
    [pytest.param(c, id=yunikorn_case("TestMultipleGroupLimitChange", c)) for c in MULTIPLE_GROUP_CHECKS],
)
async def test_multiple_group_limit_change(probe: CoreProbe, check: str) -> None:
    """A group dropped from a named group limit falls back on the wildcard group limit, which the
    users of unnamed groups already fill."""
    users = {"1": USER1, "2": USER2, "3": USER3}
    before = [limit(None, ["group1", "group2"], LARGE, 2), limit(None, ["*"], MEDIUM, 1)]
    s = await Ugm.start(probe, with_limits(before))
    for n, user in users.items():
        for m in ("1", "2"):
            await s.app(f"test-app-{n}-{m}", PARENT, user.name, user.groups)
    for n in users:  # all users can increase usage within the quota
        await s.alloc(f"test-app-{n}-1", res(MEDIUM))
    after = [limit(None, ["group1"], LARGE, 2), limit(None, ["*"], MEDIUM, 1)]
    await s.update(with_limits(after))
    n = check[len("user") : len("user") + 1]
    fits = await s.fits(f"test-app-{n}-2", res(MEDIUM))
    assert fits == (n == "1"), f"user{n}'s new medium ask {'was' if fits else 'was not'} allocated"
