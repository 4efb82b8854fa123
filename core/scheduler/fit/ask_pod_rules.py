"""The pod rules one ask is held to for one search (built by PodRules.for_ask from the partition's
counts): required pod affinity and anti-affinity and DoNotSchedule topology spread as a check with a
what-if for preemption, and the ask's preferences (and placed pods' preferences about it) as a score.
A few dictionary lookups per node."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from core.constraints.pod_affinity import Identity, PodAffinityTerm, PodSelector, pod_identity
from core.constraints.topology_spread import SpreadConstraint
from core.objects.allocation import Allocation
from core.objects.node import Node
from core.scheduler.fit.checks import POD_AFFINITY, POD_ANTI_AFFINITY, TOPOLOGY_SPREAD
from core.scheduler.fit.spread_counts import Spread

Selectors = tuple[PodSelector, ...]  # all must select a pod for it to count
SpreadSource = tuple[Spread, SpreadConstraint, int]  # registration, constraint, 1 when the ask counts


def identity_of(alloc: Allocation) -> Identity:
    """The pod's namespace, labels and namespace's labels, read from its tags once."""
    found = alloc.identity
    if found is None:
        found = alloc.identity = pod_identity(alloc.tags)
    return found


def selects(
    selectors: Selectors, namespace: str, labels: Mapping[str, str], namespace_labels: Mapping[str, str]
) -> bool:
    return all(s.matches(namespace, labels, namespace_labels) for s in selectors)


class Preferences:
    """What an ask prefers, as a score per node (higher is better; see score)."""

    __slots__ = ("best", "disliked", "liked", "uneven")
    rules = ("pod_affinity", "pod_anti_affinity", "spread")

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

    __slots__ = (
        "_by_domain", "_nodes", "first_of_group", "forbidden", "needed", "needed_selectors", "preferences",
        "repellers", "spread", "spread_sources",
    )  # fmt: skip
    rules = ("pod_affinity", "pod_anti_affinity", "spread")

    def __init__(
        self,
        nodes: Mapping[str, Node],
        forbidden: list[tuple[str, Counter[str]]],
        needed: list[tuple[str, Counter[str]]],
        first_of_group: bool,
        spread: list[tuple[str, Counter[str], int]],
    ) -> None:
        self._nodes = nodes  # the partition's, for preemption's what-if
        self.forbidden = forbidden
        self.needed = needed
        self.first_of_group = first_of_group
        self.spread = spread  # (topologyKey, pods per domain, the most a domain may hold before this pod)
        self.preferences: Preferences | None = None
        # For preemption, each parallel to the list it explains: per anti-affinity rule (forbidden),
        # its topology key and which placed pods it is about; the affinity terms' selectors (needed);
        # per spread constraint, its registration, the constraint and whether the ask counts itself.
        self.repellers: list[tuple[str, Callable[[Allocation], bool]]] = []
        self.needed_selectors: Selectors = ()
        self.spread_sources: list[SpreadSource] = []
        self._by_domain: dict[str, dict[str, list[Node]]] = {}

    def admits(self, node: Node) -> bool:
        return not self.refusal(node)

    def refusal(self, node: Node) -> str:
        """Which rule keeps the ask off `node` ("" when none does), for the pending reason."""
        labels = node.traits.label_map
        for key, counts in self.forbidden:
            domain = labels.get(key)
            if domain is not None and counts.get(domain, 0) > 0:
                return POD_ANTI_AFFINITY
        for key, counts in self.needed:
            domain = labels.get(key)
            if domain is None or (not self.first_of_group and counts.get(domain, 0) <= 0):
                return POD_AFFINITY
        for key, pods, most in self.spread:
            domain = labels.get(key)
            if domain is None or pods.get(domain, 0) > most:
                return TOPOLOGY_SPREAD
        return ""

    # Preemption ---------------------------------------------------------------------------------
    def victims_for(
        self, node: Node, takeable: Callable[[Allocation], bool], order: Callable[[Allocation], Any]
    ) -> list[Allocation] | None:
        """The placed pods that must go for the rules to admit the ask on `node`, in `order`: every
        pod behind an anti-affinity rule that keeps it off, and the fewest pods a spread constraint
        selects in the node's domain that bring it within maxSkew. None when no takeable pods can
        (affinity and a node outside a spread's domains never pass by removing pods), or when taking
        them would break another rule (a spread's smallest domain, an affinity's only match)."""
        if self.admits(node):
            return []
        nodes = self._nodes
        labels = node.traits.label_map
        chosen: dict[int, Allocation] = {}
        for (key, counts), (_, about) in zip(self.forbidden, self.repellers, strict=True):
            domain = labels.get(key)
            if domain is None or counts.get(domain, 0) <= 0:
                continue
            for pod in self._pods_in(nodes, key, domain):
                if about(pod):
                    if not takeable(pod):
                        return None
                    chosen[id(pod)] = pod
        for (key, pods, most), (registration, _, _) in zip(self.spread, self.spread_sources, strict=True):
            domain = labels.get(key)
            if domain is None:
                return None
            selected = [
                p for p in self._pods_in(nodes, key, domain, registration.eligible) if _in(registration, p)
            ]
            excess = pods.get(domain, 0) - most - sum(1 for p in selected if id(p) in chosen)
            for pod in sorted((p for p in selected if id(p) not in chosen and takeable(p)), key=order):
                if excess <= 0:
                    break
                chosen[id(pod)] = pod
                excess -= 1
            if excess > 0:
                return None
        victims = sorted(chosen.values(), key=order)
        return victims if self.admits_without(node, victims) else None

    def admits_without(self, node: Node, victims: list[Allocation]) -> bool:
        """Whether the rules admit the ask on `node` once `victims` are gone: the counts less the
        victims each rule counts, and a spread's smallest domain recomputed when a victim was in it."""
        nodes = self._nodes
        labels = node.traits.label_map

        def gone(
            key: str, domain: str, about: Callable[[Allocation], bool], eligible: set[str] | None = None
        ) -> int:
            return sum(
                1
                for v in victims
                if (eligible is None or v.node_id in eligible)
                and v.node_id in nodes
                and nodes[v.node_id].traits.label_map.get(key) == domain
                and about(v)
            )

        for (key, counts), (_, about) in zip(self.forbidden, self.repellers, strict=True):
            domain = labels.get(key)
            if domain is not None and counts.get(domain, 0) - gone(key, domain, about) > 0:
                return False
        for key, counts in self.needed:
            domain = labels.get(key)
            if domain is None:
                return False
            left = counts.get(domain, 0) - gone(key, domain, selected_by_all(self.needed_selectors))
            if not self.first_of_group and left <= 0:
                return False
        for (key, pods, _), (registration, constraint, itself) in zip(
            self.spread, self.spread_sources, strict=True
        ):
            domain = labels.get(key)
            if domain is None:
                return False
            remaining = Counter(pods)
            for victim in victims:
                victim_node = nodes.get(victim.node_id)
                if (
                    victim_node is not None
                    and victim.node_id in registration.eligible
                    and _in(registration, victim)
                ):
                    remaining[victim_node.traits.label_map[key]] -= 1
            domains = registration.counts.nodes
            lowest = 0 if len(domains) < constraint.min_domains else min(remaining[d] for d in domains)
            if remaining[domain] > constraint.max_skew + lowest - itself:
                return False
        return True

    def _pods_in(
        self, nodes: Mapping[str, Node], key: str, domain: str, eligible: set[str] | None = None
    ) -> list[Allocation]:
        """The pods on the nodes of one domain (on `eligible` nodes only, when given)."""
        by_domain = self._by_domain.get(key)
        if by_domain is None:  # once per search: a preemption looks at several nodes
            by_domain = self._by_domain[key] = {}
            for other in nodes.values():
                value = other.traits.label_map.get(key)
                if value is not None:
                    by_domain.setdefault(value, []).append(other)
        return [
            pod
            for other in by_domain.get(domain, ())
            if eligible is None or other.node_id in eligible
            for pod in other.allocations.values()
        ]


def carries(term: PodAffinityTerm) -> Callable[[Allocation], bool]:
    """A placed pod whose own required anti-affinity has this term."""

    def about(alloc: Allocation) -> bool:
        anti = alloc.constraints.pod_anti_affinity
        return anti is not None and term in anti.required

    return about


def selected_by(selector: PodSelector) -> Callable[[Allocation], bool]:
    return lambda alloc: selector.matches(*identity_of(alloc))


def selected_by_all(selectors: Selectors) -> Callable[[Allocation], bool]:
    return lambda alloc: selects(selectors, *identity_of(alloc))


def _in(registration: Spread, alloc: Allocation) -> bool:
    """Whether the registration counts `alloc` (a terminating pod it does not)."""
    return not alloc.terminating and registration.selector.matches(*identity_of(alloc))
