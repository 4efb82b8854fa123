"""What one scheduling cycle keeps while it runs (core.scheduler.cycle.scheduling): the applications it has
tried, each leaf's applications in order, and what it learned about room."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterator
from itertools import islice
from operator import itemgetter
from time import perf_counter
from typing import cast

from core.constraints.ask import NO_CONSTRAINTS
from core.objects.allocation import Allocation
from core.objects.application import Application
from core.objects.queue import Queue
from core.policies.queue_sort import AppKey, app_sort_key
from core.scheduler.metrics import Histogram
from core.scheduler.partition import Partition


class Cycle:
    """Per-cycle bookkeeping: each ask is tried at most once per cycle.

    An application's pending asks stay sorted (Application.sorted_asks). Walking them in order, an
    allocated ask leaves the list and one that cannot be placed stays, so the asks before a cursor of
    "tried and not placed" are exactly the ones to skip: the cursor is that count. A queue whose
    applications have nothing left to try is exhausted until the next cycle.
    """

    def __init__(self, now: float) -> None:
        self.now = now
        self.cursor: dict[str, int] = {}
        self.exhausted: set[str] = set()  # queue full names
        self.pod_groups_tried: set[tuple[str, str]] = set()  # (application, group): tried as one
        self.unschedulable: dict[str, int] = {}  # per application: asks no node took this cycle
        # Each leaf's applications in order, sorted once per cycle: within a cycle only an allocation
        # changes the order, and only for its application, which `allocated` moves to its new place.
        self.app_orders: dict[str, AppOrder] = {}
        # Sizes (with their node-level rules) no node took this cycle, each with its tally of why, and
        # those no node could be reserved for: within a cycle room only shrinks, so the next ask alike
        # fails too, without a pass over the nodes. Valid while the partition notes no room freed
        # (the parking lot's version).
        self.no_room: dict[object, str] = {}
        self.no_candidate: set[object] = set()
        self.room_version = -1
        self.app_sorting: Histogram | None = None  # YuniKorn's node_sorting{level="app"}, when timed

    def key(self, partition: Partition, ask: Allocation) -> object | None:
        """The ask's key in the caches, which are made fresh first: what asks alike share for the node
        search (None: it has rules other pods decide, so it is not cached)."""
        self._fresh(partition)
        constraints = ask.constraints
        if partition.pod_rules.carried:
            return None
        if constraints is NO_CONSTRAINTS:
            return ask.resource
        if not constraints.shares_search:  # core.constraints.rule_facts
            return None
        return (ask.resource, constraints)

    def _fresh(self, partition: Partition) -> None:
        version = partition.parking.version
        if version != self.room_version:
            self.no_room.clear()
            self.no_candidate.clear()
            self.room_version = version

    def applications(self, leaf: Queue) -> AppOrder:
        order = self.app_orders.get(leaf.full_name)
        if order is None:
            # The leaf's applications sorted: YuniKorn's node_sorting{level="app"} (its sortApplications),
            # timed once per leaf and cycle, when the sort is done (later picks read it as kept).
            started = perf_counter()
            order = self.app_orders[leaf.full_name] = AppOrder(leaf)
            if self.app_sorting is not None:
                self.app_sorting.observe(perf_counter() - started)
        return order

    def allocated(self, leaf: Queue, app: Application) -> None:
        order = self.app_orders.get(leaf.full_name)
        if order is not None:
            order.moved(app)

    def next_ask(self, app: Application) -> Allocation | None:
        asks = app.ready_asks()
        i = self.cursor.get(app.app_id, 0)
        return asks[i] if i < len(asks) else None

    def tried(self, app: Application) -> None:
        self.cursor[app.app_id] = self.cursor.get(app.app_id, 0) + 1

    def no_node(self, leaf: Queue, app: Application) -> None:
        """No node took the application's ask. With the leaf's application.unschedasks.backoff set, as
        YuniKorn: that many in one attempt and the application is not tried again for the delay."""
        threshold = leaf.props.unsched_backoff
        if not threshold:
            return
        count = self.unschedulable[app.app_id] = self.unschedulable.get(app.app_id, 0) + 1
        if count >= threshold:
            app.backoff_until = self.now + leaf.props.unsched_backoff_delay


class AppOrder:
    """A leaf's applications with pending asks as (key, application), in key order (the leaf's
    pending_apps: its applications with nothing pending cost nothing here).

    The entries before `head` are gone: the one leaving is most often the first (the application
    just allocated for, with one pod each, has nothing left to try), and taking it off the front of
    a list of thousands would move all the others each time."""

    def __init__(self, leaf: Queue) -> None:
        self.key = app_sort_key(leaf)
        self.keys: dict[str, AppKey] = {app.app_id: self.key(app) for app in leaf.pending_apps.values()}
        self._entries = sorted(
            ((self.keys[a.app_id], a) for a in leaf.pending_apps.values()),
            key=itemgetter(0),
        )
        self._head = 0

    def entries(self) -> Iterator[tuple[AppKey, Application]]:
        """The applications in order."""
        return islice(self._entries, self._head, None)

    def moved(self, app: Application) -> None:
        if not app.has_ready():
            self.drop(app)
            return
        new = self.key(app)
        old = self.keys.get(app.app_id)
        if new == old:
            return  # where it was (fifo, say: an allocation does not move it)
        if old is not None:
            self.drop(app)
        self.keys[app.app_id] = new
        insort(self._entries, (new, app), lo=self._head)  # never compares applications: keys differ

    def drop(self, app: Application) -> None:
        """Out of this cycle's order: it has nothing left to try in it."""
        old = self.keys.pop(app.app_id, None)
        if old is None:
            return
        entries, head = self._entries, self._head
        if entries[head][1] is app:
            entries[head] = _GONE  # let the application go; the slot goes at the next compaction
            self._head = head = head + 1
            if head > 64 and head * 2 > len(entries):
                del entries[:head]
                self._head = 0
        else:
            del entries[bisect_left(entries, (old,), lo=head)]  # keys are unique: this is its entry


_GONE: tuple[AppKey, Application] = cast("tuple[AppKey, Application]", ())
