"""Placement rules: which queue an application lands in, and the dynamic queues placement creates."""

from __future__ import annotations

import textwrap

import pytest

from core.commands import AppAdd, AppRemove, UpdateApplications, UpdateConfig
from core.config import load_config
from core.objects.application import AppState
from core.objects.queue import Queue, QueueState
from core.objects.queue_tree import QueueTree
from core.placement import PlacementManager, PlacementRequest
from core.placement.manager import Placement, PlacementRefused
from core.results import ResultBatch, Termination
from tests.unit.domain_helpers import Cluster

QUEUES = """
- name: root
  submitacl: "*"
  queues:
    - name: a
    - name: b
    - name: users
      parent: true
    - name: team
      queues:
        - name: web
"""


def _config(rules: str, queues: str = QUEUES) -> str:
    return (
        "partitions:\n"
        "  - name: default\n"
        "    placementrules:\n"
        f"{textwrap.indent(textwrap.dedent(rules).strip(), ' ' * 6)}\n"
        "    queues:\n"
        f"{textwrap.indent(textwrap.dedent(queues).strip(), ' ' * 6)}\n"
    )


def _setup(rules: str, queues: str = QUEUES) -> tuple[PlacementManager, QueueTree]:
    part = load_config(_config(rules, queues)).config.partitions[0]
    return PlacementManager(part.placement_rules), QueueTree(part.root)


def _req(
    queue: str = "",
    user: str = "alice",
    groups: tuple[str, ...] = (),
    tags: dict[str, str] | None = None,
    app_id: str = "app-1",
) -> PlacementRequest:
    return PlacementRequest(app_id, queue, user, groups, tags or {})


def _refusal(manager: PlacementManager, tree: QueueTree, req: PlacementRequest) -> str:
    with pytest.raises(PlacementRefused) as info:
        manager.place(req, tree)
    return str(info.value)


# provided ---------------------------------------------------------------------------------------------


def test_provided_places_in_an_existing_queue() -> None:
    manager, tree = _setup("- name: provided")
    assert manager.place(_req("root.a"), tree) == Placement("root.a", create=False)
    assert manager.place(_req("root.team.web"), tree) == Placement("root.team.web", create=False)


def test_provided_unqualified_name_gets_root_prefixed() -> None:
    manager, tree = _setup("- name: provided")
    assert manager.place(_req("a"), tree) == Placement("root.a", create=False)


def test_provided_names_are_case_insensitive() -> None:
    manager, tree = _setup("- name: provided")
    assert manager.place(_req("root.Team.WEB"), tree) == Placement("root.team.web", create=False)


def test_configured_queue_names_are_lower_cased() -> None:
    manager, tree = _setup(
        "- {name: provided, create: true}",
        """
        - name: root
          submitacl: "*"
          queues:
            - name: Team
              queues:
                - name: Web
        """,
    )
    assert manager.place(_req("root.TEAM.web"), tree) == Placement("root.team.web", create=False)
    web = tree.find("root.team.web")
    assert web is not None and (web.name, web.full_name) == ("web", "root.team.web")
    created = tree.create(manager.place(_req("root.team.New"), tree).queue_name)
    assert created.full_name == "root.team.new"


def test_provided_unqualified_dots_become_one_level() -> None:
    manager, tree = _setup("- {name: provided, create: true}")
    assert manager.place(_req("my.app"), tree) == Placement("root.my_dot_app", create=True)
    # A qualified name keeps its dots as levels.
    assert manager.place(_req("root.team.new"), tree) == Placement("root.team.new", create=True)


def test_provided_without_create_and_missing_queue_moves_to_the_next_rule() -> None:
    manager, tree = _setup(
        """
        - name: provided
        - name: fixed
          value: b
        """
    )
    assert manager.place(_req("root.nope"), tree) == Placement("root.b", create=False)


def test_provided_with_no_queue_name_moves_to_the_next_rule() -> None:
    manager, tree = _setup(
        """
        - {name: provided, create: true}
        - {name: fixed, value: b}
        """
    )
    assert manager.place(_req(""), tree) == Placement("root.b", create=False)


