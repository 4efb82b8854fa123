"""Asks set aside until something changes that could let them run.

An ask a cycle tried and could not place is parked: cycles skip it, so a pile of asks that fit nowhere
costs nothing while nothing changes. It is woken (put back among the asks a cycle tries) by what could
change its answer, and only by that:

- ROOM, no node had room for it (or admitted it): a node whose free room grew to hold its size (an
  allocation went, a reservation was given up there), or any change to the nodes themselves (one
  added, resized, relabelled, made schedulable).
- LIMIT, over a queue's max or a user's or group's limit: any allocation going (room under a max or a
  limit frees only when usage drops), or a change to the configuration.
- PEERS, its answer depends on other pods (inter-pod affinity, topology spread) or on victims
  preemption could choose: any allocation placed or going, or a reservation given up.
- A time: when waiting longer alone could change its answer (it may reserve a node once it has waited
  RESERVATION_DELAY, preempt once it has waited the queue's preemption delay).

Any change the lot is not told of in detail (configuration, nodes, preemption holds) wakes everything,
so parking can delay an ask by no more than the next cycle after a change, never strand it. Waking is
done at the start of a cycle, from the changes noted since the last one.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from enum import Enum
from typing import Protocol

from core.objects.allocation import Allocation
from core.objects.node import Node

Ref = tuple[str, str]
Shape = tuple[tuple[str, int], ...]


class Why(Enum):
    ROOM = "room"
    LIMIT = "limit"
    PEERS = "peers"


class Parker(Protocol):
    """The application an ask belongs to: it keeps its parked asks apart from those a cycle tries."""

    def unpark(self, ask: Allocation) -> None: ...


def _shape(ask: Allocation) -> Shape:
    return tuple(sorted((k, v) for k, v in ask.resource.items() if v > 0))


class ParkingLot:
    def __init__(self) -> None:
        self.enabled = True  # off: nothing is parked (the property tests' naive reference)
        # ROOM asks by size, so a node's new room wakes every ask of a size it holds in one look.
        self._room: dict[Shape, dict[Ref, tuple[Parker, Allocation]]] = {}
        self._limit: dict[Ref, tuple[Parker, Allocation]] = {}
        self._peers: dict[Ref, tuple[Parker, Allocation]] = {}
        # Asks whose turn to look for victims did not come in their cycle (the attempts per cycle are
        # bounded): woken a few per cycle, oldest first, each in addition to its own group.
        self._turns: dict[Ref, tuple[Parker, Allocation]] = {}
        self._where: dict[Ref, tuple[Why, Shape]] = {}  # each parked ask: why, and its size
        self._timers: list[tuple[float, int, Ref]] = []  # (wake at, sequence, ask); stale entries skipped
        self._timer_at: dict[
            Ref, float
        ] = {}  # each ask's pending timer: parked again, it is not pushed twice
        self._sequence = 0
        # What changed since the last wake.
        self._everything = False
        self._freed = False  # an allocation went
        self._placed = False  # an allocation was placed
        self._grown: dict[str, Node] = {}  # nodes with more free room
        self._unreserved: dict[str, Node] = {}  # nodes a reservation let go of
        self.version = 0  # counts the notes of room freed or nodes changed (a cycle's caches key on it)

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, ref: Ref) -> bool:
        return ref in self._where

    # Parking -----------------------------------------------------------------------------------
    def park(
        self, app: Parker, ask: Allocation, why: Why, wake_at: float | None = None, turn: bool = False
    ) -> None:
        """`turn`: it waits for a turn to look for victims (see wake's `turns`)."""
        ref = ask.ref
        entry = (app, ask)
        if turn:
            self._turns[ref] = entry
        shape = _shape(ask)
        if why is Why.ROOM:
            self._room.setdefault(shape, {})[ref] = entry
        elif why is Why.LIMIT:
            self._limit[ref] = entry
        else:
            self._peers[ref] = entry
        self._where[ref] = (why, shape)
        if wake_at is not None and self._timer_at.get(ref) != wake_at:
            self._timer_at[ref] = wake_at
            self._sequence += 1
            heapq.heappush(self._timers, (wake_at, self._sequence, ref))

    def discard(self, ask: Allocation) -> None:
        """The ask is gone (allocated elsewhere, withdrawn, its application removed)."""
        ref = ask.ref
        self._turns.pop(ref, None)
        where = self._where.pop(ref, None)
        if where is None:
            return
        why, shape = where
        if why is Why.ROOM:
            group = self._room.get(shape)
            if group is not None:
                group.pop(ref, None)
                if not group:
                    del self._room[shape]
        elif why is Why.LIMIT:
            self._limit.pop(ref, None)
        else:
            self._peers.pop(ref, None)

    # Changes -----------------------------------------------------------------------------------
    def everything(self) -> None:
        self._everything = True
        self.version += 1

    def freed(self, node: Node, alloc: Allocation) -> None:
        """An allocation left the node. Its own anti-affinity or ReadWriteOncePod claims may have kept
        asks off nodes anywhere (they hold both ways): those could all fit now."""
        self._freed = True
        self.version += 1
        self._grown[node.node_id] = node
        constraints = alloc.constraints
        if constraints.frees_everywhere:  # core.constraints.rule_facts
            self._everything = True

    def placed(self) -> None:
        self._placed = True

    def unreserved(self, node: Node) -> None:
        self.version += 1
        self._unreserved[node.node_id] = node

    # Waking ------------------------------------------------------------------------------------
    def wake(self, now: float, turns: int = 0) -> int:
        """Unpark what the changes noted since the last call (and the clock) may let run, and up to
        `turns` of the asks waiting for a turn to look for victims; how many."""
        if not self._where:
            self._clear_changes()
            self._clear_timers()
            self._turns.clear()
            return 0
        woken = 0
        if self._everything:
            woken += self._wake_all()
        else:
            if self._freed or self._placed or self._unreserved:
                woken += self._wake_group(self._peers)
            if self._freed:
                woken += self._wake_group(self._limit)
            if self._grown or self._unreserved:
                woken += self._wake_room()
        self._clear_changes()
        woken += self._wake_due(now)
        while turns > 0 and self._turns:
            ref = next(iter(self._turns))
            app, ask = self._turns.pop(ref)
            if ref in self._where:
                self.discard(ask)
                app.unpark(ask)
                woken += 1
            turns -= 1
        return woken

    def _clear_changes(self) -> None:
        self._everything = self._freed = self._placed = False
        self._grown.clear()
        self._unreserved.clear()

    def _wake_all(self) -> int:
        woken = self._wake_group(self._limit) + self._wake_group(self._peers)
        for group in list(self._room.values()):
            woken += self._wake_group(group)
        self._room.clear()
        self._clear_timers()
        return woken

    def _clear_timers(self) -> None:
        self._timers.clear()
        self._timer_at.clear()

    def _wake_room(self) -> int:
        woken = 0
        grown = list(self._grown.values())
        unreserved = list(self._unreserved.values())
        for shape in list(self._room):
            # A size a grown node now holds free, or one a node freed of its reservation could hold
            # once (so an ask that may reserve sees it): the ask may fit there.
            if any(_holds(node.available, shape) for node in grown) or any(
                _holds(node.capacity, shape) for node in unreserved
            ):
                woken += self._wake_group(self._room.pop(shape))
        return woken

    def _wake_due(self, now: float) -> int:
        woken = 0
        timers = self._timers
        while timers and timers[0][0] <= now:  # due at its time: asks are ready from then on
            at, _, ref = heapq.heappop(timers)
            if self._timer_at.get(ref) == at:
                del self._timer_at[ref]
            entry = self._entry(ref)
            if entry is not None:
                self.discard(entry[1])
                entry[0].unpark(entry[1])
                woken += 1
        return woken

    def _entry(self, ref: Ref) -> tuple[Parker, Allocation] | None:
        where = self._where.get(ref)
        if where is None:
            return None  # woken or gone since
        why, shape = where
        if why is Why.LIMIT:
            return self._limit.get(ref)
        if why is Why.PEERS:
            return self._peers.get(ref)
        return self._room.get(shape, {}).get(ref)

    def _wake_group(self, group: dict[Ref, tuple[Parker, Allocation]]) -> int:
        count = len(group)
        turns = self._turns
        for ref, (app, ask) in group.items():
            self._where.pop(ref, None)
            if turns:
                turns.pop(ref, None)
            app.unpark(ask)
        group.clear()
        return count


def _holds(room: Mapping[str, int], shape: Shape) -> bool:
    get = room.get
    return all(get(name, 0) >= want for name, want in shape)
