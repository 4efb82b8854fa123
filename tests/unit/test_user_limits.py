"""User and group limits in the domain: what each user and group may use, where, and what they hold."""

from __future__ import annotations

from core.config import load_config
from core.events import ChangeDetail
from core.objects.application import AppState
from core.ugm.tracker import QueueUsage, SubjectKind
from core.views import usage_views
from tests.limits_config import limits_config
from tests.unit.domain_helpers import Cluster


def _config(limits: str, parent_limits: str = "") -> str:
    return limits_config(limits, parent_limits)


def _cluster(config: str) -> Cluster:
    c = Cluster(config)
    c.node("n1", {"memory": 1000, "vcore": 1000})
    return c


def _held(c: Cluster, app_id: str) -> int:
    """Memory held by an application's allocations."""
    return sum(a.resource.get("memory") for a in c.partition.applications[app_id].allocations.values())


def _alice(c: Cluster) -> QueueUsage:
    """alice's counter in the leaf, where her limit is."""
    return c.partition.user_groups.counters[(SubjectKind.USER, "alice", "root.parent.a")]


def _state(c: Cluster, app_id: str) -> AppState:
    return c.partition.applications[app_id].state


def _events(c: Cluster, detail: ChangeDetail) -> list[str]:
    c.ctx.drain_results()  # the partition's events go to the event log
    return [e.object_id for e in c.ctx.events if e.change_detail == detail]


def _ask_many(c: Cluster, app_id: str, count: int, memory: int = 5) -> None:
    for i in range(count):
        c.ask(app_id, f"{app_id}-{i}", {"memory": memory})


def test_a_named_users_maxresources_caps_that_user_and_not_another() -> None:
    c = _cluster(_config("- users: [alice]\n  maxresources: {memory: 20}"))
    c.app("app-alice", "root.parent.a", user="alice")
    c.app("app-bob", "root.parent.a", user="bob")
    _ask_many(c, "app-alice", 10)
    _ask_many(c, "app-bob", 10)
    c.schedule()
    assert _held(c, "app-alice") == 20  # 4 of 10 asks: the 5th would take alice to 25
    assert _held(c, "app-bob") == 50  # bob is not limited
    waiting = c.partition.applications["app-alice"].asks["app-alice-4"]
    assert waiting.pending_reason == (
        "over user alice's limit in queue root.parent.a: asks {'memory': 5}, room left {'memory': 0}"
    )


def test_the_wildcard_caps_each_user_separately_and_a_named_limit_takes_its_place() -> None:
    limits = "- users: [boss]\n  maxresources: {memory: 40}\n- users: ['*']\n  maxresources: {memory: 10}"
    c = _cluster(_config(limits))
    for user in ("ann", "ben", "boss"):
        c.app(f"app-{user}", "root.parent.a", user=user)
        _ask_many(c, f"app-{user}", 10)
    c.schedule()
    assert [_held(c, f"app-{u}") for u in ("ann", "ben", "boss")] == [10, 10, 40]


def test_a_group_limit_is_shared_by_its_members_and_the_first_configured_group_is_chosen() -> None:
    limits = "- groups: [dev]\n  maxresources: {memory: 30}\n- groups: [ops]\n  maxresources: {memory: 100}"
    c = _cluster(_config(limits))
    # Both belong to dev and ops; dev is configured first, so both are tracked under dev.
    c.app("app-x", "root.parent.a", user="x", groups=("ops", "dev"))
    c.app("app-y", "root.parent.a", user="y", groups=("dev", "ops"))
    _ask_many(c, "app-x", 10)
    _ask_many(c, "app-y", 10)
    c.schedule()
    assert _held(c, "app-x") + _held(c, "app-y") == 30
    tracker = c.partition.user_groups
    assert tracker.group_of(c.partition.applications["app-x"]) == "dev"
    assert tracker.counters[(SubjectKind.GROUP, "dev", "root.parent.a")].resource == {"memory": 30}
    dev = usage_views.group(c.partition, "dev")["queues"]  # every level of the path
    assert dev["resourceUsage"] == {"memory": 30} and dev["queuePath"] == "root"
    assert dev["children"][0]["children"][0]["resourceUsage"] == {"memory": 30}


def test_without_groups_sent_a_users_group_is_its_own_name() -> None:
    """YuniKorn's default resolver: a group limit on `alice` holds user alice, who sent no groups."""
    c = _cluster(_config("- groups: [alice]\n  maxresources: {memory: 10}"))
    c.app("app-1", "root.parent.a", user="alice")
    _ask_many(c, "app-1", 5)
    c.schedule()
    assert _held(c, "app-1") == 10
    assert c.partition.applications["app-1"].groups == ("alice",)


