"""Priority propagation: applications to leaves, leaves to parents, only as far as a value changes.

Each application caches `ask_max_priority`, the highest priority of its pending asks. Each queue
caches the priorities of its applications (leaf) or children (parent) that have something pending,
and `current_priority`, the priority it shows its parent:

- nothing pending: MIN_PRIORITY and absent from its parent's inputs, so an idle queue never raises
  its parent (what is pending is told by the presence of inputs, never by the value MIN_PRIORITY,
  which a pending ask may have or a large negative offset may clamp to);
- fenced (`priority.policy: fence`): its offset (0 when none), whatever is inside;
- otherwise: the highest inside plus its offset, clamped to the int32 range.

`inner_priority` keeps the highest value inside before offset and fence, for the REST view.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.objects.priority_range import MIN_PRIORITY, PriorityInputs, clamp

if TYPE_CHECKING:
    from core.objects.application import Application
    from core.objects.queue import Queue


def shown_priority(queue: Queue, inner: int | None) -> int:
    """What a queue shows its parent, from the highest priority inside (None: nothing pending).

    "Nothing pending" is the absence of inputs, not the value MIN_PRIORITY: an ask may have priority
    MIN_PRIORITY, and a large negative offset may clamp a queue to it, with something still pending.
    """
    if inner is None:
        return MIN_PRIORITY
    if queue.props.is_priority_fence:
        return queue.props.priority_offset
    return clamp(inner + queue.props.priority_offset)


def _inputs(queue: Queue) -> PriorityInputs:
    return queue.app_priorities if queue.is_leaf else queue.child_priorities


def _recalculate(queue: Queue) -> bool:
    """Recompute a queue's priority from its cached inputs; True when the shown value changed."""
    inner = _inputs(queue).highest()
    queue.inner_priority = MIN_PRIORITY if inner is None else inner
    shown = shown_priority(queue, inner)
    if shown == queue.current_priority:
        return False
    queue.current_priority = shown
    return True


def _propagate(queue: Queue) -> None:
    # Go up while the parent's input for this queue changes: its value, or whether it is there at
    # all (a queue clamped to MIN_PRIORITY shows the same value as an idle one, but is pending).
    current = queue
    while True:
        _recalculate(current)
        parent = current.parent
        if parent is None:
            return
        if _inputs(current):
            if parent.child_priorities.get(current.name) == current.current_priority:
                return
            parent.child_priorities[current.name] = current.current_priority
        elif parent.child_priorities.pop(current.name, None) is None:
            return
        current = parent


def update_application(app: Application) -> None:
    """Call after an application's pending asks changed: pushes its priority up as far as it matters."""
    leaf = app.queue
    inputs = leaf.app_priorities
    had_inputs = bool(inputs)
    if app.asks:
        if inputs.get(app.app_id) == app.ask_max_priority:
            return
        inputs[app.app_id] = app.ask_max_priority
    elif inputs.pop(app.app_id, None) is None:
        return
    if had_inputs and inputs and inputs.highest() == leaf.inner_priority:
        return  # the leaf shows what it showed (another application asks at that priority): nothing changes
    _propagate(leaf)


def remove_application(app: Application) -> None:
    if app.queue.app_priorities.pop(app.app_id, None) is not None:
        _propagate(app.queue)


def recompute_all(root: Queue) -> None:
    """Rebuild every cached queue priority (after a reload changed offsets or fences)."""

    def visit(queue: Queue) -> None:
        if queue.is_leaf:
            queue.app_priorities = PriorityInputs()
            for app_id, app in queue.applications.items():
                if app.asks:
                    queue.app_priorities[app_id] = app.ask_max_priority
        else:
            queue.child_priorities = PriorityInputs()
            for child in queue.children.values():
                visit(child)
                if _inputs(child):
                    queue.child_priorities[child.name] = child.current_priority
        inner = _inputs(queue).highest()
        queue.inner_priority = MIN_PRIORITY if inner is None else inner
        queue.current_priority = shown_priority(queue, inner)

    visit(root)


def _shown_from_scratch(queue: Queue) -> int | None:
    if queue.is_leaf:
        values = [ask.priority for app in queue.applications.values() for ask in app.asks.values()]
    else:
        values = [p for p in map(_shown_from_scratch, queue.children.values()) if p is not None]
    return shown_priority(queue, max(values)) if values else None


def from_scratch(queue: Queue) -> int:
    """A queue's shown priority computed from the asks themselves, ignoring every cache (for checks)."""
    shown = _shown_from_scratch(queue)
    return MIN_PRIORITY if shown is None else shown