def test_an_invalid_generated_name_rejects_outright() -> None:
    manager, tree = _setup(
        """
        - {name: provided, create: true}
        - {name: fixed, value: b}
        """
    )
    reason = _refusal(manager, tree, _req("has space"))
    assert "rejected by placement rule provided" in reason
    assert "invalid queue name" in reason
    assert "invalid queue name" in _refusal(manager, tree, _req("x" * 65))


# user -------------------------------------------------------------------------------------------------


def test_user_rule_replaces_dots_in_the_user_name() -> None:
    manager, tree = _setup("- {name: user, create: true}")
    assert manager.place(_req(user="john.doe"), tree) == Placement("root.john_dot_doe", create=True)


def test_user_rule_without_create_needs_the_queue() -> None:
    manager, tree = _setup(
        """
        - name: user
        - {name: fixed, value: b}
        """
    )
    assert manager.place(_req(user="a"), tree) == Placement("root.a", create=False)
    assert manager.place(_req(user="zed"), tree) == Placement("root.b", create=False)


# tag --------------------------------------------------------------------------------------------------


def test_tag_rule_uses_the_tag_value() -> None:
    manager, tree = _setup("- {name: tag, value: namespace, create: true}")
    assert manager.place(_req(tags={"namespace": "dev"}), tree) == Placement("root.dev", create=True)


@pytest.mark.parametrize(("value", "key"), [("namespace", "NameSpace"), ("NAMESPACE", "namespace")])
def test_tag_lookup_is_case_insensitive(value: str, key: str) -> None:
    manager, tree = _setup(f"- {{name: tag, value: {value}, create: true}}")
    assert manager.place(_req(tags={key: "dev"}), tree) == Placement("root.dev", create=True)


def test_tag_rule_replaces_dots_in_an_unqualified_value() -> None:
    manager, tree = _setup("- {name: tag, value: namespace, create: true}")
    placement = manager.place(_req(tags={"namespace": "kube.system"}), tree)
    assert placement == Placement("root.kube_dot_system", create=True)


def test_missing_tag_moves_to_the_next_rule() -> None:
    manager, tree = _setup(
        """
        - {name: tag, value: namespace, create: true}
        - {name: fixed, value: b}
        """
    )
    assert manager.place(_req(tags={"other": "dev"}), tree) == Placement("root.b", create=False)


def test_qualified_tag_value_is_used_as_is_and_skips_the_parent_rule() -> None:
    manager, tree = _setup(
        """
        - name: tag
          value: namespace
          create: true
          parent:
            name: fixed
            value: users
        """
    )
    assert manager.place(_req(tags={"namespace": "root.x"}), tree) == Placement("root.x", create=True)
    assert manager.place(_req(tags={"namespace": "root.team.web"}), tree) == Placement(
        "root.team.web", create=False
    )
    # An unqualified value does go under the parent.
    assert manager.place(_req(tags={"namespace": "x"}), tree) == Placement("root.users.x", create=True)


# fixed ------------------------------------------------------------------------------------------------


def test_fixed_rule_dots_are_levels() -> None:
    manager, tree = _setup("- {name: fixed, value: team.web}")
    assert manager.place(_req(), tree) == Placement("root.team.web", create=False)


def test_fixed_rule_creates_every_missing_level() -> None:
    manager, tree = _setup("- {name: fixed, value: a2.b, create: true}")
    assert manager.place(_req(), tree) == Placement("root.a2.b", create=True)


def test_fixed_rule_under_a_parent_rule() -> None:
    manager, tree = _setup(
        """
        - name: fixed
          value: web
          parent: {name: fixed, value: team}
        """
    )
    assert manager.place(_req(), tree) == Placement("root.team.web", create=False)


# parent rule ------------------------------------------------------------------------------------------


def test_child_goes_under_the_parent_rules_queue() -> None:
    manager, tree = _setup(
        """
        - name: user
          create: true
          parent: {name: fixed, value: users}
        """
    )
    assert manager.place(_req(user="alice"), tree) == Placement("root.users.alice", create=True)


def test_parent_rule_may_create_its_queue() -> None:
    manager, tree = _setup(
        """
        - name: user
          create: true
          parent: {name: tag, value: namespace, create: true}
        """
    )
    placement = manager.place(_req(user="alice", tags={"namespace": "dev"}), tree)
    assert placement == Placement("root.dev.alice", create=True)


