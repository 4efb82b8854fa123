"""CSI attach limits (Kubernetes' NodeVolumeLimits): a node takes no more volumes of a driver than its
CSINode allows, counting its pods' volumes (ours and foreign ones) once per volume handle."""

from __future__ import annotations

import json

import pytest

from core.constraints.ask import ConstraintError, parse_ask_constraints, parse_node_traits
from core.constraints.volume_limits import VolumesInUse, parse_csi_limits, parse_csi_volumes
from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler.commands import NodeAction, NodeChange, ReleaseRequest, UpdateAllocations, UpdateNodes
from core.scheduler.node_search import why_no_node
from si.v1.tags import ATTR_CSI_VOLUME_LIMITS, TAG_CSI_VOLUMES, TAG_FOREIGN
from tests.unit.domain_helpers import Cluster

EBS = "ebs.csi.aws.com"


def _cluster(limits: dict[str, dict[str, int]]) -> Cluster:
    c = Cluster()
    changes = tuple(
        NodeChange(node, NodeAction.CREATE, c.pname(), {ATTR_CSI_VOLUME_LIMITS: json.dumps(limit)},
                   Resource({"memory": 100}))
        for node, limit in limits.items()
    )  # fmt: skip
    c.ctx.apply(UpdateNodes(c.rm_id, changes))
    c.app("app")
    return c


def _ask(c: Cluster, key: str, handles: list[str], driver: str = EBS) -> Allocation:
    alloc = Allocation(key, "app", c.pname(), Resource({"memory": 1}),
                       tags={TAG_CSI_VOLUMES: json.dumps({driver: handles})})  # fmt: skip
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(alloc,)))
    return alloc


def _placed(c: Cluster) -> dict[str, str]:
    return {a.key: a.node_id for b in c.ctx.drain_results() for a in b.new_allocations}


def test_the_volume_past_a_nodes_limit_goes_elsewhere_and_then_waits_with_kubernetes_reason() -> None:
    c = _cluster({"n1": {EBS: 2}, "n2": {EBS: 1}})
    for i in range(3):
        _ask(c, f"db-{i}", [f"vol-{i}"])
    c.schedule()
    placed = _placed(c)
    assert sorted(placed.values()) == ["n1", "n1", "n2"]  # two on n1, one on n2: both full
    waiting = _ask(c, "db-3", ["vol-3"])
    c.schedule()
    assert _placed(c) == {}
    assert why_no_node(c.partition, waiting) == "0/2 nodes are available: 2 exceed max volume count"


def test_a_volume_already_attached_costs_nothing_more_and_other_drivers_are_not_limited() -> None:
    c = _cluster({"n1": {EBS: 1}})
    _ask(c, "writer", ["shared"])
    c.schedule()
    _ask(c, "reader", ["shared"])  # the same volume handle: already attached to n1
    _ask(c, "nfs", ["nfs-1", "nfs-2"], driver="nfs.csi.k8s.io")  # no limit for this driver on n1
    c.schedule()
    assert _placed(c) == {"writer": "n1", "reader": "n1", "nfs": "n1"}


def test_a_foreign_pods_volumes_count_and_a_released_volume_frees_the_slot() -> None:
    c = _cluster({"n1": {EBS: 1}})
    foreign = Allocation("other", "", c.pname(), Resource({"memory": 1}), node_id="n1",
                         tags={TAG_FOREIGN: "default", TAG_CSI_VOLUMES: json.dumps({EBS: ["theirs"]})},
                         foreign=True)  # fmt: skip
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(foreign,)))
    _ask(c, "ours", ["vol-1"])
    c.schedule()
    assert _placed(c) == {}
    c.ctx.apply(UpdateAllocations(c.rm_id, releases=(ReleaseRequest(c.pname(), "", "other"),)))
    c.schedule()
    assert _placed(c) == {"ours": "n1"}


def test_volumes_in_use_count_each_handle_once_until_its_last_pod_goes() -> None:
    used = VolumesInUse()
    one = parse_csi_volumes({EBS: ["a", "b"]}, "tag")
    used.add(one)
    used.add(parse_csi_volumes({EBS: ["b"]}, "tag"))
    limits = parse_csi_limits({EBS: 3}, "attribute")
    assert used.over_limit(parse_csi_volumes({EBS: ["c"]}, "tag"), limits) == ""
    assert used.over_limit(parse_csi_volumes({EBS: ["c", "d"]}, "tag"), limits) == EBS
    used.remove(one)  # "b" is still used by the second pod
    assert used.over_limit(parse_csi_volumes({EBS: ["c", "d"]}, "tag"), limits) == ""
    assert used.over_limit(parse_csi_volumes({EBS: ["b", "c", "d"]}, "tag"), limits) == ""  # b: attached
    assert used.over_limit(parse_csi_volumes({EBS: ["b", "c", "d", "e"]}, "tag"), limits) == EBS


def test_malformed_volume_tags_and_limit_attributes_are_refused_with_the_reason() -> None:
    with pytest.raises(ConstraintError, match="list of volume handles"):
        parse_ask_constraints({TAG_CSI_VOLUMES: json.dumps({EBS: "vol-1"})}, "x")
    with pytest.raises(ConstraintError, match="whole number of volumes"):
        parse_node_traits({ATTR_CSI_VOLUME_LIMITS: json.dumps({EBS: -1})})
    with pytest.raises(ConstraintError, match="not valid JSON"):
        parse_node_traits({ATTR_CSI_VOLUME_LIMITS: "{"})
