"""One shape for every rule that decides whether an ask may go to a node, as kube-scheduler's framework
has one plugin interface: a check built once per ask for one search, asked per node.

- `refusal(node)`: "" when the node passes, else the reason, one of the named reasons below (the words
  of Kubernetes' scheduler, which the pending reason tallies per node);
- `score(node)` (a Scorer, for preferences): how much the ask prefers the node, and `best`, the most
  any node can score, so a search can stop at the first node that reaches it;
- `victims_for(node, takeable, order)` and `admits_without(node, victims)` (a WhatIfCheck): which
  placed pods must go for the node to pass, and whether it passes once they are gone; preemption asks
  these of a check that refuses a node, and a check without them keeps the node out.

Room (NodeResourcesFit) and a node's own state (unschedulable, reserved) are not checks: every search
looks at them first, inline, as they decide most nodes and cost an attribute read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from core.constraints.ask import NodeTraits, Toleration, selector_matches, untolerated
from core.constraints.host_ports import HostPort
from core.constraints.node_affinity import NodeAffinity
from core.constraints.volume_limits import CsiVolumes
from core.constraints.volume_restrictions import Disks
from core.objects.allocation import Allocation
from core.objects.node import Node

Ref = tuple[str, str]  # an ask's (application, key)

# The reasons a node is refused, as Kubernetes' scheduler words them.
UNSCHEDULABLE = "unschedulable"
RESERVED = "reserved for another ask"
NOT_REQUIRED_NODE = "not the required node"
NODE_SELECTOR = "didn't match the node selector"
NODE_AFFINITY = "didn't match node affinity"
UNTOLERATED_TAINTS = "had untolerated taints"
HOST_PORTS = "didn't have free ports for the requested pod ports"
MAX_VOLUME_COUNT = "exceed max volume count"  # kube-scheduler: "node(s) exceed max volume count"
RWOP_CONFLICT = "has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
DISK_CONFLICT = "had no available disk"  # kube-scheduler: "node(s) had no available disk"
POD_ANTI_AFFINITY = "pod anti-affinity"
POD_AFFINITY = "pod affinity"
TOPOLOGY_SPREAD = "topology spread constraints"


def insufficient(resource_type: str) -> str:
    return f"insufficient {resource_type}"


class NodeCheck(Protocol):
    def refusal(self, node: Node) -> str: ...


class Scorer(Protocol):
    """A preference: a score per node (higher is better), never a refusal."""

    @property
    def best(self) -> int: ...  # no node can score more

    def score(self, node: Node) -> int: ...


@runtime_checkable
class WhatIfCheck(NodeCheck, Protocol):
    def victims_for(
        self, node: Node, takeable: Callable[[Allocation], bool], order: Callable[[Allocation], Any]
    ) -> list[Allocation] | None: ...

    def admits_without(self, node: Node, victims: list[Allocation]) -> bool: ...


class RequiredNode:
    """NodeName: a DaemonSet pod's ask runs on its one node."""

    __slots__ = ("node_id",)
    rules = ("required_node",)

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id

    def refusal(self, node: Node) -> str:
        return "" if node.node_id == self.node_id else NOT_REQUIRED_NODE


class NodeSelector:
    """NodeAffinity's nodeSelector half: every label of the selector, with its value."""

    __slots__ = ("selector",)
    rules = ("node_selector",)

    def __init__(self, selector: tuple[tuple[str, str], ...]) -> None:
        self.selector = selector

    def refusal(self, node: Node) -> str:
        return "" if selector_matches(self.selector, node.traits.label_map) else NODE_SELECTOR


class RequiredAffinity:
    """NodeAffinity's required terms (ORed; each term's requirements ANDed)."""

    __slots__ = ("affinity",)
    rules = ("node_affinity",)

    def __init__(self, affinity: NodeAffinity) -> None:
        self.affinity = affinity

    def refusal(self, node: Node) -> str:
        return "" if self.affinity.admits(node.node_id, node.traits.label_map) else NODE_AFFINITY


class PreferredAffinity:
    """NodeAffinity's preferred terms: the sum of the weights of the terms a node matches."""

    __slots__ = ("affinity", "best")
    rules = ("node_affinity",)

    def __init__(self, affinity: NodeAffinity) -> None:
        self.affinity = affinity
        self.best = sum(weight for weight, _ in affinity.preferred)

    def score(self, node: Node) -> int:
        return self.affinity.score(node.node_id, node.traits.label_map)


