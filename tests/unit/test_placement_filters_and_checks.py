"""PlacementManager filters, the checks on a candidate queue, the root.default fallback and rejections."""

from __future__ import annotations

from core.objects.queue import Queue, QueueState
from core.objects.queue_tree import QueueTree
from core.placement import PlacementManager
from core.placement.manager import Placement
from tests.unit.placement_helpers import _refusal, _req, _setup

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
        - {name: fixed, value: a, filter: {type: deny, users: [bob]}}
        """
    )
    reason = _refusal(manager, tree, _req("root.nope", user="bob"))
    assert reason.startswith("no placement rule placed application app-1: ")
    notes = reason.split(": ", 1)[1].split("; ")
    assert notes == [
        "provided: queue root.nope does not exist and the rule does not create queues",
        "user: the filter excludes user 'bob'",
        "tag: the application has no tag 'namespace'",
        "fixed: the filter excludes user 'bob'",
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
