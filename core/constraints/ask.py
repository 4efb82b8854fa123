"""Placement constraints the core evaluates itself: required node, node selector, node affinity, taints
and tolerations, host ports.

YuniKorn asks its shim to run these checks (a predicate callback per node). Here they travel with
the data instead, so nothing waits on a round trip:

- node labels are node attributes `kubernetes.io/label/<key>` (the prefix YuniKorn's shim already
  uses for pod labels in allocation tags);
- node taints are the attribute `pykorn.io/taints`, a JSON list of {"key", "value", "effect"};
- an ask's node selector is the tag `pykorn.io/node-selector`, a JSON object of label -> value;
- an ask's tolerations are the tag `pykorn.io/tolerations`, a JSON list of
  {"key", "operator", "value", "effect"} with Kubernetes' meaning;
- an ask's node affinity is the tag `pykorn.io/node-affinity`, the pod's `spec.affinity.nodeAffinity`
  as Kubernetes serves it (see node_affinity);
- an ask's host ports are the tag `pykorn.io/host-ports` (see host_ports);
- a required node (a DaemonSet pod) is the tag `yunikorn.apache.org/requiredNode`.

Malformed JSON is refused when the ask or node arrives (see `parse_*`), never at scheduling time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from core.constraints import rule_facts
from core.constraints.host_ports import HostPort, HostPortError, parse_host_ports
from core.constraints.node_affinity import AffinityError, NodeAffinity, parse_node_affinity
from core.constraints.pod_affinity import PodAffinity, PodAffinityError, parse_pod_affinity, pod_identity
from core.constraints.topology_spread import SpreadConstraint, SpreadError, parse_spread
from core.constraints.volume_limits import (
    CsiLimits,
    CsiVolumes,
    VolumeLimitError,
    parse_csi_limits,
    parse_csi_volumes,
)
from core.constraints.volume_restrictions import ClaimError, Disks, parse_disks, parse_rwop_claims
from si.v1.tags import (
    ATTR_CSI_VOLUME_LIMITS,
    ATTR_TAINTS,
    LABEL_PREFIX,
    TAG_CSI_VOLUMES,
    TAG_DISKS,
    TAG_HOST_PORTS,
    TAG_NODE_AFFINITY,
    TAG_NODE_SELECTOR,
    TAG_POD_AFFINITY,
    TAG_POD_ANTI_AFFINITY,
    TAG_RWOP_CLAIMS,
    TAG_TOLERATIONS,
    TAG_TOPOLOGY_SPREAD,
    TAINT_CORDON,
)

# Effects that keep an untolerating pod off a node; PreferNoSchedule is only a preference.
_HARD_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


class ConstraintError(ValueError):
    pass


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal | Exists
    value: str = ""
    effect: str = ""  # empty: every effect

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == taint.key
        return self.key == taint.key and self.value == taint.value


@dataclass(frozen=True)
class AskConstraints:
    required_node: str = ""
    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    node_affinity: NodeAffinity | None = None
    host_ports: tuple[HostPort, ...] = ()
    pod_affinity: PodAffinity | None = None  # checked against the partition's pods (pod_rules)
    pod_anti_affinity: PodAffinity | None = None
    spread: tuple[SpreadConstraint, ...] = ()  # topology spread, checked with the pod rules
    csi_volumes: CsiVolumes = ()  # the CSI volumes it attaches, against the nodes' attach limits
    rwop_claims: tuple[str, ...] = ()  # its ReadWriteOncePod claims: no other pod may use one meanwhile
    disks: Disks = ()  # the in-tree disks it mounts directly: shared on a node only read-only
    # What its rules' declared facts (core.constraints.rule_facts) say of the whole ask, worked out
    # once, as they are read on every node tried, every allocation placed and every search shared:
    # no constraint the node's own traits and ports decide (pod rules are checked beside them);
    is_empty: bool = field(init=False, compare=False, repr=False)
    # other pods decide where it may go; its allocation going may free asks on any node; asks alike
    # may share a failed search; what the node it runs on counts of it (index attribute, what it holds).
    waits_on_peers: bool = field(init=False, compare=False, repr=False)
    frees_everywhere: bool = field(init=False, compare=False, repr=False)
    shares_search: bool = field(init=False, compare=False, repr=False)
    node_held: tuple[tuple[str, Any], ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        facts = rule_facts.of(self)
        object.__setattr__(self, "is_empty", not facts.node_level)
        object.__setattr__(self, "waits_on_peers", facts.waits_on_peers)
        object.__setattr__(self, "frees_everywhere", facts.frees_everywhere)
        object.__setattr__(self, "shares_search", facts.shares_search)
        object.__setattr__(self, "node_held", facts.node_held)


@dataclass(frozen=True)
class NodeTraits:
    labels: tuple[tuple[str, str], ...] = ()
    taints: tuple[Taint, ...] = ()
    csi_limits: CsiLimits = ()  # how many volumes of each CSI driver it can attach
    label_map: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.labels and not self.label_map:
            object.__setattr__(self, "label_map", dict(self.labels))


NO_CONSTRAINTS = AskConstraints()
NO_TRAITS = NodeTraits()


def _json(text: str, what: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConstraintError(f"{what} is not valid JSON: {exc.msg} at position {exc.pos}") from None


_CONSTRAINT_TAGS = frozenset(
    {
        TAG_NODE_SELECTOR,
        TAG_TOLERATIONS,
        TAG_NODE_AFFINITY,
        TAG_HOST_PORTS,
        TAG_POD_AFFINITY,
        TAG_POD_ANTI_AFFINITY,
        TAG_TOPOLOGY_SPREAD,
        TAG_CSI_VOLUMES,
        TAG_RWOP_CLAIMS,
        TAG_DISKS,
    }
)


_ORDERED_TAGS = tuple(sorted(_CONSTRAINT_TAGS))


def parse_ask_constraints(tags: Mapping[str, str], required_node_tag: str) -> AskConstraints:
    if required_node_tag not in tags and _CONSTRAINT_TAGS.isdisjoint(tags):
        return NO_CONSTRAINTS  # most asks: nothing to parse, one shared object
    # The pods of one workload carry the same rules: parsed once, shared (the result is immutable).
    # What the rules may depend on beside their own text: the pod's namespace and labels.
    namespace, labels, _ = pod_identity(tags)  # the namespace's labels count when matching, not here
    key = (
        tags.get(required_node_tag, ""), tuple(tags.get(t) for t in _ORDERED_TAGS), namespace,
        tuple(sorted(labels.items())),
    )  # fmt: skip
    return _parse_cached(key, required_node_tag, tags)


def _parse_cached(key: tuple[object, ...], required_node_tag: str, tags: Mapping[str, str]) -> AskConstraints:
    found = _PARSED.get(key)
    if found is None:
        try:
            found = _parse(tags, required_node_tag)
        except ConstraintError:
            raise
        except (TypeError, AttributeError, ValueError, KeyError, IndexError, RecursionError) as exc:
            # The parsers check the shapes they read; whatever slips past them is still the tags' fault.
            names = ", ".join(sorted(t for t in tags if t in _CONSTRAINT_TAGS))
            raise ConstraintError(f"tags {names}: not of the shape Kubernetes defines ({exc!r})") from None
        if len(_PARSED) >= _PARSED_KEPT:
            del _PARSED[next(iter(_PARSED))]  # the oldest: workloads come and go
        _PARSED[key] = found
    return found


_PARSED: dict[tuple[object, ...], AskConstraints] = {}
_PARSED_KEPT = 4096


def _parse(tags: Mapping[str, str], required_node_tag: str) -> AskConstraints:
    selector: tuple[tuple[str, str], ...] = ()
    if TAG_NODE_SELECTOR in tags:
        raw = _json(tags[TAG_NODE_SELECTOR], f"tag {TAG_NODE_SELECTOR}")
        if not isinstance(raw, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
        ):
            raise ConstraintError(f"tag {TAG_NODE_SELECTOR} must be a JSON object of label name to value")
        selector = tuple(sorted(raw.items()))
    tolerations: tuple[Toleration, ...] = ()
    if TAG_TOLERATIONS in tags:
        raw = _json(tags[TAG_TOLERATIONS], f"tag {TAG_TOLERATIONS}")
        if not isinstance(raw, list):
            raise ConstraintError(f"tag {TAG_TOLERATIONS} must be a JSON list of tolerations")
        tolerations = tuple(_toleration(item) for item in raw)
    affinity = _from_tag(tags, TAG_NODE_AFFINITY, parse_node_affinity)
    if affinity is not None and affinity.required is None and not affinity.preferred:
        affinity = None
    ports = _from_tag(tags, TAG_HOST_PORTS, parse_host_ports) or ()
    namespace, labels, _ = pod_identity(tags)

    def pod_affinity(raw: object, where: str) -> PodAffinity:
        return parse_pod_affinity(raw, where, namespace, labels)

    def spread_of(raw: object, where: str) -> tuple[SpreadConstraint, ...]:
        return parse_spread(raw, where, namespace, labels)

    pod_rules: list[PodAffinity | None] = []
    for tag in (TAG_POD_AFFINITY, TAG_POD_ANTI_AFFINITY):
        rules = _from_tag(tags, tag, pod_affinity)
        pod_rules.append(rules if rules is not None and (rules.required or rules.preferred) else None)
    spread = _from_tag(tags, TAG_TOPOLOGY_SPREAD, spread_of) or ()
    volumes = _from_tag(tags, TAG_CSI_VOLUMES, parse_csi_volumes) or ()
    claims = _from_tag(tags, TAG_RWOP_CLAIMS, parse_rwop_claims) or ()
    disks = _from_tag(tags, TAG_DISKS, parse_disks) or ()
    constraints = AskConstraints(
        tags.get(required_node_tag, ""),
        selector,
        tolerations,
        affinity,
        ports,
        pod_rules[0],
        pod_rules[1],
        spread,
        volumes,
        claims,
        disks,
    )
    return NO_CONSTRAINTS if constraints == NO_CONSTRAINTS else constraints  # one object for the many without


# What the parsers of the rules raise for a value of the wrong shape: the ask's ConstraintError then.
_PARSE_ERRORS = (AffinityError, HostPortError, PodAffinityError, SpreadError, VolumeLimitError, ClaimError)
Parsed = TypeVar("Parsed")


def _from_tag(tags: Mapping[str, str], tag: str, parse: Callable[[object, str], Parsed]) -> Parsed | None:
    """The tag's JSON read by its parser (None when the ask has no such tag); what is wrong with it
    becomes a ConstraintError that names the tag."""
    if tag not in tags:
        return None
    where = f"tag {tag}"
    try:
        return parse(_json(tags[tag], where), where)
    except _PARSE_ERRORS as exc:
        raise ConstraintError(str(exc)) from None


def _toleration(item: object) -> Toleration:
    if not isinstance(item, dict):
        raise ConstraintError(f"a toleration must be a JSON object, got {item!r}")
    operator = str(item.get("operator", "Equal") or "Equal")
    if operator not in ("Equal", "Exists"):
        raise ConstraintError(f"toleration operator must be Equal or Exists, got {operator!r}")
    return Toleration(
        key=str(item.get("key", "")),
        operator=operator,
        value=str(item.get("value", "")),
        effect=str(item.get("effect", "")),
    )


def parse_node_traits(attributes: Mapping[str, str]) -> NodeTraits:
    labels = tuple(
        sorted((k[len(LABEL_PREFIX) :], v) for k, v in attributes.items() if k.startswith(LABEL_PREFIX))
    )
    taints: tuple[Taint, ...] = ()
    if ATTR_TAINTS in attributes:
        raw = _json(attributes[ATTR_TAINTS], f"attribute {ATTR_TAINTS}")
        if not isinstance(raw, list) or not all(isinstance(t, dict) and t.get("key") for t in raw):
            raise ConstraintError(f"attribute {ATTR_TAINTS} must be a JSON list of taints, each with a key")
        taints = tuple(
            Taint(str(t["key"]), str(t.get("value", "")), str(t.get("effect", "NoSchedule"))) for t in raw
        )
    limits: CsiLimits = ()
    if ATTR_CSI_VOLUME_LIMITS in attributes:
        where = f"attribute {ATTR_CSI_VOLUME_LIMITS}"
        try:
            limits = parse_csi_limits(_json(attributes[ATTR_CSI_VOLUME_LIMITS], where), where)
        except VolumeLimitError as exc:
            raise ConstraintError(str(exc)) from None
    return NodeTraits(labels, taints, limits)


def selector_matches(selector: tuple[tuple[str, str], ...], labels: Mapping[str, str]) -> bool:
    """Whether the node's labels carry every label of a node selector, each with its value."""
    return all(labels.get(k) == v for k, v in selector)


