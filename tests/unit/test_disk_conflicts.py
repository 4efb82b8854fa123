"""In-tree disk conflicts (Kubernetes' VolumeRestrictions): pods of one node share a disk they mount
directly only when every one mounts it read-only; the next waits with Kubernetes' reason, and
preemption may take the pods in the way."""

from __future__ import annotations

import json

import pytest

from core.constraints.ask import ConstraintError, parse_ask_constraints
from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler.commands import UpdateAllocations
from core.scheduler.fit.checks import DISK_CONFLICT, DiskConflict
from core.scheduler.node_search import why_no_node
from si.v1.tags import TAG_DISKS, TAG_FOREIGN, TAG_REQUIRED_NODE
from tests.unit.domain_helpers import Cluster


def _cluster(*nodes: str) -> Cluster:
    c = Cluster()
    for node in nodes:
        c.node(node, {"memory": 100})
    c.app("app")
    return c


def _ask(c: Cluster, key: str, read_only: bool, disk: str = "gce-pd/data", node: str = "") -> Allocation:
    tags = {TAG_DISKS: json.dumps([{"id": disk, "readOnly": read_only}])}
    if node:
        tags[TAG_REQUIRED_NODE] = node
    alloc = Allocation(key, "app", c.pname(), Resource({"memory": 1}), tags=tags)
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(alloc,)))
    return alloc


def _placed(c: Cluster) -> dict[str, str]:
    return {a.key: a.node_id for b in c.ctx.drain_results() for a in b.new_allocations}


def test_a_disk_mounted_read_write_keeps_every_other_mount_of_it_off_its_node() -> None:
    c = _cluster("n1")
    _ask(c, "writer", read_only=False)
    c.schedule()
    assert list(_placed(c)) == ["writer"]
    reader = _ask(c, "reader", read_only=True)
    other = _ask(c, "other-disk", read_only=False, disk="gce-pd/logs")
    c.schedule()
    assert _placed(c) == {"other-disk": "n1"}
    assert why_no_node(c.partition, reader) == f"0/1 nodes are available: 1 {DISK_CONFLICT}"
    c.release("app", "writer")
    c.schedule()
    assert _placed(c) == {"reader": "n1"}
    assert other.node_id == "n1"


def test_read_only_mounts_share_a_disk_and_a_writer_goes_elsewhere() -> None:
    c = _cluster("n1", "n2")
    _ask(c, "r1", read_only=True, node="n1")
    _ask(c, "r2", read_only=True, node="n1")
    c.schedule()
    assert _placed(c) == {"r1": "n1", "r2": "n1"}
    _ask(c, "writer", read_only=False)
    c.schedule()
    assert _placed(c) == {"writer": "n2"}


def test_a_foreign_pods_disk_counts() -> None:
    c = _cluster("n1")
    tags = {TAG_FOREIGN: "default", TAG_DISKS: json.dumps([{"id": "aws-ebs/vol-1", "readOnly": False}])}
    foreign = Allocation(
        "theirs", "", c.pname(), Resource({"memory": 1}), node_id="n1", foreign=True, tags=tags
    )
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(foreign,)))
    ask = _ask(c, "ours", read_only=False, disk="aws-ebs/vol-1")
    c.schedule()
    assert _placed(c) == {}
    assert why_no_node(c.partition, ask) == f"0/1 nodes are available: 1 {DISK_CONFLICT}"


def test_preemption_may_take_the_pods_mounting_the_disk_on_that_node() -> None:
    c = _cluster("n1", "n2")
    _ask(c, "writer", read_only=False, node="n1")
    _ask(c, "reader", read_only=True, disk="gce-pd/other", node="n1")
    c.schedule()
    _placed(c)
    ask = _ask(c, "needs-it", read_only=True)
    check = DiskConflict(ask.constraints.disks)
    n1, n2 = c.partition.nodes["n1"], c.partition.nodes["n2"]
    writer = c.partition.applications["app"].allocations["writer"]
    assert check.refusal(n1) == DISK_CONFLICT and check.refusal(n2) == ""
    assert check.victims_for(n1, lambda pod: True, lambda pod: pod.key) == [writer]  # not the other disk's
    assert check.victims_for(n1, lambda pod: False, lambda pod: pod.key) is None
    assert check.admits_without(n1, [writer]) and not check.admits_without(n1, [])


def test_a_malformed_disks_tag_is_refused_with_the_reason() -> None:
    with pytest.raises(ConstraintError, match="readOnly"):
        parse_ask_constraints({TAG_DISKS: json.dumps([{"id": "", "readOnly": True}])}, "x")
    with pytest.raises(ConstraintError, match="readOnly"):
        parse_ask_constraints({TAG_DISKS: json.dumps([{"id": "d", "readOnly": "yes"}])}, "x")
    # One pod mounting a disk twice: read-only only if both mounts are.
    twice = [{"id": "d", "readOnly": True}, {"id": "d", "readOnly": False}]
    assert parse_ask_constraints({TAG_DISKS: json.dumps(twice)}, "x").disks == (("d", False),)
