"""A partition: one RM's queue tree, nodes, applications and allocations.

Every method either changes state consistently or raises Rejection with a reason meant for the RM's
operator, leaving state as it was. Usage is kept in three places (node, application, queue path) and
always moved together here, which is what the invariant tests check.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.config.schema import PartitionConfig, QueueConfig
from core.objects.allocation import Allocation
from core.objects.application import AppEvent, Application, AppState
from core.objects.node import Node
from core.objects.queue import Queue, QueueState
from core.resources import ZERO, Resource


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
    def __init__(self, name: str, rm_id: str, config: PartitionConfig) -> None:
        self.name = name  # internal: "[rmID]name"
        self.rm_id = rm_id
        self.config = config
        self.queues: dict[str, Queue] = {}
        self.root = self._build_queue(config.root, None)
        self.nodes: dict[str, Node] = {}
        self.applications: dict[str, Application] = {}
        self.foreign: dict[str, Allocation] = {}
        self.total_capacity: Resource = ZERO
        self.app_changes: list[AppStateChange] = []
        self.root.max = self.total_capacity

    # Queues -----------------------------------------------------------------------------------
    def _build_queue(self, cfg: QueueConfig, parent: Queue | None) -> Queue:
        queue = Queue(
            cfg.name,
            parent=parent,
            is_leaf=not cfg.is_parent,
            guaranteed=cfg.guaranteed,
            max_resource=cfg.max,
            max_applications=cfg.max_applications,
            properties=cfg.property_map(),
        )
        self.queues[queue.full_name.lower()] = queue
        for child in cfg.queues:
            self._build_queue(child, queue)
        return queue

    def apply_config(self, config: PartitionConfig) -> None:
        """Hot reload: update managed queues in place, add new ones, drain removed ones.

        Usage stays where it is; changed limits hold from the next cycle. A removed queue keeps its
        applications running but takes no new ones, and goes once it is empty.
        """
        self.config = config
        seen: set[str] = set()
        self._reconcile_queue(config.root, None, seen)
        for full_name, queue in list(self.queues.items()):
            if full_name not in seen and queue.managed:
                queue.state = QueueState.DRAINING
        self.remove_empty_draining_queues()
        self.root.max = self.total_capacity

    def _reconcile_queue(self, cfg: QueueConfig, parent: Queue | None, seen: set[str]) -> None:
        full_name = f"{parent.full_name}.{cfg.name}" if parent else cfg.name
        queue = self.queues.get(full_name.lower())
        if queue is None:
            queue = self._build_queue(cfg, parent)
            seen.update(q.full_name.lower() for q in self._subtree(queue))
            return
        seen.add(full_name.lower())
        queue.guaranteed = cfg.guaranteed
        queue.max = cfg.max
        queue.max_applications = cfg.max_applications
        queue.properties = cfg.property_map()
        queue.state = QueueState.ACTIVE
        if not queue.applications:
            queue.is_leaf = not cfg.is_parent
        for child in cfg.queues:
            self._reconcile_queue(child, queue, seen)

    def _subtree(self, queue: Queue) -> list[Queue]:
        out = [queue]
        for child in queue.children.values():
            out.extend(self._subtree(child))
        return out

    def remove_empty_draining_queues(self) -> None:
        # Deepest first, so a draining parent goes once its draining children have gone.
        for queue in sorted(self.queues.values(), key=lambda q: -q.full_name.count(".")):
            if queue.state == QueueState.DRAINING and not queue.applications and not queue.children:
                if queue.parent is not None:
                    queue.parent.children.pop(queue.name, None)
                del self.queues[queue.full_name.lower()]

    def find_queue(self, name: str) -> Queue | None:
        qualified = name if name.lower().startswith("root.") or name.lower() == "root" else f"root.{name}"
        return self.queues.get(qualified.lower())

    def leaf_queues(self) -> list[Queue]:
        return [q for q in self.queues.values() if q.is_leaf]

    # Nodes ------------------------------------------------------------------------------------
    def add_node(
        self, node_id: str, capacity: Resource, attributes: dict[str, str], schedulable: bool
    ) -> Node:
        if node_id in self.nodes:
            raise Rejection(f"node {node_id} is already registered in partition {self.display_name}")
        node = Node(node_id, capacity, attributes, schedulable)
        self.nodes[node_id] = node
        self._set_total_capacity(self.total_capacity + capacity)
        return node

    def node(self, node_id: str) -> Node:
        node = self.nodes.get(node_id)
        if node is None:
            raise Rejection(f"node {node_id} is not registered in partition {self.display_name}")
        return node

    def update_node(self, node_id: str, capacity: Resource | None, attributes: dict[str, str] | None) -> Node:
        node = self.node(node_id)
        if capacity is not None:
            self._set_total_capacity(self.total_capacity - node.capacity + capacity)
            node.set_capacity(capacity)
        if attributes:
            node.attributes = dict(attributes)
        return node

    def remove_node(self, node_id: str) -> list[Allocation]:
        """Remove a node; returns the allocations that ran there, now released."""
        node = self.node(node_id)
        released = []
        for alloc in list(node.allocations.values()):
            if alloc.foreign:
                self.foreign.pop(alloc.key, None)
                node.remove_allocation(alloc.key)
                continue
            self._unallocate(alloc)
            released.append(alloc)
        del self.nodes[node_id]
        self._set_total_capacity(self.total_capacity - node.capacity)
        return released

    def _set_total_capacity(self, capacity: Resource) -> None:
        self.total_capacity = capacity
        # Root's max is the cluster: nothing can be allocated beyond what the nodes hold.
        self.root.max = capacity

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
        if not queue_name:
            raise Rejection(f"application {app_id} names no queue and no placement rule gives it one")
        queue = self.find_queue(queue_name)
        if queue is None:
            raise Rejection(f"queue {queue_name} does not exist in partition {self.display_name}")
        if not queue.is_leaf:
            raise Rejection(f"queue {queue.full_name} is a parent queue; applications go to leaf queues")
        if not queue.accepts_new_applications():
            raise Rejection(f"queue {queue.full_name} is {queue.state.value} and takes no new applications")
        app = Application(app_id, self.name, queue, user=user, groups=groups, tags=tags, now=now)
        self.applications[app_id] = app
        queue.applications[app_id] = app
        return app

    def application(self, app_id: str) -> Application:
        app = self.applications.get(app_id)
        if app is None:
            raise Rejection(
                f"application {app_id} is not known in partition {self.display_name}; add it first"
            )
        return app

    def remove_application(self, app_id: str) -> list[Allocation]:
        """Remove an application, its asks and allocations; returns the released allocations."""
        app = self.application(app_id)
        for key in list(app.asks):
            self._remove_ask(app, key)
        released = list(app.allocations.values())
        for alloc in released:
            self._unallocate(alloc)
        del self.applications[app_id]
        app.queue.applications.pop(app_id, None)
        self.remove_empty_draining_queues()
        return released

    def _transition(self, app: Application, event: AppEvent, now: float, message: str = "") -> None:
        if not app.can_handle(event):
            return
        new_state = app.handle(event, now)
        if new_state is not None:
            self.app_changes.append(AppStateChange(app.app_id, new_state, now, message))

    # Asks and allocations ---------------------------------------------------------------------
    def add_ask(self, ask: Allocation, now: float) -> None:
        app = self.application(ask.application_id)
        if app.state in _TERMINAL:
            raise Rejection(f"application {app.app_id} is {app.state.value} and takes no new asks")
        if app.knows_key(ask.key):
            raise Rejection(f"allocation key {ask.key} already exists in application {app.app_id}")
        if not app.queue.is_leaf:
            raise Rejection(f"queue {app.queue.full_name} is not a leaf queue")
        ask.create_time = ask.create_time or now
        app.add_ask(ask)
        app.queue.add_pending(ask.resource)
        self._transition(app, AppEvent.RUN, now)

    def add_foreign(self, alloc: Allocation) -> None:
        if alloc.key in self.foreign:
            raise Rejection(f"foreign allocation {alloc.key} already exists on node {alloc.node_id}")
        node = self.node(alloc.node_id)
        self.foreign[alloc.key] = alloc
        node.add_allocation(alloc)

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
        ask.node_id = node.node_id
        ask.allocated_time = now
        self._place(app, ask, node)
        self._transition(app, AppEvent.RUN, now)

    def _place(self, app: Application, alloc: Allocation, node: Node) -> None:
        alloc.node_id = node.node_id
        node.add_allocation(alloc)
        app.add_allocation(alloc)
        app.queue.add_allocated(alloc.resource)

    def _remove_ask(self, app: Application, key: str) -> Allocation | None:
        ask = app.remove_ask(key)
        if ask is not None:
            app.queue.remove_pending(ask.resource)
        return ask

    def _unallocate(self, alloc: Allocation) -> None:
        app = self.applications[alloc.application_id]
        app.remove_allocation(alloc.key)
        app.queue.remove_allocated(alloc.resource)
        node = self.nodes.get(alloc.node_id)
        if node is not None:
            node.remove_allocation(alloc.key)

    def release(self, app_id: str, key: str, now: float) -> list[Allocation]:
        """RM-initiated release of one allocation or ask (or all of an app's when key is empty).

        Returns the released allocations; removed asks are not returned, as the RM never ran them.
        """
        if not app_id and key in self.foreign:
            alloc = self.foreign.pop(key)
            node = self.nodes.get(alloc.node_id)
            if node is not None:
                node.remove_allocation(key)
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

    def complete_if_idle(self, app: Application, now: float) -> None:
        if app.is_idle():
            self._transition(app, AppEvent.COMPLETE, now, "all allocations and asks are gone")

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
