"""PlacementManager rules: provided, user, tag and fixed, and rules under a parent rule."""

from __future__ import annotations

import pytest

from core.placement.manager import Placement
from tests.unit.placement_helpers import _refusal, _req, _setup

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
    # A fixed parent naming a leaf is refused with the configuration (placement_check); a tag can still
    # name one, application by application.
    manager, tree = _setup(
        """
        - name: user
          create: true
          parent: {name: tag, value: team}
        - {name: fixed, value: b}
        """
    )
    reason = _refusal(manager, tree, _req(user="alice", tags={"team": "a"}))
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
