"""Kubernetes topology spread constraints: parsing, and the counts one constraint is checked against.

The tag `pykorn.io/topology-spread` carries a pod's `spec.topologySpreadConstraints` as Kubernetes
serves them. With Kubernetes' PodTopologySpread semantics, for `whenUnsatisfiable: DoNotSchedule`:

- the pods counted are those in the pod's namespace that the `labelSelector` selects (plus the pod's
  own values of `matchLabelKeys`), on the eligible nodes: those with the `topologyKey` label that
  also pass the pod's node selector and required node affinity (`nodeAffinityPolicy: Honor`, the
  default; `Ignore` counts every node) and, with `nodeTaintsPolicy: Honor`, whose taints the pod
  tolerates (the default `Ignore` does not look at taints);
- a node passes when, in its domain, `count + (1 if the pod matches its own selector) - min` is at
  most `maxSkew`, where `min` is the smallest count over the eligible domains, or 0 while there are
  fewer than `minDomains` of them; a node without the `topologyKey` label does not pass.

`ScheduleAnyway` constraints score nodes instead (pod_rules.Preferences): a preference, never a filter.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from core.constraints.pod_affinity import (
    LabelRequirement,
    PodAffinityError,
    PodSelector,
    parse_label_selector,
)

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR, IGNORE = "Honor", "Ignore"


class SpreadError(ValueError):
    pass


@dataclass(frozen=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: PodSelector
    min_domains: int = 1
    honor_affinity: bool = True
    honor_taints: bool = False


def parse_spread(
    raw: object, where: str, namespace: str, labels: Mapping[str, str]
) -> tuple[SpreadConstraint, ...]:
    if not isinstance(raw, list):
        raise SpreadError(f"{where} must be a JSON list of topology spread constraints")
    return tuple(_constraint(item, f"{where}[{i}]", namespace, labels) for i, item in enumerate(raw))


def _constraint(raw: object, where: str, namespace: str, labels: Mapping[str, str]) -> SpreadConstraint:
    if not isinstance(raw, dict):
        raise SpreadError(f"{where} must be an object")
    skew = raw.get("maxSkew")
    if not isinstance(skew, int) or isinstance(skew, bool) or skew < 1:
        raise SpreadError(f"{where}.maxSkew must be an integer of at least 1, got {skew!r}")
    key = raw.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise SpreadError(f"{where}.topologyKey must be a non-empty string")
    when = raw.get("whenUnsatisfiable")
    if when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        raise SpreadError(f"{where}.whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway, got {when!r}")
    min_domains = raw.get("minDomains", 1)
    if min_domains is None:
        min_domains = 1
    if not isinstance(min_domains, int) or isinstance(min_domains, bool) or min_domains < 1:
        raise SpreadError(f"{where}.minDomains must be an integer of at least 1, got {min_domains!r}")
    if min_domains > 1 and when != DO_NOT_SCHEDULE:
        raise SpreadError(f"{where}.minDomains may only be set with whenUnsatisfiable DoNotSchedule")
    policies = []
    for field, default in (("nodeAffinityPolicy", HONOR), ("nodeTaintsPolicy", IGNORE)):
        value = raw.get(field) or default
        if value not in (HONOR, IGNORE):
            raise SpreadError(f"{where}.{field} must be Honor or Ignore, got {value!r}")
        policies.append(value == HONOR)
    selector = raw.get("labelSelector")
    try:
        requirements = (
            parse_label_selector(selector, f"{where}.labelSelector") if selector is not None else []
        )
    except PodAffinityError as exc:
        raise SpreadError(str(exc)) from None
    for label in raw.get("matchLabelKeys") or []:
        if label in labels:
            requirements.append(LabelRequirement(str(label), "In", frozenset({labels[label]})))
    # As Kubernetes: no labelSelector selects no pod, so only the pod itself is never counted.
    pods = PodSelector(frozenset({namespace}), tuple(requirements), selector is None)
    return SpreadConstraint(skew, key, str(when), pods, min_domains, policies[0], policies[1])


class DomainCounts:
    """For one selector over the eligible nodes of one topology key: pods per domain, eligible nodes
    per domain, and the smallest pod count over the domains, kept as pods and nodes come and go."""

    __slots__ = ("_min", "by_count", "nodes", "pods")

    def __init__(self) -> None:
        self.pods: Counter[str] = Counter()  # domain -> matching pods on its eligible nodes
        self.nodes: Counter[str] = Counter()  # domain -> eligible nodes
        self.by_count: Counter[int] = Counter()  # pod count -> how many domains have it
        self._min = 0

    def add_node(self, domain: str) -> None:
        if self.nodes[domain] == 0:  # a new eligible domain
            self.by_count[self.pods.get(domain, 0)] += 1
            self._min = min(self.by_count)
        self.nodes[domain] += 1

    def remove_node(self, domain: str) -> None:
        self.nodes[domain] -= 1
        if self.nodes[domain] <= 0:
            del self.nodes[domain]
            count = self.pods.get(domain, 0)
            self.by_count[count] -= 1
            if self.by_count[count] <= 0:
                del self.by_count[count]
            self._min = min(self.by_count) if self.by_count else 0

    def move(self, domain: str, step: int) -> None:
        before = self.pods.get(domain, 0)
        after = before + step
        if after > 0:
            self.pods[domain] = after
        else:
            self.pods.pop(domain, None)
        if domain not in self.nodes:
            return
        self.by_count[before] -= 1
        if self.by_count[before] <= 0:
            del self.by_count[before]
        self.by_count[after] += 1
        if after < self._min:
            self._min = after
        elif before == self._min and before not in self.by_count:
            self._min = after  # the last domain at the minimum went up by one

    def minimum(self, min_domains: int) -> int:
        """The smallest count over the eligible domains; 0 while there are fewer than `min_domains`."""
        if len(self.nodes) < min_domains:
            return 0
        return self._min
