"""Required inter-pod affinity and anti-affinity, with Kubernetes' semantics, in a cluster: the examples
of Kubernetes' "Assigning Pods to Nodes" page, the symmetric rule, namespaces, foreign pods, and counts
that follow pods and node labels as they change."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler.commands import NodeAction, NodeChange, ReleaseRequest, UpdateAllocations, UpdateNodes
from si.v1.tags import (
    LABEL_PREFIX,
    NAMESPACE_LABEL_PREFIX,
    TAG_FOREIGN,
    TAG_NAMESPACE,
    TAG_POD_AFFINITY,
    TAG_POD_ANTI_AFFINITY,
)
from tests.unit.domain_helpers import Cluster

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def _node(c: Cluster, name: str, zone: str, action: NodeAction = NodeAction.CREATE) -> None:
    attributes = {LABEL_PREFIX + HOST: name, LABEL_PREFIX + ZONE: zone}
    capacity = Resource({"memory": 100}) if action == NodeAction.CREATE else None
    c.ctx.apply(UpdateNodes(c.rm_id, (NodeChange(name, action, c.pname(), attributes, capacity),)))


def _term(key: str, labels: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key, **extra}


def _required(*terms: dict[str, Any]) -> str:
    return json.dumps({"requiredDuringSchedulingIgnoredDuringExecution": list(terms)})


def _pod_tags(
    labels: dict[str, str],
    namespace: str = "shop",
    namespace_labels: dict[str, str] | None = None,
    **rules: str,
) -> dict[str, str]:
    tags = {TAG_NAMESPACE: namespace, **{LABEL_PREFIX + k: v for k, v in labels.items()}}
    tags.update({NAMESPACE_LABEL_PREFIX + k: v for k, v in (namespace_labels or {}).items()})
    if "affinity" in rules:
        tags[TAG_POD_AFFINITY] = rules["affinity"]
    if "anti" in rules:
        tags[TAG_POD_ANTI_AFFINITY] = rules["anti"]
    return tags


def _ask(c: Cluster, key: str, tags: dict[str, str], app: str = "app") -> None:
    alloc = Allocation(key, app, c.pname(), Resource({"memory": 10}), tags=tags)
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(alloc,)))


def _placed(c: Cluster) -> dict[str, str]:
    c.schedule()
    return {a.key: a.node_id for b in c.ctx.drain_results() for a in b.new_allocations}


def _cluster(*zones: str) -> Cluster:
    c = Cluster()
    for i, zone in enumerate(zones):
        _node(c, f"n{i + 1}", zone)
    c.app("app")
    c.ctx.drain_results()
    return c


def test_the_documented_cache_and_web_example_puts_one_of_each_per_node() -> None:
    # redis-cache: app=store, anti-affinity to app=store by hostname; web-store: app=web-store,
    # anti-affinity to app=web-store and affinity to app=store, both by hostname.
    c = _cluster("a", "a", "b")
    store = _pod_tags({"app": "store"}, anti=_required(_term(HOST, {"app": "store"})))
    for i in range(4):
        _ask(c, f"store-{i}", store)
    placed = _placed(c)
    assert sorted(placed.values()) == ["n1", "n2", "n3"]  # one per node; the fourth waits
    reason = c.partition.applications["app"].asks["store-3"].pending_reason
    assert (
        reason == "no node has room for it that it may run on (0/3 nodes are available: 3 pod anti-affinity)"
    )
    web = _pod_tags(
        {"app": "web-store"},
        anti=_required(_term(HOST, {"app": "web-store"})),
        affinity=_required(_term(HOST, {"app": "store"})),
    )
    for i in range(3):
        _ask(c, f"web-{i}", web)
    assert sorted(_placed(c).values()) == ["n1", "n2", "n3"]


def test_a_placed_pods_anti_affinity_keeps_matching_pods_out_of_its_domain() -> None:
    c = _cluster("a", "a", "b")
    _ask(c, "loner", _pod_tags({"app": "db"}, anti=_required(_term(ZONE, {"app": "web"}))))
    loner = _placed(c)["loner"]
    zone_of = {"n1": "a", "n2": "a", "n3": "b"}
    for i in range(3):
        _ask(c, f"web-{i}", _pod_tags({"app": "web"}))  # no rules of their own
    assert {zone_of[n] for n in _placed(c).values()} == {"a", "b"} - {zone_of[loner]}
    _ask(c, "other-ns", _pod_tags({"app": "web"}, namespace="elsewhere"))  # the term's namespace is shop
    assert "other-ns" in _placed(c)


def test_a_namespace_selector_selects_pods_by_their_namespaces_labels_and_adds_to_the_listed_ones() -> None:
    c = _cluster("a", "b", "c")
    for key, namespace, team in (("web-a", "shop", "a"), ("web-b", "cart", "b"), ("web-c", "misc", "")):
        _ask(c, key, _pod_tags({"app": "web"}, namespace, {"team": team} if team else {}))
    where = _placed(c)
    away = _required(_term(HOST, {"app": "web"}, namespaces=["misc"],
                           namespaceSelector={"matchLabels": {"team": "b"}}))  # fmt: skip
    _ask(c, "loner", _pod_tags({"app": "db"}, namespace="ops", anti=away))
    # Kept away from cart (team b, by the selector) and misc (listed); shop's pod is not selected.
    assert _placed(c) == {"loner": where["web-a"]}
    everywhere = _required(_term(HOST, {"app": "web"}, namespaceSelector={}))
    _ask(c, "hermit", _pod_tags({"app": "db"}, namespace="ops", anti=everywhere))
    assert _placed(c) == {}  # an empty selector: every namespace, so every node holds a web pod


def test_affinity_follows_the_first_pod_of_its_group_and_waits_for_one_it_does_not_match() -> None:
    c = _cluster("a", "b", "c")
    together = _pod_tags({"app": "etl"}, affinity=_required(_term(ZONE, {"app": "etl"})))
    _ask(c, "etl-0", together)  # matches its own term and no pod matches yet: may start the group
    first = _placed(c)["etl-0"]
    for i in range(1, 4):
        _ask(c, f"etl-{i}", together)
    assert set(_placed(c).values()) == {first}  # the zone of the first: each node is its own zone here
    _ask(c, "follower", _pod_tags({"app": "x"}, affinity=_required(_term(ZONE, {"app": "cache"}))))
    assert _placed(c) == {}  # nothing matches, and it does not match itself: it waits


def test_foreign_pods_count_and_a_release_frees_the_domain() -> None:
    c = _cluster("a", "b")
    foreign = Allocation(
        "kube-web", "", c.pname(), Resource({"memory": 1}), node_id="n1", foreign=True,
        tags={TAG_FOREIGN: "default", **_pod_tags({"app": "web"})},
    )  # fmt: skip
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(foreign,)))
    spread = _pod_tags({"app": "web"}, anti=_required(_term(HOST, {"app": "web"})))
    _ask(c, "web-0", spread)
    _ask(c, "web-1", spread)
    assert _placed(c) == {"web-0": "n2"}  # n1 holds the other scheduler's web pod
    c.ctx.apply(UpdateAllocations(c.rm_id, releases=(ReleaseRequest(c.pname(), "", "kube-web"),)))
    assert _placed(c) == {"web-1": "n1"}


def test_counts_follow_a_node_moving_to_another_zone() -> None:
    c = _cluster("a", "b")
    db = Allocation(
        "db", "app", c.pname(), Resource({"memory": 10}), node_id="n1", tags=_pod_tags({"app": "db"})
    )
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(db,)))  # runs on n1, in zone a
    away = _pod_tags({"app": "web"}, anti=_required(_term(ZONE, {"app": "db"})))
    _ask(c, "away-0", away)
    assert _placed(c) == {"db": "n1", "away-0": "n2"}  # zone b: counted per zone from now on
    _node(c, "n1", "b", NodeAction.UPDATE)  # the db's node moves to zone b: so does the db
    _ask(c, "away-1", away)
    assert _placed(c) == {}  # both nodes are in the db's zone now


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        (_required({"labelSelector": {}, "topologyKey": ""}), "topologyKey"),
        (_required(_term(ZONE, {}, namespaceSelector={"matchExpressions": [{"key": "team"}]})),
         "namespaceSelector.matchExpressions[0].operator"),
        (_required({"labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]},
                    "topologyKey": ZONE}), "at least one value"),
    ],
)  # fmt: skip
def test_what_cannot_be_evaluated_is_refused_with_why(rules: str, message: str) -> None:
    c = _cluster("a")
    _ask(c, "bad", _pod_tags({"app": "x"}, anti=rules))
    c.schedule()
    rejected = [r.reason for b in c.ctx.drain_results() for r in b.rejected_allocations]
    assert len(rejected) == 1 and message in rejected[0]


BINPACKING = """
partitions:
  - name: default
    nodesortpolicy: {type: binpacking}
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
"""


def _packing_cluster(*zones: str) -> Cluster:
    """Binpacking: without preferences, every pod would go to the fullest node that fits."""
    c = Cluster(BINPACKING)
    for i, zone in enumerate(zones):
        _node(c, f"n{i + 1}", zone)
    c.app("app", "root.default")
    c.ctx.drain_results()
    return c


def _preferred(*terms: tuple[int, dict[str, Any]]) -> str:
    preferred = [{"weight": w, "podAffinityTerm": t} for w, t in terms]
    return json.dumps({"preferredDuringSchedulingIgnoredDuringExecution": preferred})


def test_preferred_anti_affinity_spreads_pods_that_would_otherwise_pack_and_never_leaves_one_pending() -> (
    None
):
    c = _packing_cluster("a", "b", "c")
    soft = _pod_tags({"app": "web"}, anti=_preferred((50, _term(HOST, {"app": "web"}))))
    for i in range(4):
        _ask(c, f"web-{i}", soft)
    placed = _placed(c)
    assert len(placed) == 4  # a preference: the fourth still runs, on a node that already has one
    assert sorted(set(placed.values())) == ["n1", "n2", "n3"]


def test_preferred_affinity_draws_a_pod_to_the_domain_of_the_pods_it_likes() -> None:
    c = _packing_cluster("a", "b", "c")
    _ask(c, "cache", _pod_tags({"app": "cache"}))
    cache_node = _placed(c)["cache"]
    other = "n2" if cache_node != "n2" else "n3"
    c.ask("app", "fill", {"memory": 50}, node_id=other)  # the fullest node: binpacking's first choice
    _placed(c)
    near = _pod_tags({"app": "web"}, affinity=_preferred((10, _term(ZONE, {"app": "cache"}))))
    _ask(c, "web", near)
    assert _placed(c) == {"web": cache_node}


def test_a_placed_pods_preferred_anti_affinity_keeps_the_pods_it_dislikes_away_when_it_can() -> None:
    c = _packing_cluster("a", "b")
    dislikes_web = _pod_tags({"app": "db"}, anti=_preferred((80, _term(HOST, {"app": "web"}))))
    _ask(c, "db", dislikes_web)
    db_node = _placed(c)["db"]  # binpacking would put the next pod beside it, on the fullest node
    _ask(c, "web", _pod_tags({"app": "web"}))  # no rule of its own: the placed pod's preference counts
    assert _placed(c)["web"] != db_node
    _ask(c, "batch", _pod_tags({"app": "batch"}))  # not selected by the db pod's term: packs beside it
    assert _placed(c)["batch"] == db_node  # the node the tie falls to in policy order, as without rules


def test_a_placed_pods_affinity_draws_the_pods_it_selects_into_its_domain() -> None:
    for rules in (
        _preferred((10, _term(ZONE, {"tier": "front"}))),  # its weight
        _required(_term(ZONE, {"tier": "front"})),  # kube-scheduler's hardPodAffinityWeight, 1
    ):
        c = _packing_cluster("a", "b", "c")
        _ask(c, "cache", _pod_tags({"app": "cache", "tier": "front"}, affinity=rules))
        cache_node = _placed(c)["cache"]  # the first of its group, for the required term
        fullest = "n3" if cache_node != "n3" else "n2"
        c.ask("app", "fill", {"memory": 50}, node_id=fullest)  # binpacking's first choice from now on
        _placed(c)
        _ask(c, "web", _pod_tags({"app": "web", "tier": "front"}))  # no rule of its own
        assert _placed(c) == {"web": cache_node}, rules
        _ask(c, "batch", _pod_tags({"app": "batch"}))  # not selected by the cache pod's term: packs
        assert _placed(c) == {"batch": fullest}, rules


def test_a_scored_search_looks_at_as_many_feasible_nodes_as_kube_scheduler() -> None:
    from core.scheduler.node_search import nodes_to_score

    assert nodes_to_score(50) == 100  # small clusters: every node
    assert nodes_to_score(1_000) == 420  # 50 % - 8 %
    assert nodes_to_score(5_000) == 500  # 50 % - 40 %
    assert nodes_to_score(10_000) == 500  # never below 5 %
