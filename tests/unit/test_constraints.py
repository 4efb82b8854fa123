"""Node selectors, taints and tolerations, required nodes: parsing, matching, and what a cluster does."""

from __future__ import annotations

import json

import pytest

from core.constraints.ask import (
    AskConstraints,
    ConstraintError,
    NodeTraits,
    Taint,
    Toleration,
    parse_ask_constraints,
    parse_node_traits,
)
from core.objects.allocation import Allocation
from core.objects.node import Node
from core.resources import Resource
from core.scheduler.commands import NodeAction, NodeChange, UpdateAllocations, UpdateNodes
from core.scheduler.fit.checks import UNSCHEDULABLE, UNTOLERATED_TAINTS
from core.scheduler.node_search import own_checks, why_no_node
from core.scheduler.results import ResultBatch
from si.v1.tags import ATTR_TAINTS, LABEL_PREFIX, TAG_NODE_SELECTOR, TAG_REQUIRED_NODE, TAG_TOLERATIONS
from tests.unit.domain_helpers import Cluster

# Helpers ------------------------------------------------------------------------------------------


def node_admits(node_id: str, traits: NodeTraits, ask: AskConstraints) -> bool:
    """Whether the ask's own checks (core/scheduler/fit) pass a node with these traits."""
    node = Node(node_id, Resource())
    node.traits = traits
    return all(not check.refusal(node) for check in own_checks(ask))


def _ask(
    selector: dict[str, str] | None = None,
    tolerations: list[dict[str, str]] | None = None,
    required_node: str = "",
) -> AskConstraints:
    tags: dict[str, str] = {}
    if selector is not None:
        tags[TAG_NODE_SELECTOR] = json.dumps(selector)
    if tolerations is not None:
        tags[TAG_TOLERATIONS] = json.dumps(tolerations)
    if required_node:
        tags[TAG_REQUIRED_NODE] = required_node
    return parse_ask_constraints(tags, TAG_REQUIRED_NODE)


def _attrs(
    labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None
) -> dict[str, str]:
    """Node attributes carrying these labels and taints, as an RM sends them."""
    attributes = {LABEL_PREFIX + k: v for k, v in (labels or {}).items()}
    if taints is not None:
        attributes[ATTR_TAINTS] = json.dumps(taints)
    return attributes


def _traits(labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None) -> NodeTraits:
    return parse_node_traits(_attrs(labels, taints))


def _add_node(c: Cluster, node_id: str, capacity: dict[str, int], attributes: dict[str, str]) -> None:
    change = NodeChange(node_id, NodeAction.CREATE, c.pname(), attributes, Resource(capacity))
    c.ctx.apply(UpdateNodes(c.rm_id, (change,)))


def _update_node(c: Cluster, node_id: str, attributes: dict[str, str]) -> None:
    change = NodeChange(node_id, NodeAction.UPDATE, c.pname(), attributes, None)
    c.ctx.apply(UpdateNodes(c.rm_id, (change,)))


def _tagged_ask(c: Cluster, app_id: str, key: str, memory: int, tags: dict[str, str]) -> None:
    alloc = Allocation(key, app_id, c.pname(), Resource({"memory": memory}), tags=tags)
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(alloc,)))


def _drain(c: Cluster) -> ResultBatch:
    merged = ResultBatch(c.rm_id)
    for batch in c.ctx.drain_results():
        if batch.rm_id != c.rm_id:
            continue
        for name in vars(merged):
            if name != "rm_id":
                getattr(merged, name).extend(getattr(batch, name))
    return merged


def _where(c: Cluster, app_id: str) -> dict[str, str]:
    return {k: a.node_id for k, a in c.partition.applications[app_id].allocations.items()}


SSD = {"disk": "ssd"}
GPU_TAINT = {"key": "gpu", "value": "true", "effect": "NoSchedule"}

# Node selectors -----------------------------------------------------------------------------------


def test_node_selector_matches_a_node_with_the_labels() -> None:
    ask = _ask(selector={"disk": "ssd", "zone": "a"})
    assert ask.node_selector == (("disk", "ssd"), ("zone", "a"))
    assert node_admits("n1", _traits({"disk": "ssd", "zone": "a", "extra": "x"}), ask)


