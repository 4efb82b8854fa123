"""Node selector terms and topology selector terms, matched against one node as the API defines them.

The core evaluates a pod's node affinity for every node; the shim needs the same rule for one node
only: when it binds a pod's volumes on the node the core chose (a volume's `spec.nodeAffinity`, a
StorageClass's `allowedTopologies`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from shim_k8s.api.objects import Obj


def matches_terms(terms: Sequence[Obj], node: Obj) -> bool:
    """Whether the node matches node selector terms: the terms ORed, the requirements inside a term
    ANDed; no terms at all match every node (nothing is required), a term with no requirement none."""
    if not terms:
        return True
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    fields = {"metadata.name": meta.get("name", "")}
    return any(_term_matches(term, labels, fields) for term in terms)


def _term_matches(term: Obj, labels: Mapping[str, str], fields: Mapping[str, str]) -> bool:
    expressions = term.get("matchExpressions") or []
    field_expressions = term.get("matchFields") or []
    if not expressions and not field_expressions:
        return False
    return all(_requirement(e, labels) for e in expressions) and all(
        _requirement(e, fields) for e in field_expressions
    )


def _requirement(expression: Obj, values_by_key: Mapping[str, str]) -> bool:
    key, operator = expression.get("key", ""), expression.get("operator", "")
    values = [str(v) for v in expression.get("values") or []]
    present = key in values_by_key
    value = values_by_key.get(key, "")
    if operator == "In":
        return present and value in values
    if operator == "NotIn":
        return not present or value not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, bound = int(value), int(values[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False  # an operator the API would not accept: matches nothing


def matches_topology(terms: Sequence[Obj], node: Obj) -> bool:
    """Whether the node's labels match topology selector terms (a StorageClass's allowedTopologies):
    the terms ORed, each term's `matchLabelExpressions` ANDed, each a key whose value is one of its
    values; no terms allow every node."""
    if not terms:
        return True
    labels = (node.get("metadata") or {}).get("labels") or {}
    return any(
        all(
            labels.get(e.get("key", "")) in (e.get("values") or [])
            for e in term.get("matchLabelExpressions") or []
        )
        for term in terms
    )


def topology_as_node_terms(terms: Sequence[Obj]) -> list[Obj]:
    """Topology selector terms written as node selector terms (each expression an `In`), which the
    core evaluates; [] for none (every node), as for a term with no expression (it allows every node)."""
    out: list[Obj] = []
    for term in terms:
        expressions = [
            {"key": e.get("key", ""), "operator": "In", "values": list(e.get("values") or [])}
            for e in term.get("matchLabelExpressions") or []
        ]
        if not expressions:
            return []
        out.append({"matchExpressions": expressions})
    return out


def matches_label_selector(selector: Obj | None, labels: Mapping[str, str]) -> bool:
    """Whether labels match a label selector (a claim's `spec.selector` over a volume's labels):
    matchLabels and matchExpressions ANDed; no selector matches everything."""
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = expression.get("values") or []
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True
