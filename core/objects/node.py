"""A node of a partition: its capacity, what runs on it, and whether new work may land there."""

from __future__ import annotations

from typing import Protocol

from core.constraints.ask import NO_CONSTRAINTS, NO_TRAITS, NodeTraits
from core.constraints.host_ports import PortsInUse
from core.constraints.volume_limits import VolumesInUse
from core.constraints.volume_restrictions import DisksInUse
from core.objects.allocation import Allocation
from core.resources import Resource
from si.v1.tags import TAINT_CORDON


class PodWatcher(Protocol):
    """Told of every pod placed on or removed from a node (the partition's pod rules index)."""

    counting: bool  # whether every pod counts (selectors registered), or only those with constraints

    def placed(self, alloc: Allocation, node: Node) -> None: ...

    def removed(self, alloc: Allocation, node: Node) -> None: ...


class RoomWatcher(Protocol):
    """Told when room on a node frees or is taken (the partition's parking lot wakes asks by it)."""

    def freed(self, node: Node, alloc: Allocation) -> None: ...

    def placed(self) -> None: ...


DEFAULT_WEIGHTS = {"vcore": 1.0, "memory": 1.0}


class Node:
    __slots__ = (
        "_available",
        "_share_terms",
        "allocated",
        "allocations",
        "attributes",
        "capacity",
        "disks",
        "node_id",
        "occupied",
        "ports",
        "reservations",
        "room_watcher",
        "schedulable",
        "traits",
        "volumes",
        "watcher",
    )

    def __init__(
        self,
        node_id: str,
        capacity: Resource,
        attributes: dict[str, str] | None = None,
        schedulable: bool = True,
    ) -> None:
        self.node_id = node_id
        self.capacity = capacity
        self.attributes = dict(attributes or {})
        self.schedulable = schedulable
        # Owned usage counters, updated in place: what our allocations and foreign ones hold, and
        # the free room that follows (capacity - allocated - occupied, kept incrementally).
        self.allocated = Resource()
        self.occupied = Resource()
        self.allocations: dict[str, Allocation] = {}
        self._available = capacity.copy()
        self.traits: NodeTraits = NO_TRAITS
        self.reservations: set[tuple[str, str]] = set()  # asks (app, key) holding this node
        self.ports = PortsInUse()  # host ports of the pods here, ours and foreign
        self.volumes = VolumesInUse()  # CSI volumes of the pods here, ours and foreign
        self.disks = DisksInUse()  # in-tree disks the pods here mount, ours and foreign
        self.watcher: PodWatcher | None = None
        self.room_watcher: RoomWatcher | None = None
        # usage_share's terms for the weights last asked with (made again when the capacity changes).
        self._share_terms: tuple[dict[str, float], tuple[tuple[str, float, int], ...]] | None = None

    @property
    def cordoned(self) -> bool:
        """Unschedulable as Kubernetes cordons a node: it carries the taint
        node.kubernetes.io/unschedulable:NoSchedule, so (as kube-scheduler's NodeUnschedulable filter) an
        ask that tolerates that taint may still go there, while every other stays off (the taint check
        keeps it off). A node its RM drains without the taint is closed to all. The searches ask
        `node.schedulable or node.cordoned`, so this is read only for a node that is not schedulable."""
        return any(t.key == TAINT_CORDON and t.effect == "NoSchedule" for t in self.traits.taints)

    @property
    def available(self) -> Resource:
        """Free room: capacity less what our and foreign allocations hold."""
        return self._available

    def _refresh(self) -> None:
        self._available = self.capacity - self.allocated - self.occupied

    def fits(self, resource: Resource) -> bool:
        return resource.fits_in(self._available)

    def fits_capacity(self, resource: Resource) -> bool:
        return resource.fits_in(self.capacity)

    def add_allocation(self, alloc: Allocation) -> None:
        self.allocations[alloc.key] = alloc
        # Its counter and the free room in one pass (on every allocation: a call and a walk fewer).
        counted = (self.occupied if alloc.foreign else self.allocated)._values
        available = self._available._values
        for name, value in alloc.resource._values.items():
            counted[name] = counted.get(name, 0) + value
            available[name] = available.get(name, 0) - value
        constraints = alloc.constraints
        if constraints is not NO_CONSTRAINTS:
            for index, held in constraints.node_held:  # what its rules hold here, counted (rule_facts)
                getattr(self, index).add(held)
        watcher = self.watcher
        if watcher is not None and (constraints is not NO_CONSTRAINTS or watcher.counting):
            watcher.placed(alloc, self)
        if self.room_watcher is not None:
            self.room_watcher.placed()

    def remove_allocation(self, key: str) -> Allocation | None:
        alloc = self.allocations.pop(key, None)
        if alloc is None:
            return None
        (self.occupied if alloc.foreign else self.allocated).sub_in_place(alloc.resource)
        self._available.add_in_place(alloc.resource)
        constraints = alloc.constraints
        if constraints is not NO_CONSTRAINTS:
            for index, held in constraints.node_held:
                getattr(self, index).remove(held)
        watcher = self.watcher
        if watcher is not None and (constraints is not NO_CONSTRAINTS or watcher.counting):
            watcher.removed(alloc, self)
        if self.room_watcher is not None:
            self.room_watcher.freed(self, alloc)
        return alloc

    def resize_allocation(self, key: str, resource: Resource) -> None:
        """An allocation here runs at a new size (resized in place): its counter and the free room
        follow. The caller sets the allocation's own resource after every holder has followed."""
        alloc = self.allocations[key]
        counter = self.occupied if alloc.foreign else self.allocated
        counter.sub_in_place(alloc.resource)
        counter.add_in_place(resource)
        self._available.add_in_place(alloc.resource)
        self._available.sub_in_place(resource)

    def set_capacity(self, capacity: Resource) -> None:
        self.capacity = capacity
        self._share_terms = None
        self._refresh()

    def usage_share(self, weights: dict[str, float] | None = None) -> float:
        """Weighted mean of used/capacity over the weighted types the node has: 0 empty, 1 full.

        As YuniKorn: weights default to vcore and memory at 1.0; other types do not count.
        """
        wanted = weights or DEFAULT_WEIGHTS
        cached = self._share_terms
        if cached is None or cached[0] is not wanted:
            cached = self._share_terms = (wanted, self._terms(wanted))
        terms = cached[1]
        if not terms:
            return 0.0
        available = self._available._values  # asked on every allocation (the node order): no calls
        share = 0.0
        total_weight = 0.0
        for name, weight, cap in terms:
            share += weight * (1.0 - available.get(name, 0) / cap)
            total_weight += weight
        return share / total_weight

    def _terms(self, weights: dict[str, float]) -> tuple[tuple[str, float, int], ...]:
        """(type, weight, capacity) for the weighted types the node has, in the weights' order."""
        capacity = self.capacity._values
        return tuple(
            (name, weight, cap)
            for name, weight in weights.items()
            if (cap := capacity.get(name, 0)) > 0 and weight > 0
        )

    @property
    def is_reserved(self) -> bool:
        return bool(self.reservations)
