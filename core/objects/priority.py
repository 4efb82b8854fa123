"""Priority propagation: applications to leaves, leaves to parents, only as far as a value changes.

Each application caches `ask_max_priority`, the highest priority of its pending asks. Each queue
caches the priorities of its applications (leaf) or children (parent) that have something pending,
and `current_priority`, the priority it shows its parent:

- nothing pending: MIN_PRIORITY, so an idle queue never raises its parent;
- fenced (`priority.policy: fence`): its offset (0 when none), whatever is inside;
- otherwise: the highest inside plus its offset, clamped to the int32 range.

`inner_priority` keeps the highest value inside before offset and fence, for the REST view.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.objects.application import Application
    from core.objects.queue import Queue

MIN_PRIORITY = -(2**31)
MAX_PRIORITY = 2**31 - 1


def clamp(value: int) -> int:
    return max(MIN_PRIORITY, min(MAX_PRIORITY, value))


def shown_priority(queue: Queue, inner: int) -> int:
    if inner == MIN_PRIORITY:
        return MIN_PRIORITY
    if queue.props.is_priority_fence:
        return queue.props.priority_offset
    return clamp(inner + queue.props.priority_offset)


def _recalculate(queue: Queue) -> bool:
    """Recompute a queue's priority from its cached inputs; True when the shown value changed."""
    items = queue.app_priorities if queue.is_leaf else queue.child_priorities
    inner = max(items.values(), default=MIN_PRIORITY)
    queue.inner_priority = inner
    shown = shown_priority(queue, inner)
    if shown == queue.current_priority:
        return False
    queue.current_priority = shown
    return True


def _propagate(queue: Queue) -> None:
    current: Queue | None = queue
    while current is not None and _recalculate(current):
        parent = current.parent
        if parent is None:
            return
        if current.current_priority == MIN_PRIORITY:
            parent.child_priorities.pop(current.name, None)
        else:
            parent.child_priorities[current.name] = current.current_priority
        current = parent


def update_application(app: Application) -> None:
    """Call after an application's pending asks changed: pushes its priority up as far as it matters."""
    leaf = app.queue
    value = app.ask_max_priority if app.asks else MIN_PRIORITY
    if leaf.app_priorities.get(app.app_id, MIN_PRIORITY) == value:
        return
    if value == MIN_PRIORITY:
        leaf.app_priorities.pop(app.app_id, None)
    else:
        leaf.app_priorities[app.app_id] = value
    _propagate(leaf)


def remove_application(app: Application) -> None:
    if app.queue.app_priorities.pop(app.app_id, None) is not None:
        _propagate(app.queue)


def recompute_all(root: Queue) -> None:
    """Rebuild every cached queue priority (after a reload changed offsets or fences)."""

    def visit(queue: Queue) -> int:
        if queue.is_leaf:
            queue.app_priorities = {
                app_id: app.ask_max_priority for app_id, app in queue.applications.items() if app.asks
            }
        else:
            queue.child_priorities = {}
            for child in queue.children.values():
                shown = visit(child)
                if shown != MIN_PRIORITY:
                    queue.child_priorities[child.name] = shown
        items = queue.app_priorities if queue.is_leaf else queue.child_priorities
        queue.inner_priority = max(items.values(), default=MIN_PRIORITY)
        queue.current_priority = shown_priority(queue, queue.inner_priority)
        return queue.current_priority

    visit(root)


def from_scratch(queue: Queue) -> int:
    """A queue's shown priority computed from the asks themselves, ignoring every cache (for checks)."""
    if queue.is_leaf:
        inner = max(
            (ask.priority for app in queue.applications.values() for ask in app.asks.values()),
            default=MIN_PRIORITY,
        )
    else:
        shown = (from_scratch(child) for child in queue.children.values())
        inner = max((p for p in shown if p != MIN_PRIORITY), default=MIN_PRIORITY)
    return shown_priority(queue, inner)
