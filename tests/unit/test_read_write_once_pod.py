"""ReadWriteOncePod claims (Kubernetes' VolumeRestrictions): one pod of the partition at a time uses such
a claim; the next waits with Kubernetes' reason, and preemption may take the holder where it runs."""

from __future__ import annotations

import json

import pytest

from core.constraints.ask import ConstraintError, parse_ask_constraints
from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler.commands import ReleaseRequest, UpdateAllocations
from core.scheduler.fit.checks import RWOP_CONFLICT, ReadWriteOncePod
from core.scheduler.node_search import why_no_node
from si.v1.tags import TAG_FOREIGN, TAG_RWOP_CLAIMS
from tests.unit.domain_helpers import Cluster

CLAIM = "shop/data"


def _cluster() -> Cluster:
    c = Cluster()
    for node in ("n1", "n2"):
        c.node(node, {"memory": 100})
    c.app("app")
    return c


def _ask(c: Cluster, key: str, claims: list[str]) -> Allocation:
    alloc = Allocation(
        key, "app", c.pname(), Resource({"memory": 1}), tags={TAG_RWOP_CLAIMS: json.dumps(claims)}
    )
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(alloc,)))
    return alloc


def _placed(c: Cluster) -> dict[str, str]:
    return {a.key: a.node_id for b in c.ctx.drain_results() for a in b.new_allocations}


def test_a_claim_in_use_keeps_the_next_pod_off_every_node_until_its_holder_goes() -> None:
    c = _cluster()
    _ask(c, "writer", [CLAIM])
    c.schedule()
    assert list(_placed(c)) == ["writer"]
    second = _ask(c, "second", [CLAIM])
    other = _ask(c, "other", ["shop/logs"])  # another claim: free
    c.schedule()
    assert list(_placed(c)) == ["other"]
    assert why_no_node(c.partition, second) == f"0/2 nodes are available: 2 {RWOP_CONFLICT}"
    c.release("app", "writer")
    c.schedule()
    assert list(_placed(c)) == ["second"]
    assert other.node_id


def test_a_foreign_pod_holding_the_claim_counts() -> None:
    c = _cluster()
    foreign = Allocation("theirs", "", c.pname(), Resource({"memory": 1}), node_id="n2", foreign=True,
                         tags={TAG_FOREIGN: "default", TAG_RWOP_CLAIMS: json.dumps([CLAIM])})  # fmt: skip
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(foreign,)))
    _ask(c, "ours", [CLAIM])
    c.schedule()
    assert _placed(c) == {}
    c.ctx.apply(UpdateAllocations(c.rm_id, releases=(ReleaseRequest(c.pname(), "", "theirs"),)))
    c.schedule()
    assert list(_placed(c)) == ["ours"]


def test_preemption_may_take_the_holder_only_on_the_node_where_it_runs() -> None:
    c = _cluster()
    _ask(c, "holder", [CLAIM])
    c.schedule()
    holder_node = _placed(c)["holder"]
    ask = _ask(c, "needs-it", [CLAIM])
    check = ReadWriteOncePod(ask.constraints.rwop_claims, c.partition.pod_rules.claim_users, ask.ref)
    here, elsewhere = (
        c.partition.nodes[n] for n in sorted(c.partition.nodes, key=lambda n: n != holder_node)
    )
    holder = c.partition.applications["app"].allocations["holder"]
    assert check.refusal(here) == RWOP_CONFLICT
    assert check.victims_for(here, lambda pod: True, lambda pod: pod.key) == [holder]
    assert check.victims_for(elsewhere, lambda pod: True, lambda pod: pod.key) is None  # not there
    assert check.victims_for(here, lambda pod: False, lambda pod: pod.key) is None  # may not be taken
    assert check.admits_without(here, [holder]) and not check.admits_without(here, [])


def test_a_malformed_claims_tag_is_refused_with_the_reason() -> None:
    with pytest.raises(ConstraintError, match="<namespace>/<name>"):
        parse_ask_constraints({TAG_RWOP_CLAIMS: json.dumps(["no-namespace"])}, "x")