def test_parent_rule_without_create_and_missing_queue_moves_on() -> None:
    manager, tree = _setup(
        """
        - name: user
          create: true
          parent: {name: fixed, value: nowhere}
        - {name: fixed, value: b}
        """
    )
    assert manager.place(_req(user="alice"), tree) == Placement("root.b", create=False)


def test_parent_rule_naming_a_leaf_rejects_the_application_outright() -> None:
    manager, tree = _setup(
        """
        - name: user
          create: true
          parent: {name: fixed, value: a}
        - {name: fixed, value: b}
        """
    )
    reason = _refusal(manager, tree, _req(user="alice"))
    assert (
        reason
        == "application app-1 rejected by placement rule user: parent rule returned a leaf queue: root.a"
    )


def test_parent_rules_own_filter_applies() -> None:
    manager, tree = _setup(
        """
        - name: user
          create: true
          parent:
            name: fixed
            value: users
            filter: {type: deny, users: [bob]}
        - {name: fixed, value: b}
        """
    )
    assert manager.place(_req(user="alice"), tree) == Placement("root.users.alice", create=True)
    assert manager.place(_req(user="bob"), tree) == Placement("root.b", create=False)


def test_childs_filter_does_not_filter_the_parent_rule_alone() -> None:
    # The child's filter excludes bob: the whole rule is skipped for him, parent included.
    manager, tree = _setup(
        """
        - name: user
          create: true
          filter: {type: deny, users: [bob]}
          parent: {name: fixed, value: users}
        - {name: fixed, value: b}
        """
    )
    assert manager.place(_req(user="bob"), tree) == Placement("root.b", create=False)
    assert manager.place(_req(user="carl"), tree) == Placement("root.users.carl", create=True)


# filters ----------------------------------------------------------------------------------------------

_FALLBACK = "- {name: fixed, value: b}"


def _user_rule_with_filter(filter_yaml: str) -> tuple[PlacementManager, QueueTree]:
    return _setup(f"- {{name: user, create: true, filter: {filter_yaml}}}\n{_FALLBACK}")


def test_allow_filter_admits_only_listed_users_and_groups() -> None:
    manager, tree = _user_rule_with_filter("{type: allow, users: [alice, bob], groups: [dev]}")
    assert manager.place(_req(user="alice"), tree).queue_name == "root.alice"
    assert manager.place(_req(user="bob"), tree).queue_name == "root.bob"
    assert manager.place(_req(user="carol", groups=("qa", "dev")), tree).queue_name == "root.carol"
    assert manager.place(_req(user="dave", groups=("qa",)), tree).queue_name == "root.b"


def test_filter_type_defaults_to_allow() -> None:
    manager, tree = _user_rule_with_filter("{users: [alice]}")
    assert manager.place(_req(user="alice"), tree).queue_name == "root.alice"
    assert manager.place(_req(user="bob"), tree).queue_name == "root.b"


def test_deny_filter_excludes_listed_users_and_groups() -> None:
    manager, tree = _user_rule_with_filter("{type: deny, users: [alice], groups: [contractors]}")
    assert manager.place(_req(user="alice"), tree).queue_name == "root.b"
    assert manager.place(_req(user="carol", groups=("contractors",)), tree).queue_name == "root.b"
    assert manager.place(_req(user="bob"), tree).queue_name == "root.bob"


def test_a_single_regex_entry_is_a_pattern() -> None:
    manager, tree = _user_rule_with_filter('{users: ["^dev-.*"]}')
    assert manager.place(_req(user="dev-anna"), tree).queue_name == "root.dev-anna"
    assert manager.place(_req(user="anna"), tree).queue_name == "root.b"
    assert manager.place(_req(user="x-dev-anna"), tree).queue_name == "root.b"


def test_a_regex_entry_matches_anywhere_in_the_name() -> None:
    manager, tree = _user_rule_with_filter('{groups: ["eng.+"]}')
    assert manager.place(_req(user="zoe", groups=("my-eng-team",)), tree).queue_name == "root.zoe"
    assert manager.place(_req(user="zoe", groups=("eng",)), tree).queue_name == "root.b"