def test_maxapplications_keeps_a_second_application_accepted_until_the_first_is_done() -> None:
    c = _cluster(_config("- users: [alice]\n  maxapplications: 1"))
    c.app("first", "root.parent.a", user="alice")
    c.app("second", "root.parent.a", user="alice")
    _ask_many(c, "first", 2)
    _ask_many(c, "second", 2)
    c.schedule()
    apps = c.partition.applications
    assert apps["first"].state == AppState.RUNNING and _held(c, "first") == 10
    assert apps["second"].state == AppState.ACCEPTED and not apps["second"].allocations
    reason = apps["second"].asks["second-0"].pending_reason
    assert reason == (
        "application second may not start yet: user alice's limit in queue root.parent.a "
        "(1 running application) is reached"
    )
    assert _events(c, ChangeDetail.APP_CANNOTRUN_QUOTA) == ["second"]
    c.release("first")  # the first finishes: all its allocations go
    c.schedule()
    assert _state(c, "second") == AppState.RUNNING and _held(c, "second") == 10
    assert _events(c, ChangeDetail.APP_RUNNABLE_QUOTA) == ["second"]


def test_a_parent_queue_limit_caps_usage_across_its_children() -> None:
    c = _cluster(_config("", parent_limits="- users: [carol]\n  maxresources: {memory: 30}"))
    c.app("in-a", "root.parent.a", user="carol")
    c.app("in-b", "root.parent.b", user="carol")
    _ask_many(c, "in-a", 10)
    _ask_many(c, "in-b", 10)
    c.schedule()
    assert _held(c, "in-a") + _held(c, "in-b") == 30
    carol = c.partition.user_groups.counters[(SubjectKind.USER, "carol", "root.parent")]
    assert carol.resource == {"memory": 30} and carol.running == {"in-a", "in-b"}


def test_recovered_allocations_count_against_the_limit_and_are_never_refused() -> None:
    c = _cluster(_config("- users: [alice]\n  maxresources: {memory: 20}"))
    c.app("app-1", "root.parent.a", user="alice")
    for i in range(5):  # the RM re-sends what runs: 25, over the limit of 20, all kept
        c.ask("app-1", f"run-{i}", {"memory": 5}, node_id="n1")
    c.ask("app-1", "new", {"memory": 5})
    c.schedule()
    assert _held(c, "app-1") == 25
    assert "new" in c.partition.applications["app-1"].asks
    assert _alice(c).resource == {"memory": 25}


def test_a_reload_that_lowers_a_limit_blocks_new_work_and_preempts_nothing() -> None:
    c = _cluster(_config("- users: [alice]\n  maxresources: {memory: 40}"))
    c.app("app-1", "root.parent.a", user="alice")
    _ask_many(c, "app-1", 6)
    c.schedule()
    assert _held(c, "app-1") == 30
    c.ctx.partitions[c.partition.key].apply_config(
        load_config(_config("- users: [alice]\n  maxresources: {memory: 20}")).config.partitions[0]
    )
    c.ask("app-1", "more", {"memory": 5})
    c.schedule()
    assert _held(c, "app-1") == 30 and not c.partition.preemption.victims_of  # nothing taken back
    assert "more" in c.partition.applications["app-1"].asks
    assert _alice(c).resource == {"memory": 30}
    c.release("app-1", "app-1-0")
    c.release("app-1", "app-1-1")  # 20 now: at the lowered limit, still no room for 5 more
    c.schedule()
    assert "more" in c.partition.applications["app-1"].asks
    c.release("app-1", "app-1-2")
    c.schedule()
    assert "more" in c.partition.applications["app-1"].allocations


def test_usage_leaves_with_the_last_allocation_and_a_named_user_keeps_only_its_limit() -> None:
    c = _cluster(_config("- users: [alice]\n  maxresources: {memory: 20}"))
    c.app("app-1", "root.parent.a", user="alice")
    c.app("app-2", "root.parent.a", user="bob")
    _ask_many(c, "app-1", 2)
    _ask_many(c, "app-2", 1)
    c.schedule()
    assert _alice(c).running == {"app-1"}
    assert [u["userName"] for u in usage_views.users(c.partition)] == ["alice", "bob"]
    c.release("app-1")
    c.release("app-2")
    assert c.partition.user_groups.counters == {}
    # bob is forgotten; alice, whom a limit names, stays listed with that limit and no usage (YuniKorn's
    # tracker for a configured user lives as long as its limit).
    (alice,) = usage_views.users(c.partition)
    leaf = alice["queues"]["children"][0]["children"][0]
    assert alice["userName"] == "alice" and "resourceUsage" not in alice["queues"]
    assert leaf == {"queuePath": "root.parent.a", "maxResources": {"memory": 20}}


