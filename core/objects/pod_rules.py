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

Topology spread (DoNotSchedule; see topology_spread): per constraint selector, topology key and node
filter, the pods per domain on the eligible nodes and the smallest count, kept the same way; a node
passes when its domain's count stays within maxSkew of the smallest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from core.objects.allocation import Allocation
from core.objects.constraints import NodeFilter
from core.objects.node import Node
from core.objects.pod_affinity import PodAffinityTerm, PodSelector, pod_identity
from core.objects.topology_spread import DO_NOT_SCHEDULE, DomainCounts, SpreadConstraint

Selectors = tuple[PodSelector, ...]  # all must select a pod for it to count
CountKey = tuple[Selectors, str]  # (selectors, topologyKey)
SpreadKey = tuple[PodSelector, str, NodeFilter]  # (selector, topologyKey, the nodes counted)


class _Spread:
    """One spread registration: its eligible nodes and their domains' counts."""

    __slots__ = ("counts", "eligible", "filter", "key", "selector")

    def __init__(self, selector: PodSelector, key: str, node_filter: NodeFilter) -> None:
        self.selector, self.key, self.filter = selector, key, node_filter
        self.eligible: set[str] = set()
        self.counts = DomainCounts()

    def node_added(self, node: Node) -> None:
        domain = node.traits.label_map.get(self.key)
        if domain is not None and self.filter.admits(node.node_id, node.traits):
            self.eligible.add(node.node_id)
            self.counts.add_node(domain)

    def node_removed(self, node: Node) -> None:
        if node.node_id in self.eligible:
            self.eligible.discard(node.node_id)
            self.counts.remove_node(node.traits.label_map[self.key])


def identity_of(alloc: Allocation) -> tuple[str, dict[str, str]]:
    """The pod's namespace and labels, read from its tags once."""
    found = alloc.identity
    if found is None:
        found = alloc.identity = pod_identity(alloc.tags)
    return found


def _selects(selectors: Selectors, namespace: str, labels: Mapping[str, str]) -> bool:
    return all(s.matches(namespace, labels) for s in selectors)


