"""Kubernetes inter-pod affinity terms: which pods a term selects, parsed from a pod's own JSON.

The tags `pykorn.io/pod-affinity` and `pykorn.io/pod-anti-affinity` carry a pod's
`spec.affinity.podAffinity` and `spec.affinity.podAntiAffinity` as Kubernetes serves them. A term
selects the pods whose namespace is in its `namespaces` (none listed: the pod's own namespace; an
empty `namespaceSelector`: every namespace) and whose labels match its `labelSelector`
(`matchLabels`, `matchExpressions` with In, NotIn, Exists, DoesNotExist; no selector selects
nothing), grouped by `topologyKey` (the node label whose value is the domain). `matchLabelKeys` and
`mismatchLabelKeys` add the pod's own values of those labels to the selector, as Kubernetes does.

A pod's namespace and labels are its tags `kubernetes.io/meta/namespace` and `kubernetes.io/label/*`,
its namespace's labels the tags `pykorn.io/namespace-label/*` (the Kubernetes shim sends them from
its namespace informer). A term's `namespaces` and `namespaceSelector` add up, as in Kubernetes: it
selects pods in a listed namespace or in a namespace whose labels the selector matches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from si.v1.tags import (
    LABEL_PREFIX,
    NAMESPACE_LABEL_PREFIX,
    TAG_NAMESPACE,
)

Identity = tuple[str, dict[str, str], dict[str, str]]  # a pod's namespace, its labels, its namespace's labels
_NO_LABELS: dict[str, str] = {}
_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


class PodAffinityError(ValueError):
    pass


@dataclass(frozen=True)
class LabelRequirement:
    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.operator == "In":
            return value is not None and value in self.values
        if self.operator == "NotIn":
            return value is None or value not in self.values
        if self.operator == "Exists":
            return value is not None
        return value is None  # DoesNotExist


@dataclass(frozen=True)
class PodSelector:
    """Which pods a term selects: namespaces (None: all), or else namespaces whose labels meet the
    namespace requirements (None: no namespaceSelector), and label requirements (all must hold)."""

    namespaces: frozenset[str] | None
    requirements: tuple[LabelRequirement, ...]
    selects_nothing: bool = False  # a term without a labelSelector
    namespace_requirements: tuple[LabelRequirement, ...] | None = None

    def matches(
        self, namespace: str, labels: Mapping[str, str], namespace_labels: Mapping[str, str] = _NO_LABELS
    ) -> bool:
        if self.selects_nothing:
            return False
        if self.namespaces is not None and namespace not in self.namespaces:
            wanted = self.namespace_requirements
            if wanted is None or not all(r.matches(namespace_labels) for r in wanted):
                return False
        return all(r.matches(labels) for r in self.requirements)


@dataclass(frozen=True)
class PodAffinityTerm:
    selector: PodSelector
    topology_key: str


@dataclass(frozen=True)
class PodAffinity:
    """A pod's required and preferred terms, for affinity or anti-affinity."""

    required: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[tuple[int, PodAffinityTerm], ...] = ()


def pod_identity(tags: Mapping[str, str]) -> Identity:
    """A pod's namespace, labels and namespace's labels, from its tags."""
    labels: dict[str, str] = {}
    namespace_labels: dict[str, str] = {}
    for key, value in tags.items():
        if key.startswith(LABEL_PREFIX):
            labels[key[len(LABEL_PREFIX) :]] = value
        elif key.startswith(NAMESPACE_LABEL_PREFIX):
            namespace_labels[key[len(NAMESPACE_LABEL_PREFIX) :]] = value
    return tags.get(TAG_NAMESPACE, "default"), labels, namespace_labels or _NO_LABELS