# The taint a cordoned Kubernetes node carries (si.v1.tags.TAINT_CORDON, effect NoSchedule).
CORDON = Taint(TAINT_CORDON, "", "NoSchedule")


def tolerates(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


def untolerated(traits: NodeTraits, tolerations: tuple[Toleration, ...]) -> bool:
    """Whether the node has a taint that keeps pods off (NoSchedule, NoExecute) and none tolerates."""
    return any(
        taint.effect in _HARD_EFFECTS and not any(t.tolerates(taint) for t in tolerations)
        for taint in traits.taints
    )


@dataclass(frozen=True)
class NodeFilter:
    """The nodes a topology spread constraint counts: those that have the topology key of every
    constraint of the pod's of the same kind (kube-scheduler's nodeLabelsMatchSpreadConstraints, the
    hard ones for a hard constraint, the soft ones for a soft one), pass the pod's node selector and
    required node affinity (nodeAffinityPolicy Honor) and, with nodeTaintsPolicy Honor, whose taints it
    tolerates."""

    node_selector: tuple[tuple[str, str], ...] = ()
    node_affinity: NodeAffinity | None = None  # only the required terms
    tolerations: tuple[Toleration, ...] | None = None  # None: taints are not looked at
    topology_keys: tuple[str, ...] = ()

    @staticmethod
    def of(
        ask: AskConstraints, honor_affinity: bool, honor_taints: bool, topology_keys: tuple[str, ...] = ()
    ) -> NodeFilter:
        affinity = None
        if honor_affinity and ask.node_affinity is not None and ask.node_affinity.required is not None:
            affinity = NodeAffinity(ask.node_affinity.required)
        return NodeFilter(
            ask.node_selector if honor_affinity else (),
            affinity,
            ask.tolerations if honor_taints else None,
            topology_keys,
        )

    def admits(self, node_id: str, traits: NodeTraits) -> bool:
        labels = traits.label_map
        for key in self.topology_keys:
            if key not in labels:
                return False
        if not selector_matches(self.node_selector, labels):
            return False
        if self.node_affinity is not None and not self.node_affinity.admits(node_id, labels):
            return False
        return self.tolerations is None or not untolerated(traits, self.tolerations)
