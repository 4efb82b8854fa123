"""A partition's queue tree: built from configuration, reconciled on reload, grown by placement.

Managed queues come from the configuration; dynamic ones are created by placement rules and take the
child template of the nearest ancestor that has one. A queue that leaves the configuration goes
Draining (its applications keep running, no new ones come) and is removed once empty, as is an
empty dynamic queue.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from core.config import properties
from core.config.acl import ACL, NOBODY
from core.config.schema import ChildTemplate, QueueConfig
from core.config.validation import RECOVERY_QUEUE
from core.objects.queue import Queue, QueueState
from core.resources import Resource

Warn = Callable[[str, str], None]  # (queue full name, message)


class QueueTree:
    def __init__(self, root_config: QueueConfig, warn: Warn | None = None) -> None:
        self._warn = warn
        self.queues: dict[str, Queue] = {}
        self.root = Queue("root", None, is_leaf=False)
        self.queues["root"] = self.root
        self.reconcile(root_config)

    def find(self, name: str) -> Queue | None:
        """A queue by its full name (case-insensitive); a name without `root.` is qualified with it."""
        lowered = name.lower()
        if lowered != "root" and not lowered.startswith("root."):
            lowered = f"root.{lowered}"
        return self.queues.get(lowered)

    def __iter__(self) -> Iterator[Queue]:
        return iter(self.queues.values())

    # Configuration --------------------------------------------------------------------------------
    def reconcile(self, root_config: QueueConfig) -> None:
        """Make the managed queues match the configuration; queues no longer in it go Draining."""
        seen: set[str] = set()
        self._apply(self.root, root_config, seen)
        for key, queue in self.queues.items():
            if key not in seen and queue.managed:
                queue.state = QueueState.DRAINING
        self.refresh_properties()
        self.remove_empty()

    def conflicts(self, root_config: QueueConfig) -> list[str]:
        """Why the tree cannot be reconciled to `root_config` as it is now; empty when it can: a leaf
        that holds applications cannot become a parent."""
        problems: list[str] = []

        def walk(cfg: QueueConfig, name: str) -> None:
            queue = self.find(name)
            if queue is not None and cfg.is_parent and queue.is_leaf and queue.applications:
                problems.append(
                    f"queue {queue.full_name} holds {len(queue.applications)} application(s) and cannot "
                    "become a parent queue until they are gone"
                )
            for child in cfg.queues:
                walk(child, f"{name}.{child.name}")

        walk(root_config, "root")
        return problems

    def _apply(self, queue: Queue, cfg: QueueConfig, seen: set[str]) -> None:
        seen.add(queue.full_name.lower())
        queue.managed = True
        queue.state = QueueState.ACTIVE
        # Root's resources are the cluster's (the configuration may not set them); its maxapplications
        # holds as any queue's (YuniKorn takes it when the partition is made, and keeps that one
        # through reloads: pykorn takes each reload's, docs/compatibility.md).
        queue.max_applications = cfg.max_applications
        if not queue.is_root:
            queue.guaranteed = _limit(cfg.guaranteed)
            queue.max = _limit(cfg.max)
        queue.own_properties = cfg.property_map()
        queue.submit_acl = _acl(cfg.submit_acl)
        queue.admin_acl = _acl(cfg.admin_acl)
        queue.child_template = cfg.child_template
        if not queue.applications and not queue.children:
            queue.is_leaf = not cfg.is_parent
        for child_cfg in cfg.queues:
            child = queue.children.get(child_cfg.name.lower()) or self._find_child(queue, child_cfg.name)
            if child is None:
                child = self._new_queue(child_cfg.name, queue, is_leaf=not child_cfg.is_parent, managed=True)
            self._apply(child, child_cfg, seen)

    @staticmethod
    def _find_child(parent: Queue, name: str) -> Queue | None:
        for child in parent.children.values():
            if child.name.lower() == name.lower():
                return child
        return None

    def _new_queue(self, name: str, parent: Queue, is_leaf: bool, managed: bool) -> Queue:
        # Queue names are lower-cased on creation, as YuniKorn does for configured and dynamic queues.
        queue = Queue(name.lower(), parent, is_leaf=is_leaf, managed=managed)
        self.queues[queue.full_name.lower()] = queue
        return queue

    def refresh_properties(self) -> None:
        """Recompute effective properties top-down: a parent's change reaches its children."""

        def visit(queue: Queue, parent_effective: dict[str, str] | None) -> None:
            if queue.managed or queue.is_root:
                queue.effective_properties = properties.inherit(parent_effective, queue.own_properties)
            else:
                # A dynamic queue's properties are its template's, not merged with its parent's.
                queue.effective_properties = dict(queue.own_properties)
            queue.props = properties.parse(
                queue.effective_properties, queue.is_leaf, queue.is_root, self._warner(queue)
            )
            for child in queue.children.values():
                visit(child, queue.effective_properties)

        visit(self.root, None)

    def _warner(self, queue: Queue) -> properties.Warn | None:
        # Managed queues were reported when the configuration was loaded; only dynamic ones warn here.
        if self._warn is None or queue.managed:
            return None
        warn = self._warn
        return lambda key, message: warn(queue.full_name, f"{key}: {message}")

    # Dynamic queues -------------------------------------------------------------------------------
    def deepest_existing(self, full_name: str) -> Queue:
        parts = full_name.lower().split(".")
        for depth in range(len(parts), 0, -1):
            queue = self.queues.get(".".join(parts[:depth]))
            if queue is not None:
                return queue
        return self.root

    def create_recovery(self) -> Queue:
        """The recovery queue (core.config.validation.RECOVERY_QUEUE): a dynamic leaf under root, first
        in first out, with no template's limits; removed once empty, as dynamic queues are."""
        queue = self._new_queue(RECOVERY_QUEUE.removeprefix("root."), self.root, is_leaf=True, managed=False)
        queue.own_properties = {properties.APPLICATION_SORT_POLICY: properties.SORT_FIFO}
        self.refresh_properties()
        return queue

    def create(self, full_name: str) -> Queue:
        """Create the missing levels of `full_name`: dynamic parents, then a dynamic leaf.

        The caller has checked that the deepest existing ancestor is an active parent.
        """
        parts = full_name.split(".")
        parent = self.deepest_existing(full_name)
        depth = parent.full_name.count(".") + 1
        queue = parent
        for i, name in enumerate(parts[depth:], start=depth):
            is_leaf = i == len(parts) - 1
            template = self._template_for(queue)
            queue = self._new_queue(name.lower(), queue, is_leaf=is_leaf, managed=False)
            if is_leaf and template is not None:
                _apply_template(queue, template)
        self.refresh_properties()
        return queue

    @staticmethod
    def _template_for(parent: Queue) -> ChildTemplate | None:
        for queue in parent.path_to_root():
            if queue.child_template is not None:
                return queue.child_template
        return None

    def remove_empty(self) -> list[Queue]:
        """Remove draining and dynamic queues that hold nothing, deepest first; returns them."""
        removed = []
        for queue in sorted(self.queues.values(), key=lambda q: -q.full_name.count(".")):
            if queue.is_root or not queue.is_empty():
                continue
            if queue.state == QueueState.DRAINING or not queue.managed:
                assert queue.parent is not None
                queue.parent.children.pop(queue.name, None)
                del self.queues[queue.full_name.lower()]
                removed.append(queue)
        return removed


def _limit(configured: Resource | None) -> Resource | None:
    """A configured max or guaranteed as the queue holds it: none unless some quantity is above zero, as
    YuniKorn's setResources ignores an all-zero one (a zero beside a positive quantity is kept)."""
    if configured is None or not any(v > 0 for v in configured.values()):
        return None
    return configured


def _acl(text: str | None) -> ACL:
    return ACL.parse(text) if text else NOBODY


def _apply_template(queue: Queue, template: ChildTemplate) -> None:
    queue.templated = True
    queue.max_applications = template.max_applications
    queue.own_properties = dict(template.properties)
    queue.guaranteed = _limit(template.guaranteed)
    queue.max = _limit(template.max)
