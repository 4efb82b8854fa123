"""Limits from application tags (a Kubernetes namespace's annotations) on dynamic queues, as YuniKorn's
core applies them: a dynamic queue takes them, a configured one never does, a bad tag changes nothing."""

from __future__ import annotations

import json

from core.events import ChangeDetail, EventType
from core.objects.namespace_limits import from_tags
from si.v1.tags import TAG_GUARANTEED, TAG_MAX_APPS, TAG_QUOTA
from tests.unit.domain_helpers import Cluster
from tests.unit.test_dynamic_queues import DYNAMIC, _add_app, _drain, _queue


def _si(values: dict[str, int]) -> str:
    return json.dumps({"resources": {k: {"value": v} for k, v in values.items()}})


TAGS = {
    TAG_QUOTA: _si({"memory": 40, "vcore": 2000}),
    TAG_GUARANTEED: _si({"memory": 20}),
    TAG_MAX_APPS: "3",
}


def test_tags_are_read_as_resources_and_a_count() -> None:
    limits = from_tags(TAGS)
    assert limits.max is not None and limits.max.as_dict() == {"memory": 40, "vcore": 2000}
    assert limits.guaranteed is not None and limits.guaranteed.as_dict() == {"memory": 20}
    assert limits.max_applications == 3 and not limits.problems


def test_unreadable_tags_are_reported_and_change_nothing() -> None:
    limits = from_tags({TAG_QUOTA: "{not json", TAG_GUARANTEED: _si({"memory": 0}), TAG_MAX_APPS: "-1"})
    assert (limits.max, limits.guaranteed, limits.max_applications) == (None, None, 0)
    assert len(limits.problems) == 3 and not limits.any
    assert "one must be above zero" in limits.problems[1]


def test_a_dynamic_queue_takes_its_applications_namespace_limits() -> None:
    c = Cluster(DYNAMIC)
    c.node("n1", {"memory": 1000, "vcore": 100_000})
    _add_app(c, "app-1", "root.ns1", tags=TAGS)
    leaf = _queue(c, "root.ns1")
    # The tags replace what the child template gave (max memory 100, maxapplications 5).
    assert leaf.max is not None and leaf.max.as_dict() == {"memory": 40, "vcore": 2000}
    assert leaf.guaranteed is not None and leaf.guaranteed.as_dict() == {"memory": 20}
    assert leaf.max_applications == 3
    for i in range(6):
        c.ask("app-1", f"a{i}", {"memory": 10})
    c.schedule()
    out = _drain(c)
    assert len(out.new_allocations) == 4  # the namespace quota holds: 4 x 10 of 40
    ns1 = [e for e in c.ctx.events if e.type == EventType.QUEUE and e.object_id == "root.ns1"]
    details = {e.change_detail for e in ns1}
    assert {ChangeDetail.QUEUE_MAX, ChangeDetail.QUEUE_GUARANTEED} <= details


def test_the_newest_applications_tags_win() -> None:
    c = Cluster(DYNAMIC)
    _add_app(c, "app-1", "root.ns1", tags=TAGS)
    _add_app(c, "app-2", "root.ns1", tags={TAG_QUOTA: _si({"memory": 60})})
    leaf = _queue(c, "root.ns1")
    assert leaf.max is not None and leaf.max.as_dict() == {"memory": 60}
    assert leaf.max_applications == 3  # not in app-2's tags: stays


def test_a_configured_queue_ignores_the_tags() -> None:
    c = Cluster(DYNAMIC)
    _add_app(c, "app-1", "root.static", tags=TAGS)
    static = _queue(c, "root.static")
    assert static.max is None and static.guaranteed is None and static.max_applications == 0