class Tolerations:
    """TaintToleration: a node's NoSchedule and NoExecute taints keep off an ask that tolerates none of
    them. Every ask is held to it (one without tolerations too); an untainted node passes at once."""

    __slots__ = ("tolerations",)
    rules = ("tolerations",)

    def __init__(self, tolerations: tuple[Toleration, ...]) -> None:
        self.tolerations = tolerations

    def refusal(self, node: Node) -> str:
        traits: NodeTraits = node.traits
        if not traits.taints:
            return ""
        return UNTOLERATED_TAINTS if untolerated(traits, self.tolerations) else ""


class HostPorts:
    """NodePorts: one use per node of a protocol, address and port, the node's pods' (ours and
    foreign) against the ask's."""

    __slots__ = ("ports",)
    rules = ("host_ports",)

    def __init__(self, ports: tuple[HostPort, ...]) -> None:
        self.ports = ports

    def refusal(self, node: Node) -> str:
        return HOST_PORTS if node.ports.conflict(self.ports) is not None else ""


class VolumeLimits:
    """NodeVolumeLimits: per CSI driver, the volumes attached to the node (by its pods, ours and
    foreign) and the ask's new ones stay within the node's attach limit."""

    __slots__ = ("volumes",)
    rules = ("csi_volumes",)

    def __init__(self, volumes: CsiVolumes) -> None:
        self.volumes = volumes

    def refusal(self, node: Node) -> str:
        limits = node.traits.csi_limits
        if not limits:
            return ""
        return MAX_VOLUME_COUNT if node.volumes.over_limit(self.volumes, limits) else ""


class ReadWriteOncePod:
    """VolumeRestrictions: the ask's ReadWriteOncePod claims used by no other placed pod (ours or
    foreign) anywhere in the partition. Preemption may take the pods using them, on the node where
    they run: only there does the ask then fit."""

    __slots__ = ("claims", "ref", "users")
    rules = ("rwop_claims",)

    def __init__(
        self, claims: tuple[str, ...], users: Mapping[str, Mapping[tuple[str, str], Allocation]], ref: Ref
    ) -> None:
        self.claims = claims
        self.users = users  # the partition's index (PodRules.claim_users), read when asked
        self.ref = ref

    def _holders(self) -> list[Allocation]:
        users = self.users
        return [a for c in self.claims for r, a in (users.get(c) or {}).items() if r != self.ref]

    def refusal(self, node: Node) -> str:
        return RWOP_CONFLICT if self._holders() else ""

    def victims_for(
        self, node: Node, takeable: Callable[[Allocation], bool], order: Callable[[Allocation], Any]
    ) -> list[Allocation] | None:
        holders = self._holders()
        if any(h.node_id != node.node_id or not takeable(h) for h in holders):
            return None
        return sorted(holders, key=order)

    def admits_without(self, node: Node, victims: list[Allocation]) -> bool:
        gone = {id(v) for v in victims}
        return all(id(h) in gone for h in self._holders())


class DiskConflict:
    """VolumeRestrictions: the in-tree disks the ask mounts are mounted on the node by no other pod
    (ours or foreign), unless every mount of one is read-only. Preemption may take the pods that
    conflict, as kube-scheduler's may."""

    __slots__ = ("disks",)
    rules = ("disks",)

    def __init__(self, disks: Disks) -> None:
        self.disks = disks

    def refusal(self, node: Node) -> str:
        return DISK_CONFLICT if node.disks.conflict(self.disks) else ""

    def _conflicting(self, node: Node) -> list[Allocation]:
        mine = dict(self.disks)
        return [
            alloc
            for alloc in node.allocations.values()
            if any(d in mine and not (ro and mine[d]) for d, ro in alloc.constraints.disks)
        ]

    def victims_for(
        self, node: Node, takeable: Callable[[Allocation], bool], order: Callable[[Allocation], Any]
    ) -> list[Allocation] | None:
        holders = self._conflicting(node)
        if not all(takeable(h) for h in holders):
            return None
        return sorted(holders, key=order)

    def admits_without(self, node: Node, victims: list[Allocation]) -> bool:
        gone = {id(v) for v in victims}
        return all(id(h) in gone for h in self._conflicting(node))


NO_TOLERATIONS = Tolerations(())