def test_with_two_entries_regex_characters_are_literal() -> None:
    manager, tree = _user_rule_with_filter('{users: ["dev-.*", bob]}')
    assert manager.place(_req(user="dev-anna"), tree).queue_name == "root.b"
    assert manager.place(_req(user="bob"), tree).queue_name == "root.bob"


def test_empty_deny_filter_denies_everyone() -> None:
    manager, tree = _user_rule_with_filter("{type: deny}")
    for user in ("alice", "bob", "root-admin"):
        assert manager.place(_req(user=user), tree).queue_name == "root.b"


def test_empty_allow_filter_admits_everyone() -> None:
    manager, tree = _user_rule_with_filter("{type: allow}")
    assert manager.place(_req(user="alice"), tree).queue_name == "root.alice"


# checks on the candidate queue ------------------------------------------------------------------------

ACL_QUEUES = """
- name: root
  queues:
    - name: secure
      submitacl: "alice"
    - name: open
      submitacl: "*"
    - name: users
      parent: true
      submitacl: " devs"
"""


def test_acl_failure_moves_to_the_next_rule() -> None:
    manager, tree = _setup(
        """
        - name: provided
        - {name: fixed, value: open}
        """,
        ACL_QUEUES,
    )
    assert manager.place(_req("root.secure", user="alice"), tree) == Placement("root.secure", create=False)
    assert manager.place(_req("root.secure", user="bob"), tree) == Placement("root.open", create=False)


def test_acl_for_a_new_queue_is_checked_on_its_deepest_existing_ancestor() -> None:
    manager, tree = _setup(
        """
        - name: user
          create: true
          parent: {name: fixed, value: users}
        - {name: fixed, value: open}
        """,
        ACL_QUEUES,
    )
    assert manager.place(_req(user="carol", groups=("devs",)), tree) == Placement(
        "root.users.carol", create=True
    )
    assert manager.place(_req(user="carol"), tree) == Placement("root.open", create=False)


def test_a_parent_queue_as_candidate_moves_on() -> None:
    manager, tree = _setup(
        f"""
        - name: provided
        {_FALLBACK}
        """
    )
    assert manager.place(_req("root.team"), tree) == Placement("root.b", create=False)


def _set_state(tree: QueueTree, name: str, state: QueueState) -> Queue:
    queue = tree.find(name)
    assert queue is not None
    queue.state = state
    return queue


def test_a_draining_queue_moves_on() -> None:
    manager, tree = _setup(
        f"""
        - name: provided
        {_FALLBACK}
        """
    )
    _set_state(tree, "root.a", QueueState.DRAINING)
    assert manager.place(_req("root.a"), tree) == Placement("root.b", create=False)


def test_a_leaf_under_a_draining_parent_moves_on() -> None:
    manager, tree = _setup(
        f"""
        - name: provided
        {_FALLBACK}
        """
    )
    _set_state(tree, "root.team", QueueState.DRAINING)
    assert manager.place(_req("root.team.web"), tree) == Placement("root.b", create=False)


DEFAULT_QUEUES = """
- name: root
  queues:
    - name: default
      submitacl: "*"
    - name: a
      submitacl: "alice"
"""


def test_fallback_to_root_default() -> None:
    manager, tree = _setup("- name: provided", DEFAULT_QUEUES)
    assert manager.place(_req("root.nope"), tree) == Placement("root.default", create=False)
    assert manager.place(_req(""), tree) == Placement("root.default", create=False)
    # The default queue is only the last resort: a rule that places wins.
    assert manager.place(_req("root.a", user="alice"), tree) == Placement("root.a", create=False)
    # An ACL failure on the rule's queue falls through to root.default too.
    assert manager.place(_req("root.a", user="bob"), tree) == Placement("root.default", create=False)


def test_fallback_to_root_default_still_checks_its_acl() -> None:
    queues = DEFAULT_QUEUES.replace('submitacl: "*"', 'submitacl: "alice"')
    manager, tree = _setup("- name: provided", queues)
    reason = _refusal(manager, tree, _req("root.nope", user="bob"))
    assert "may not submit to root.default" in reason


