"""Kubernetes node affinity, evaluated in the core against a node's labels and name.

The tag `pykorn.io/node-affinity` carries a pod's `spec.affinity.nodeAffinity` as Kubernetes serves
it (JSON). The semantics are Kubernetes' NodeAffinity plugin's:

- required (`requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`): the terms are ORed,
  the requirements inside a term ANDed; a term with no requirements matches no node;
- `matchExpressions` on labels with In, NotIn (also true when the label is absent), Exists,
  DoesNotExist, Gt and Lt (the label and the one value read as integers; not integers: no match);
- `matchFields` on `metadata.name` (the node's name) with In and NotIn, one value;
- preferred (`preferredDuringSchedulingIgnoredDuringExecution`): each matching term adds its weight
  (1-100) to the node's score.

Anything Kubernetes' validation refuses is refused here when the ask arrives, with the reason. What the
API server lets through but kube-scheduler cannot read (an In or NotIn value that is not a valid label
value, a Gt or Lt value that is not an integer) makes its term match no node, as kube-scheduler's lazy
node selector does: the pod waits, and its other terms still count.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

FIELD_NODE_NAME = "metadata.name"
_LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
_FIELD_OPERATORS = frozenset({"In", "NotIn"})
# A label value as Kubernetes validates one (IsValidLabelValue): at most 63 characters, alphanumerics at
# both ends, '-', '_' and '.' between; the empty value is valid.
_LABEL_VALUE = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
_INT64 = re.compile(r"[+-]?[0-9]+")


class AffinityError(ValueError):
    pass


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    values: frozenset[str]
    number: int = 0  # Gt/Lt: the one value, as an integer
    unreadable: bool = False  # a value kube-scheduler cannot parse: its term matches no node

    def matches(self, value: str | None) -> bool:
        """Whether a label (or field) with this value, None when absent, meets the requirement."""
        if self.unreadable:
            return False
        op = self.operator
        if op == "In":
            return value is not None and value in self.values
        if op == "NotIn":
            return value is None or value not in self.values
        if op == "Exists":
            return value is not None
        if op == "DoesNotExist":
            return value is None
        if value is None:
            return False
        try:
            have = int(value)
        except ValueError:
            return False
        return have > self.number if op == "Gt" else have < self.number


@dataclass(frozen=True)
class NodeSelectorTerm:
    expressions: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        if not self.expressions and not self.fields:
            return False  # as Kubernetes: an empty term matches nothing
        return all(r.matches(labels.get(r.key)) for r in self.expressions) and all(
            r.matches(node_name) for r in self.fields
        )


@dataclass(frozen=True)
class NodeAffinity:
    required: tuple[NodeSelectorTerm, ...] | None = None  # None: no requirement
    preferred: tuple[tuple[int, NodeSelectorTerm], ...] = ()  # (weight, term)

    def admits(self, node_name: str, labels: Mapping[str, str]) -> bool:
        return self.required is None or any(t.matches(node_name, labels) for t in self.required)

    def score(self, node_name: str, labels: Mapping[str, str]) -> int:
        return sum(weight for weight, term in self.preferred if term.matches(node_name, labels))


def parse_node_affinity(raw: object, where: str) -> NodeAffinity:
    """A pod's nodeAffinity object (JSON already decoded)."""
    if not isinstance(raw, dict):
        raise AffinityError(f"{where} must be a JSON object (a pod's spec.affinity.nodeAffinity)")
    required: tuple[NodeSelectorTerm, ...] | None = None
    hard = raw.get("requiredDuringSchedulingIgnoredDuringExecution")
    if hard is not None:
        if not isinstance(hard, dict):
            raise AffinityError(f"{where}.requiredDuringSchedulingIgnoredDuringExecution must be an object")
        terms = hard.get("nodeSelectorTerms")
        if not isinstance(terms, list) or not terms:
            raise AffinityError(f"{where}: required node affinity needs at least one nodeSelectorTerm")
        required = tuple(
            parse_term(t, f"{where}.required.nodeSelectorTerms[{i}]") for i, t in enumerate(terms)
        )
    preferred: list[tuple[int, NodeSelectorTerm]] = []
    soft = raw.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    if not isinstance(soft, list):
        raise AffinityError(f"{where}.preferredDuringSchedulingIgnoredDuringExecution must be a list")
    for i, item in enumerate(soft):
        here = f"{where}.preferred[{i}]"
        if not isinstance(item, dict):
            raise AffinityError(f"{here} must be an object with weight and preference")
        weight = item.get("weight")
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            raise AffinityError(f"{here}.weight must be an integer from 1 to 100, got {weight!r}")
        preferred.append((weight, parse_term(item.get("preference"), f"{here}.preference")))
    return NodeAffinity(required, tuple(preferred))


def parse_term(raw: object, where: str) -> NodeSelectorTerm:
    if not isinstance(raw, dict):
        raise AffinityError(f"{where} must be an object with matchExpressions and/or matchFields")
    expressions = tuple(
        _requirement(r, f"{where}.matchExpressions[{i}]", fields=False)
        for i, r in enumerate(_list(raw.get("matchExpressions"), f"{where}.matchExpressions"))
    )
    fields = tuple(
        _requirement(r, f"{where}.matchFields[{i}]", fields=True)
        for i, r in enumerate(_list(raw.get("matchFields"), f"{where}.matchFields"))
    )
    return NodeSelectorTerm(expressions, fields)


def _list(raw: object, where: str) -> list[object]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise AffinityError(f"{where} must be a list")
    return raw


def _requirement(raw: object, where: str, fields: bool) -> Requirement:
    if not isinstance(raw, dict):
        raise AffinityError(f"{where} must be an object with key, operator and values")
    key, operator, values = raw.get("key"), raw.get("operator"), raw.get("values") or []
    if not isinstance(key, str) or not key:
        raise AffinityError(f"{where}.key must be a non-empty string")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise AffinityError(f"{where}.values must be a list of strings")
    if fields:
        if key != FIELD_NODE_NAME:
            raise AffinityError(f"{where}: matchFields supports only key {FIELD_NODE_NAME}, got {key!r}")
        if operator not in _FIELD_OPERATORS or len(values) != 1:
            raise AffinityError(f"{where}: matchFields needs operator In or NotIn with exactly one value")
        return Requirement(key, str(operator), frozenset(values))
    if operator not in _LABEL_OPERATORS:
        raise AffinityError(f"{where}.operator must be one of {sorted(_LABEL_OPERATORS)}, got {operator!r}")
    if operator in ("In", "NotIn") and not values:
        raise AffinityError(f"{where}: operator {operator} needs at least one value")
    if operator in ("Exists", "DoesNotExist") and values:
        raise AffinityError(f"{where}: operator {operator} takes no values")
    number = 0
    unreadable = False
    if operator in ("Gt", "Lt"):
        if len(values) != 1:
            raise AffinityError(f"{where}: operator {operator} needs exactly one value")
        if _INT64.fullmatch(values[0]) and -(2**63) <= int(values[0]) < 2**63:
            number = int(values[0])
        else:
            unreadable = True  # the API server takes it; kube-scheduler's selector cannot be built
    elif operator in ("In", "NotIn"):
        unreadable = any(len(v) > 63 or not _LABEL_VALUE.fullmatch(v) for v in values)
    return Requirement(key, str(operator), frozenset(values), number, unreadable)