class PodRules:
    """The partition's index; `for_ask` gives the rules one ask is held to, for one search."""

    def __init__(self, nodes: Mapping[str, Node]) -> None:
        self._nodes = nodes
        self._counts: dict[CountKey, Counter[str]] = {}  # registered selectors -> domain -> pods
        self._spread: dict[SpreadKey, _Spread] = {}
        self._layout: dict[str, tuple[int, int]] = {}  # topology key -> (nodes without it, domains)
        self.counting = False  # whether any selector is registered: then every pod placed counts
        self.anti_terms: dict[PodAffinityTerm, Counter[str]] = {}  # placed pods' terms -> domain -> pods

    # Upkeep -------------------------------------------------------------------------------------
    def placed(self, alloc: Allocation, node: Node) -> None:
        self._move(alloc, node, 1)

    def removed(self, alloc: Allocation, node: Node) -> None:
        self._move(alloc, node, -1)

    def _move(self, alloc: Allocation, node: Node, step: int) -> None:
        labels = node.traits.label_map
        if self.counting:
            namespace, pod_labels = identity_of(alloc)
            for (selectors, key), counts in self._counts.items():
                domain = labels.get(key)
                if domain is not None and _selects(selectors, namespace, pod_labels):
                    _bump(counts, domain, step)
            for spread in self._spread.values():
                if node.node_id in spread.eligible and spread.selector.matches(namespace, pod_labels):
                    spread.counts.move(labels[spread.key], step)
        anti = alloc.constraints.pod_anti_affinity
        if anti is not None:
            for term in anti.required:
                domain = labels.get(term.topology_key)
                if domain is not None:
                    _bump(self.anti_terms.setdefault(term, Counter()), domain, step)
                    if not self.anti_terms[term]:
                        del self.anti_terms[term]

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
        for node in self._nodes.values():
            for alloc in node.allocations.values():
                anti = alloc.constraints.pod_anti_affinity
                if anti is not None:
                    for term in anti.required:
                        domain = node.traits.label_map.get(term.topology_key)
                        if domain is not None:
                            self.anti_terms.setdefault(term, Counter())[domain] += 1

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
                    if _selects(selectors, *identity_of(alloc)):
                        counts[domain] += 1
        return counts

    def _spread_counts(self, constraint: SpreadConstraint, node_filter: NodeFilter) -> DomainCounts:
        key = (constraint.selector, constraint.topology_key, node_filter)
        spread = self._spread.get(key)
        if spread is None:
            spread = self._spread[key] = _Spread(constraint.selector, constraint.topology_key, node_filter)
            self.counting = True
            for node in self._nodes.values():
                spread.node_added(node)
                if node.node_id in spread.eligible:
                    domain = node.traits.label_map[constraint.topology_key]
                    for alloc in node.allocations.values():
                        if constraint.selector.matches(*identity_of(alloc)):
                            spread.counts.move(domain, 1)
        return spread.counts

    # Checks -------------------------------------------------------------------------------------
    def for_ask(self, ask: Allocation) -> AskPodRules | None:
        """The rules `ask` is held to now; None when none applies (the common case, at no cost)."""
        constraints = ask.constraints
        if (
            not self.anti_terms
            and constraints.pod_affinity is None
            and constraints.pod_anti_affinity is None
            and not constraints.spread
        ):
            return None
        namespace, labels = identity_of(ask)
        theirs = [term for term in self.anti_terms if term.selector.matches(namespace, labels)]
        forbidden: list[tuple[str, Counter[str]]] = [(t.topology_key, self.anti_terms[t]) for t in theirs]
        anti = constraints.pod_anti_affinity
        if anti is not None:
            forbidden += [(t.topology_key, self._count((t.selector,), t.topology_key)) for t in anti.required]
        needed: list[tuple[str, Counter[str]]] = []
        first_of_group = False
        affinity = constraints.pod_affinity
        if affinity is not None and affinity.required:
            selectors = tuple(t.selector for t in affinity.required)
            needed = [(t.topology_key, self._count(selectors, t.topology_key)) for t in affinity.required]
            first_of_group = not any(counts for _, counts in needed) and _selects(
                selectors, namespace, labels
            )
        spread: list[tuple[str, Counter[str], int]] = []
        uneven: list[tuple[str, Counter[str], int]] = []  # ScheduleAnyway: scored, not required
        for constraint in constraints.spread:
            node_filter = NodeFilter.of(constraints, constraint.honor_affinity, constraint.honor_taints)
            counts = self._spread_counts(constraint, node_filter)
            itself = 1 if constraint.selector.matches(namespace, labels) else 0
            most = constraint.max_skew + counts.minimum(constraint.min_domains) - itself
            hard = constraint.when_unsatisfiable == DO_NOT_SCHEDULE
            (spread if hard else uneven).append((constraint.topology_key, counts.pods, most))
        liked = [
            (t.topology_key, self._count((t.selector,), t.topology_key), w)
            for w, t in (affinity.preferred if affinity is not None else ())
        ]
        disliked = [
            (t.topology_key, self._count((t.selector,), t.topology_key), w)
            for w, t in (anti.preferred if anti is not None else ())
        ]
        if not (forbidden or needed or spread or uneven or liked or disliked):
            return None
        rules = AskPodRules(forbidden, needed, first_of_group, spread)
        rules.repellers = [(t.topology_key, _carries(t)) for t in theirs]
        if anti is not None:
            rules.repellers += [(t.topology_key, _selected_by(t.selector)) for t in anti.required]
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


