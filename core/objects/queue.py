"""A queue of the hierarchy: limits, properties, ACLs, usage, and headroom along the path to root."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, TypedDict

from core.config.acl import ACL, NOBODY
from core.config.properties import QueueProperties
from core.config.schema import ChildTemplate
from core.objects.priority_range import MIN_PRIORITY, PriorityInputs
from core.resources import Resource

if TYPE_CHECKING:
    from core.objects.application import Application


class QuotaOutcome(TypedDict):
    """The last quota preemption run of a queue, as the REST API shows it."""

    time: float
    target: dict[str, int]
    achieved: dict[str, int]
    victims: int
    complete: bool
    reason: str


class QueueState(StrEnum):
    ACTIVE = "Active"
    DRAINING = "Draining"  # keeps its applications running; takes no new ones; goes when empty
    STOPPED = "Stopped"


class Queue:
    def __init__(
        self,
        name: str,
        parent: Queue | None = None,
        is_leaf: bool = True,
        managed: bool = True,
    ) -> None:
        self.name = name
        self.parent = parent
        self.full_name: str = f"{parent.full_name}.{name}" if parent else name
        # This queue, then each ancestor up to root: a queue's parent never changes, and the path is
        # walked on every placement, run and limit check.
        self._path: tuple[Queue, ...] = (self, *parent._path) if parent else (self,)
        self.is_leaf = is_leaf
        self.managed = managed  # from the configuration; dynamic queues come from placement
        self.state = QueueState.ACTIVE
        self.guaranteed: Resource | None = None
        self.max: Resource | None = None  # None or a missing type: unlimited
        self.max_applications = 0  # 0: unlimited
        self.own_properties: dict[str, str] = {}
        self.effective_properties: dict[str, str] = {}
        self.props = QueueProperties()
        self.submit_acl: ACL = NOBODY
        self.admin_acl: ACL = NOBODY
        self.child_template: ChildTemplate | None = None
        self.templated = False  # a dynamic queue made from a parent's child template
        self.children: dict[str, Queue] = {}
        self.applications: dict[str, Application] = {}
        # Those of them with pending asks (Application keeps it): what a scheduling cycle sorts, so its
        # cost follows what waits here, not how many applications the queue has ever held.
        self.pending_apps: dict[str, Application] = {}
        self.allocated = Resource()  # owned usage counters, updated in place
        self.pending = Resource()
        self.preempting = (
            Resource()
        )  # allocated, but being released by preemption (still counted in allocated)
        # Headroom kept for preempting asks, this queue and below: the room their victims free is
        # theirs, so another ask must fit both now and once they are all placed (see committed).
        self.held = Resource()
        self.running_apps = 0  # applications counted against maxapplications, this queue and below
        # For the metrics (YuniKorn's per-queue counters): allocations made and released on this leaf
        # (the applications' states it saw are the cluster's: core.objects.app_counts).
        self.containers_allocated = 0
        self.containers_released = 0
        # Quota enforcement (core.scheduler.partition.quota_plan): when the timer started, the victims
        # of a run in progress, and the last run's outcome (for the REST API).
        self.quota_timer: float | None = None
        self.quota_running: set[tuple[str, str]] = set()
        self.quota_outcome: QuotaOutcome | None = None
        # Priority caches, kept by core.objects.priority: what this queue shows its parent, the highest
        # value inside before offset and fence, and the inputs (applications or children with pending).
        self.current_priority = MIN_PRIORITY
        self.inner_priority = MIN_PRIORITY
        self.app_priorities = PriorityInputs()
        self.child_priorities = PriorityInputs()
        if parent is not None:
            parent.children[name] = self

    @property
    def is_root(self) -> bool:
        return self.parent is None

    def path_to_root(self) -> tuple[Queue, ...]:
        return self._path

    # Limits -----------------------------------------------------------------------------------
    def headroom(self) -> Resource | None:
        """What may still be allocated here: min over this queue and its ancestors of max - allocated.

        Types no max on the path mentions are unlimited and absent from the result; None means
        nothing on the path has a max at all.
        """
        room: dict[str, int] | None = None
        for queue in self.path_to_root():
            if queue.max is None:
                continue
            room = room if room is not None else {}
            used = queue.committed() if queue.held else queue.allocated
            for name, limit in queue.max.items():
                free = limit - used.get(name)
                room[name] = min(room[name], free) if name in room else free
        return Resource(room) if room is not None else None

    def effective_max(self) -> Resource | None:
        """The tightest max along the path to root, per type."""
        out: dict[str, int] | None = None
        for queue in self.path_to_root():
            if queue.max is None:
                continue
            out = out if out is not None else {}
            for name, limit in queue.max.items():
                out[name] = min(out[name], limit) if name in out else limit
        return Resource(out) if out is not None else None

    def fits_headroom(self, resource: Resource, include_root: bool = True, own_hold: bool = False) -> bool:
        """Whether the ask fits under every max on the path, for the types the ask needs.

        Only the ask's types count: a queue over its max in memory (after a max was lowered) still
        takes an ask that needs no memory. Root's max is the cluster's capacity; an ask bound to one
        node skips it (`include_root=False`), as its node's room is what decides. Headroom held for
        preempting asks counts as used, except the ask's own (`own_hold`: it is in `held`).
        """
        return self.headroom_shortfall(resource, include_root, own_hold) is None

    def headroom_shortfall(
        self,
        resource: Resource,
        include_root: bool = True,
        own_hold: bool = False,
        held_by_asking: Resource | None = None,
    ) -> tuple[Queue, dict[str, int]] | None:
        """The nearest queue on the path whose max the ask would exceed, and the ask's quantities of
        the types that do not fit there; None when it fits everywhere (see fits_headroom).
        `held_by_asking`: the holds of the asks asking together (a pod group's members), instead of
        the one ask's own (`own_hold`)."""
        own = held_by_asking if held_by_asking is not None else (resource if own_hold else None)
        for queue in self.path_to_root():
            if queue.parent is None and not include_root:
                break
            if queue.max is None:
                continue
            limit = queue.max._values  # the dicts themselves: asked for every allocation
            held = queue.held._values
            counted = queue.committed(own) if held else queue.allocated
            used = counted._values
            for name, want in resource._values.items():
                if want > 0 and name in limit and used.get(name, 0) + want > limit[name]:
                    short = {
                        k: v for k, v in resource.items()
                        if v > 0 and k in limit and used.get(k, 0) + v > limit[k]
                    }  # fmt: skip
                    return queue, short
        return None

    def committed(self, own: Resource | None = None) -> Resource:
        """What counts as used against this queue's max while asks are held: the allocations, plus
        whatever of the held asks (but `own`, the asking one's) the victims being released here do
        not free. So a new allocation fits now, with the victims still running, and also once they
        are gone and the held asks placed."""
        extra = self.held - self.preempting
        if own is not None:
            extra = extra - own
        return self.allocated + {k: v for k, v in extra.items() if v > 0}

    def can_run_another_app(self) -> bool:
        """Whether maxapplications, here and on every ancestor, leaves room for one more running app."""
        return all(not 0 < q.max_applications <= q.running_apps for q in self._path)

    # Usage ------------------------------------------------------------------------------------
    def add_allocated(self, delta: Resource) -> None:
        queue: Queue | None = self
        while queue is not None:
            queue.allocated.add_in_place(delta)
            queue = queue.parent

    def remove_allocated(self, delta: Resource) -> None:
        queue: Queue | None = self
        while queue is not None:
            queue.allocated.sub_in_place(delta)
            queue = queue.parent

    def add_preempting(self, delta: Resource) -> None:
        queue: Queue | None = self
        while queue is not None:
            queue.preempting.add_in_place(delta)
            queue = queue.parent

    def remove_preempting(self, delta: Resource) -> None:
        queue: Queue | None = self
        while queue is not None:
            queue.preempting.sub_in_place(delta)
            queue = queue.parent

    def add_held(self, delta: Resource) -> None:
        queue: Queue | None = self
        while queue is not None:
            queue.held.add_in_place(delta)
            queue = queue.parent

    def remove_held(self, delta: Resource) -> None:
        queue: Queue | None = self
        while queue is not None:
            queue.held.sub_in_place(delta)
            if queue.held.is_zero():
                queue.held = Resource()  # empty again, so the headroom check skips it
            queue = queue.parent

    def add_pending(self, delta: Resource) -> None:
        queue: Queue | None = self
        while queue is not None:
            queue.pending.add_in_place(delta)
            queue = queue.parent

    def remove_pending(self, delta: Resource) -> None:
        queue: Queue | None = self
        while queue is not None:
            queue.pending.sub_in_place(delta)
            queue = queue.parent

    def pending_allocated(self, delta: Resource) -> None:
        """An ask of this size was allocated: pending to allocated on the whole path, in one walk (the
        scheduling path's remove_pending and add_allocated together)."""
        moved = delta._values.items()
        queue: Queue | None = self
        while queue is not None:
            pending, allocated = queue.pending._values, queue.allocated._values
            for name, value in moved:
                pending[name] = pending.get(name, 0) - value
                allocated[name] = allocated.get(name, 0) + value
            queue = queue.parent

    def count_running(self, delta: int) -> None:
        for queue in self.path_to_root():
            queue.running_apps += delta

    def has_pending(self) -> bool:
        return max(self.pending._values.values(), default=0) > 0  # in C: asked of every queue on every pick

    # Access -----------------------------------------------------------------------------------
    def allows_submit(self, user: str, groups: tuple[str, ...]) -> bool:
        """Submit (or admin) access on this queue or any ancestor grants submit access here."""
        return any(q.submit_acl.allows(user, groups) or q.admin_acl.allows(user, groups) for q in self._path)

    def accepts_new_applications(self) -> bool:
        return self.is_leaf and all(q.state == QueueState.ACTIVE for q in self._path)

    def is_empty(self) -> bool:
        return not self.applications and not self.children

    def __repr__(self) -> str:
        return f"Queue({self.full_name})"