def test_node_selector_rejects_a_missing_or_different_label() -> None:
    ask = _ask(selector={"disk": "ssd", "zone": "a"})
    assert not node_admits("n1", _traits({"disk": "ssd"}), ask)  # zone missing
    assert not node_admits("n1", _traits({"disk": "hdd", "zone": "a"}), ask)  # disk differs
    assert not node_admits("n1", _traits(), ask)


def test_no_constraints_admit_any_untainted_node() -> None:
    ask = _ask()
    assert ask.is_empty
    assert node_admits("n1", _traits({"disk": "ssd"}), ask)
    assert node_admits("n1", _traits(), ask)


def test_labels_are_read_from_prefixed_attributes_only() -> None:
    traits = parse_node_traits({LABEL_PREFIX + "disk": "ssd", "disk": "hdd", "si/hostname": "h"})
    assert traits.labels == (("disk", "ssd"),)


# Taints and tolerations ---------------------------------------------------------------------------


@pytest.mark.parametrize("effect", ["NoSchedule", "NoExecute"])
def test_hard_taints_block_an_ask_without_toleration(effect: str) -> None:
    node = _traits(taints=[{"key": "gpu", "value": "true", "effect": effect}])
    assert not node_admits("n1", node, _ask())
    assert not node_admits("n1", node, _ask(selector={}))


def test_prefer_no_schedule_does_not_block() -> None:
    node = _traits(taints=[{"key": "gpu", "value": "true", "effect": "PreferNoSchedule"}])
    assert node_admits("n1", node, _ask())


def test_a_taint_without_effect_is_no_schedule() -> None:
    traits = _traits(taints=[{"key": "gpu"}])
    assert traits.taints == (Taint("gpu", "", "NoSchedule"),)
    assert not node_admits("n1", traits, _ask())


def test_equal_toleration_needs_key_and_value() -> None:
    node = _traits(taints=[GPU_TAINT])
    assert node_admits("n1", node, _ask(tolerations=[{"key": "gpu", "operator": "Equal", "value": "true"}]))
    assert node_admits("n1", node, _ask(tolerations=[{"key": "gpu", "value": "true"}]))  # Equal by default
    assert not node_admits("n1", node, _ask(tolerations=[{"key": "gpu", "operator": "Equal", "value": "no"}]))
    assert not node_admits("n1", node, _ask(tolerations=[{"key": "fpga", "value": "true"}]))


def test_exists_toleration_with_a_key_ignores_the_value() -> None:
    node = _traits(taints=[GPU_TAINT])
    assert node_admits("n1", node, _ask(tolerations=[{"key": "gpu", "operator": "Exists"}]))
    assert not node_admits("n1", node, _ask(tolerations=[{"key": "fpga", "operator": "Exists"}]))


def test_exists_toleration_without_a_key_tolerates_everything() -> None:
    node = _traits(
        taints=[
            GPU_TAINT,
            {"key": "dedicated", "value": "batch", "effect": "NoExecute"},
            {"key": "spot", "effect": "NoSchedule"},
        ]
    )
    assert node_admits("n1", node, _ask(tolerations=[{"operator": "Exists"}]))