def parse_pod_affinity(raw: object, where: str, namespace: str, labels: Mapping[str, str]) -> PodAffinity:
    """A podAffinity or podAntiAffinity object of a pod in `namespace` with `labels`."""
    if not isinstance(raw, dict):
        raise PodAffinityError(f"{where} must be a JSON object")
    required = tuple(
        _term(t, f"{where}.required[{i}]", namespace, labels)
        for i, t in enumerate(_list(raw.get("requiredDuringSchedulingIgnoredDuringExecution"), where))
    )
    preferred = []
    for i, item in enumerate(_list(raw.get("preferredDuringSchedulingIgnoredDuringExecution"), where)):
        here = f"{where}.preferred[{i}]"
        if not isinstance(item, dict):
            raise PodAffinityError(f"{here} must be an object with weight and podAffinityTerm")
        weight = item.get("weight")
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            raise PodAffinityError(f"{here}.weight must be an integer from 1 to 100, got {weight!r}")
        preferred.append(
            (weight, _term(item.get("podAffinityTerm"), f"{here}.podAffinityTerm", namespace, labels))
        )
    return PodAffinity(required, tuple(preferred))


def _list(raw: object, where: str) -> list[object]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise PodAffinityError(f"{where}: terms must be a list")
    return raw


def _term(raw: object, where: str, namespace: str, labels: Mapping[str, str]) -> PodAffinityTerm:
    if not isinstance(raw, dict):
        raise PodAffinityError(f"{where} must be an object with labelSelector and topologyKey")
    key = raw.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise PodAffinityError(f"{where}.topologyKey must be a non-empty string")
    namespaces: frozenset[str] | None = frozenset(str(n) for n in raw.get("namespaces") or [])
    ns_selector = raw.get("namespaceSelector")
    namespace_requirements: tuple[LabelRequirement, ...] | None = None
    if ns_selector is not None:
        namespace_requirements = tuple(parse_label_selector(ns_selector, f"{where}.namespaceSelector"))
        if not namespace_requirements:
            namespaces = None  # an empty selector: every namespace
    elif not namespaces:
        namespaces = frozenset({namespace})
    selector = raw.get("labelSelector")
    requirements: list[LabelRequirement] = []
    if selector is not None:
        requirements = parse_label_selector(selector, f"{where}.labelSelector")
    for field, operator in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")):
        for label in raw.get(field) or []:
            if label in labels:  # the pod's own value joins the selector
                requirements.append(LabelRequirement(str(label), operator, frozenset({labels[label]})))
    pods = PodSelector(namespaces, tuple(requirements), selector is None, namespace_requirements)
    return PodAffinityTerm(pods, key)


def parse_label_selector(raw: object, where: str) -> list[LabelRequirement]:
    """A Kubernetes LabelSelector (matchLabels and matchExpressions), as requirements all must meet."""
    if not isinstance(raw, dict):
        raise PodAffinityError(f"{where} must be an object")
    labels, expressions = raw.get("matchLabels") or {}, raw.get("matchExpressions") or []
    if not isinstance(labels, dict):
        raise PodAffinityError(f"{where}.matchLabels must be an object of label name to value")
    if not isinstance(expressions, list):
        raise PodAffinityError(f"{where}.matchExpressions must be a list")
    out = [LabelRequirement(str(k), "In", frozenset({str(v)})) for k, v in labels.items()]
    for i, expr in enumerate(expressions):
        here = f"{where}.matchExpressions[{i}]"
        if not isinstance(expr, dict) or not expr.get("key"):
            raise PodAffinityError(f"{here} must be an object with a key")
        operator, values = expr.get("operator"), expr.get("values") or []
        if not isinstance(values, list):
            raise PodAffinityError(f"{here}.values must be a list")
        if operator not in _OPERATORS:
            raise PodAffinityError(f"{here}.operator must be one of {sorted(_OPERATORS)}, got {operator!r}")
        if operator in ("In", "NotIn") and not values:
            raise PodAffinityError(f"{here}: operator {operator} needs at least one value")
        if operator in ("Exists", "DoesNotExist") and values:
            raise PodAffinityError(f"{here}: operator {operator} takes no values")
        out.append(LabelRequirement(str(expr["key"]), str(operator), frozenset(str(v) for v in values)))
    return out
