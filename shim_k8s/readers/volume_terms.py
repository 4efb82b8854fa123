"""Node selector terms from volumes: a bound volume's zone and region labels as VolumeZone reads them,
ORed terms made fewer, and the terms of a pod's volumes ANDed into its own node affinity."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

from shim_k8s.api.objects import Obj

# The topology labels kube-scheduler's VolumeZone reads, and each one's GA or beta twin.
TOPOLOGY_LABELS = {
    "topology.kubernetes.io/zone": "failure-domain.beta.kubernetes.io/zone",
    "topology.kubernetes.io/region": "failure-domain.beta.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}


def zone_terms(volume: Obj) -> list[list[Obj]]:
    """VolumeZone: a bound volume labelled with a zone or region (several joined by "__") takes a node
    whose label of that key, or of its GA/beta twin, is one of them; a node with no topology label at
    all passes, as kube-scheduler lets it. One list of ORed node selector terms per label."""
    labels = (volume.get("metadata") or {}).get("labels") or {}
    unlabelled: Obj = {"matchExpressions": [{"key": k, "operator": "DoesNotExist"} for k in TOPOLOGY_LABELS]}
    out: list[list[Obj]] = []
    for key, twin in TOPOLOGY_LABELS.items():
        value = labels.get(key)
        if not isinstance(value, str) or not value:
            continue
        values = sorted(set(value.split("__")))
        within: list[Obj] = [
            {"matchExpressions": [{"key": key, "operator": "In", "values": values}]},
            {"matchExpressions": [{"key": twin, "operator": "In", "values": values}]},
            unlabelled,
        ]
        out.append(within)
    return out


def compact(terms: Sequence[Obj]) -> list[Obj]:
    """ORed node selector terms with the same meaning, fewer: terms that are one `In` of the same key
    become one (the local volumes of many nodes: one hostname term with every node), and repeated
    terms are kept once. The pod's terms are multiplied by these, so their number matters."""
    merged: dict[str, list[str]] = {}
    out: list[Obj] = []
    seen: set[str] = set()
    for term in terms:
        expressions = term.get("matchExpressions") or []
        if not term.get("matchFields") and len(expressions) == 1 and expressions[0].get("operator") == "In":
            values = merged.setdefault(str(expressions[0].get("key", "")), [])
            values.extend(v for v in expressions[0].get("values") or [] if v not in values)
            continue
        text = json.dumps(term, sort_keys=True)
        if text not in seen:
            seen.add(text)
            out.append(term)
    in_terms = [
        {"matchExpressions": [{"key": key, "operator": "In", "values": sorted(values)}]}
        for key, values in merged.items()
    ]
    return in_terms + out


def with_volume_terms(node_affinity: Obj | None, volume_terms: Sequence[Sequence[Obj]]) -> Obj | None:
    """The pod's nodeAffinity with each volume's required terms ANDed in: every combination of one of
    the pod's terms and one term per volume, their requirements joined (terms are ORed, requirements
    inside a term ANDed, so this is the same rule)."""
    if not volume_terms:
        return node_affinity
    affinity = dict(node_affinity or {})
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    pod_terms = required.get("nodeSelectorTerms") or [{}]  # no term of its own: no requirement to add
    merged: list[dict[str, Any]] = []
    for combination in itertools.product(pod_terms, *volume_terms):
        term: dict[str, Any] = {}
        for part in combination:
            for key in ("matchExpressions", "matchFields"):
                if part.get(key):
                    term.setdefault(key, []).extend(part[key])
        merged.append(term)
    affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": merged}
    return affinity