def test_toleration_effect_must_match_the_taints() -> None:
    no_execute = _traits(taints=[{"key": "gpu", "value": "true", "effect": "NoExecute"}])
    only_no_schedule = _ask(tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}])
    only_no_execute = _ask(tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoExecute"}])
    any_effect = _ask(tolerations=[{"key": "gpu", "operator": "Exists"}])
    assert not node_admits("n1", no_execute, only_no_schedule)
    assert node_admits("n1", no_execute, only_no_execute)
    assert node_admits("n1", no_execute, any_effect)
    everything_but = _ask(tolerations=[{"operator": "Exists", "effect": "NoSchedule"}])
    assert not node_admits("n1", no_execute, everything_but)


def test_every_hard_taint_must_be_tolerated() -> None:
    node = _traits(taints=[GPU_TAINT, {"key": "spot", "value": "yes", "effect": "NoSchedule"}])
    assert not node_admits("n1", node, _ask(tolerations=[{"key": "gpu", "operator": "Exists"}]))
    both = [{"key": "gpu", "operator": "Exists"}, {"key": "spot", "operator": "Exists"}]
    assert node_admits("n1", node, _ask(tolerations=both))


def test_toleration_dataclass_semantics() -> None:
    taint = Taint("k", "v", "NoSchedule")
    assert Toleration("k", "Equal", "v").tolerates(taint)
    assert not Toleration("k", "Equal", "x").tolerates(taint)
    assert Toleration("", "Exists").tolerates(taint)
    assert not Toleration("", "Exists", effect="NoExecute").tolerates(taint)


def test_selector_and_taints_both_apply() -> None:
    node = _traits({"disk": "ssd"}, [GPU_TAINT])
    assert not node_admits("n1", node, _ask(selector=SSD))
    assert node_admits("n1", node, _ask(selector=SSD, tolerations=[{"key": "gpu", "operator": "Exists"}]))


# Required node ------------------------------------------------------------------------------------


def test_required_node_admits_only_that_node() -> None:
    ask = _ask(required_node="n2")
    assert ask.required_node == "n2"
    assert not ask.is_empty
    assert node_admits("n2", _traits(), ask)
    assert not node_admits("n1", _traits(), ask)


# Malformed input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tags", "message"),
    [
        ({TAG_NODE_SELECTOR: "{disk: ssd}"}, "not valid JSON"),
        ({TAG_NODE_SELECTOR: '["disk", "ssd"]'}, "JSON object of label name to value"),
        ({TAG_NODE_SELECTOR: '{"disk": 1}'}, "JSON object of label name to value"),
        ({TAG_TOLERATIONS: "[{"}, "not valid JSON"),
        ({TAG_TOLERATIONS: '{"key": "gpu"}'}, "JSON list of tolerations"),
        ({TAG_TOLERATIONS: '["gpu"]'}, "must be a JSON object"),
        ({TAG_TOLERATIONS: '[{"key": "gpu", "operator": "In"}]'}, "Equal or Exists"),
    ],
)
def test_malformed_ask_tags_are_refused_with_a_reason(tags: dict[str, str], message: str) -> None:
    with pytest.raises(ConstraintError, match=message):
        parse_ask_constraints(tags, TAG_REQUIRED_NODE)


@pytest.mark.parametrize(
    ("taints", "message"),
    [
        ("not json", "not valid JSON"),
        ('{"key": "gpu"}', "JSON list of taints"),
        ('[{"value": "x"}]', "each with a key"),
        ('["gpu"]', "each with a key"),
    ],
)
def test_malformed_taints_are_refused_with_a_reason(taints: str, message: str) -> None:
    with pytest.raises(ConstraintError, match=message):
        parse_node_traits({ATTR_TAINTS: taints})


def test_a_malformed_ask_is_rejected_to_the_rm_and_never_pending() -> None:
    c = Cluster()
    c.node("n1", {"memory": 100})
    c.app("app-1")
    _tagged_ask(c, "app-1", "bad-selector", 1, {TAG_NODE_SELECTOR: "{oops"})
    _tagged_ask(c, "app-1", "bad-tolerations", 1, {TAG_TOLERATIONS: '{"key": "gpu"}'})
    _tagged_ask(c, "app-1", "good", 1, {TAG_NODE_SELECTOR: "{}"})
    c.schedule()
    out = _drain(c)
    reasons = {r.key: r.reason for r in out.rejected_allocations}
    assert set(reasons) == {"bad-selector", "bad-tolerations"}
    assert "bad-selector" in reasons["bad-selector"] and "not valid JSON" in reasons["bad-selector"]
    assert TAG_TOLERATIONS in reasons["bad-tolerations"]
    assert all(r.app_id == "app-1" for r in out.rejected_allocations)
    assert [a.key for a in out.new_allocations] == ["good"]
    app = c.partition.applications["app-1"]
    assert not app.asks
    assert c.partition.root.pending.is_zero()


def test_a_node_with_malformed_taints_is_rejected_to_the_rm() -> None:
    c = Cluster()
    _add_node(c, "bad", {"memory": 100}, {ATTR_TAINTS: "[{]"})
    _add_node(c, "good", {"memory": 100}, _attrs(SSD))
    out = _drain(c)
    assert out.accepted_nodes == ["good"]
    assert [r.key for r in out.rejected_nodes] == ["bad"]
    assert "node bad" in out.rejected_nodes[0].reason and "not valid JSON" in out.rejected_nodes[0].reason
    assert "bad" not in c.partition.nodes
    assert c.partition.total_capacity == {"memory": 100}


