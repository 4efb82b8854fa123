"""The queue hierarchy: usage, limits and headroom along the path to root."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

from core.resources import ZERO, Resource

if TYPE_CHECKING:
    from core.objects.application import Application


class QueueState(StrEnum):
    ACTIVE = "Active"
    DRAINING = "Draining"
    STOPPED = "Stopped"


class Queue:
    def __init__(
        self,
        name: str,
        parent: Queue | None = None,
        is_leaf: bool = True,
        guaranteed: Resource | None = None,
        max_resource: Resource | None = None,
        max_applications: int = 0,
        properties: dict[str, str] | None = None,
        managed: bool = True,
    ) -> None:
        self.name = name
        self.parent = parent
        self.full_name = f"{parent.full_name}.{name}" if parent else name
        self.is_leaf = is_leaf
        self.guaranteed = guaranteed
        self.max = max_resource  # None or a missing type: unlimited
        self.max_applications = max_applications
        self.properties = dict(properties or {})
        self.managed = managed
        self.state = QueueState.ACTIVE
        self.children: dict[str, Queue] = {}
        self.applications: dict[str, Application] = {}
        self.allocated: Resource = ZERO
        self.pending: Resource = ZERO
        if parent is not None:
            parent.children[name] = self

    def path_to_root(self) -> list[Queue]:
        out: list[Queue] = []
        queue: Queue | None = self
        while queue is not None:
            out.append(queue)
            queue = queue.parent
        return out

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
            for name, limit in queue.max.items():
                free = limit - queue.allocated.get(name)
                room[name] = min(room[name], free) if name in room else free
        return Resource(room) if room is not None else None

    def fits_headroom(self, resource: Resource) -> bool:
        for queue in self.path_to_root():
            if queue.max is not None and not (queue.allocated + resource).fits_in_limit(queue.max):
                return False
        return True

    def add_allocated(self, delta: Resource) -> None:
        for queue in self.path_to_root():
            queue.allocated = queue.allocated + delta

    def remove_allocated(self, delta: Resource) -> None:
        for queue in self.path_to_root():
            queue.allocated = queue.allocated - delta

    def add_pending(self, delta: Resource) -> None:
        for queue in self.path_to_root():
            queue.pending = queue.pending + delta

    def remove_pending(self, delta: Resource) -> None:
        for queue in self.path_to_root():
            queue.pending = queue.pending - delta

    def has_pending(self) -> bool:
        return any(v > 0 for v in self.pending.values())

    def accepts_new_applications(self) -> bool:
        return self.is_leaf and self.state == QueueState.ACTIVE

    def __repr__(self) -> str:
        return f"Queue({self.full_name})"
