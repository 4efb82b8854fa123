"""Through the partition: dynamic queues placement creates, and queues draining out of the configuration."""

from __future__ import annotations

from core.config import load_config
from core.config.loader import ConfigError
from core.objects.application import AppState
from core.objects.queue import Queue, QueueState
from core.scheduler.commands import AppAdd, AppRemove, UpdateApplications, UpdateConfig
from core.scheduler.results import ResultBatch, Termination
from tests.unit.domain_helpers import Cluster

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


# The recovery queue ---------------------------------------------------------------------------------

NO_DEFAULT = """
partitions:
  - name: default
    placementrules:
      - name: provided
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: known
"""


def test_an_application_recovered_running_that_no_rule_places_goes_to_the_recovery_queue() -> None:
    """As YuniKorn's: what runs stays counted on its node; the queue takes no new asks and goes when
    empty. An application that is not recovered (no create.force tag) is rejected as before."""
    c = Cluster(NO_DEFAULT)
    c.node("n1", {"memory": 100})
    forced = AppAdd("web", c.pname(), "root.gone", tags={"application.create.force": "true"})
    plain = AppAdd("new", c.pname(), "root.gone", tags={"application.create.force": "false"})
    c.ctx.apply(UpdateApplications(c.rm_id, adds=(forced, plain)))
    (rejected,) = [r for b in c.ctx.drain_results() for r in b.rejected_apps]
    assert rejected.app_id == "new"
    app = c.partition.applications["web"]
    assert app.queue.full_name == "root.@recovery@" and not app.queue.managed
    c.ask("web", "running", {"memory": 60}, node_id="n1")  # its pod runs: counted
    c.ask("web", "more", {"memory": 10})  # a new ask: refused
    (refused,) = [r for b in c.ctx.drain_results() for r in b.rejected_allocations]
    assert refused.key == "more" and "takes no new asks" in refused.reason
    assert c.partition.nodes["n1"].allocated.get("memory") == 60
    c.release("web", "running")
    c.ctx.apply(UpdateApplications(c.rm_id, removes=(AppRemove("web", c.pname()),)))
    assert c.partition.tree.find("root.@recovery@") is None


def test_the_recovery_queue_cannot_be_configured() -> None:
    text = NO_DEFAULT.replace("          - name: known", "          - name: '@recovery@'")
    try:
        load_config(text)
    except ConfigError as exc:
        assert "root.@recovery@ is the core's recovery queue" in str(exc)
    else:
        raise AssertionError("configured the recovery queue")


def test_every_queues_path_to_root_is_its_chain_of_parents_through_creation_and_reload() -> None:
    # The path is kept on each queue when it is made; checked here against a walk of the parents.
    c = Cluster(DYNAMIC)
    _add_app(c, "app-1", "root.team.x")
    _add_app(c, "app-2", "root.new.deeper")
    c.ctx.apply(UpdateConfig(c.rm_id, load_config(DYNAMIC.replace("          - name: static\n", "")).config))
    _add_app(c, "app-3", "root.static.leaf")
    for queue in c.partition.tree:
        walked: list[Queue] = []
        at: Queue | None = queue
        while at is not None:
            walked.append(at)
            at = at.parent
        assert list(queue.path_to_root()) == walked, queue.full_name
    assert [q.full_name for q in _queue(c, "root.team.x").path_to_root()] == [
        "root.team.x",
        "root.team",
        "root",
    ]