def test_a_malformed_update_is_rejected_and_the_node_keeps_its_traits() -> None:
    c = Cluster()
    _add_node(c, "n1", {"memory": 100}, _attrs(SSD, [GPU_TAINT]))
    _drain(c)
    _update_node(c, "n1", {ATTR_TAINTS: "nope"})
    out = _drain(c)
    assert [r.key for r in out.rejected_nodes] == ["n1"]
    node = c.partition.nodes["n1"]
    assert node.traits.labels == (("disk", "ssd"),)
    assert node.traits.taints == (Taint("gpu", "true", "NoSchedule"),)


# Through a cluster --------------------------------------------------------------------------------


def test_a_node_selector_ask_lands_only_on_the_labelled_node() -> None:
    c = Cluster()
    _add_node(c, "plain", {"memory": 100}, {})
    _add_node(c, "ssd", {"memory": 100}, _attrs(SSD))
    c.app("app-1")
    # Make the labelled node the less attractive one for a fair spread.
    c.ask("app-1", "filler", {"memory": 50}, node_id="ssd")
    for i in range(3):
        _tagged_ask(c, "app-1", f"s{i}", 10, {TAG_NODE_SELECTOR: json.dumps(SSD)})
    c.ask("app-1", "free", {"memory": 10})
    c.schedule()
    placed = _where(c, "app-1")
    assert placed == {"filler": "ssd", "s0": "ssd", "s1": "ssd", "s2": "ssd", "free": "plain"}


def test_a_node_selector_ask_stays_pending_when_the_labelled_nodes_are_full() -> None:
    c = Cluster()
    _add_node(c, "plain", {"memory": 100}, {})
    _add_node(c, "ssd", {"memory": 20}, _attrs(SSD))
    c.app("app-1")
    for i in range(3):
        _tagged_ask(c, "app-1", f"s{i}", 10, {TAG_NODE_SELECTOR: json.dumps(SSD)})
    c.schedule()
    app = c.partition.applications["app-1"]
    assert sorted(_where(c, "app-1").values()) == ["ssd", "ssd"]
    assert list(app.asks) == ["s2"]
    c.clock.advance(10)
    c.schedule()
    assert list(app.asks) == ["s2"]
    assert c.partition.nodes["plain"].allocations == {}
    # Waiting may reserve the labelled node, never the one without the label.
    assert set(c.partition.reservations.values()) <= {"ssd"}
    assert c.partition.nodes["plain"].reservations == set()


def test_a_label_added_by_a_node_update_opens_the_node_to_the_selector() -> None:
    c = Cluster()
    _add_node(c, "n1", {"memory": 100}, {})
    c.app("app-1")
    _tagged_ask(c, "app-1", "s", 10, {TAG_NODE_SELECTOR: json.dumps(SSD)})
    c.schedule()
    assert "s" in c.partition.applications["app-1"].asks
    _update_node(c, "n1", _attrs(SSD))
    c.schedule()
    assert _where(c, "app-1") == {"s": "n1"}


def test_a_tainted_node_takes_only_tolerating_asks() -> None:
    c = Cluster()
    _add_node(c, "tainted", {"memory": 100}, _attrs(taints=[GPU_TAINT]))
    c.app("app-1")
    c.ask("app-1", "plain", {"memory": 10})
    tolerate = json.dumps([{"key": "gpu", "operator": "Exists"}])
    _tagged_ask(c, "app-1", "tolerant", 10, {TAG_TOLERATIONS: tolerate})
    c.schedule()
    assert _where(c, "app-1") == {"tolerant": "tainted"}
    assert list(c.partition.applications["app-1"].asks) == ["plain"]
    # An untainted node arrives: the plain ask goes there.
    _add_node(c, "clean", {"memory": 100}, {})
    c.schedule()
    assert _where(c, "app-1") == {"tolerant": "tainted", "plain": "clean"}


def test_prefer_no_schedule_taint_still_takes_asks() -> None:
    c = Cluster()
    _add_node(c, "soft", {"memory": 100}, _attrs(taints=[{"key": "gpu", "effect": "PreferNoSchedule"}]))
    c.app("app-1")
    c.ask("app-1", "plain", {"memory": 10})
    c.schedule()
    assert _where(c, "app-1") == {"plain": "soft"}