def test_rejection_lists_why_each_rule_failed() -> None:
    manager, tree = _setup(
        """
        - name: provided
        - name: user
          create: true
          filter: {type: deny, users: [bob]}
        - {name: tag, value: namespace, create: true}
        - {name: fixed, value: team}
        """
    )
    reason = _refusal(manager, tree, _req("root.nope", user="bob"))
    assert reason.startswith("no placement rule placed application app-1: ")
    notes = reason.split(": ", 1)[1].split("; ")
    assert notes == [
        "provided: queue root.nope does not exist and the rule does not create queues",
        "user: the filter excludes user 'bob'",
        "tag: the application has no tag 'namespace'",
        "fixed: root.team is a parent queue",
    ]


def test_no_rules_means_provided_without_create() -> None:
    manager, tree = _setup("")
    assert manager.place(_req("root.a"), tree) == Placement("root.a", create=False)
    assert manager.place(_req("b"), tree) == Placement("root.b", create=False)
    reason = _refusal(manager, tree, _req("root.nope"))
    assert "root.nope does not exist and the rule does not create queues" in reason


def test_no_rules_still_falls_back_to_root_default() -> None:
    manager, tree = _setup("", DEFAULT_QUEUES)
    assert manager.place(_req("root.nope"), tree) == Placement("root.default", create=False)


# Through the partition ------------------------------------------------------------------------------

DYNAMIC = """
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: "*"
        childtemplate:
          maxapplications: 5
          properties:
            application.sort.policy: fair
          resources:
            guaranteed: {memory: 10, vcore: 1}
            max: {memory: 100, vcore: 10}
        queues:
          - name: team
            parent: true
            properties:
              application.sort.policy: fair
            childtemplate:
              maxapplications: 2
              properties:
                priority.offset: "7"
              resources:
                max: {memory: 50}
          - name: static
"""


def _drain(c: Cluster) -> ResultBatch:
    merged = ResultBatch(c.rm_id)
    for batch in c.ctx.drain_results():
        if batch.rm_id != c.rm_id:
            continue
        for name in vars(merged):
            if name != "rm_id":
                getattr(merged, name).extend(getattr(batch, name))
    return merged


def _add_app(
    c: Cluster, app_id: str, queue: str, user: str = "alice", tags: dict[str, str] | None = None
) -> None:
    add = AppAdd(app_id, c.pname(), queue, user=user, tags=tags or {})
    c.ctx.apply(UpdateApplications(c.rm_id, adds=(add,)))


def _remove_app(c: Cluster, app_id: str) -> None:
    c.ctx.apply(UpdateApplications(c.rm_id, removes=(AppRemove(app_id, c.pname()),)))


def _queue(c: Cluster, name: str) -> Queue:
    queue = c.partition.find_queue(name)
    assert queue is not None, f"{name} does not exist"
    return queue


def test_create_rule_makes_a_dynamic_leaf_and_dynamic_parents() -> None:
    c = Cluster(DYNAMIC)
    _add_app(c, "app-1", "root.dyn.sub.leaf")
    out = _drain(c)
    assert out.accepted_apps == ["app-1"]
    leaf = _queue(c, "root.dyn.sub.leaf")
    assert leaf.is_leaf and not leaf.managed
    for name in ("root.dyn", "root.dyn.sub"):
        parent = _queue(c, name)
        assert not parent.is_leaf and not parent.managed
    assert c.partition.applications["app-1"].queue is leaf
    assert list(leaf.applications) == ["app-1"]


def test_dynamic_leaf_takes_the_nearest_ancestors_child_template() -> None:
    c = Cluster(DYNAMIC)
    _add_app(c, "app-1", "root.team.proj")
    _add_app(c, "app-2", "root.dyn.sub.leaf")
    _add_app(c, "app-3", "root.top")
    assert _drain(c).accepted_apps == ["app-1", "app-2", "app-3"]

    # Under team: team's own template.
    proj = _queue(c, "root.team.proj")
    assert proj.max_applications == 2
    assert proj.props.priority_offset == 7
    assert proj.props.sort_policy == "fifo"  # the template's properties replace, not merge with, team's
    assert proj.max is not None and proj.max.as_dict() == {"memory": 50}
    assert proj.guaranteed is None

    # Under dynamic parents that have none: root's, the nearest ancestor with one.
    for name in ("root.dyn.sub.leaf", "root.top"):
        leaf = _queue(c, name)
        assert leaf.max_applications == 5
        assert leaf.props.sort_policy == "fair"
        assert leaf.props.priority_offset == 0
        assert leaf.guaranteed is not None and leaf.guaranteed.as_dict() == {"memory": 10, "vcore": 1000}
        assert leaf.max is not None and leaf.max.as_dict() == {"memory": 100, "vcore": 10000}

    # A configured leaf never uses a template.
    static = _queue(c, "root.static")
    assert static.max_applications == 0 and static.max is None


