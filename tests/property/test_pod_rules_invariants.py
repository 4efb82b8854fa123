"""Hypothesis state machine for the Kubernetes pod rules the core keeps incrementally: required pod
affinity and anti-affinity (with the symmetric rule) and topology spread (DoNotSchedule).

Random pods (labels, namespace, and any of those rules), pods of another scheduler, releases, node
label changes (a node moving zone), scheduling, and preemptions: urgent pods of a queue below its
guarantee preempt, the RM confirms victims late and in any order. Each placement the core makes is
checked, by brute
force over a model of the pods placed before it and the nodes' labels at that moment, against every
required rule: no placed pod violates a rule given the pods placed before it.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler.commands import NodeAction, NodeChange, ReleaseRequest, UpdateAllocations, UpdateNodes
from core.scheduler.results import Termination
from si.v1.tags import (
    LABEL_PREFIX,
    TAG_FOREIGN,
    TAG_NAMESPACE,
    TAG_POD_AFFINITY,
    TAG_POD_ANTI_AFFINITY,
    TAG_TOPOLOGY_SPREAD,
)
from tests.unit.domain_helpers import Cluster

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
          - name: urgent
            resources: {guaranteed: {memory: 1000}}
            properties: {preemption.delay: 1ms}
"""

NODES = ("n0", "n1", "n2", "n3", "n4")
ZONES = ("z0", "z1", "z2")
KEYS = ("zone", "host")
APPS = ("a", "b")
NAMESPACES = ("ns1", "ns2")

Pod = dict[str, Any]  # {"ns", "labels", "anti", "affinity", "spread"}: terms as plain dicts


def _matches(term: dict[str, Any], owner_ns: str, pod: Pod) -> bool:
    """A term (matchLabels, namespaces defaulting to the owner's) selecting `pod`."""
    namespaces = term.get("namespaces") or [owner_ns]
    wanted = term["labelSelector"]["matchLabels"]
    return pod["ns"] in namespaces and all(pod["labels"].get(k) == v for k, v in wanted.items())


class PodRulesMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.c = Cluster(CONFIG)
        self.zone = {n: ZONES[i % len(ZONES)] for i, n in enumerate(NODES)}
        for node in NODES:  # room for three pods each: preemption happens
            change = NodeChange(
                node, NodeAction.CREATE, self.c.pname(), self._attrs(node), Resource({"memory": 30})
            )
            self.c.ctx.apply(UpdateNodes(self.c.rm_id, (change,)))
        self.c.app("app", "root.default")
        self.c.app("urgent", "root.urgent")
        self.pods: dict[str, Pod] = {}  # every pod sent, by key
        self.app_of: dict[str, str] = {}  # key -> application ("" for another scheduler's pods)
        self.placed: dict[str, str] = {}  # key -> node, in placement order
        self.victims: set[str] = set()  # preempted, not yet released by the RM
        self.counter = 0
        self.c.ctx.drain_results()

    def _attrs(self, node: str) -> dict[str, str]:
        return {LABEL_PREFIX + "zone": self.zone[node], LABEL_PREFIX + "host": node}

    def _domain(self, node: str, key: str) -> str:
        return self.zone[node] if key == "zone" else node

    # Steps ------------------------------------------------------------------------------------
    @rule(
        app=st.sampled_from(APPS),
        ns=st.sampled_from(NAMESPACES),
        anti=st.none() | st.tuples(st.sampled_from(APPS), st.sampled_from(KEYS), st.booleans()),
        affinity=st.none() | st.tuples(st.sampled_from(APPS), st.sampled_from(KEYS)),
        spread=st.none() | st.tuples(
            st.sampled_from(APPS), st.sampled_from(KEYS), st.integers(1, 2), st.integers(1, 4)
        ),
    )  # fmt: skip
    def add_pod(
        self,
        app: str,
        ns: str,
        anti: tuple[str, str, bool] | None,
        affinity: tuple[str, str] | None,
        spread: tuple[str, str, int, int] | None,
    ) -> None:
        self._send("app", app, ns, anti, affinity, spread)

    @rule(
        app=st.sampled_from(APPS),
        ns=st.sampled_from(NAMESPACES),
        anti=st.none() | st.tuples(st.sampled_from(APPS), st.sampled_from(KEYS), st.booleans()),
        spread=st.none() | st.tuples(
            st.sampled_from(APPS), st.sampled_from(KEYS), st.integers(1, 2), st.integers(1, 4)
        ),
    )  # fmt: skip
    def an_urgent_pod_preempts(
        self, app: str, ns: str, anti: tuple[str, str, bool] | None, spread: tuple[str, str, int, int] | None
    ) -> None:
        """A pod of the queue below its guarantee, allowed to preempt: victims for room, for its
        anti-affinity and for its spread, when the other pods may be taken."""
        self._send("urgent", app, ns, anti, None, spread)
        self.c.clock.advance(1.0)
        self.schedule()

    def _send(
        self,
        application: str,
        app: str,
        ns: str,
        anti: tuple[str, str, bool] | None,
        affinity: tuple[str, str] | None,
        spread: tuple[str, str, int, int] | None,
    ) -> None:
        self.counter += 1
        key = f"p{self.counter}"
        pod: Pod = {"ns": ns, "labels": {"app": app}, "anti": [], "affinity": [], "spread": []}
        tags = {TAG_NAMESPACE: ns, LABEL_PREFIX + "app": app}
        if anti is not None:
            target, topology, everywhere = anti
            term: dict[str, Any] = {
                "labelSelector": {"matchLabels": {"app": target}},
                "topologyKey": topology,
            }
            if everywhere:
                term["namespaces"] = list(NAMESPACES)
            pod["anti"] = [term]
            tags[TAG_POD_ANTI_AFFINITY] = json.dumps(
                {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            )
        if affinity is not None:
            term = {"labelSelector": {"matchLabels": {"app": affinity[0]}}, "topologyKey": affinity[1]}
            pod["affinity"] = [term]
            tags[TAG_POD_AFFINITY] = json.dumps({"requiredDuringSchedulingIgnoredDuringExecution": [term]})
        if spread is not None:
            target, topology, skew, min_domains = spread
            constraint = {
                "maxSkew": skew, "topologyKey": topology, "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": target}}, "minDomains": min_domains,
            }  # fmt: skip
            pod["spread"] = [constraint]
            tags[TAG_TOPOLOGY_SPREAD] = json.dumps([constraint])
        self.pods[key] = pod
        self.app_of[key] = application
        urgent = application == "urgent"
        ask = Allocation(
            key, application, self.c.pname(), Resource({"memory": 10}), tags=tags,
            allow_preempt_self=not urgent, allow_preempt_other=urgent,
        )  # fmt: skip
        self.c.ctx.apply(UpdateAllocations(self.c.rm_id, allocations=(ask,)))
        self._sync()

    @rule(node=st.sampled_from(NODES), app=st.sampled_from(APPS), ns=st.sampled_from(NAMESPACES))
    def another_scheduler_binds_a_pod(self, node: str, app: str, ns: str) -> None:
        self.counter += 1
        key = f"f{self.counter}"
        self.pods[key] = {"ns": ns, "labels": {"app": app}, "anti": [], "affinity": [], "spread": []}
        self.app_of[key] = ""
        tags = {TAG_FOREIGN: "default", TAG_NAMESPACE: ns, LABEL_PREFIX + "app": app}
        pod = Allocation(
            key, "", self.c.pname(), Resource({"memory": 1}), node_id=node, tags=tags, foreign=True
        )
        self.c.ctx.apply(UpdateAllocations(self.c.rm_id, allocations=(pod,)))
        self.placed[key] = node

    @rule()
    def schedule(self) -> None:
        self.c.schedule()
        self._sync()

    @precondition(lambda self: self.placed)
    @rule(data=st.data())
    def a_pod_goes(self, data: st.DataObject) -> None:
        self._release(data.draw(st.sampled_from(sorted(self.placed))))

    @precondition(lambda self: self.victims)
    @rule(data=st.data())
    def the_rm_releases_a_victim(self, data: st.DataObject) -> None:
        self._release(data.draw(st.sampled_from(sorted(self.victims))))
        self.schedule()

    def _release(self, key: str) -> None:
        release = ReleaseRequest(self.c.pname(), self.app_of[key], key)
        self.c.ctx.apply(UpdateAllocations(self.c.rm_id, releases=(release,)))
        del self.placed[key]
        self.victims.discard(key)
        self._sync()

    @rule(node=st.sampled_from(NODES), zone=st.sampled_from(ZONES))
    def a_node_moves_zone(self, node: str, zone: str) -> None:
        self.zone[node] = zone
        change = NodeChange(node, NodeAction.UPDATE, self.c.pname(), self._attrs(node), None)
        self.c.ctx.apply(UpdateNodes(self.c.rm_id, (change,)))

    # The check --------------------------------------------------------------------------------
    def _sync(self) -> None:
        for batch in self.c.ctx.drain_results():
            for alloc in batch.new_allocations:
                assert alloc.key not in self.placed, f"{alloc.key} placed twice"
                self._check(alloc.key, alloc.node_id)  # victims not yet released still count
                self.placed[alloc.key] = alloc.node_id
                if self.app_of[alloc.key] == "urgent":
                    event("an urgent pod placed")
            for released in batch.released:
                if released.termination == Termination.PREEMPTED_BY_SCHEDULER:
                    assert released.key in self.placed, f"{released.key} preempted while not running"
                    self.victims.add(released.key)
                    event("a victim chosen")

    def _check(self, key: str, node: str) -> None:
        pod = self.pods[key]
        before = [(self.pods[k], n) for k, n in self.placed.items()]
        for term in pod["anti"]:
            domain = self._domain(node, term["topologyKey"])
            hits = [
                p
                for p, n in before
                if self._domain(n, term["topologyKey"]) == domain and _matches(term, pod["ns"], p)
            ]
            assert not hits, f"{key} on {node} breaks its anti-affinity {term}"
        for other, n in before:
            for term in other["anti"]:
                same = self._domain(n, term["topologyKey"]) == self._domain(node, term["topologyKey"])
                assert not (same and _matches(term, other["ns"], pod)), (
                    f"{key} on {node}: a placed pod's anti-affinity"
                )
        for term in pod["affinity"]:
            domain = self._domain(node, term["topologyKey"])
            matching = [n for p, n in before if _matches(term, pod["ns"], p)]
            ok = any(self._domain(n, term["topologyKey"]) == domain for n in matching) or (
                not matching and _matches(term, pod["ns"], pod)
            )
            assert ok, f"{key} on {node} breaks its affinity {term}"
        for constraint in pod["spread"]:
            topology = constraint["topologyKey"]
            domains = {self._domain(n, topology) for n in NODES}
            selector = {"labelSelector": constraint["labelSelector"]}
            counts = Counter(self._domain(n, topology) for p, n in before if _matches(selector, pod["ns"], p))
            lowest = 0 if len(domains) < constraint["minDomains"] else min(counts.get(d, 0) for d in domains)
            itself = 1 if _matches(selector, pod["ns"], pod) else 0
            skew = counts.get(self._domain(node, topology), 0) + itself - lowest
            assert skew <= constraint["maxSkew"], f"{key} on {node}: skew {skew} over {constraint}"


PodRulesMachine.TestCase.settings = settings(
    max_examples=500, stateful_step_count=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestPodRules = PodRulesMachine.TestCase
