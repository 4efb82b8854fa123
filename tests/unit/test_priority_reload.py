"""Priority and configuration reloads: offsets and fences that change take effect at once."""

from __future__ import annotations

from core.config import load_config
from core.objects.priority_range import MIN_PRIORITY
from core.scheduler.commands import UpdateConfig
from tests.unit.domain_helpers import Cluster
from tests.unit.priority_helpers import _apps, _check_caches, _q

# Reload -------------------------------------------------------------------------------------------

RELOAD = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: parent
            properties:
              priority.policy: {parent_policy}
              priority.offset: "{parent_offset}"
            queues:
              - name: leaf
                properties:
                  priority.offset: "{leaf_offset}"
              - name: other
          - name: idle
            properties:
              priority.offset: "{leaf_offset}"
"""


def _reload_config(parent_policy: str = "default", parent_offset: int = 0, leaf_offset: int = 0) -> str:
    return RELOAD.format(parent_policy=parent_policy, parent_offset=parent_offset, leaf_offset=leaf_offset)


def _reload(c: Cluster, text: str) -> None:
    replies: list[Exception | None] = []
    c.ctx.apply(UpdateConfig(c.rm_id, load_config(text).config, reply=replies.append))
    assert replies == [None]


def test_a_reload_that_changes_an_offset_updates_priorities_at_once() -> None:
    c = Cluster(_reload_config(leaf_offset=5))
    _apps(c, ("app", "root.parent.leaf"), ("other", "root.parent.other"), ("idle", "root.idle"))
    c.ask("app", "k", {"memory": 1}, priority=10)
    c.ask("other", "k", {"memory": 1}, priority=12)
    assert _q(c, "root.parent.leaf").current_priority == 15
    assert _q(c, "root.parent").current_priority == 15
    _reload(c, _reload_config(leaf_offset=50, parent_offset=-5))
    assert _q(c, "root.parent.leaf").current_priority == 60
    assert _q(c, "root.parent").child_priorities == {"leaf": 60, "other": 12}
    assert _q(c, "root.parent").current_priority == 55
    assert _q(c, "root").current_priority == 55
    assert _q(c, "root.idle").current_priority == MIN_PRIORITY  # an offset alone is not pending
    assert _q(c, "root").child_priorities == {"parent": 55}
    _check_caches(c)
    # The caches keep working incrementally after the reload.
    c.release("app", "k")
    assert _q(c, "root.parent").current_priority == 7
    assert _q(c, "root").current_priority == 7
    _check_caches(c)


def test_a_reload_that_adds_or_removes_a_fence_updates_priorities_at_once() -> None:
    c = Cluster(_reload_config())
    _apps(c, ("app", "root.parent.leaf"))
    c.ask("app", "k", {"memory": 1}, priority=10)
    assert _q(c, "root").current_priority == 10
    _reload(c, _reload_config(parent_policy="fence", parent_offset=3))
    assert _q(c, "root.parent").props.is_priority_fence
    assert _q(c, "root.parent").inner_priority == 10
    assert _q(c, "root.parent").current_priority == 3
    assert _q(c, "root").current_priority == 3
    _check_caches(c)
    c.ask("app", "k2", {"memory": 1}, priority=20)  # stops at the new fence
    assert _q(c, "root.parent").inner_priority == 20
    assert _q(c, "root").current_priority == 3
    _reload(c, _reload_config())
    assert _q(c, "root.parent").current_priority == 20
    assert _q(c, "root").current_priority == 20
    _check_caches(c)


BUSY_LEAF = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: team
"""
TEAM_AS_PARENT = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: team
            queues:
              - name: sub
"""


def test_a_reload_that_would_make_a_busy_leaf_a_parent_is_refused_and_changes_nothing() -> None:
    c = Cluster(BUSY_LEAF)
    c.node("n1", {"memory": 10, "vcore": 10})
    _apps(c, ("a1", "root.team"))
    c.ask("a1", "running", {"memory": 1}, node_id="n1")
    errors: list[Exception | None] = []
    c.ctx.apply(UpdateConfig(c.rm_id, load_config(TEAM_AS_PARENT).config, reply=errors.append))
    assert len(errors) == 1 and errors[0] is not None
    assert "root.team holds 1 application(s) and cannot become a parent queue" in str(errors[0])
    team = _q(c, "root.team")
    assert team.is_leaf and not team.children
    assert c.partition.find_queue("root.team.sub") is None