def test_child_template_limits_hold_on_the_dynamic_leaf() -> None:
    c = Cluster(DYNAMIC)
    c.node("n1", {"memory": 1000, "vcore": 100_000})
    _add_app(c, "app-1", "root.team.proj")
    for i in range(8):
        c.ask("app-1", f"a{i}", {"memory": 10})
    c.schedule()
    assert len(_drain(c).new_allocations) == 5  # template max memory 50
    assert _queue(c, "root.team.proj").allocated.get("memory") == 50


def test_child_template_maxapplications_holds_on_the_dynamic_leaf() -> None:
    c = Cluster(DYNAMIC.replace("maxapplications: 2", "maxapplications: 1"))
    c.node("n1", {"memory": 1000, "vcore": 100_000})
    for app_id in ("app-1", "app-2"):
        _add_app(c, app_id, "root.team.proj")
        c.ask(app_id, f"{app_id}-a", {"memory": 1})
        c.clock.advance(1)
    c.schedule()
    assert [a.application_id for a in _drain(c).new_allocations] == ["app-1"]
    assert c.partition.applications["app-2"].state == AppState.ACCEPTED


def test_dynamic_queues_go_when_the_rm_removes_their_last_app() -> None:
    c = Cluster(DYNAMIC)
    c.node("n1", {"memory": 100, "vcore": 100_000})
    _add_app(c, "app-1", "root.dyn.sub.leaf")
    _add_app(c, "app-2", "root.dyn.sub.leaf")
    c.ask("app-1", "a", {"memory": 5})
    c.schedule()
    _drain(c)
    _remove_app(c, "app-1")
    out = _drain(c)
    assert [(r.key, r.termination) for r in out.released] == [("a", Termination.STOPPED_BY_RM)]
    assert list(_queue(c, "root.dyn.sub.leaf").applications) == ["app-2"]
    _remove_app(c, "app-2")
    for name in ("root.dyn.sub.leaf", "root.dyn.sub", "root.dyn"):
        assert c.partition.find_queue(name) is None
    assert "dyn" not in c.partition.root.children
    assert c.partition.find_queue("root.team") is not None  # a configured parent stays
    assert c.partition.find_queue("root.static") is not None


def test_dynamic_queue_goes_when_its_last_app_completes() -> None:
    c = Cluster(DYNAMIC)
    c.node("n1", {"memory": 100, "vcore": 100_000})
    _add_app(c, "app-1", "root.team.proj")
    c.ask("app-1", "a", {"memory": 5})
    c.schedule()
    c.release("app-1", "a")
    assert c.partition.applications["app-1"].state == AppState.COMPLETING
    c.clock.advance(29)
    c.ctx.tick()
    assert c.partition.find_queue("root.team.proj") is not None  # still Completing
    c.clock.advance(2)
    c.ctx.tick()
    assert c.partition.find_queue("root.team.proj") is None
    assert c.partition.find_queue("root.team") is not None
    states = [u.state for u in _drain(c).updated_apps]
    assert states == ["Accepted", "Running", "Completing", "Completed"]


def test_a_new_app_recreates_a_removed_dynamic_queue() -> None:
    c = Cluster(DYNAMIC)
    _add_app(c, "app-1", "root.dyn.leaf")
    _remove_app(c, "app-1")
    assert c.partition.find_queue("root.dyn") is None
    _add_app(c, "app-2", "root.dyn.leaf")
    assert list(_queue(c, "root.dyn.leaf").applications) == ["app-2"]


def test_placement_cannot_create_a_queue_under_a_leaf() -> None:
    c = Cluster(DYNAMIC)
    _add_app(c, "app-1", "root.static.below")
    [rejected] = _drain(c).rejected_apps
    assert rejected.app_id == "app-1"
    assert "root.static is a leaf queue" in rejected.reason
    assert c.partition.find_queue("root.static.below") is None