class Preferences:
    """What an ask prefers, as a score per node (higher is better; see score)."""

    __slots__ = ("best", "disliked", "liked", "uneven")

    def __init__(
        self,
        liked: list[tuple[str, Counter[str], int]],
        disliked: list[tuple[str, Counter[str], int]],
        uneven: list[tuple[str, Counter[str], int]],
    ) -> None:
        self.liked = liked  # preferred affinity: (topologyKey, matching pods per domain, weight)
        self.disliked = disliked  # preferred anti-affinity, the same
        self.uneven = uneven  # ScheduleAnyway spread: (topologyKey, pods per domain, most within maxSkew)
        self.best = sum(weight for _, _, weight in liked)  # no node can score more

    def score(self, node: Node) -> int:
        """+weight for a preferred-affinity term whose domain holds a pod it selects, -weight for such a
        preferred-anti-affinity term, and -100 per pod a ScheduleAnyway constraint's domain holds beyond
        its maxSkew (a node without the key counts as beyond it by one)."""
        labels = node.traits.label_map
        score = 0
        for key, counts, weight in self.liked:
            domain = labels.get(key)
            if domain is not None and counts.get(domain, 0) > 0:
                score += weight
        for key, counts, weight in self.disliked:
            domain = labels.get(key)
            if domain is not None and counts.get(domain, 0) > 0:
                score -= weight
        for key, pods, most in self.uneven:
            domain = labels.get(key)
            over = pods.get(domain, 0) - most if domain is not None else 1
            if over > 0:
                score -= 100 * over
        return score


class AskPodRules:
    """One ask's pod rules for one search: a few lookups per node."""

    __slots__ = ("first_of_group", "forbidden", "needed", "preferences", "repellers", "spread")

    def __init__(
        self,
        forbidden: list[tuple[str, Counter[str]]],
        needed: list[tuple[str, Counter[str]]],
        first_of_group: bool,
        spread: list[tuple[str, Counter[str], int]],
    ) -> None:
        self.forbidden = forbidden
        self.needed = needed
        self.first_of_group = first_of_group
        self.spread = spread  # (topologyKey, pods per domain, the most a domain may hold before this pod)
        self.preferences: Preferences | None = None
        # For preemption: per anti-affinity rule, its topology key and which placed pods it is about.
        self.repellers: list[tuple[str, Callable[[Allocation], bool]]] = []

    def only_repelled(self, node: Node) -> bool:
        """Whether the node fails only anti-affinity (its own or placed pods'): removing the pods
        behind that can make it pass, which removing pods never does for affinity or spread."""
        labels = node.traits.label_map
        for key, counts in self.needed:
            domain = labels.get(key)
            if domain is None or (not self.first_of_group and counts.get(domain, 0) <= 0):
                return False
        return all(
            labels.get(key) is not None and pods.get(labels[key], 0) <= most
            for key, pods, most in self.spread
        )

    def repelling(self, node: Node, nodes: Iterable[Node]) -> list[Allocation]:
        """The placed pods that keep the ask off `node` by anti-affinity: in its domain of each rule's
        key, those the rule is about."""
        labels = node.traits.label_map
        out: list[Allocation] = []
        for key, about in self.repellers:
            domain = labels.get(key)
            if domain is None:
                continue
            for other in nodes:
                if other.traits.label_map.get(key) == domain:
                    out += [a for a in other.allocations.values() if about(a) and a not in out]
        return out

    def admits(self, node: Node) -> bool:
        return not self.refusal(node)

    def refusal(self, node: Node) -> str:
        """Which rule keeps the ask off `node` ("" when none does), for the pending reason."""
        labels = node.traits.label_map
        for key, counts in self.forbidden:
            domain = labels.get(key)
            if domain is not None and counts.get(domain, 0) > 0:
                return "pod anti-affinity"
        for key, counts in self.needed:
            domain = labels.get(key)
            if domain is None or (not self.first_of_group and counts.get(domain, 0) <= 0):
                return "pod affinity"
        for key, pods, most in self.spread:
            domain = labels.get(key)
            if domain is None or pods.get(domain, 0) > most:
                return "topology spread constraints"
        return ""


def _carries(term: PodAffinityTerm) -> Callable[[Allocation], bool]:
    """A placed pod whose own required anti-affinity has this term."""

    def about(alloc: Allocation) -> bool:
        anti = alloc.constraints.pod_anti_affinity
        return anti is not None and term in anti.required

    return about


def _selected_by(selector: PodSelector) -> Callable[[Allocation], bool]:
    return lambda alloc: selector.matches(*identity_of(alloc))


def _bump(counts: Counter[str], domain: str, step: int) -> None:
    value = counts.get(domain, 0) + step
    if value > 0:
        counts[domain] = value
    else:
        counts.pop(domain, None)
