"""Required inter-pod affinity and anti-affinity, and topology spread, over a partition, kept up to
date as pods and nodes come and go.

Kubernetes' InterPodAffinity filter, with its three rules:
- the ask's anti-affinity: no node in a domain (its value of the term's topologyKey) that holds a pod
  the term selects; a node without the key is not in any domain and passes;
- the ask's affinity: the node has every term's topologyKey, and its domain holds a pod that every
  term selects (counted per pod matching all terms, as Kubernetes does); when no such pod exists
  anywhere and the ask matches its own terms, it may start the group on any node with the keys;
- placed pods' anti-affinity (the symmetric rule): no node in the domain of a placed pod whose
  required anti-affinity term selects the ask.

What this costs: per selector an ask uses, the matching pods per domain, counted once over the
partition when first used and then moved by every placement and release (a check per registered
selector); per anti-affinity term of placed pods, the domains that hold them. An ask then costs a
lookup per term per node. Pods of other schedulers (foreign) count like ours.

Placed pods' preferences count too, as kube-scheduler's InterPodAffinity score counts them: a
placed pod's preferred affinity term that selects the ask adds its weight on the nodes of its
domain, a preferred anti-affinity term takes it away, and a required affinity term adds 1
(kube-scheduler's hardPodAffinityWeight).

Topology spread (DoNotSchedule; see topology_spread): per constraint selector, topology key and node
filter, the pods per domain on the eligible nodes and the smallest count, kept the same way; a node
passes when its domain's count stays within maxSkew of the smallest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from core.constraints.ask import NodeFilter
from core.constraints.pod_affinity import PodAffinityTerm, PodSelector
from core.constraints.topology_spread import DO_NOT_SCHEDULE, SpreadConstraint
from core.objects.allocation import Allocation
from core.objects.node import Node
from core.scheduler.fit.ask_pod_rules import (
    AskPodRules,
    Preferences,
    Selectors,
    SpreadSource,
    carries,
    identity_of,
    selected_by,
    selects,
)
from core.scheduler.fit.spread_counts import Spread

CountKey = tuple[Selectors, str]  # (selectors, topologyKey)
SpreadKey = tuple[PodSelector, str, NodeFilter]  # (selector, topologyKey, the nodes counted)
# kube-scheduler's hardPodAffinityWeight: what a placed pod's required affinity term scores.
HARD_AFFINITY_WEIGHT = 1


class PodRules:
    """The partition's index; `for_ask` gives the rules one ask is held to, for one search."""

    def __init__(self, nodes: Mapping[str, Node]) -> None:
        self._nodes = nodes
        self._counts: dict[CountKey, Counter[str]] = {}  # registered selectors -> domain -> pods
        self._spread: dict[SpreadKey, Spread] = {}
        self._layout: dict[str, tuple[int, int]] = {}  # topology key -> (nodes without it, domains)
        self.counting = False  # whether any selector is registered: then every pod placed counts
        self.anti_terms: dict[PodAffinityTerm, Counter[str]] = {}  # placed pods' terms -> domain -> pods
        # Placed pods' preferences (see the module's doc): (term, weight) -> domain -> pods carrying it.
        self.liked_terms: dict[tuple[PodAffinityTerm, int], Counter[str]] = {}
        self.disliked_terms: dict[tuple[PodAffinityTerm, int], Counter[str]] = {}
        # ReadWriteOncePod claims in use: "<namespace>/<name>" -> the placed pods using it, by ref.
        self.claim_users: dict[str, dict[tuple[str, str], Allocation]] = {}

    # Upkeep -------------------------------------------------------------------------------------
    def placed(self, alloc: Allocation, node: Node) -> None:
        self._move(alloc, node, 1)

    def removed(self, alloc: Allocation, node: Node) -> None:
        self._move(alloc, node, -1)

    def terminating(self, alloc: Allocation, node: Node) -> None:
        """A placed pod is being deleted: it leaves the spread counts now (kube-scheduler counts no
        terminating pod there); affinity and anti-affinity still see it until it is gone."""
        if self.counting:
            identity = identity_of(alloc)
            labels = node.traits.label_map
            for spread in self._spread.values():
                if node.node_id in spread.eligible and spread.selector.matches(*identity):
                    spread.counts.move(labels[spread.key], -1)
        alloc.terminating = True

    def _move(self, alloc: Allocation, node: Node, step: int) -> None:
        labels = node.traits.label_map
        if self.counting:
            identity = identity_of(alloc)
            for (selectors, key), counts in self._counts.items():
                domain = labels.get(key)
                if domain is not None and selects(selectors, *identity):
                    _bump(counts, domain, step)
            if not alloc.terminating:  # a terminating pod left the spread counts already
                for spread in self._spread.values():
                    if node.node_id in spread.eligible and spread.selector.matches(*identity):
                        spread.counts.move(labels[spread.key], step)
        self._carry(alloc, labels, step)
        for claim in alloc.constraints.rwop_claims:
            users = self.claim_users.setdefault(claim, {})
            if step > 0:
                users[alloc.ref] = alloc
            else:
                users.pop(alloc.ref, None)
                if not users:
                    del self.claim_users[claim]

    def _carry(self, alloc: Allocation, labels: Mapping[str, str], step: int) -> None:
        """Count the terms a placed pod carries (its required anti-affinity, its preferences) in their
        domains on its node."""
        anti = alloc.constraints.pod_anti_affinity
        affinity = alloc.constraints.pod_affinity
        if anti is None and affinity is None:
            return  # most pods
        if anti is not None:
            for term in anti.required:
                _carry_term(self.anti_terms, term, term, labels, step)
            for weight, term in anti.preferred:
                _carry_term(self.disliked_terms, (term, weight), term, labels, step)
        if affinity is not None:
            for weight, term in affinity.preferred:
                _carry_term(self.liked_terms, (term, weight), term, labels, step)
            for term in affinity.required:
                _carry_term(self.liked_terms, (term, HARD_AFFINITY_WEIGHT), term, labels, step)

    def node_added(self, node: Node) -> None:
        self._layout.clear()
        for spread in self._spread.values():
            spread.node_added(node)

    def node_removed(self, node: Node) -> None:
        self._layout.clear()
        for spread in self._spread.values():
            spread.node_removed(node)

    def layout(self, key: str) -> tuple[int, int]:
        """For a topology key: how many nodes lack it, and how many domains it has (cached until the
        nodes change)."""
        found = self._layout.get(key)
        if found is None:
            domains = {n.traits.label_map.get(key) for n in self._nodes.values()}
            missing = sum(1 for n in self._nodes.values() if key not in n.traits.label_map)
            found = self._layout[key] = (missing, len(domains - {None}))
        return found

    def relabelled(self) -> None:
        """A node's labels (or taints) changed: its pods' domains did, and which nodes a spread counts.
        Counted afresh when next needed."""
        self._counts.clear()
        self._spread.clear()
        self._layout.clear()
        self.counting = False
        self.anti_terms.clear()
        self.liked_terms.clear()
        self.disliked_terms.clear()
        for node in self._nodes.values():
            for alloc in node.allocations.values():
                self._carry(alloc, node.traits.label_map, 1)

    @property
    def carried(self) -> bool:
        """Whether a placed pod carries a term that may concern any ask (then every ask is checked)."""
        return bool(self.anti_terms or self.liked_terms or self.disliked_terms)

    def _count(self, selectors: Selectors, key: str) -> Counter[str]:
        counts = self._counts.get((selectors, key))
        if counts is None:
            counts = self._counts[(selectors, key)] = Counter()
            self.counting = True
            for node in self._nodes.values():
                domain = node.traits.label_map.get(key)
                if domain is None:
                    continue
                for alloc in node.allocations.values():
                    if selects(selectors, *identity_of(alloc)):
                        counts[domain] += 1
        return counts

    def _spread_registration(self, constraint: SpreadConstraint, node_filter: NodeFilter) -> Spread:
        key = (constraint.selector, constraint.topology_key, node_filter)
        spread = self._spread.get(key)
        if spread is None:
            spread = self._spread[key] = Spread(constraint.selector, constraint.topology_key, node_filter)
            self.counting = True
            for node in self._nodes.values():
                spread.node_added(node)
                if node.node_id in spread.eligible:
                    domain = node.traits.label_map[constraint.topology_key]
                    for alloc in node.allocations.values():
                        if not alloc.terminating and constraint.selector.matches(*identity_of(alloc)):
                            spread.counts.move(domain, 1)
        return spread

    # Checks -------------------------------------------------------------------------------------
    def for_ask(self, ask: Allocation) -> AskPodRules | None:
        """The rules `ask` is held to now; None when none applies (the common case, at no cost)."""
        constraints = ask.constraints
        if (
            not self.carried
            and constraints.pod_affinity is None
            and constraints.pod_anti_affinity is None
            and not constraints.spread
        ):
            return None
        identity = identity_of(ask)
        theirs = [term for term in self.anti_terms if term.selector.matches(*identity)]
        forbidden: list[tuple[str, Counter[str]]] = [(t.topology_key, self.anti_terms[t]) for t in theirs]
        anti = constraints.pod_anti_affinity
        if anti is not None:
            forbidden += [(t.topology_key, self._count((t.selector,), t.topology_key)) for t in anti.required]
        needed: list[tuple[str, Counter[str]]] = []
        first_of_group = False
        affinity = constraints.pod_affinity
        selectors: Selectors = ()
        if affinity is not None and affinity.required:
            selectors = tuple(t.selector for t in affinity.required)
            needed = [(t.topology_key, self._count(selectors, t.topology_key)) for t in affinity.required]
            first_of_group = not any(counts for _, counts in needed) and selects(selectors, *identity)
        spread: list[tuple[str, Counter[str], int]] = []
        spread_sources: list[SpreadSource] = []
        uneven: list[tuple[str, Counter[str], int]] = []  # ScheduleAnyway: scored, not required
        keys_by_kind: dict[str, tuple[str, ...]] = {}
        for constraint in constraints.spread:
            kind = constraint.when_unsatisfiable
            keys_by_kind[kind] = (*keys_by_kind.get(kind, ()), constraint.topology_key)
        for constraint in constraints.spread:
            node_filter = NodeFilter.of(
                constraints,
                constraint.honor_affinity,
                constraint.honor_taints,
                tuple(sorted(set(keys_by_kind[constraint.when_unsatisfiable]))),
            )
            registration = self._spread_registration(constraint, node_filter)
            counts = registration.counts
            itself = 1 if constraint.selector.matches(*identity) else 0
            most = constraint.max_skew + counts.minimum(constraint.min_domains) - itself
            if constraint.when_unsatisfiable == DO_NOT_SCHEDULE:
                spread.append((constraint.topology_key, counts.pods, most))
                spread_sources.append((registration, constraint, itself))
            else:
                uneven.append((constraint.topology_key, counts.pods, most))
        liked = [
            (t.topology_key, self._count((t.selector,), t.topology_key), w)
            for w, t in (affinity.preferred if affinity is not None else ())
        ]
        disliked = [
            (t.topology_key, self._count((t.selector,), t.topology_key), w)
            for w, t in (anti.preferred if anti is not None else ())
        ]
        # Placed pods' preferences that select the ask: present in a domain or not, as the ask's own.
        liked += [
            (t.topology_key, c, w) for (t, w), c in self.liked_terms.items() if t.selector.matches(*identity)
        ]
        disliked += [
            (t.topology_key, c, w)
            for (t, w), c in self.disliked_terms.items()
            if t.selector.matches(*identity)
        ]
        if not (forbidden or needed or spread or uneven or liked or disliked):
            return None
        rules = AskPodRules(self._nodes, forbidden, needed, first_of_group, spread)
        rules.repellers = [(t.topology_key, carries(t)) for t in theirs]
        if anti is not None:
            rules.repellers += [(t.topology_key, selected_by(t.selector)) for t in anti.required]
        rules.needed_selectors = selectors
        rules.spread_sources = spread_sources
        if uneven or liked or disliked:
            rules.preferences = Preferences(liked, disliked, uneven)
            # A disliked term every node is caught by (each has the key, each domain holds a selected
            # pod) costs every node its weight: the best score is that much lower, so the search can
            # still stop at the first node that reaches it instead of scoring every feasible node.
            for key, holding, weight in disliked:
                missing, domains = self.layout(key)
                if missing == 0 and len(holding) >= domains:
                    rules.preferences.best -= weight
        return rules


def _carry_term(
    carried: dict[Any, Counter[str]], key: Any, term: PodAffinityTerm, labels: Mapping[str, str], step: int
) -> None:
    """Move one carried term's count (under `key`) in its domain on a pod's node (a node without the
    term's topology key: none)."""
    domain = labels.get(term.topology_key)
    if domain is None:
        return
    counts = carried.setdefault(key, Counter())
    _bump(counts, domain, step)
    if not counts:
        del carried[key]


def _bump(counts: Counter[str], domain: str, step: int) -> None:
    value = counts.get(domain, 0) + step
    if value > 0:
        counts[domain] = value
    else:
        counts.pop(domain, None)