# Queues leaving and rejoining the configuration --------------------------------------------------------

TWO_LEAVES = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
          - name: b
          - name: grp
            queues:
              - name: inner
"""
ONLY_A = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
"""


def _reload(c: Cluster, text: str) -> None:
    c.ctx.apply(UpdateConfig(c.rm_id, load_config(text).config))


def _running_in_b(c: Cluster) -> None:
    c.node("n1", {"memory": 100})
    c.app("app-1", "root.b")
    c.ask("app-1", "a1", {"memory": 10})
    c.schedule()
    out = _drain(c)
    assert [a.key for a in out.new_allocations] == ["a1"]


def test_queue_removed_from_config_drains_and_keeps_its_app() -> None:
    c = Cluster(TWO_LEAVES)
    _running_in_b(c)
    _reload(c, ONLY_A)
    b = _queue(c, "root.b")
    assert b.state == QueueState.DRAINING
    assert list(b.applications) == ["app-1"]
    assert b.allocated.get("memory") == 10
    app = c.partition.applications["app-1"]
    assert app.state == AppState.RUNNING
    assert list(app.allocations) == ["a1"]
    assert c.partition.nodes["n1"].allocated.get("memory") == 10
    assert _drain(c).released == []


def test_draining_queue_rejects_new_apps() -> None:
    c = Cluster(TWO_LEAVES)
    _running_in_b(c)
    _reload(c, ONLY_A)
    c.app("app-2", "root.b")
    [rejected] = _drain(c).rejected_apps
    assert rejected.app_id == "app-2"
    assert "root.b is Draining" in rejected.reason
    assert "app-2" not in c.partition.applications


def test_draining_queue_keeps_scheduling_its_running_app() -> None:
    c = Cluster(TWO_LEAVES)
    _running_in_b(c)
    _reload(c, ONLY_A)
    c.ask("app-1", "a2", {"memory": 10})
    c.schedule()
    assert [a.key for a in _drain(c).new_allocations] == ["a2"]
    assert _queue(c, "root.b").allocated.get("memory") == 20


def test_draining_queue_disappears_when_its_app_is_removed() -> None:
    c = Cluster(TWO_LEAVES)
    _running_in_b(c)
    _reload(c, ONLY_A)
    _remove_app(c, "app-1")
    out = _drain(c)
    assert [(r.key, r.termination) for r in out.released] == [("a1", Termination.STOPPED_BY_RM)]
    assert c.partition.find_queue("root.b") is None
    assert "b" not in c.partition.root.children
    assert c.partition.root.allocated.get("memory") == 0


def test_draining_queue_disappears_when_its_app_completes() -> None:
    c = Cluster(TWO_LEAVES)
    _running_in_b(c)
    _reload(c, ONLY_A)
    c.release("app-1", "a1")
    c.clock.advance(30)
    c.ctx.tick()
    assert c.partition.find_queue("root.b") is None
    assert [u.state for u in _drain(c).updated_apps] == ["Completing", "Completed"]


def test_empty_queues_removed_from_config_go_at_once() -> None:
    c = Cluster(TWO_LEAVES)
    _running_in_b(c)
    _reload(c, ONLY_A)
    for name in ("root.grp", "root.grp.inner"):
        assert c.partition.find_queue(name) is None


def test_re_adding_a_draining_queue_makes_it_active_again() -> None:
    c = Cluster(TWO_LEAVES)
    _running_in_b(c)
    _reload(c, ONLY_A)
    assert _queue(c, "root.b").state == QueueState.DRAINING
    _reload(c, TWO_LEAVES)
    b = _queue(c, "root.b")
    assert b.state == QueueState.ACTIVE
    assert b.managed
    assert list(b.applications) == ["app-1"]
    c.app("app-2", "root.b")
    out = _drain(c)
    assert out.accepted_apps == ["app-2"]
    assert out.rejected_apps == []
    assert sorted(b.applications) == ["app-1", "app-2"]
    # Active again, it is no longer removed when empty.
    _remove_app(c, "app-1")
    _remove_app(c, "app-2")
    assert c.partition.find_queue("root.b") is b
