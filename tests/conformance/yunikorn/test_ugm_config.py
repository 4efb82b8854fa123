"""yunikorn-core's user and group manager sequence tests: group resolution, tracking as applications
come and go, and configuration changes while applications run. Held against pykorn.

Ported from apache/yunikorn-core pkg/scheduler/ugm/manager_test.go (the tests that are a sequence of
steps rather than a table) at the commit in `YUNIKORN_CORE_COMMIT` (tests/conformance/upstream.py);
the code under test is pkg/scheduler/ugm/manager.go (UpdateConfig and what it resets, ensureGroup,
Headroom, CanRunApp, Increase/DecreaseTrackedResource) with the trackers. The table tests of the same
file are in test_ugm.py, which also says how a step is driven and read (ugm_helpers.py).

Each meaningful check of a sequence is one case, "TestX/<check>": the case runs upstream's steps up to
that check (configurations, allocations, releases) and asserts only that check. Upstream's queue paths
are kept; queues upstream only names in a call (root.parent.child1, child2, root.parent.other...) are
added to the configuration as leaves without limits, which the user/group manager does not see.
Applications that upstream gives one ID across users or queues get one ID each here (an application
has one user and one queue). DecreaseTrackedResource with removeApp is the release of an application's
last allocation (with nothing pending: application.go removeAllocationInternal, hasZeroAllocations).

Where upstream asserts a tracker exists or not (GetUserTracker/GetGroupTracker, the tracker maps'
sizes) the case reads it on REST: a tracked user is listed on /usage/users and served on /usage/user/{u}
(404 when not), as upstream's handlers serve every tracker the manager holds (webservice/handlers.go
getUsersResourceUsage, getUserResourceUsage). Upstream creates a tracker for every user and group a
limit names when the configuration is applied (manager.go setUserLimits/setGroupLimits), and keeps it
while it carries a limit; it removes one when nothing is left on it (queue_tracker.go canBeRemoved).

Adapted, so that each configuration passes upstream's own checks (configvalidator.go): limits with an
empty user or group name are written without that name (upstream's ugm skips empty names, its
configuration check refuses them); in TestUpdateConfig the two steps that lower root.parent below
root.parent.leaf's memory limit (createConfig(..., "memory", "50", 40/10, ...): leaf memory 50 over the
parent's 40/10, refused by checkLimitResource) keep the leaf limit at memory 10 (createUpdateConfig's);
the application runs in root.parent.child1, which the leaf limit does not cover.

Ported cases per upstream test function:
  TestGetGroup                                   8 checks
  TestAddRemoveUserAndGroups                     6 checks
  TestUpdateConfig                               4 checks
  TestUseWildCard                                8 checks
  TestUpdateConfigWithWildCardUsersAndGroups     8 checks
  TestUpdateConfigClearEarlierSetLimits          7 checks
  TestUpdateConfigClearEarlierSetGroupLimits     1 check
  TestSetMaxLimitsForRemovedUsers                5 checks
  TestUserGroupHeadroom                          3 checks
  TestDecreaseTrackedResourceForGroupTracker     3 checks
  TestIncreaseTrackedResourceForGroupTracker     2 checks
  TestUserGroupLimitWithMultipleApps             3 checks
  Total                                         58 cases

Not ported (1):
  * TestUserManagerOnceInitialization: GetUserManager returns one Go singleton; no interface shows it.
Parts of ported tests not ported: TestGetGroup's ensureGroup(user, "root") (no application can run in
root; its answer is what an application in root.parent1.leaf1, without a group limit of its own, gets);
TestAddRemoveUserAndGroups' calls with an empty queue or application (rejected before any tracking,
no interface sends them), and its isQueuePathTrackedCompletely checks on a tracker looked up by the
group's name (the group is called like the user there), read as the user's queue levels on REST.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import pytest

from tests.conformance.core_probe import CoreProbe
from tests.conformance.upstream import YUNIKORN_CORE_COMMIT, deliberate, yunikorn_case
from tests.conformance.yunikorn.ugm_helpers import (
    Json,
    Lim,
    Q,
    Ugm,
    level,
    levels,
    limits_of,
    queues_yaml,
    usage_of,
)

GROUP_RELOAD = deliberate("group-usage-on-reload")

UPSTREAM = f"apache/yunikorn-core@{YUNIKORN_CORE_COMMIT} pkg/scheduler/ugm/manager_test.go"

LEAF = "root.parent.leaf"
CHILD1 = "root.parent.child1"
CHILD2 = "root.parent.child2"
PARENT = "root.parent"
U10 = {"memory": 10, "vcores": 10}


def _sq(n: int) -> dict[str, str]:
    return {"memory": str(n), "vcores": str(n)}


# Configuration builders (upstream's createConfig... helpers) -----------------------------------------------
def _tree(
    parent_limits: Sequence[Lim],
    root_limits: Sequence[Lim] = (),
    under_parent: Sequence[str] = (),
    leaf_limits: Sequence[Lim] = (),
    extra: Sequence[Q] = (),
) -> str:
    children = tuple(Q(n, leaf_limits if n == "leaf" else ()) for n in under_parent)
    return queues_yaml(Q("root", root_limits, (Q("parent", parent_limits, children), *extra)))


def create_config(
    user: str,
    group: str,
    key: str,
    value: str,
    mem: int,
    apps: int,
    under_parent: Sequence[str] = ("leaf",),
    extra: Sequence[Q] = (),
) -> str:
    """upstream createConfig: limits for one user and one group on root.parent.leaf, root.parent, root."""
    who = {"users": (user,), "groups": (group,)}
    return _tree(
        [Lim(**who, max_resources=_sq(mem), max_apps=apps, name="parent queue limit")],
        [Lim(**who, max_resources=_sq(mem * 2), max_apps=apps * 2, name="root queue limit")],
        under_parent,
        [Lim(**who, max_resources={key: value, "vcores": "10"}, max_apps=apps, name="leaf queue limit")],
        extra,
    )


def create_update_config(
    user: str, group: str, under_parent: Sequence[str] = ("leaf",), extra: Sequence[Q] = ()
) -> str:
    return create_config(user, group, "memory", "10", 50, 5, under_parent, extra)


def wildcard_config(
    user: str,
    group: str,
    wild_user: str,
    wild_group: str,
    memory: str,
    vcores: str,
    under_parent: Sequence[str],
) -> str:
    """upstream createUpdateConfigWithWildCardUsersAndGroups"""
    return _tree(
        [
            Lim((user,), (group,), _sq(70), 10, "parent queue limit for specific user"),
            Lim(
                (wild_user,),
                (wild_group,),
                {"memory": memory, "vcores": vcores},
                10,
                "parent queue limit for wild card user",
            ),
        ],
        [Lim((user, wild_user), (group, wild_group), _sq(140), 20, "root queue limit")],
        under_parent,
    )


def without_limits(under_parent: Sequence[str] = (), extra: Sequence[Q] = ()) -> str:
    """upstream createConfigWithoutLimits"""
    return _tree([], [], under_parent, (), extra)


def different_groups(
    user: str, group: str, mem: int, apps: int, under_parent: Sequence[str], extra: Sequence[Q]
) -> str:
    """upstream createConfigWithDifferentGroups: group_parent on root.parent, group_root on root."""
    parent_groups = (group + "_parent",) if group else ()
    root_groups = (group + "_root",) if group else ()
    return _tree(
        [Lim((user,), parent_groups, _sq(mem), apps, "parent queue limit")],
        [Lim((user,), root_groups, _sq(mem * 2), apps * 2, "root queue limit")],
        under_parent,
        (),
        extra,
    )


def group_only(group: str, mem: int, apps: int) -> str:
    """upstream createConfigWithGroupOnly"""
    return _tree([Lim((), (group,), _sq(mem), apps, "parent queue limit")], [], ("leaf",))


def groups_linkage(group1: str, group2: str, mem: int, vcore: int, apps: int) -> str:
    """upstream createConfigWithDifferentGroupsLinkage: group1 on root.parent, group2 on its child1."""
    max_res = {"memory": str(mem), "vcore": str(vcore)}
    child1 = Q("child1", [Lim((), (group2,), max_res, apps, "child queue with group2 limit")])
    parent = Q(
        "parent", [Lim((), (group1,), max_res, apps, "parent queue with group1 limit")], (child1, Q("child2"))
    )
    return queues_yaml(Q("root", children=(parent,)))


Scenario = Callable[[Ugm, str], Awaitable[None]]


def cases(test: str, checks: Sequence[str]) -> list[object]:
    return [pytest.param(c, id=yunikorn_case(test, c)) for c in checks]


async def _run(probe: CoreProbe, scenario: Scenario, check: str, config: str) -> None:
    s = await Ugm.start(probe, config)
    await scenario(s, check)


# TestGetGroup ---------------------------------------------------------------------------------------------
GET_GROUP = [
    "the configured group of the user is tracked",
    "the configured group is found whatever the order of the user's groups",
    "without group limits no group is tracked",
    "the nearest group limit up the path is the application's group",
    "a group named at root is used when the user lacks the nearer one",
    "users of one group share its tracker",
    "a user none of whose groups is limited is tracked without a group",
    "removing the group limits unlinks the applications and drops the groups",
]
GG_UNDER = ("leaf", "other")
GG_EXTRA = (Q("parent1", children=(Q("leaf1"),)),)


async def _get_group(s: Ugm, check: str) -> None:
    if check == GET_GROUP[0]:
        await s.app("a1", LEAF, "test", ["test", "test1"])
        await s.alloc("a1", {"memory": 5, "vcores": 5})
        assert (await s.user("test") or {}).get("groups") == {"a1": "test"}
        return
    if check == GET_GROUP[1]:
        await s.app("a2", "root.parent.other", "test", ["test1", "test"])
        await s.alloc("a2", {"memory": 5, "vcores": 5})
        assert (await s.user("test") or {}).get("groups") == {"a2": "test"}
        return
    await s.update(without_limits(GG_UNDER, GG_EXTRA))
    await s.app("test-app-0", LEAF, "test", ["test1", "test"])
    await s.alloc("test-app-0", {"memory": 5, "vcores": 5})
    if check == GET_GROUP[2]:
        assert set(await s.users()) == {"test"}
        assert await s.groups() == {}
        assert not (await s.user("test") or {}).get("groups")
        return
    await s.update(different_groups("test1", "test", 50, 5, GG_UNDER, GG_EXTRA))
    if check == GET_GROUP[3]:
        groups = ["test", "test_root", "test_parent"]
        for app, queue in (("b1", LEAF), ("b2", "root.parent.other"), ("b3", "root.parent1.leaf1")):
            await s.app(app, queue, "test1", groups)
            await s.alloc(app, {"memory": 1, "vcores": 1})
        got = (await s.user("test1") or {}).get("groups")
        assert got == {"b1": "test_parent", "b2": "test_parent", "b3": "test_root"}, got
        return
    if check == GET_GROUP[4]:
        await s.app("c1", "root.parent.other", "test1", ["test", "test_root"])
        await s.alloc("c1", {"memory": 1, "vcores": 1})
        assert (await s.user("test1") or {}).get("groups") == {"c1": "test_root"}
        return
    for user, app in (("test1", "test-app-1"), ("test2", "test-app-2")):
        await s.app(app, LEAF, user, ["test", "test_root"])
        await s.alloc(app, {"memory": 5, "vcores": 5})
    if check == GET_GROUP[5]:
        for user, app in (("test1", "test-app-1"), ("test2", "test-app-2")):
            assert (await s.user(user) or {}).get("groups") == {app: "test_root"}, user
        assert sorted((await s.group("test_root") or {}).get("applications") or []) == [
            "test-app-1",
            "test-app-2",
        ]
        assert set(await s.users()) == {"test", "test1", "test2"}
        assert set(await s.groups()) == {"test_root", "test_parent"}
        return
    await s.app("test-app-3", LEAF, "test3", ["test"])
    await s.alloc("test-app-3", {"memory": 5, "vcores": 5})
    if check == GET_GROUP[6]:
        user3 = await s.user("test3")
        assert user3 is not None and not user3.get("groups"), user3
        assert set(await s.users()) == {"test", "test1", "test2", "test3"}
        return
    await s.update(different_groups("test2", "", 50, 5, GG_UNDER, GG_EXTRA))
    assert check == GET_GROUP[7]
    assert set(await s.users()) == {"test", "test1", "test2", "test3"}
    assert await s.groups() == {}
    assert await s.group("test_root") is None
    assert not (await s.user("test1") or {}).get("groups")


@pytest.mark.parametrize("check", cases("TestGetGroup", GET_GROUP))
async def test_get_group(probe: CoreProbe, check: str) -> None:
    await _run(probe, _get_group, check, create_update_config("test", "test", GG_UNDER, GG_EXTRA))


# TestAddRemoveUserAndGroups -------------------------------------------------------------------------------
ADD_REMOVE = [
    "the first allocation tracks the user and no group",
    "a second allocation adds to the user's usage",
    "another user is tracked on its own queue path",
    "a release lowers the user's usage",
    "the user goes with its application's last allocation",
    "no user is left once every application is gone",
]
USAGE1 = {"mem": 5_000_000, "vcore": 5_000}
USAGE2 = {"mem": 20_000_000, "vcore": 20_000}


async def _add_remove(s: Ugm, check: str) -> None:
    await s.app("test-app-1", CHILD1, "test", ["test"])
    await s.app("test-app-2", CHILD2, "test1", ["test1"])
    first = await s.alloc("test-app-1", USAGE1)
    if check == ADD_REMOVE[0]:
        assert set(await s.users()) == {"test"}
        assert await s.groups() == {}
        assert usage_of(await s.user("test"))["root"][0] == USAGE1
        return
    second = await s.alloc("test-app-1", USAGE1)
    if check == ADD_REMOVE[1]:
        assert set(await s.users()) == {"test"}
        assert usage_of(await s.user("test"))["root"][0] == {k: 2 * v for k, v in USAGE1.items()}
        return
    (third,) = await s.alloc("test-app-2", USAGE2)
    if check == ADD_REMOVE[2]:
        assert set(await s.users()) == {"test", "test1"}
        assert await s.groups() == {}
        test, test1 = await s.user("test"), await s.user("test1")
        assert usage_of(test1)["root"][0] == USAGE2
        assert CHILD1 in levels(test) and CHILD2 not in levels(test), sorted(levels(test))
        assert CHILD2 in levels(test1) and CHILD1 not in levels(test1), sorted(levels(test1))
        return
    await s.release(*first)
    if check == ADD_REMOVE[3]:
        assert set(await s.users()) == {"test", "test1"}
        assert usage_of(await s.user("test"))["root"][0] == USAGE1
        return
    await s.release(*second)
    if check == ADD_REMOVE[4]:
        assert set(await s.users()) == {"test1"}
        assert await s.user("test") is None
        assert await s.groups() == {}
        return
    await s.release(third)
    assert check == ADD_REMOVE[5]
    assert await s.users() == {}
    assert await s.groups() == {}


@pytest.mark.parametrize("check", cases("TestAddRemoveUserAndGroups", ADD_REMOVE))
async def test_add_remove_user_and_groups(probe: CoreProbe, check: str) -> None:
    await _run(probe, _add_remove, check, without_limits(("child1", "child2")))


# TestUpdateConfig -----------------------------------------------------------------------------------------
UPDATE_CONFIG = [
    "the user and group carry the configured limits",
    "usage over a lowered parent limit holds the next ask",
    "a raised parent limit lets one more allocation in",
    "usage over a lowered root limit holds the next ask",
]
UC_UNDER = ("leaf", "child1")


def _max_limits(resource: int, apps: int) -> dict[str, tuple[dict[str, int], int]]:
    """upstream assertMaxLimits: twice on root what root.parent has"""
    return {
        "root": ({"memory": 2 * resource, "vcores": 2 * resource}, 2 * apps),
        PARENT: ({"memory": resource, "vcores": resource}, apps),
    }


def _subset(
    got: dict[str, tuple[dict[str, int], int]], paths: Sequence[str]
) -> dict[str, tuple[dict[str, int], int]]:
    return {p: got.get(p, ({}, 0)) for p in paths}


async def _update_config(s: Ugm, check: str) -> None:
    await s.app("test-app-1", CHILD1, "user1", ["group1"])
    await s.alloc("test-app-1", U10, 5)
    if check == UPDATE_CONFIG[0]:
        for tracker in (await s.user("user1"), await s.group("group1")):
            assert _subset(limits_of(tracker), ["root", PARENT]) == _max_limits(50, 5), tracker
        return
    await s.update(create_config("user1", "group1", "memory", "10", 40, 4, UC_UNDER))
    if check == UPDATE_CONFIG[1]:
        assert await s.pending("test-app-1", U10)
        return
    await s.update(create_config("user1", "group1", "memory", "50", 60, 6, UC_UNDER))
    if check == UPDATE_CONFIG[2]:
        assert await s.fits("test-app-1", U10)
        return
    await s.alloc("test-app-1", U10)
    await s.update(create_config("user1", "group1", "memory", "10", 10, 10, UC_UNDER))
    assert check == UPDATE_CONFIG[3]
    assert await s.pending("test-app-1", U10)


@pytest.mark.parametrize("check", cases("TestUpdateConfig", UPDATE_CONFIG))
async def test_update_config(probe: CoreProbe, check: str) -> None:
    await _run(
        probe, _update_config, check, create_config("user1", "group1", "memory", "50", 50, 5, UC_UNDER)
    )


# TestUseWildCard ------------------------------------------------------------------------------------------
USE_WILDCARD = [
    "a user without a limit of its own falls back on the wildcard user limit",
    "a user with its own limit does not fall back on the wildcard",
    "the wildcard limits show on the tracker of a user without its own",
    "a user's own limits show on its tracker",
    "at the wildcard limit a new application of the user waits",
    "with the limits gone nothing holds the user",
    "with the limits gone the trackers show none",
    "a user's own limit takes over from the wildcard",
]
CHILDREN = ("child1", "child2")


async def _use_wildcard(s: Ugm, check: str) -> None:
    if check == USE_WILDCARD[0]:
        await s.app("test-app-1", CHILD1, "user1", ["group1"])
        await s.assert_room("test-app-1", {"memory": 50, "vcores": 50})
        return
    if check == USE_WILDCARD[1]:
        await s.app("u2-test-app-1", CHILD1, "user2", ["group2"])
        await s.assert_room("u2-test-app-1", {"memory": 70, "vcores": 70})
        return
    await s.app("test-app-1", CHILD1, "user1", ["group1"])
    await s.app("test-app-2", CHILD2, "user2", ["group2"])
    await s.alloc("test-app-1", U10, 5)
    await s.alloc("test-app-2", U10)  # upstream makes this step just before the limits go
    if check == USE_WILDCARD[2]:
        assert limits_of(await s.user("user1")) == {
            "root": ({"memory": 140, "vcores": 140}, 20),
            PARENT: ({"memory": 50, "vcores": 50}, 10),
            CHILD1: ({}, 0),
        }
        return
    if check == USE_WILDCARD[3]:
        assert limits_of(await s.user("user2")) == {
            "root": ({"memory": 140, "vcores": 140}, 20),
            PARENT: ({"memory": 70, "vcores": 70}, 10),
            CHILD2: ({}, 0),
        }
        return
    if check == USE_WILDCARD[4]:
        await s.app("test-app-3", CHILD1, "user1", ["group1"])
        assert await s.pending("test-app-3", U10)
        return
    await s.update(without_limits(CHILDREN))
    if check == USE_WILDCARD[5]:
        assert await s.fits("test-app-1", {"memory": 1000, "vcores": 1000})
        return
    if check == USE_WILDCARD[6]:
        for user in ("user1", "user2"):
            tracker = await s.user(user)
            assert tracker is not None, user
            assert all(v == ({}, 0) for v in limits_of(tracker).values()), (user, limits_of(tracker))
        return
    await s.update(wildcard_config("user1", "group1", "", "", "50", "50", CHILDREN))
    assert check == USE_WILDCARD[7]
    await s.assert_room("test-app-1", {"memory": 20, "vcores": 20})


@pytest.mark.parametrize("check", cases("TestUseWildCard", USE_WILDCARD))
async def test_use_wild_card(probe: CoreProbe, check: str) -> None:
    await _run(
        probe, _use_wildcard, check, wildcard_config("user2", "group2", "*", "*", "50", "50", CHILDREN)
    )


# TestUpdateConfigWithWildCardUsersAndGroups ---------------------------------------------------------------
WILDCARD_UPDATES = [
    "at a raised parent limit a new application waits",
    "a user and group no longer named keep their trackers while their applications run",
    "a user no longer named falls back on the wildcard user limit",
    "at the wildcard limit a new application of the user waits",
    "a user's own limit holds it, not the lower wildcard",
    "the wildcard group limit is shared by users of groups not named",
    "an application keeps the group it was first linked to",
    "a new application is linked to the group now named",
]
WU_UNDER = ("leaf", "child1")


async def _wildcard_updates(s: Ugm, check: str) -> None:
    for app in ("test-app-1", "test-app-2", "test-app-3"):
        await s.app(app, CHILD1, "user1", ["group1"])
    await s.alloc("test-app-1", U10, 5)
    await s.update(create_config("user1", "group1", "memory", "50", 60, 6, WU_UNDER))
    await s.alloc("test-app-2", U10)
    if check == WILDCARD_UPDATES[0]:
        assert await s.pending("test-app-3", U10)
        return
    await s.update(wildcard_config("user2", "group1", "*", "*", "70", "70", WU_UNDER))
    if check == WILDCARD_UPDATES[1]:
        assert await s.user("user1") is not None
        assert await s.group("group1") is not None
        return
    if check == WILDCARD_UPDATES[2]:
        await s.assert_room("test-app-2", U10)
        return
    await s.alloc("test-app-2", U10)
    if check == WILDCARD_UPDATES[3]:
        assert await s.pending("test-app-3", U10)
        return
    await s.update(wildcard_config("user2", "group1", "*", "*", "10", "10", WU_UNDER))
    await s.update(wildcard_config("user2", "", "*", "", "10", "10", WU_UNDER))
    await s.app("u2-test-app-1", CHILD1, "user2", ["group1"])
    await s.alloc("u2-test-app-1", U10, 7)
    if check == WILDCARD_UPDATES[4]:
        assert await s.pending("u2-test-app-1", U10)
        return
    await s.update(wildcard_config("user2", "group1", "", "*", "10", "10", WU_UNDER))
    await s.app("u3-test-app-1", CHILD1, "user3", ["group3"])
    await s.alloc("u3-test-app-1", U10)
    await s.app("u4-test-app-1", CHILD1, "user4", ["group4"])
    (waiting,) = await s.ask("u4-test-app-1", U10)
    await s.settle()
    if check == WILDCARD_UPDATES[5]:
        assert not s.allocated(waiting)
        return
    await s.update(wildcard_config("user4", "group4", "", "*", "10", "10", WU_UNDER))
    if check == WILDCARD_UPDATES[6]:
        assert not s.allocated(waiting), "the application left the wildcard group for group4"
        assert await s.pending("u4-test-app-1", U10)
        return
    assert check == WILDCARD_UPDATES[7]
    await s.app("u4-test-app-2", CHILD1, "user4", ["group4"])
    await s.alloc("u4-test-app-2", U10, 7)
    assert await s.pending("u4-test-app-2", U10)


@pytest.mark.parametrize("check", cases("TestUpdateConfigWithWildCardUsersAndGroups", WILDCARD_UPDATES))
async def test_update_config_with_wild_card_users_and_groups(probe: CoreProbe, check: str) -> None:
    await _run(probe, _wildcard_updates, check, create_update_config("user1", "group1", WU_UNDER))


# TestUpdateConfigClearEarlierSetLimits --------------------------------------------------------------------
CLEAR_LIMITS = [
    "the named user and group are tracked with the configured limits",
    "a user and group no longer named, with nothing running, are no longer tracked",
    "the newly named user and group are tracked with the configured limits",
    "changed limits replace the earlier ones",
    "limits moved off the leaf leave the parent's and root's",
    "wildcard limits apply to a user and group not named",
    "without limits no user or group is tracked",
]


def _limits_at(tracker: Json | None, paths: dict[str, tuple[dict[str, int], int]]) -> None:
    assert tracker is not None, "not tracked"
    got = limits_of(tracker)
    assert got == paths, got


async def _clear_limits(s: Ugm, check: str) -> None:
    leaf10 = ({"memory": 10, "vcores": 10}, 5)
    if check == CLEAR_LIMITS[0]:
        for tracker in (await s.user("user1"), await s.group("group1")):
            _limits_at(tracker, _max_limits(50, 5) | {LEAF: leaf10})
        return
    await s.update(create_update_config("user2", "group2"))
    if check == CLEAR_LIMITS[1]:
        assert await s.user("user1") is None
        assert await s.group("group1") is None
        return
    if check == CLEAR_LIMITS[2]:
        for tracker in (await s.user("user2"), await s.group("group2")):
            _limits_at(tracker, _max_limits(50, 5) | {LEAF: leaf10})
        return
    await s.update(create_config("user2", "group2", "memory", "10", 60, 6))
    if check == CLEAR_LIMITS[3]:
        for tracker in (await s.user("user2"), await s.group("group2")):
            _limits_at(tracker, _max_limits(60, 6) | {LEAF: ({"memory": 10, "vcores": 10}, 6)})
        return
    await s.update(wildcard_config("user2", "group2", "*", "*", "10", "10", ("leaf",)))
    if check == CLEAR_LIMITS[4]:
        for tracker in (await s.user("user2"), await s.group("group2")):
            _limits_at(
                tracker,
                {"root": ({"memory": 140, "vcores": 140}, 20), PARENT: ({"memory": 70, "vcores": 70}, 10)},
            )
        return
    if check == CLEAR_LIMITS[5]:
        await s.app("test-app-3", LEAF, "user3", ["group3"])
        await s.alloc("test-app-3", {"pods": 1})
        wildcard = {"root": ({"memory": 140, "vcores": 140}, 20), PARENT: ({"memory": 10, "vcores": 10}, 10)}
        _limits_at(await s.user("user3"), wildcard | {LEAF: ({}, 0)})
        _limits_at((await s.groups()).get("*"), wildcard | {LEAF: ({}, 0)})
        return
    await s.update(without_limits(("leaf",)))
    assert check == CLEAR_LIMITS[6]
    assert await s.users() == {}
    assert await s.groups() == {}


@pytest.mark.parametrize("check", cases("TestUpdateConfigClearEarlierSetLimits", CLEAR_LIMITS))
async def test_update_config_clear_earlier_set_limits(probe: CoreProbe, check: str) -> None:
    await _run(probe, _clear_limits, check, create_update_config("user1", "group1"))


# TestUpdateConfigClearEarlierSetGroupLimits ---------------------------------------------------------------
@pytest.mark.parametrize(
    "check",
    cases(
        "TestUpdateConfigClearEarlierSetGroupLimits",
        ["the same group limit reloaded keeps the group's usage"],
    ),
)
async def test_update_config_clear_earlier_set_group_limits(probe: CoreProbe, check: str) -> None:
    config = group_only("group1", 50, 5)
    s = await Ugm.start(probe, config)
    await s.app("test-app-1", LEAF, "user1", ["group1"])
    await s.alloc("test-app-1", {"memory": 25, "vcores": 25}, 2)
    await s.update(config)
    assert await s.pending("test-app-1", {"memory": 25, "vcores": 25})


# TestSetMaxLimitsForRemovedUsers --------------------------------------------------------------------------
REMOVED_USERS = [
    "a named user and group are tracked while the application runs",
    "a named user and group stay tracked after their application ends",
    "the leaf limit holds the next ask",
    "without limits the user is tracked and the group is not",
    "without limits the user goes with its last allocation",
]


async def _removed_users(s: Ugm, check: str) -> None:
    for app, queue in (("test-app-1", CHILD1), ("test-app-1-leaf", LEAF), ("test-app-1-again", CHILD1)):
        await s.app(app, queue, "user1", ["group1"])
    first = await s.alloc("test-app-1", U10, 2)
    if check == REMOVED_USERS[0]:
        assert await s.user("user1") is not None
        assert await s.group("group1") is not None
        return
    await s.release(first[0])
    await s.release(first[1])
    if check == REMOVED_USERS[1]:
        assert await s.user("user1") is not None
        assert await s.group("group1") is not None
        return
    (in_leaf,) = await s.alloc("test-app-1-leaf", U10)
    if check == REMOVED_USERS[2]:
        assert await s.pending("test-app-1-leaf", U10)
        assert await s.user("user1") is not None
        assert await s.group("group1") is not None
        return
    await s.release(in_leaf)
    await s.update(without_limits(("leaf", "child1")))
    again = await s.alloc("test-app-1-again", U10, 2)
    if check == REMOVED_USERS[3]:
        assert await s.user("user1") is not None
        assert await s.group("group1") is None
        return
    await s.release(*again)
    assert check == REMOVED_USERS[4]
    assert await s.user("user1") is None
    assert await s.group("group1") is None


@pytest.mark.parametrize("check", cases("TestSetMaxLimitsForRemovedUsers", REMOVED_USERS))
async def test_set_max_limits_for_removed_users(probe: CoreProbe, check: str) -> None:
    await _run(probe, _removed_users, check, create_update_config("user1", "group1", ("leaf", "child1")))


# TestUserGroupHeadroom ------------------------------------------------------------------------------------
HEADROOM = [
    "the leaf limit is the headroom before any usage",
    "the leaf limit used up leaves no headroom",
    "after the reload the group's and wildcard's parent limits are the headroom",
]


async def _headroom(s: Ugm, check: str) -> None:
    await s.app("test-app-1", LEAF, "user1", ["group1"])
    if check == HEADROOM[0]:
        await s.assert_room("test-app-1", U10)
        return
    await s.alloc("test-app-1", U10)
    if check == HEADROOM[1]:
        assert await s.user("user1") is not None
        assert await s.group("group1") is not None
        assert await s.pending("test-app-1", {"memory": 1})
        assert await s.pending("test-app-1", {"vcores": 1})
        return
    await s.update(wildcard_config("", "group1", "*", "*", "80", "80", ("leaf",)))
    assert check == HEADROOM[2]
    # Upstream forgets group1's 10 when its leaf limit goes and shows 70 (resetGroupEarlierUsage);
    # pykorn keeps counting what group1's application holds: 60 (docs/compatibility.md, GROUP_RELOAD).
    await s.assert_room("test-app-1", {"memory": 60, "vcores": 60})


@pytest.mark.parametrize("check", cases("TestUserGroupHeadroom", HEADROOM))
async def test_user_group_headroom(probe: CoreProbe, check: str) -> None:
    await _run(probe, _headroom, check, create_update_config("user1", "group1"))


# TestDecreaseTrackedResourceForGroupTracker / TestIncreaseTrackedResourceForGroupTracker --------------------
def _group1_on_parent(limits: bool = True) -> str:
    lim = (
        [Lim((), ("group1",), {"memory": "100"}, 2, "parent queue limit for a specific group")]
        if limits
        else []
    )
    return queues_yaml(Q("root", children=(Q("parent", lim),)))


DECREASE_GROUP = [
    "the group's usage shows on the limited queue",
    "after the release the group keeps its limit and nothing else",
    "a group whose limit is gone is not tracked once its application ends",
]


async def _decrease_group(s: Ugm, check: str) -> None:
    for app in ("test-app-1", "test-app-1-again"):
        await s.app(app, PARENT, "user1", ["group1"])
    (key,) = await s.alloc("test-app-1", {"memory": 50})
    if check == DECREASE_GROUP[0]:
        assert usage_of(await s.group("group1")).get(PARENT) == ({"memory": 50}, ["test-app-1"])
        return
    await s.release(key)
    if check == DECREASE_GROUP[1]:
        group1 = await s.group("group1")
        assert group1 is not None
        assert usage_of(group1).get(PARENT) == ({}, [])
        assert limits_of(group1).get(PARENT) == ({"memory": 100}, 2)
        return
    (key,) = await s.alloc("test-app-1-again", {"memory": 50})
    await s.update(_group1_on_parent(limits=False))
    await s.release(key)
    assert check == DECREASE_GROUP[2]
    assert await s.group("group1") is None


@pytest.mark.parametrize("check", cases("TestDecreaseTrackedResourceForGroupTracker", DECREASE_GROUP))
async def test_decrease_tracked_resource_for_group_tracker(probe: CoreProbe, check: str) -> None:
    await _run(probe, _decrease_group, check, _group1_on_parent())


INCREASE_GROUP = ["the first application's usage on the group", "a second application adds to the group"]


@pytest.mark.parametrize("check", cases("TestIncreaseTrackedResourceForGroupTracker", INCREASE_GROUP))
async def test_increase_tracked_resource_for_group_tracker(probe: CoreProbe, check: str) -> None:
    s = await Ugm.start(probe, _group1_on_parent())
    for app in ("test-app-1", "test-app-2"):
        await s.app(app, PARENT, "user1", ["group1"])
    await s.alloc("test-app-1", {"memory": 50})
    if check == INCREASE_GROUP[0]:
        assert usage_of(await s.group("group1")).get(PARENT) == ({"memory": 50}, ["test-app-1"])
        return
    await s.alloc("test-app-2", {"memory": 30})
    assert usage_of(await s.group("group1")).get(PARENT) == ({"memory": 80}, ["test-app-1", "test-app-2"])


# TestUserGroupLimitWithMultipleApps -----------------------------------------------------------------------
MULTIPLE_APPS = [
    "each application is tracked under the group limited nearest its queue",
    "both groups are at their limit",
    "the user's group links go with its applications",
]
LINKED = {"memory": 10, "vcore": 10_000}  # upstream's {"memory": "10", "vcore": "10"}: vcore in millicores


async def _multiple_apps(s: Ugm, check: str) -> None:
    await s.app("test-app-1", CHILD1, "user", ["group1", "group2"])
    await s.app("test-app-2", CHILD2, "user", ["group1", "group2"])
    (one,) = await s.alloc("test-app-1", LINKED)
    (two,) = await s.alloc("test-app-2", LINKED)
    if check == MULTIPLE_APPS[0]:
        assert (await s.user("user") or {}).get("groups") == {"test-app-1": "group2", "test-app-2": "group1"}
        group1, group2 = await s.group("group1"), await s.group("group2")
        assert (group2 or {}).get("applications") == ["test-app-1"], group2
        assert (group1 or {}).get("applications") == ["test-app-2"], group1
        assert usage_of(group2)["root"][0] == LINKED and usage_of(group1)["root"][0] == LINKED
        return
    if check == MULTIPLE_APPS[1]:
        for app in ("test-app-1", "test-app-2"):
            assert await s.pending(app, {"memory": 1}), app
            assert await s.pending(app, {"vcore": 1}), app
        return
    await s.release(one, two)
    assert check == MULTIPLE_APPS[2]
    assert "user" not in await s.users()
    assert level(await s.group("group2"), CHILD1).get("runningApplications") is None


@pytest.mark.parametrize("check", cases("TestUserGroupLimitWithMultipleApps", MULTIPLE_APPS))
async def test_user_group_limit_with_multiple_apps(probe: CoreProbe, check: str) -> None:
    await _run(probe, _multiple_apps, check, groups_linkage("group1", "group2", 10, 10, 3))
