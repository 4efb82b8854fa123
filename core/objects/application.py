"""Applications: their asks, their allocations and their state machine.

States and transitions are YuniKorn's (objects/application_state.go), so shims that react to
"Running" or "Completing" see the same sequence from this core.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING

from sortedcontainers import SortedKeyList

from core.objects.allocation import Allocation
from core.objects.app_usage import AppUsage
from core.objects.gang import Gang
from core.objects.partition_key import PartitionKey
from core.objects.pod_group import PodGroup
from core.objects.priority_range import MIN_PRIORITY
from core.resources import Resource

if TYPE_CHECKING:
    from core.objects.queue import Queue


class AppState(StrEnum):
    NEW = "New"
    ACCEPTED = "Accepted"
    RUNNING = "Running"
    REJECTED = "Rejected"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    FAILING = "Failing"
    FAILED = "Failed"
    EXPIRED = "Expired"
    RESUMING = "Resuming"


_FINISHED = frozenset({AppState.COMPLETED, AppState.FAILED, AppState.REJECTED, AppState.EXPIRED})


class AppEvent(StrEnum):
    RUN = "runApplication"
    REJECT = "rejectApplication"
    COMPLETE = "completeApplication"
    FAIL = "failApplication"
    EXPIRE = "expireApplication"
    RESUME = "resumeApplication"


_S = AppState
# (event, source) -> destination
TRANSITIONS: dict[tuple[AppEvent, AppState], AppState] = {
    (AppEvent.REJECT, _S.NEW): _S.REJECTED,
    (AppEvent.RUN, _S.NEW): _S.ACCEPTED,
    (AppEvent.RUN, _S.RESUMING): _S.ACCEPTED,
    (AppEvent.RUN, _S.ACCEPTED): _S.RUNNING,
    (AppEvent.RUN, _S.RUNNING): _S.RUNNING,
    (AppEvent.RUN, _S.COMPLETING): _S.RUNNING,
    (AppEvent.COMPLETE, _S.ACCEPTED): _S.COMPLETING,
    (AppEvent.COMPLETE, _S.RUNNING): _S.COMPLETING,
    (AppEvent.COMPLETE, _S.COMPLETING): _S.COMPLETED,
    (AppEvent.FAIL, _S.NEW): _S.FAILING,
    (AppEvent.FAIL, _S.ACCEPTED): _S.FAILING,
    (AppEvent.FAIL, _S.RUNNING): _S.FAILING,
    (AppEvent.FAIL, _S.FAILING): _S.FAILED,
    (AppEvent.RESUME, _S.NEW): _S.RESUMING,
    (AppEvent.RESUME, _S.ACCEPTED): _S.RESUMING,
    (AppEvent.EXPIRE, _S.COMPLETED): _S.EXPIRED,
    (AppEvent.EXPIRE, _S.FAILED): _S.EXPIRED,
    (AppEvent.EXPIRE, _S.REJECTED): _S.EXPIRED,
}


class InvalidTransition(RuntimeError):
    pass


def _ask_order(ask: Allocation) -> tuple[int, float, str]:
    return (-ask.priority, ask.create_time, ask.key)


class Application:
    # One per application, thousands at once: no per-object __dict__, and faster attribute access.
    __slots__ = (
        "_asks_by_priority",
        "_sorted_asks",
        "allocated",
        "allocations",
        "app_id",
        "ask_max_priority",
        "asks",
        "backoff_until",
        "finished_time",
        "gang",
        "group_link",
        "groups",
        "held_by_limit",
        "held_by_queue",
        "max_allocated",
        "parked",
        "partition",
        "pending",
        "pod_groups",
        "queue",
        "removed_by_rm",
        "replacing",
        "start_time",
        "state",
        "state_log",
        "state_time",
        "submission_time",
        "tags",
        "usage",
        "user",
    )

    def __init__(
        self,
        app_id: str,
        partition: PartitionKey,
        queue: Queue,
        user: str = "",
        groups: tuple[str, ...] = (),
        tags: dict[str, str] | None = None,
        now: float = 0.0,
    ) -> None:
        self.app_id = app_id
        self.partition = partition
        self.queue = queue
        self.user = user
        self.groups = groups
        self.tags = dict(tags or {})
        self.state = AppState.NEW
        self.state_time = now
        self.asks: dict[str, Allocation] = {}
        self.allocations: dict[str, Allocation] = {}
        self.pending = Resource()  # owned usage counters, updated in place
        self.allocated = Resource()
        self.submission_time = now
        # For the REST API, as YuniKorn keeps them: each state entered and when; when the application
        # first ran and when it ended; the most it ever held, per resource type.
        self.state_log: list[tuple[float, AppState]] = [(now, AppState.NEW)]
        self.start_time: float | None = None
        self.finished_time: float | None = None
        self.max_allocated: dict[str, int] = {}
        self.removed_by_rm = False  # completed because its RM removed it (listed, never reported again)
        self.ask_max_priority = MIN_PRIORITY  # highest priority among pending asks
        # How many pending asks have each priority: the maximum follows without a walk of the asks (a
        # dict emptied from the front, as asks are placed in order, is slow to walk from the front).
        self._asks_by_priority: dict[int, int] = {}
        self.held_by_limit = False  # Accepted, and a user's or group's maxapplications keeps it there
        self.held_by_queue = False  # Accepted, and a queue's maxapplications keeps it there
        self.group_link: str | None = None  # the group its UG_APP_LINK named, until it is let go
        # Not tried before this time: its queue's application.unschedasks.backoff took effect.
        self.backoff_until = 0.0
        self.gang: Gang | None = None  # task groups and placeholders, for a gang-scheduled application
        self.pod_groups: dict[str, PodGroup] = {}  # asks that start together, by group name
        # Real tasks placed in a placeholder's stead, waiting for the RM to confirm its release.
        self.replacing: dict[str, Allocation] = {}
        # Pending asks in scheduling order, kept sorted as asks come and go (no re-sort per cycle):
        # those a cycle may try. Parked ones (no node could take them; the partition's ParkingLot
        # wakes them when that may have changed) wait apart, still pending.
        self._sorted_asks: SortedKeyList[Allocation, tuple[int, float, str]] = SortedKeyList(key=_ask_order)
        self.parked: dict[str, Allocation] = {}
        self.usage: AppUsage | None = None  # what ended allocations used (core.objects.app_usage)

    # State machine ------------------------------------------------------------------------------
    def can_handle(self, event: AppEvent) -> bool:
        return (event, self.state) in TRANSITIONS

    def handle(self, event: AppEvent, now: float) -> AppState | None:
        """Apply an event; returns the new state when it changed, None when it stayed the same."""
        dest = TRANSITIONS.get((event, self.state))
        if dest is None:
            raise InvalidTransition(
                f"application {self.app_id}: {event.value} is not valid in state {self.state.value}"
            )
        if dest == self.state:
            return None
        self.state = dest
        self.state_time = now
        self.state_log.append((now, dest))
        if dest == AppState.RUNNING and self.start_time is None:
            self.start_time = now
        elif dest in _FINISHED and self.finished_time is None:
            self.finished_time = now
        return dest

    # Asks and allocations -------------------------------------------------------------------------
    def knows_key(self, key: str) -> bool:
        return key in self.asks or key in self.allocations or key in self.replacing

    def add_ask(self, ask: Allocation) -> None:
        if not self._sorted_asks:  # something to try from now on: its queue's scheduling looks at it
            self.queue.pending_apps[self.app_id] = self
        self.asks[ask.key] = ask
        self.pending.add_in_place(ask.resource)
        self._sorted_asks.add(ask)
        if ask.create_time < self.submission_time:
            self.submission_time = ask.create_time
        counts = self._asks_by_priority
        counts[ask.priority] = counts.get(ask.priority, 0) + 1
        if ask.pod_group:
            self.pod_groups[ask.pod_group].pending += 1
        if ask.priority > self.ask_max_priority:
            self.ask_max_priority = ask.priority  # O(1): a new ask can only raise the maximum

    def remove_ask(self, key: str) -> Allocation | None:
        ask = self.asks.pop(key, None)
        if ask is not None:
            self.pending.sub_in_place(ask.resource)
            if self.parked.pop(key, None) is None:
                asks = self._sorted_asks
                if asks[0] is ask:  # the usual case: an allocation takes the ask tried first
                    asks.pop(0)
                else:
                    asks.remove(ask)
            self._ask_priority_gone(ask.priority)
            if ask.pod_group:
                self._pod_group_left(ask.pod_group, pending=True)
        if not self._sorted_asks:
            self.queue.pending_apps.pop(self.app_id, None)
        return ask

    def park(self, ask: Allocation) -> None:
        """Set a pending ask aside: cycles skip it until it is unparked."""
        self._sorted_asks.remove(ask)
        self.parked[ask.key] = ask
        if not self._sorted_asks:
            self.queue.pending_apps.pop(self.app_id, None)

    def unpark(self, ask: Allocation) -> None:
        if self.parked.pop(ask.key, None) is None:
            return  # gone meanwhile, or never parked
        if not self._sorted_asks:
            self.queue.pending_apps[self.app_id] = self
        self._sorted_asks.add(ask)

    def _ask_priority_gone(self, priority: int) -> None:
        counts = self._asks_by_priority
        left = counts[priority] - 1
        if left:
            counts[priority] = left
            return
        del counts[priority]
        if priority >= self.ask_max_priority:  # the last ask at the maximum: the next one down
            self.ask_max_priority = max(counts, default=MIN_PRIORITY)

    def add_allocation(self, alloc: Allocation) -> None:
        self.allocations[alloc.key] = alloc
        # The usage and its peak in one pass: only the types the allocation holds can reach a new peak.
        allocated, most = self.allocated._values, self.max_allocated
        for name, value in alloc.resource._values.items():
            total = allocated[name] = allocated.get(name, 0) + value
            if total > most.get(name, 0):
                most[name] = total
        if alloc.create_time < self.submission_time:
            self.submission_time = alloc.create_time
        if alloc.pod_group:
            self.pod_groups[alloc.pod_group].allocated += 1

    def resize_allocation(self, key: str, resource: Resource) -> None:
        """One of its allocations runs at a new size (the caller then sets the allocation's own)."""
        self.allocated.sub_in_place(self.allocations[key].resource)
        self.allocated.add_in_place(resource)
        self._note_peak()

    def _note_peak(self) -> None:
        """max_allocated: the most of each type it ever held at once."""
        most = self.max_allocated
        for name, value in self.allocated.items():
            if value > most.get(name, 0):
                most[name] = value

    def track_usage(self, alloc: Allocation, now: float) -> tuple[str, dict[str, int]]:
        """Count an allocation that ended in what the application used; its kind and what it added."""
        if self.usage is None:
            self.usage = AppUsage()
        return self.usage.add(alloc, now)

    def remove_allocation(self, key: str) -> Allocation | None:
        alloc = self.allocations.pop(key, None)
        if alloc is not None:
            self.allocated.sub_in_place(alloc.resource)
            if alloc.pod_group:
                self._pod_group_left(alloc.pod_group, pending=False)
        return alloc

    def join_pod_group(self, name: str, min_count: int) -> PodGroup:
        """The group an ask or a running allocation names, made with its first member."""
        group = self.pod_groups.get(name)
        if group is None:
            group = self.pod_groups[name] = PodGroup(name, min_count)
        return group

    def _pod_group_left(self, name: str, pending: bool) -> None:
        """A member left pending (placed, or withdrawn) or left its node. The group goes with its last
        allocation here, and with its last ask by `forget_pod_group` (an ask leaving to be placed keeps
        it: its allocation is counted next)."""
        group = self.pod_groups.get(name)
        if group is None:
            return
        if pending:
            group.pending -= 1
            return
        group.allocated -= 1
        if group.empty:
            del self.pod_groups[name]

    def forget_pod_group(self, name: str) -> None:
        """The group, once it holds and asks for nothing (its last ask withdrawn)."""
        group = self.pod_groups.get(name)
        if group is not None and group.empty:
            del self.pod_groups[name]

    def ready_asks(self) -> Sequence[Allocation]:
        """The pending asks a cycle may try (not parked), highest priority first, then oldest first:
        a live, sorted view."""
        return self._sorted_asks

    def sorted_asks(self) -> Sequence[Allocation]:
        """Every pending ask, parked or not, in scheduling order."""
        if not self.parked:
            return self._sorted_asks
        return sorted([*self._sorted_asks, *self.parked.values()], key=_ask_order)

    def has_pending(self) -> bool:
        return bool(self.asks)

    def has_ready(self) -> bool:
        """Whether a cycle has any of its asks to try."""
        return bool(self._sorted_asks)

    def is_idle(self) -> bool:
        """Nothing pending, nothing running: placeholders left over do not keep an application busy
        (they are released when it completes)."""
        if self.asks or self.replacing:
            return False
        placeholders = self.gang.allocated_count if self.gang is not None else 0
        return len(self.allocations) == placeholders