def test_an_ask_held_by_a_limit_records_one_event_per_change_not_per_cycle() -> None:
    c = _cluster(_config("- users: [alice]\n  maxresources: {memory: 5}"))
    c.app("app-1", "root.parent.a", user="alice")
    _ask_many(c, "app-1", 2)
    for _ in range(3):
        c.schedule()
    c.ctx.drain_results()
    over = [e for e in c.ctx.events if "exceeds the available user or group quota" in e.message]
    assert [e.object_id for e in over] == ["app-1-1"]
    assert "over user alice's limit in queue root.parent.a" in over[0].message


def test_a_group_acl_admits_a_user_whose_rm_sent_no_groups_through_the_users_own_group() -> None:
    config = (
        "partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n"
        "          - name: mine\n            submitacl: ' alice'\n"
    )
    c = Cluster(config)
    c.app("app-alice", "root.mine", user="alice")  # no groups: alice's group is "alice"
    c.app("app-bob", "root.mine", user="bob")
    assert "app-alice" in c.partition.applications
    assert "app-bob" not in c.partition.applications


def test_limits_a_reload_adds_to_a_cluster_that_had_none_count_what_already_runs() -> None:
    # Without limits every application shares one empty link; the reload must link them afresh.
    c = _cluster(_config(""))
    c.app("app-1", "root.parent.a", user="alice")
    _ask_many(c, "app-1", 2)
    c.schedule()
    assert _held(c, "app-1") == 10 and not c.partition.user_groups.counters
    c.ctx.partitions[c.partition.key].apply_config(
        load_config(
            _config("- users: [alice]\n  maxapplications: 1\n  maxresources: {memory: 15}")
        ).config.partitions[0]
    )
    assert _alice(c).running == {"app-1"} and _alice(c).resource == {"memory": 10}
    c.app("app-2", "root.parent.a", user="alice")
    _ask_many(c, "app-2", 1)
    c.ask("app-1", "more", {"memory": 10})
    c.schedule()
    assert _state(c, "app-2") == AppState.ACCEPTED  # alice's one running application is app-1
    assert "more" in c.partition.applications["app-1"].asks  # 10 + 10 is over her 15


def _reload(c: Cluster, limits: str) -> None:
    c.ctx.partitions[c.partition.key].apply_config(load_config(_config(limits)).config.partitions[0])


def test_a_reload_keeps_an_application_on_the_group_it_was_linked_to_even_none() -> None:
    # YuniKorn's ugm fixes an application's group when it is first checked and keeps it until the
    # application ends or that group's limit goes; "no group" is kept too.
    c = _cluster(_config("- users: [nobody-in-particular]\n  maxapplications: 5"))
    c.app("a1", "root.parent.a", user="alice", groups=("g1",))
    c.ask("a1", "k", {"memory": 1})
    c.schedule()
    assert c.partition.user_groups.group_of(c.partition.applications["a1"]) is None
    _reload(c, "- groups: [g1]\n  maxapplications: 1")
    assert c.partition.user_groups.group_of(c.partition.applications["a1"]) is None  # still no group
    c.app("a2", "root.parent.a", user="carol", groups=("g1",))
    c.ask("a2", "k", {"memory": 1})
    c.schedule()
    assert "k" in c.partition.applications["a2"].allocations  # a1 does not count against g1's one


def test_a_reload_that_removes_the_groups_limit_lets_go_of_the_link() -> None:
    c = _cluster(_config("- groups: [g1]\n  maxapplications: 3\n- groups: [g2]\n  maxapplications: 3"))
    c.app("a1", "root.parent.a", user="alice", groups=("g1", "g2"))
    c.ask("a1", "k", {"memory": 1})
    c.schedule()
    assert c.partition.user_groups.group_of(c.partition.applications["a1"]) == "g1"
    _reload(c, "- groups: [g2]\n  maxapplications: 3")
    assert c.partition.user_groups.group_of(c.partition.applications["a1"]) == "g2"
