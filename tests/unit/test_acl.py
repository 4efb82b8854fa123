"""ACLs in YuniKorn's "users groups" format, and submit access inherited down the queue tree."""

from __future__ import annotations

import pytest

from core.config import load_config
from core.config.acl import ACL, ACLError
from core.objects.queue import Queue
from core.objects.queue_tree import QueueTree


def test_users_only() -> None:
    acl = ACL.parse("alice,bob")
    assert acl.allows("alice", ())
    assert acl.allows("bob", ("dev",))
    assert not acl.allows("carol", ())
    assert not acl.allows("carol", ("alice",))  # a group named like a listed user does not count


def test_users_and_groups() -> None:
    acl = ACL.parse("alice dev,ops")
    assert acl.allows("alice", ())
    assert acl.allows("carol", ("ops",))
    assert acl.allows("carol", ("qa", "dev"))
    assert not acl.allows("carol", ("qa",))
    assert not acl.allows("dev", ())  # a user named like a listed group does not count


def test_leading_space_means_groups_only() -> None:
    acl = ACL.parse(" dev")
    assert acl.users == frozenset()
    assert acl.groups == frozenset({"dev"})
    assert acl.allows("anyone", ("dev",))
    assert not acl.allows("dev", ())


def test_names_are_case_sensitive() -> None:
    acl = ACL.parse("Alice Dev")
    assert acl.allows("Alice", ())
    assert not acl.allows("alice", ())
    assert not acl.allows("bob", ("dev",))


def test_space_after_comma_starts_the_group_list() -> None:
    acl = ACL.parse("alice, bob")
    assert acl.allows("alice", ())
    assert not acl.allows("bob", ())  # "bob" is a group here
    assert acl.allows("carol", ("bob",))


@pytest.mark.parametrize("text", ["*", "* ", "* dev", "alice *", " *"])
def test_wildcard_lets_everyone_in(text: str) -> None:
    acl = ACL.parse(text)
    assert acl.all_allowed
    assert acl.allows("anyone", ())
    assert acl.allows("someone-else", ("whatever",))


def test_wildcard_as_user_list_ignores_the_groups() -> None:
    acl = ACL.parse("* dev")
    assert acl.allows("carol", ("qa",))


def test_wildcard_as_group_list_ignores_the_users() -> None:
    acl = ACL.parse("alice *")
    assert acl.allows("bob", ())


def test_wildcard_mixed_with_names_is_not_a_wildcard() -> None:
    acl = ACL.parse("*,bob dev,*")
    assert not acl.all_allowed
    assert acl.allows("bob", ())
    assert acl.allows("carol", ("dev",))
    assert not acl.allows("carol", ("qa",))


@pytest.mark.parametrize("text", [None, ""])
def test_empty_or_unset_denies_everyone(text: str | None) -> None:
    acl = ACL.parse(text)
    assert not acl.all_allowed
    assert not acl.allows("alice", ())
    assert not acl.allows("alice", ("dev",))
    assert not acl.allows("", ())


def test_single_space_denies_everyone() -> None:
    acl = ACL.parse(" ")
    assert not acl.allows("alice", ("dev",))


def test_invalid_names_are_ignored() -> None:
    # Users must start with a letter or _, and may hold . @ -; groups may not hold . or @.
    acl = ACL.parse("1bad,john.doe,ann@corp,sys:admin,ok_user dev.team,9ops,team-a")
    assert acl.users == frozenset({"john.doe", "ann@corp", "ok_user"})
    assert acl.groups == frozenset({"team-a"})
    assert acl.allows("john.doe", ())
    assert not acl.allows("1bad", ())
    assert not acl.allows("sys:admin", ())
    assert not acl.allows("carol", ("dev.team",))
    assert acl.allows("carol", ("team-a",))


def test_user_name_may_end_with_a_dollar() -> None:
    assert ACL.parse("machine$").allows("machine$", ())


@pytest.mark.parametrize("text", ["alice  dev", "alice dev ops", "  dev", " * "])
def test_more_than_one_space_is_an_error(text: str) -> None:
    with pytest.raises(ACLError, match="more than one space"):
        ACL.parse(text)


def test_config_with_two_spaces_in_an_acl_is_invalid() -> None:
    from core.config import ConfigError

    text = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "alice  dev"
"""
    with pytest.raises(ConfigError) as info:
        load_config(text)
    [problem] = info.value.problems
    assert problem.path.endswith(".submitacl")
    assert problem.line == 6


# Inheritance through the queue tree -------------------------------------------------------------

TREE = """
partitions:
  - name: default
    queues:
      - name: root
        adminacl: "root-admin"
        queues:
          - name: eng
            submitacl: "alice"
            queues:
              - name: web
                submitacl: " web-devs"
              - name: batch
          - name: ops
            adminacl: " operators"
            queues:
              - name: infra
          - name: closed
"""


def _tree(text: str = TREE) -> QueueTree:
    return QueueTree(load_config(text).config.partitions[0].root)


def _queue(tree: QueueTree, name: str) -> Queue:
    queue = tree.find(name)
    assert queue is not None, name
    return queue


def test_submit_access_on_a_parent_covers_the_whole_subtree() -> None:
    tree = _tree()
    assert _queue(tree, "root.eng.batch").allows_submit("alice", ())
    assert _queue(tree, "root.eng.web").allows_submit("alice", ())
    assert _queue(tree, "root.eng").allows_submit("alice", ())
    assert not _queue(tree, "root.ops.infra").allows_submit("alice", ())


def test_a_child_acl_adds_to_what_the_parent_allows() -> None:
    tree = _tree()
    web = _queue(tree, "root.eng.web")
    assert web.allows_submit("bob", ("web-devs",))
    assert web.allows_submit("alice", ())  # the child cannot take away the parent's grant
    assert not _queue(tree, "root.eng.batch").allows_submit("bob", ("web-devs",))


def test_admin_acl_on_an_ancestor_grants_submit() -> None:
    tree = _tree()
    assert _queue(tree, "root.ops.infra").allows_submit("dave", ("operators",))
    for name in ("root.eng.web", "root.eng.batch", "root.ops.infra", "root.closed"):
        assert _queue(tree, name).allows_submit("root-admin", ())


def test_queue_without_any_grant_on_its_path_denies() -> None:
    tree = _tree()
    closed = _queue(tree, "root.closed")
    assert not closed.allows_submit("alice", ())
    assert not closed.allows_submit("dave", ("operators",))
    assert not closed.allows_submit("", ())


def test_no_acls_anywhere_denies_everyone() -> None:
    tree = _tree(
        """
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: default
"""
    )
    assert not _queue(tree, "root.default").allows_submit("alice", ("dev",))


def test_reload_replaces_the_acls() -> None:
    tree = _tree()
    assert _queue(tree, "root.eng.batch").allows_submit("alice", ())
    tree.reconcile(
        load_config(TREE.replace('submitacl: "alice"', 'submitacl: "bob"')).config.partitions[0].root
    )
    batch = _queue(tree, "root.eng.batch")
    assert not batch.allows_submit("alice", ())
    assert batch.allows_submit("bob", ())
