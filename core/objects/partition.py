"""A partition: one RM's queue tree, nodes, applications, allocations and reservations.

Every method either changes state consistently or raises Rejection with a reason meant for the RM's
operator, leaving state as it was. Usage is kept in three places (node, application, queue path) and
always moved together here, which is what the invariant tests check.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from core.config.schema import PartitionConfig, QueueConfig
from core.events import Event
from core.objects import priority, queue_events
from core.objects.allocation import TAG_REQUIRED_NODE, Allocation
from core.objects.application import AppEvent, Application, AppState
from core.objects.constraints import (
    AskConstraints,
    ConstraintError,
    NodeTraits,
    parse_ask_constraints,
    parse_node_traits,
)
from core.objects.node import Node
from core.objects.queue import Queue
from core.objects.queue_tree import QueueTree
from core.placement.manager import PlacementManager, PlacementRefused
from core.placement.rules import PlacementRequest
from core.policies.node_sort import NodeIndex
from core.preemption import quota
from core.resources import ZERO, Resource

log = structlog.get_logger("pykorn.partition")

COMPLETING_TIMEOUT = 30.0  # Completing -> Completed, as YuniKorn
TERMINATED_TIMEOUT = 3 * 24 * 3600.0  # Completed/Failed/Rejected -> Expired, then forgotten
REJECTED_KEPT = 1_000  # applications refused at submission kept for the REST API, newest last


@dataclass(frozen=True)
class RejectedApplication:
    """An application refused at submission (placement, ACL, draining partition): never admitted, so
    it has no queue object; kept so `/application/{id}` can say why."""

    app_id: str
    queue_name: str  # as the RM asked for it
    user: str
    groups: tuple[str, ...]
    tags: dict[str, str]
    message: str
    time: float


def _lowered(old: Resource | None, new: Resource) -> bool:
    """Whether a new max is lower than the old in some type (a type newly limited counts)."""
    if old is None:
        return True
    return any(name not in old or value < old[name] for name, value in new.items())


# The application states si's ChangeDetail names (APP_<STATE>); others are reported as DETAILS_NONE.
_APP_DETAILS = frozenset(
    {"APP_NEW", "APP_ACCEPTED", "APP_RUNNING", "APP_COMPLETING", "APP_COMPLETED", "APP_FAILING",
     "APP_FAILED", "APP_RESUMING", "APP_EXPIRED", "APP_REJECT"}
)  # fmt: skip


class Rejection(Exception):
    """A request the partition refuses; str(rejection) is the reason sent to the RM."""


@dataclass(frozen=True)
class AppStateChange:
    app_id: str
    state: AppState
    time: float
    message: str = ""


_TERMINAL = frozenset({AppState.REJECTED, AppState.COMPLETED, AppState.FAILED, AppState.EXPIRED})


class Partition:
    def __init__(self, name: str, rm_id: str, config: PartitionConfig, now: float = 0.0) -> None:
        self.name = name  # internal: "[rmID]name"
        self.rm_id = rm_id
        self.config = config
        self.log = log.bind(rmID=rm_id, partition=self.display_name)
        self.tree = QueueTree(config.root, warn=self._warn_queue)
        self.placement = PlacementManager(config.placement_rules)
        policy = config.node_sort_policy
        self.node_index = NodeIndex(policy.type, dict(policy.resource_weights) or None)
        self.nodes: dict[str, Node] = {}
        self.applications: dict[str, Application] = {}
        self.completed: list[Application] = []  # Completed apps waiting to expire (IDs may repeat)
        self.rejected: dict[str, RejectedApplication] = {}  # by ID, oldest first, REJECTED_KEPT at most
        self.foreign: dict[str, Allocation] = {}
        self.reservations: dict[tuple[str, str], str] = {}  # (app, key) -> node ID
        # Preemption in flight: victims chosen for an ask, until the RM confirms each release.
        self.victims_of: dict[tuple[str, str], set[tuple[str, str]]] = {}  # ask -> victims
        self.preempted_for: dict[tuple[str, str], tuple[str, str]] = {}  # victim -> ask
        self.preempted: list[tuple[Allocation, str]] = []  # (victim, why) to report to the RM
        self.total_capacity: Resource = ZERO
        self.occupied_total: Resource = ZERO  # held on the nodes by pods of other schedulers
        self.app_changes: list[AppStateChange] = []
        self.draining = False  # removed from the configuration: no new applications
        self.completing_timeout = COMPLETING_TIMEOUT
        self.terminated_timeout = TERMINATED_TIMEOUT
        self.root.max = self._cluster_room()
        self.quota_victims: dict[tuple[str, str], str] = {}  # victim -> queue whose max it enforces
        self.events: list[Event] = []  # drained by the cluster into its event log
        self.preemptions: dict[str, int] = {}  # victims by kind (required_node, inter_queue, quota)
        # A restart loads the configuration afresh: every quota timer starts from now.
        self._update_quota_timers({}, now)

    def _warn_queue(self, queue: str, message: str) -> None:
        self.log.warning("queue property ignored", queue=queue, detail=message)

    @property
    def root(self) -> Queue:
        return self.tree.root

    @property
    def queues(self) -> dict[str, Queue]:
        return self.tree.queues

    def find_queue(self, name: str) -> Queue | None:
        return self.tree.find(name)

    def config_conflicts(self, config: PartitionConfig) -> list[str]:
        """Why this partition cannot take `config` as it is now; empty when it can."""
        problems: list[str] = []

        def walk(cfg: QueueConfig, name: str) -> None:
            queue = self.tree.find(name)
            if queue is not None and cfg.is_parent and queue.is_leaf and queue.applications:
                problems.append(
                    f"queue {queue.full_name} holds {len(queue.applications)} application(s) and cannot "
                    "become a parent queue until they are gone"
                )
            for child in cfg.queues:
                walk(child, f"{name}.{child.name}")

        walk(config.root, "root")
        return problems

    def apply_config(self, config: PartitionConfig, now: float = 0.0) -> None:
        """Hot reload: limits and properties hold from the next cycle; usage stays where it is."""
        before = queue_events.snapshot(self.tree)
        self.config = config
        self.draining = False
        self.tree.reconcile(config.root)
        self.events.extend(queue_events.reload_events(self.rm_id, before, self.tree, now))
        self._update_quota_timers(before, now)
        priority.recompute_all(self.root)  # offsets and fences may have changed
        self.placement = PlacementManager(config.placement_rules)
        policy = config.node_sort_policy
        weights = dict(policy.resource_weights) or None
        if (policy.type, weights) != (self.node_index.policy, self.node_index.weights):
            self.node_index.set_policy(policy.type, weights)
        self.root.max = self._cluster_room()

    # Nodes ------------------------------------------------------------------------------------
    def add_node(
        self, node_id: str, capacity: Resource, attributes: dict[str, str], schedulable: bool
    ) -> Node:
        if node_id in self.nodes:
            raise Rejection(f"node {node_id} is already registered in partition {self.display_name}")
        node = Node(node_id, capacity, attributes, schedulable)
        node.traits = _traits(node_id, attributes)
        self.nodes[node_id] = node
        self.node_index.add(node)
        self._set_total_capacity(self.total_capacity + capacity)
        return node

    def node(self, node_id: str) -> Node:
        node = self.nodes.get(node_id)
        if node is None:
            raise Rejection(f"node {node_id} is not registered in partition {self.display_name}")
        return node

    def update_node(self, node_id: str, capacity: Resource | None, attributes: dict[str, str] | None) -> Node:
        node = self.node(node_id)
        if attributes:
            node.traits = _traits(node_id, attributes)
            node.attributes = dict(attributes)
        if capacity is not None:
            self._set_total_capacity(self.total_capacity - node.capacity + capacity)
            node.set_capacity(capacity)
            self.node_index.update(node)
        return node

    def remove_node(self, node_id: str) -> list[Allocation]:
        """Remove a node; returns the allocations that ran there, now released."""
        node = self.node(node_id)
        for ref in list(node.reservations):
            self.unreserve(ref)
        released = []
        for alloc in list(node.allocations.values()):
            if alloc.foreign:
                self.foreign.pop(alloc.key, None)
                node.remove_allocation(alloc.key)
                self._set_occupied(self.occupied_total - alloc.resource)
                continue
            self._unallocate(alloc)
            released.append(alloc)
        del self.nodes[node_id]
        self.node_index.remove(node_id)
        self._set_total_capacity(self.total_capacity - node.capacity)
        return released

    def _set_total_capacity(self, capacity: Resource) -> None:
        self.total_capacity = capacity
        self.root.max = self._cluster_room()

    def _set_occupied(self, occupied: Resource) -> None:
        self.occupied_total = occupied
        self.root.max = self._cluster_room()

    def _cluster_room(self) -> Resource:
        """Root's max: what the nodes hold, less what other schedulers' pods occupy there; nothing
        can be allocated beyond it, and a headroom that counted foreign room would mislead
        reservations and preemption into thinking the cluster has room it does not."""
        return self.total_capacity - self.occupied_total

    # Applications -----------------------------------------------------------------------------
    def add_application(
        self,
        app_id: str,
        queue_name: str,
        user: str,
        groups: tuple[str, ...],
        tags: dict[str, str],
        now: float,
    ) -> Application:
        if not app_id:
            raise Rejection("application ID is empty")
        if app_id in self.applications:
            raise Rejection(f"application {app_id} already exists in partition {self.display_name}")
        if self.draining:
            raise Rejection(
                f"partition {self.display_name} was removed from the configuration; no new applications"
            )
        request = PlacementRequest(app_id, queue_name, user, groups, tags)
        try:
            placement = self.placement.place(request, self.tree)
        except PlacementRefused as exc:
            raise Rejection(str(exc)) from None
        queue = self.tree.find(placement.queue_name)
        if queue is None and placement.create:
            existing = set(self.tree.queues)
            queue = self.tree.create(placement.queue_name)
            for created in [q for key, q in self.tree.queues.items() if key not in existing]:  # parents too
                self.events.append(
                    Event(self.rm_id, "QUEUE", created.full_name, "ADD", "QUEUE_DYNAMIC",
                          f"queue created by placement for {app_id}", now)
                )  # fmt: skip
        assert queue is not None and queue.is_leaf
        app = Application(app_id, self.name, queue, user=user, groups=groups, tags=tags, now=now)
        self.applications[app_id] = app
        queue.applications[app_id] = app
        self.events.append(
            Event(self.rm_id, "APP", app_id, "ADD", "APP_NEW", f"application added to {queue.full_name}",
                  now, reference_id=queue.full_name)
        )  # fmt: skip
        return app

    def record_rejection(self, rejected: RejectedApplication) -> None:
        """Keep why an application was refused (the newest REJECTED_KEPT) and record APP_REJECT."""
        self.rejected.pop(rejected.app_id, None)
        self.rejected[rejected.app_id] = rejected
        while len(self.rejected) > REJECTED_KEPT:
            del self.rejected[next(iter(self.rejected))]
        self.events.append(
            Event(self.rm_id, "APP", rejected.app_id, "SET", "APP_REJECT",
                  f"New -> Rejected: {rejected.message}", rejected.time, reference_id=rejected.queue_name)
        )  # fmt: skip

    def application(self, app_id: str) -> Application:
        app = self.applications.get(app_id)
        if app is None:
            raise Rejection(
                f"application {app_id} is not known in partition {self.display_name}; add it first"
            )
        return app

    def remove_application(self, app_id: str, now: float) -> list[Allocation]:
        """The RM removes an application: its asks go, its allocations are released, it completes."""
        app = self.application(app_id)
        for key in list(app.asks):
            self._remove_ask(app, key)
        released = list(app.allocations.values())
        for alloc in released:
            self._unallocate(alloc)
        # The application is gone for good: take it through Completing to Completed at once.
        self._transition(app, AppEvent.COMPLETE, now, "removed by the resource manager")
        self._transition(app, AppEvent.COMPLETE, now, "removed by the resource manager")
        self._forget(app)
        return released

    def _forget(self, app: Application) -> None:
        priority.remove_application(app)
        self.applications.pop(app.app_id, None)
        app.queue.applications.pop(app.app_id, None)
        for name in self.tree.remove_empty():
            self.events.append(
                Event(self.rm_id, "QUEUE", name, "REMOVE", "QUEUE_DYNAMIC",
                      "queue removed: empty, and dynamic or no longer in the configuration", app.state_time)
            )  # fmt: skip

    def _transition(self, app: Application, event: AppEvent, now: float, message: str = "") -> None:
        if not app.can_handle(event):
            return
        before = app.state
        after = app.handle(event, now)
        if after is None:
            return
        # maxapplications counts running applications, on the leaf and every ancestor.
        if after == AppState.RUNNING and before != AppState.RUNNING:
            app.queue.count_running(+1)
        elif before == AppState.RUNNING:
            app.queue.count_running(-1)
        self.app_changes.append(AppStateChange(app.app_id, after, now, message or event.value))
        detail = "APP_REJECT" if after == AppState.REJECTED else f"APP_{after.value.upper()}"
        self.events.append(
            Event(self.rm_id, "APP", app.app_id, "SET", detail if detail in _APP_DETAILS else "DETAILS_NONE",
                  f"{before.value} -> {after.value}" + (f": {message}" if message else ""), now,
                  reference_id=app.queue.full_name)
        )  # fmt: skip

    def complete_if_idle(self, app: Application, now: float) -> None:
        if app.is_idle():
            self._transition(app, AppEvent.COMPLETE, now, "all allocations and asks are gone")

    def tick(self, now: float) -> None:
        """Time-driven state: quota timers; application states Completing -> Completed -> Expired."""
        self._fire_quota_timers(now)
        for app in list(self.applications.values()):
            if app.state == AppState.COMPLETING and now - app.state_time >= self.completing_timeout:
                self._transition(app, AppEvent.COMPLETE, now, "completing timeout")
                self._forget(app)
                self.completed.append(app)
        for app in [a for a in self.completed if now - a.state_time >= self.terminated_timeout]:
            self._transition(app, AppEvent.EXPIRE, now, "terminated timeout")
            self.completed.remove(app)

    # Asks and allocations ---------------------------------------------------------------------
    def add_ask(self, ask: Allocation, now: float) -> None:
        app = self.application(ask.application_id)
        if app.state in _TERMINAL:
            raise Rejection(f"application {app.app_id} is {app.state.value} and takes no new asks")
        if app.knows_key(ask.key):
            raise Rejection(f"allocation key {ask.key} already exists in application {app.app_id}")
        ask.constraints = _constraints(ask)
        ask.create_time = ask.create_time or now
        app.add_ask(ask)
        app.queue.add_pending(ask.resource)
        priority.update_application(app)
        # An ask starts a New application (-> Accepted) or revives a Completing one (-> Running);
        # an Accepted application becomes Running only with its first allocation.
        if app.state in (AppState.NEW, AppState.COMPLETING):
            self._transition(app, AppEvent.RUN, now)

    def add_foreign(self, alloc: Allocation) -> None:
        if alloc.key in self.foreign:
            raise Rejection(f"foreign allocation {alloc.key} already exists on node {alloc.node_id}")
        node = self.node(alloc.node_id)
        self.foreign[alloc.key] = alloc
        node.add_allocation(alloc)
        self.node_index.update(node)
        self._set_occupied(self.occupied_total + alloc.resource)

    def add_existing(self, alloc: Allocation, now: float) -> None:
        """An allocation the RM already runs (recovery): it must fit the node and the queue limits."""
        app = self.application(alloc.application_id)
        if app.knows_key(alloc.key):
            raise Rejection(f"allocation key {alloc.key} already exists in application {app.app_id}")
        node = self.node(alloc.node_id)
        if not node.fits(alloc.resource):
            raise Rejection(
                f"allocation {alloc.key} needs {alloc.resource.as_dict()} but node {node.node_id} has only "
                f"{node.available.as_dict()} free"
            )
        alloc.constraints = _constraints(alloc)
        alloc.create_time = alloc.create_time or now
        alloc.allocated_time = alloc.allocated_time or now
        self._place(app, alloc, node)
        # A running allocation takes a new application straight through Accepted to Running.
        self._transition(app, AppEvent.RUN, now)
        self._transition(app, AppEvent.RUN, now)

    def allocate(self, ask: Allocation, node: Node, now: float) -> None:
        """Turn a pending ask into an allocation on `node` (the scheduler checked that it fits)."""
        app = self.applications[ask.application_id]
        self._remove_ask(app, ask.key)
        ask.allocated_time = now
        self._place(app, ask, node)
        self.events.append(
            Event(self.rm_id, "REQUEST", ask.key, "ADD", "REQUEST_ALLOC",
                  f"allocated on node {node.node_id}", now, reference_id=app.app_id,
                  resource=ask.resource.as_dict())
        )  # fmt: skip
        self._transition(app, AppEvent.RUN, now)

    def _place(self, app: Application, alloc: Allocation, node: Node) -> None:
        alloc.node_id = node.node_id
        node.add_allocation(alloc)
        self.node_index.update(node)
        app.add_allocation(alloc)
        app.queue.add_allocated(alloc.resource)

    def _remove_ask(self, app: Application, key: str) -> Allocation | None:
        ask = app.remove_ask(key)
        if ask is not None:
            app.queue.remove_pending(ask.resource)
            self.unreserve(ask.ref)
            priority.update_application(app)
        return ask

    def _unallocate(self, alloc: Allocation) -> None:
        app = self.applications[alloc.application_id]
        app.remove_allocation(alloc.key)
        app.queue.remove_allocated(alloc.resource)
        if alloc.releasing:
            app.queue.remove_preempting(alloc.resource)
            self._victim_gone(alloc.ref)
        node = self.nodes.get(alloc.node_id)
        if node is not None:
            node.remove_allocation(alloc.key)
            self.node_index.update(node)

    def release(self, app_id: str, key: str, now: float) -> list[Allocation]:
        """RM-initiated release of one allocation or ask (or all of an app's when key is empty).

        Returns the released allocations; removed asks are not returned, as the RM never ran them.
        """
        if not app_id and key in self.foreign:
            alloc = self.foreign.pop(key)
            node = self.nodes.get(alloc.node_id)
            if node is not None:
                node.remove_allocation(key)
                self.node_index.update(node)
            self._set_occupied(self.occupied_total - alloc.resource)
            return []
        app = self.application(app_id)
        released: list[Allocation] = []
        if not key:
            for ask_key in list(app.asks):
                self._remove_ask(app, ask_key)
            released = list(app.allocations.values())
        elif key in app.allocations:
            released = [app.allocations[key]]
        elif key in app.asks:
            self._remove_ask(app, key)
        else:
            raise Rejection(f"application {app_id} has no ask or allocation with key {key}")
        for alloc in released:
            self._unallocate(alloc)
        self.complete_if_idle(app, now)
        return released

    # Quota enforcement ------------------------------------------------------------------------
    def _update_quota_timers(self, before: dict[str, queue_events.QueueShape], now: float) -> None:
        """Start, restart or cancel each queue's quota timer after a configuration was applied.

        A lowered max or a changed delay (re)starts the timer from zero; a raise that brings the max
        back above usage cancels it; a queue whose quota preemption is running is left alone.
        """
        for queue in self.tree:
            if queue.quota_running:
                continue  # a change landing during a run is skipped, not stacked
            shape = before.get(queue.full_name)
            old_max, old_delay = (shape.max, shape.quota_delay) if shape is not None else (None, 0.0)
            delay = queue.props.quota_preemption_delay
            if delay <= 0 or queue.max is None or queue.is_root:
                queue.quota_timer = None
            elif _lowered(old_max, queue.max) or delay != old_delay:
                queue.quota_timer = now
            elif (
                queue.quota_timer is not None
                and quota.preemptable(quota.usage_of(queue), queue.max).is_zero()
            ):
                queue.quota_timer = None

    def _fire_quota_timers(self, now: float) -> None:
        due = [
            q for q in self.tree
            if q.quota_timer is not None and now - q.quota_timer >= q.props.quota_preemption_delay
        ]  # fmt: skip
        # In order of firing; at the same moment a leaf goes before its parent (deeper first).
        due.sort(key=lambda q: (q.quota_timer + q.props.quota_preemption_delay, -q.full_name.count(".")))  # type: ignore[operator]
        for queue in due:
            queue.quota_timer = None
            if self.config.preemption.quota_preemption_enabled and not queue.quota_running:
                self.enforce_quota(queue, now)

    def enforce_quota(self, queue: Queue, now: float) -> None:
        target = quota.preemptable(quota.usage_of(queue), queue.max)
        if target.is_zero():
            queue.quota_outcome = {
                "time": now, "target": {}, "achieved": {}, "victims": 0, "complete": True, "reason": "",
            }  # fmt: skip
            return
        plans = quota.plan(queue, target, busy=lambda q: bool(q.quota_running))
        achieved = Resource()
        for leaf_plan in plans:
            for victim in leaf_plan.victims:
                achieved.add_in_place(victim.resource)
                self._mark_victim(victim, f"preempted to enforce the max of {queue.full_name}", now, "quota")
                self.quota_victims[victim.ref] = queue.full_name
                queue.quota_running.add(victim.ref)
        achieved = Resource({k: min(achieved.get(k), v) for k, v in target.items()})
        reasons = sorted({p.reason for p in plans if p.reason})
        complete = all(achieved.get(k) >= v for k, v in target.items())
        queue.quota_outcome = {
            "time": now, "target": target.as_dict(), "achieved": achieved.as_dict(),
            "victims": len(queue.quota_running), "complete": complete, "reason": "; ".join(reasons),
        }  # fmt: skip
        summary = (
            f"quota preemption of {queue.full_name}: target {target.as_dict()}, "
            f"took {achieved.as_dict()} with {len(queue.quota_running)} allocation(s)"
        )
        if not complete:
            summary += f"; short of the target because {queue.quota_outcome['reason']}"
        self.events.append(
            Event(self.rm_id, "QUEUE", queue.full_name, "SET", "QUEUE_PREEMPTION", summary, now,
                  resource=achieved.as_dict())
        )  # fmt: skip
        log_event = self.log.info if complete else self.log.warning
        log_event(
            "quota preemption" if complete else "quota preemption fell short",
            queue=queue.full_name, target=target.as_dict(), achieved=achieved.as_dict(),
            victims=len(queue.quota_running), reason="; ".join(reasons),
        )  # fmt: skip

    # Preemption -------------------------------------------------------------------------------
    def preempt(self, ask: Allocation, victims: list[Allocation], now: float, kind: str) -> None:
        """Mark victims for release on the ask's behalf; they stay counted until the RM confirms.

        `kind` (required_node, inter_queue) is what the preemption metrics count victims by.
        """
        for victim in victims:
            self._mark_victim(victim, f"preempted to make room for {ask.application_id}/{ask.key}", now, kind)
            self.preempted_for[victim.ref] = ask.ref
        ask.preempting = True
        self.victims_of[ask.ref] = {v.ref for v in victims}
        self.log.info(
            "preempting", applicationID=ask.application_id, allocationKey=ask.key,
            victims=[f"{v.application_id}/{v.key}" for v in victims],
        )  # fmt: skip

    def _mark_victim(self, victim: Allocation, message: str, now: float, kind: str) -> None:
        victim.releasing = True
        self.preemptions[kind] = self.preemptions.get(kind, 0) + 1
        self.events.append(
            Event(self.rm_id, "APP", victim.application_id, "REMOVE", "ALLOC_PREEMPT", message, now,
                  reference_id=victim.key, resource=victim.resource.as_dict())
        )  # fmt: skip
        self.applications[victim.application_id].queue.add_preempting(victim.resource)
        self.preempted.append((victim, message))

    def _victim_gone(self, victim: tuple[str, str]) -> None:
        enforced = self.quota_victims.pop(victim, None)
        if enforced is not None:
            queue = self.tree.find(enforced)
            if queue is not None:
                queue.quota_running.discard(victim)
        ask_ref = self.preempted_for.pop(victim, None)
        if ask_ref is None:
            return
        waiting = self.victims_of.get(ask_ref)
        if waiting is None:
            return
        waiting.discard(victim)
        if not waiting:
            del self.victims_of[ask_ref]
            app = self.applications.get(ask_ref[0])
            ask = app.asks.get(ask_ref[1]) if app is not None else None
            if ask is not None:
                ask.preempting = False  # all its victims are gone; its reservation takes the room

    def drain_preempted(self) -> list[tuple[Allocation, str]]:
        preempted, self.preempted = self.preempted, []
        return preempted

    # Reservations -----------------------------------------------------------------------------
    def reserve(self, ask: Allocation, node: Node) -> None:
        self.reservations[ask.ref] = node.node_id
        node.reservations.add(ask.ref)
        self.log.debug(
            "node reserved", applicationID=ask.application_id, allocationKey=ask.key, nodeID=node.node_id
        )

    def unreserve(self, ref: tuple[str, str]) -> None:
        node_id = self.reservations.pop(ref, None)
        if node_id is None:
            return
        node = self.nodes.get(node_id)
        if node is not None:
            node.reservations.discard(ref)

    def is_reserved(self, ask: Allocation) -> bool:
        return ask.ref in self.reservations

    # Views ------------------------------------------------------------------------------------
    @property
    def display_name(self) -> str:
        """The name the RM uses (without the rmID prefix)."""
        prefix = f"[{self.rm_id}]"
        return self.name[len(prefix) :] if self.name.startswith(prefix) else self.name

    def has_pending(self) -> bool:
        return self.root.has_pending()

    def drain_app_changes(self) -> list[AppStateChange]:
        changes, self.app_changes = self.app_changes, []
        return changes


def _constraints(alloc: Allocation) -> AskConstraints:
    try:
        return parse_ask_constraints(alloc.tags, TAG_REQUIRED_NODE)
    except ConstraintError as exc:
        raise Rejection(f"allocation {alloc.key}: {exc}") from None


def _traits(node_id: str, attributes: dict[str, str]) -> NodeTraits:
    try:
        return parse_node_traits(attributes)
    except ConstraintError as exc:
        raise Rejection(f"node {node_id}: {exc}") from None
