"""A partition: one RM's queue tree, nodes, applications, allocations and reservations.

Every method either changes state consistently or raises Rejection with a reason for the RM, leaving
state as it was. Usage is kept in four places (node, application, queue path, user and group) and
always moved together here, which is what the invariant tests check.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from core.config.schema import PartitionConfig
from core.config.validation import RECOVERY_QUEUE
from core.constraints.ask import ConstraintError, parse_ask_constraints
from core.events import ChangeDetail, ChangeType, RawEvent
from core.objects import change_events, priority, queue_events
from core.objects.allocation import Allocation
from core.objects.app_counts import AppCounts
from core.objects.app_lifecycle import TERMINAL, AppLifecycle
from core.objects.app_usage import UsageTotals, instance_type
from core.objects.application import AppEvent, Application, AppState
from core.objects.change_events import allocation_ended, allocation_placed
from core.objects.largest_node import LargestNode
from core.objects.node import Node
from core.objects.parking import ParkingLot
from core.objects.partition_key import PartitionKey
from core.objects.queue import Queue
from core.objects.queue_tree import QueueTree
from core.objects.rejected_apps import RejectedApplications
from core.objects.reservations import Reservations
from core.placement.manager import PlacementManager
from core.policies.node_sort import NodeIndex
from core.resources import ZERO, Resource
from core.scheduler.fit.pod_rules import PodRules
from core.scheduler.partition import applications, pod_groups
from core.scheduler.partition.gangs import PartitionGangs
from core.scheduler.partition.preemption_ledger import PreemptionKind, PreemptionLedger
from core.scheduler.partition.quota_enforcer import QuotaEnforcer
from core.scheduler.partition.victims import PartitionVictims
from core.scheduler.rejection import Rejection, ask_constraints, node_traits
from core.scheduler.results import SchedulingState
from core.ugm.limit_events import limit_events
from core.ugm.limits import limit_table
from core.ugm.tracker import UserGroupTracker
from si.v1.tags import TAG_POD_GROUP, TAG_POD_GROUP_MIN_COUNT, TAG_REQUIRED_NODE

log = structlog.get_logger("pykorn.partition")


class Partition:
    def __init__(
        self,
        key: PartitionKey,
        config: PartitionConfig,
        now: float = 0.0,
        clock: Callable[[], float] | None = None,
        app_counts: AppCounts | None = None,  # the cluster's (core.objects.app_counts)
    ) -> None:
        self.key = key
        self.rm_id = rm_id = key.rm_id
        self.name = key.name  # as the RM names it
        self.config = config
        self.log = log.bind(rmID=rm_id, partition=self.name)
        self.clock = clock if clock is not None else (lambda: now)  # the time of events without one
        self.events: list[RawEvent] = []  # drained by the cluster into its event log
        self.tree = QueueTree(config.root, warn=self._warn_queue)
        self.placement = PlacementManager(config.placement_rules)
        policy = config.node_sort_policy
        self.node_index = NodeIndex(policy.type, dict(policy.resource_weights) or None)
        self.nodes: dict[str, Node] = {}
        self.applications: dict[str, Application] = {}
        self.rejected = RejectedApplications()
        self.foreign: dict[str, Allocation] = {}
        self.parking = ParkingLot()  # asks no cycle could place, until what held them may have changed
        self.unfinished = False  # its last cycle ran out of time with asks left to try
        self.stale = True  # something changed since its last cycle ran out of work: it needs a cycle
        self.open_cycle: object | None = None  # the cycle that ran out of time, to go on with (scheduling)
        self.reservations = Reservations(
            self.nodes, self.log, self.parking.unreserved, self._reservation_changed
        )
        self.usage_totals = UsageTotals()  # what ended allocations used, by queue and user (app_usage)
        self.preemption = PreemptionLedger()  # victims chosen, until the RM confirms each release
        self.pod_rules = PodRules(self.nodes)  # inter-pod affinity and anti-affinity, kept incrementally
        self.user_groups = UserGroupTracker(limit_table(config.root))  # usage and limits per user, group
        self.total_capacity: Resource = ZERO
        self._announced_capacity: Resource = ZERO  # as root's last QUEUE_MAX event said
        self.largest_node = LargestNode(self.nodes)
        self.occupied_total: Resource = ZERO  # held on the nodes by pods of other schedulers
        self.draining = False  # removed from the configuration: no new applications
        self.state_time = now  # when it became Active, or Draining
        self.gangs = PartitionGangs(self)  # task groups, placeholders and their timers
        self.victims = PartitionVictims(self)  # preemption's victims, until their RM confirms
        self.room_changed()
        self.scheduling_states: list[SchedulingState] = []  # asks' ways of waiting, for the RM
        self.lifecycle = AppLifecycle(rm_id, self.events.append, app_counts)
        self.quota = QuotaEnforcer(
            rm_id, self.tree, self.preemption, self.victims.mark, self.events.append, self.log
        )
        # A restart loads the configuration afresh: every quota timer starts from now.
        self.quota.update_timers({}, now)
        self.events.extend(change_events.queue_added(rm_id, q.full_name, now) for q in self.tree)
        self.events.extend(limit_events(rm_id, {}, self.user_groups.table, self.applications.values(), now))

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

    def apply_config(
        self, config: PartitionConfig, now: float = 0.0, rules: PlacementManager | None = None
    ) -> None:
        """Hot reload (`rules` built beforehand): limits and properties hold from the next cycle."""
        placement = rules or PlacementManager(config.placement_rules)
        if self.draining:
            self.state_time = now  # back in the configuration: Active again
        before = queue_events.snapshot(self.tree)
        self.config = config
        self.draining = False
        self.tree.reconcile(config.root)
        table = limit_table(config.root)
        self.events.extend(
            limit_events(self.rm_id, self.user_groups.table, table, self.applications.values(), now)
        )
        self.user_groups.reconfigure(table, self.applications.values())
        self.events.extend(queue_events.reload_events(self.rm_id, before, self.tree, now))
        self.usage_totals.forget_queues({q.full_name for q in self.tree})
        self.quota.update_timers(before, now)
        priority.recompute_all(self.root)  # offsets and fences may have changed
        self.placement = placement
        policy = config.node_sort_policy
        weights = dict(policy.resource_weights) or None
        if (policy.type, weights) != (self.node_index.policy, self.node_index.weights):
            self.node_index.set_policy(policy.type, weights)
        self.room_changed()
        self.parking.everything()  # maxes, limits, properties: any parked ask may run now

    # Nodes ------------------------------------------------------------------------------------
    def add_node(
        self, node_id: str, capacity: Resource, attributes: dict[str, str], schedulable: bool
    ) -> Node:
        if node_id in self.nodes:
            raise Rejection(f"node {node_id} is already registered in partition {self.name}")
        node = Node(node_id, capacity, attributes, schedulable)
        node.traits = node_traits(node_id, attributes)
        node.watcher = self.pod_rules
        node.room_watcher = self.parking
        self.nodes[node_id] = node
        self.pod_rules.node_added(node)
        self.node_index.add(node)
        self.total_capacity = self.total_capacity + capacity
        self.room_changed()
        self.parking.everything()
        self.largest_node.added(capacity)
        return node

    def node(self, node_id: str) -> Node:
        node = self.nodes.get(node_id)
        if node is None:
            raise Rejection(f"node {node_id} is not registered in partition {self.name}")
        return node

    def update_node(self, node_id: str, capacity: Resource | None, attributes: dict[str, str] | None) -> Node:
        node = self.node(node_id)
        self.parking.everything()  # its labels, taints or size may take a parked ask now
        if attributes:
            traits = node_traits(node_id, attributes)
            relabelled = traits != node.traits  # labels or taints: which nodes the pod rules count
            node.traits = traits
            node.attributes = dict(attributes)
            if relabelled:
                self.pod_rules.relabelled()  # its pods' topology domains moved
        if capacity is not None:
            self.largest_node.changed()
            self.total_capacity = self.total_capacity - node.capacity + capacity
            self.room_changed()
            node.set_capacity(capacity)
            self.node_index.update(node)
        return node

    def room_changed(self) -> None:
        """Root's max is what the nodes hold less what other schedulers' pods occupy there: nothing can
        be allocated beyond it, and a headroom that counted foreign room would mislead reservations
        and preemption into chasing room that is not ours."""
        room = self.total_capacity - self.occupied_total
        if self.total_capacity != self._announced_capacity:
            # YuniKorn's root max is what the nodes hold: its QUEUE_MAX follows the nodes only (not
            # other schedulers' pods), with no max once no node is left.
            self._announced_capacity = self.total_capacity
            self.events.append(change_events.root_max(self.rm_id, self.total_capacity, self.clock()))
        self.root.max = room

    def tick(self, now: float) -> None:
        """Time-driven state: quota timers; placeholder timers; application states Completing ->
        Completed -> Expired."""
        self.quota.fire_due(now, self.config.preemption.quota_preemption_enabled)
        if self.gangs.apps:
            self.gangs.tick(now)
        for app in self.lifecycle.completing_over(self.applications, now):
            applications.retire(self, app)
        self.lifecycle.expire(now)
        for gone in self.rejected.expire(now - self.lifecycle.terminated_timeout):
            self.events.append(change_events.rejection_expired(self.rm_id, gone.app_id, now))

    # Asks and allocations ---------------------------------------------------------------------
    def add_ask(self, ask: Allocation, now: float) -> None:
        app = applications.application(self, ask.application_id)
        if app.state in TERMINAL or app.state == AppState.FAILING:
            raise Rejection(f"application {app.app_id} is {app.state.value} and takes no new asks")
        if app.queue.full_name == RECOVERY_QUEUE:
            raise Rejection(
                f"application {app.app_id} is in {RECOVERY_QUEUE}: it was recovered running and no "
                "placement rule places it now; it keeps what runs and takes no new asks"
            )
        if app.knows_key(ask.key):
            raise Rejection(f"allocation key {ask.key} already exists in application {app.app_id}")
        ask.constraints = ask_constraints(ask)
        ask.create_time = ask.create_time or now
        if TAG_POD_GROUP in ask.tags or TAG_POD_GROUP_MIN_COUNT in ask.tags:
            pod_groups.join(self, app, ask)  # before anything is counted: it may refuse the ask
        if ask.task_group:
            self.gangs.ask_added(app, ask)
        app.add_ask(ask)
        app.queue.add_pending(ask.resource)
        priority.update_application(app)
        self.events.append(change_events.ask_added(self.rm_id, ask, now))
        # An ask starts a New application (-> Accepted) or revives a Completing one (-> Running);
        # an Accepted application becomes Running only with its first allocation.
        if app.state in (AppState.NEW, AppState.COMPLETING):
            self.lifecycle.transition(app, AppEvent.RUN, now)

    def add_foreign(self, alloc: Allocation) -> None:
        if alloc.key in self.foreign:
            raise Rejection(f"foreign allocation {alloc.key} already exists on node {alloc.node_id}")
        node = self.node(alloc.node_id)
        if alloc.key in node.allocations:  # one of ours: taken for a stranger, it would replace it there
            raise Rejection(f"allocation key {alloc.key} is already allocated on node {node.node_id}")
        try:  # its host ports count; a malformed tag must not lose the room it occupies
            alloc.constraints = parse_ask_constraints(alloc.tags, TAG_REQUIRED_NODE)
        except ConstraintError as exc:
            self.log.warning(
                "foreign allocation constraints ignored", allocationKey=alloc.key, reason=str(exc)
            )
        self.foreign[alloc.key] = alloc
        node.add_allocation(alloc)
        self.events.append(change_events.node_allocation(self.rm_id, alloc, ChangeType.ADD, self.clock()))
        self.node_index.update(node)
        self.occupied_total = self.occupied_total + alloc.resource
        self.room_changed()

    def add_existing(self, alloc: Allocation, now: float) -> None:
        """An allocation the RM already runs (recovery): it must fit the node and the queue limits."""
        app = applications.application(self, alloc.application_id)
        if app.knows_key(alloc.key):
            raise Rejection(f"allocation key {alloc.key} already exists in application {app.app_id}")
        node = self.node(alloc.node_id)
        if not node.fits(alloc.resource):
            raise Rejection(
                f"allocation {alloc.key} needs {alloc.resource.as_dict()} but node {node.node_id} has only "
                f"{node.available.as_dict()} free"
            )
        alloc.constraints = ask_constraints(alloc)
        alloc.create_time = alloc.create_time or now
        alloc.allocated_time = alloc.allocated_time or now
        if TAG_POD_GROUP in alloc.tags:
            pod_groups.recover(self, app, alloc)
        self.place_on(app, alloc, node, now)
        if alloc.placeholder:  # recovery: a placeholder the RM runs counts as asked and allocated
            gang = self.gangs.gang_of(app)
            gang.placeholder_asked(alloc)
            gang.placeholder_allocated(alloc, now, timer_may_start=True)
        # A running allocation takes a new application straight through Accepted to Running.
        self.lifecycle.transition(app, AppEvent.RUN, now)
        self.lifecycle.transition(app, AppEvent.RUN, now)

    def allocate(self, ask: Allocation, node: Node, now: float) -> None:
        """Turn a pending ask into an allocation on `node` (the scheduler checked that it fits)."""
        app = self.applications[ask.application_id]
        self.remove_ask(app, ask.key, allocated=True)
        ask.allocated_time = now
        self.place_on(app, ask, node, now, counted=True)
        if ask.placeholder:
            # A placeholder does not start the application: the whole gang allocated does.
            gang = self.gangs.gang_of(app)
            if gang.placeholder_allocated(ask, now, timer_may_start=app.state == AppState.ACCEPTED):
                self.lifecycle.transition(app, AppEvent.RUN, now, "all placeholders of the gang allocated")
            return
        self.lifecycle.transition(app, AppEvent.RUN, now)

    def place_on(
        self, app: Application, alloc: Allocation, node: Node, now: float, counted: bool = False
    ) -> None:
        """`counted`: its queues count it as allocated already (remove_ask with `allocated`)."""
        alloc.node_id = node.node_id
        alloc.instance_type = instance_type(node.attributes)
        node.add_allocation(alloc)
        self.node_index.update(node)
        app.add_allocation(alloc)
        if not counted:
            app.queue.add_allocated(alloc.resource)
        app.queue.containers_allocated += 1
        self.user_groups.allocated(app, alloc.resource)
        # As YuniKorn records an allocation: on its node, its user (and group), and its application.
        allocation_placed(self.events, self.rm_id, alloc, app.user, app.queue.full_name, now)
        if self.user_groups.table or app.group_link is not None:  # a group limit may count it
            self._group_usage_added(app, alloc.resource, now)

    def usage_added(self, app: Application, res: Resource, now: float) -> None:
        """UG_USER_RESOURCE (and UG_GROUP_RESOURCE, after the UG_APP_LINK) ADD, as YuniKorn's ugm."""
        if user := app.user:  # YuniKorn tracks no usage without a user
            queue = app.queue.full_name
            self.events.append(change_events.user_usage(self.rm_id, user, queue, res, ChangeType.ADD, now))
        self._group_usage_added(app, res, now)

    def _group_usage_added(self, app: Application, res: Resource, now: float) -> None:
        rm_id, events, queue = self.rm_id, self.events, app.queue.full_name
        group = app.group_link or self.user_groups.group_of(app)
        if group is not None:
            if app.group_link is None:
                app.group_link = group
                events.append(change_events.app_group_link(rm_id, group, app.app_id, True, now))
            events.append(change_events.group_usage(rm_id, group, queue, res, ChangeType.ADD, now))

    def usage_removed(self, app: Application, res: Resource, now: float, user: bool = True) -> None:
        """The same REMOVE (for the group its ADD named; the user's too unless `user` is False); the group
        let go once the application holds and asks for nothing (YuniKorn's removeApp)."""
        rm_id, events, queue, group = self.rm_id, self.events, app.queue.full_name, app.group_link
        if app.user and user:
            events.append(change_events.user_usage(rm_id, app.user, queue, res, ChangeType.REMOVE, now))
        if group is not None:
            events.append(change_events.group_usage(rm_id, group, queue, res, ChangeType.REMOVE, now))
        if app.group_link is not None and not (app.allocations or app.asks or app.replacing):
            self.unlink_group(app, now)

    def unlink_group(self, app: Application, now: float) -> None:
        if (group := app.group_link) is not None:
            self.events.append(change_events.app_group_link(self.rm_id, group, app.app_id, False, now))
            app.group_link = None

    def cancel_ask(self, app: Application, key: str, now: float, timeout: bool = False) -> Allocation | None:
        """Remove a pending ask on its RM's word (REQUEST_CANCEL) or its gang's timeout (REQUEST_TIMEOUT)."""
        ask = self.remove_ask(app, key)
        if ask is not None:
            detail = ChangeDetail.REQUEST_TIMEOUT if timeout else ChangeDetail.REQUEST_CANCEL
            self.events.append(change_events.ask_removed(self.rm_id, ask, detail, now))
        return ask

    def remove_ask(self, app: Application, key: str, allocated: bool = False) -> Allocation | None:
        """`allocated`: it leaves pending to be placed at once (place_on with `counted`), and its queues
        count it as allocated from here."""
        ask = app.remove_ask(key)
        if ask is not None:
            self.parking.discard(ask)
            if ask.task_group and not ask.placeholder and app.gang is not None:
                app.gang.pending_real -= 1
            if allocated:
                app.queue.pending_allocated(ask.resource)
            else:
                app.queue.remove_pending(ask.resource)
                if ask.pod_group:
                    app.forget_pod_group(ask.pod_group)
            self.reservations.release(ask.ref)
            if ask.held:
                self.drop_hold(ask)
            priority.update_application(app)
        return ask

    def unallocate(
        self,
        alloc: Allocation,
        now: float,
        detail: ChangeDetail,
        replaced: bool = False,
        confirmed: bool = False,
        on_node: bool = True,
        message: str = "",
        by_user: bool = True,
    ) -> None:
        """Take an allocation back from everything that counts it. `detail` is how it ended, as its
        application's event says (ALLOC_CANCEL, ALLOC_PREEMPT, ...); `on_node` False when its node
        goes with it; `by_user` False when the caller records the user's usage for several at once."""
        app = self.applications[alloc.application_id]
        if (alloc.releasing or alloc.released_by_core) and not (confirmed or replaced):
            self.victims.remember_unconfirmed(alloc.ref)
        kind, used = app.track_usage(alloc, now)
        self.usage_totals.add(app.queue.full_name, app.user, kind, used)
        app.remove_allocation(alloc.key)
        app.queue.remove_allocated(alloc.resource)
        app.queue.containers_released += 1
        self.user_groups.released(app, alloc.resource)
        if alloc.releasing:
            app.queue.remove_preempting(alloc.resource)
            self.victims.gone(alloc.ref)
        node = self.nodes.get(alloc.node_id)
        if node is not None:
            node.remove_allocation(alloc.key)
            self.node_index.update(node)
        user, queue = (app.user if by_user else ""), app.queue.full_name
        allocation_ended(self.events, self.rm_id, alloc, detail, now, message, on_node, user, queue)
        if by_user and app.group_link is not None:
            self.usage_removed(app, alloc.resource, now, user=False)
        if alloc.placeholder:
            if alloc.replaced_by is not None:  # gone another way while its real task waited for it
                self.gangs.cancel_replacement(app, alloc.replaced_by, back_to_pending=True)
            self.gangs.placeholder_gone(app, alloc, replaced, now)

    # Preemption: the victims' bookkeeping is PartitionVictims'; these two are what preemption calls.
    def preempt(self, ask: Allocation, victims: list[Allocation], now: float, kind: PreemptionKind) -> None:
        """Mark victims for release on the ask's behalf; they stay counted until the RM confirms."""
        self.victims.preempt(ask, victims, now, kind)

    def drop_hold(self, ask: Allocation) -> None:
        """Give back the headroom held for the ask (it was placed, went, or looks for victims again)."""
        self.victims.drop_hold(ask)

    def _reservation_changed(self, ask: Allocation, node_id: str, reserved: bool) -> None:
        change = ChangeType.ADD if reserved else ChangeType.REMOVE
        self.events.append(change_events.node_reservation(self.rm_id, node_id, ask, change, self.clock()))