def test_a_required_node_ask_only_ever_goes_to_that_node() -> None:
    c = Cluster()
    c.node("n1", {"memory": 100})
    c.node("n2", {"memory": 100})
    c.app("app-1")
    c.ask("app-1", "filler", {"memory": 95}, node_id="n2")
    _tagged_ask(c, "app-1", "daemon", 10, {TAG_REQUIRED_NODE: "n2"})
    c.schedule()
    app = c.partition.applications["app-1"]
    assert "daemon" in app.asks  # n1 is empty, but the ask must run on n2
    assert c.partition.nodes["n1"].allocations == {}
    c.clock.advance(60)
    c.schedule()
    assert "daemon" in app.asks
    assert c.partition.nodes["n1"].allocations == {}
    c.release("app-1", "filler")
    c.schedule()
    assert _where(c, "app-1") == {"daemon": "n2"}


def test_a_required_node_ask_for_an_unknown_node_waits_for_it() -> None:
    c = Cluster()
    c.node("n1", {"memory": 100})
    c.app("app-1")
    _tagged_ask(c, "app-1", "daemon", 10, {TAG_REQUIRED_NODE: "n9"})
    c.schedule()
    assert "daemon" in c.partition.applications["app-1"].asks
    assert c.partition.reservations == {}
    c.node("n9", {"memory": 100})
    c.schedule()
    assert _where(c, "app-1") == {"daemon": "n9"}


# A cordoned node (kube-scheduler's NodeUnschedulable) -----------------------------------------------

CORDON = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def _cordoned(c: Cluster, node_id: str, taints: list[dict[str, str]]) -> None:
    change = NodeChange(
        node_id, NodeAction.CREATE_DRAIN, c.pname(), _attrs(taints=taints), Resource({"memory": 10})
    )
    c.ctx.apply(UpdateNodes(c.rm_id, (change,)))


def test_a_cordoned_node_takes_only_the_asks_that_tolerate_its_taint() -> None:
    c = Cluster()
    _cordoned(c, "n1", [CORDON])
    c.app("app-1")
    _tagged_ask(c, "app-1", "plain", 1, {})
    _tagged_ask(
        c,
        "app-1",
        "other-toleration",
        1,
        {TAG_TOLERATIONS: json.dumps([{"key": "gpu", "operator": "Exists"}])},
    )
    _tagged_ask(c, "app-1", "tolerant", 1, {TAG_TOLERATIONS: json.dumps([{**CORDON, "operator": "Exists"}])})
    c.schedule()
    assert _where(c, "app-1") == {"tolerant": "n1"}
    # Kept off as kube-scheduler says it: the node is unschedulable (NodeUnschedulable speaks first).
    for key in ("plain", "other-toleration"):
        ask = c.partition.applications["app-1"].asks[key]
        assert why_no_node(c.partition, ask) == f"0/1 nodes are available: 1 {UNSCHEDULABLE}"


def test_a_node_drained_without_the_cordon_taint_takes_nothing() -> None:
    c = Cluster()
    _cordoned(c, "n1", [])  # an RM's drain (a YuniKorn decommission): closed to every ask
    c.app("app-1")
    _tagged_ask(c, "app-1", "tolerant", 1, {TAG_TOLERATIONS: json.dumps([{**CORDON, "operator": "Exists"}])})
    c.schedule()
    assert _where(c, "app-1") == {}


def test_what_keeps_an_ask_off_a_cordoned_node_is_said_as_kube_scheduler_says_it() -> None:
    c = Cluster()
    _cordoned(c, "n1", [CORDON, GPU_TAINT])
    c.app("app-1")
    cordon_only = json.dumps([{**CORDON, "operator": "Exists"}])
    _tagged_ask(c, "app-1", "selector", 1, {TAG_NODE_SELECTOR: json.dumps(SSD)})  # NodeUnschedulable first
    _tagged_ask(c, "app-1", "not-gpu", 1, {TAG_TOLERATIONS: cordon_only})  # past it: the gpu taint
    c.schedule()
    asks = c.partition.applications["app-1"].asks
    assert why_no_node(c.partition, asks["selector"]) == f"0/1 nodes are available: 1 {UNSCHEDULABLE}"
    assert why_no_node(c.partition, asks["not-gpu"]) == f"0/1 nodes are available: 1 {UNTOLERATED_TAINTS}"
