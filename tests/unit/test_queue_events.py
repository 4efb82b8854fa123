"""Queue events a configuration reload records: one per queue and kind of change, nothing when unchanged."""

from __future__ import annotations

from core.config import load_config
from core.scheduler.commands import UpdateConfig
from tests.unit.domain_helpers import Cluster

BEFORE = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
            resources: {guaranteed: {memory: 10}, max: {memory: 100}}
          - name: old
          - name: busy
"""

AFTER = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
            resources: {guaranteed: {memory: 20}}
            properties: {application.sort.policy: fifo}
          - name: new
"""


def _reload(cluster: Cluster, text: str) -> list[tuple[str, str, str, str]]:
    cluster.ctx.drain_results()
    start = cluster.ctx.events.highest_id + 1
    cluster.ctx.apply(UpdateConfig(cluster.rm_id, load_config(text).config))
    cluster.ctx.drain_results()
    return [
        (e.object_id, e.change_type, e.change_detail, e.message)
        for _, e in cluster.ctx.events.since(start, 100)
        if e.type == "QUEUE"
    ]


def test_a_reload_records_each_queue_change_once() -> None:
    cluster = Cluster(BEFORE)
    cluster.app("a1", "root.busy")
    events = _reload(cluster, AFTER)
    kinds = sorted((name, change, detail) for name, change, detail, _ in events)
    assert kinds == [
        ("root.busy", "SET", "QUEUE_CONFIG"),  # left the config but holds a1: draining
        ("root.default", "SET", "QUEUE_CONFIG"),  # sort policy property
        ("root.default", "SET", "QUEUE_GUARANTEED"),
        ("root.default", "SET", "QUEUE_MAX"),
        ("root.new", "ADD", "DETAILS_NONE"),  # a managed queue, as YuniKorn records it
        ("root.old", "REMOVE", "DETAILS_NONE"),  # empty: removed at once
    ]
    messages = {(name, detail): message for name, _, detail, message in events}
    assert messages[("root.default", "QUEUE_MAX")] == "max {'memory': 100} -> unlimited"
    assert messages[("root.busy", "QUEUE_CONFIG")] == "queue state Active -> Draining"


def test_reloading_the_same_config_records_nothing() -> None:
    cluster = Cluster(BEFORE)
    assert _reload(cluster, BEFORE) == []


def test_a_queue_placement_creates_is_recorded_as_dynamic() -> None:
    from tests.unit.test_dynamic_queues import DYNAMIC

    cluster = Cluster(DYNAMIC)
    start = cluster.ctx.events.highest_id + 1
    cluster.app("a1", "root.team.x")
    cluster.app("a2", "root.team.x")  # the queue exists now: nothing more to record
    cluster.ctx.drain_results()
    created = [
        (e.object_id, e.change_type, e.message)
        for _, e in cluster.ctx.events.since(start, 100)
        if e.change_detail == "QUEUE_DYNAMIC"
    ]
    assert created == [("root.team.x", "ADD", "queue created by placement for a1")]


def test_dynamic_parents_are_recorded_and_so_is_their_removal() -> None:
    from core.scheduler.commands import AppRemove, UpdateApplications
    from tests.unit.test_dynamic_queues import DYNAMIC

    cluster = Cluster(DYNAMIC)
    start = cluster.ctx.events.highest_id + 1
    cluster.app("a1", "root.org.team7")  # root.org does not exist either: both levels are created
    cluster.ctx.apply(UpdateApplications(cluster.rm_id, removes=(AppRemove("a1", cluster.pname()),)))
    cluster.ctx.drain_results()
    dynamic = [
        (e.object_id, e.change_type)
        for _, e in cluster.ctx.events.since(start, 100)
        if e.change_detail == "QUEUE_DYNAMIC"
    ]
    assert sorted(dynamic[:2]) == [("root.org", "ADD"), ("root.org.team7", "ADD")]
    assert dynamic[2:] == [("root.org.team7", "REMOVE"), ("root.org", "REMOVE")]  # deepest first
