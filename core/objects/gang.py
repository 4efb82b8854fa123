"""Gang scheduling state of one application: its task groups, placeholders and placeholder timer.

YuniKorn's design (yunikorn-site docs/design/gang_scheduling.md): the RM asks for placeholders, one
per member of each task group, sized as the group's members. Once the whole gang's placeholders are
allocated the application runs, and each real task of a group takes the place of one of its
placeholders. A placeholder timer, started by the first placeholder allocation, ends the wait: `Soft`
gives up the placeholders and schedules the real tasks normally, `Hard` fails the application.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from core.objects.allocation import Allocation
from core.resources import Resource

DEFAULT_PLACEHOLDER_TIMEOUT = 15 * 60.0  # seconds, as YuniKorn when the RM sends none
# An application's creation time (Unix seconds) as YuniKorn's shims tag it: the timeout counts from it.
SMALLEST_TIMEOUT = 0.001  # a timeout already over when the application arrives still fires


class GangStyle(StrEnum):
    SOFT = "Soft"
    HARD = "Hard"


@dataclass(slots=True)
class TaskGroupData:
    """What the REST API shows as `placeholderData`: one entry per task group."""

    name: str
    min_resource: Resource
    count: int = 0  # placeholders asked for
    replaced: int = 0
    timed_out: int = 0  # released for any reason other than replacement

    @property
    def replaceable(self) -> bool:
        return self.count > self.replaced + self.timed_out


class Gang:
    def __init__(
        self, placeholder_ask: Resource, style: GangStyle = GangStyle.SOFT, timeout: float = 0.0
    ) -> None:
        self.placeholder_ask = placeholder_ask  # the whole gang's size, all task groups
        self.style = style
        self.timeout = timeout if timeout > 0 else DEFAULT_PLACEHOLDER_TIMEOUT
        self.deadline: float | None = None  # set by the first placeholder allocation
        self.allocated = Resource()  # placeholders allocated and not yet gone
        self.allocated_count = 0
        self.groups: dict[str, TaskGroupData] = {}
        self.pending_real = 0  # pending asks that name a task group and are not placeholders
        # The gang was complete once, or its timer fired: from then on a task group without
        # placeholders left no longer holds its real tasks back.
        self.settled = False

    def placeholder_asked(self, ph: Allocation) -> None:
        group = self.groups.get(ph.task_group)
        if group is None:
            group = self.groups[ph.task_group] = TaskGroupData(ph.task_group, ph.resource)
        group.count += 1

    def waits_for_placeholder(self, ask: Allocation) -> bool:
        """A real task of a task group with placeholders still to replace: it takes the place of one
        (YuniKorn's canReplace) instead of being scheduled on its own. Before the gang is settled, a
        task of a group whose placeholders have not arrived yet waits too (an RM may send the
        originator's ask before its placeholders)."""
        group = self.groups.get(ask.task_group)
        if group is None:
            return not self.settled and not self.placeholder_ask.is_zero()
        return group.replaceable

    def placeholder_allocated(self, ph: Allocation, now: float, timer_may_start: bool) -> bool:
        """Count an allocated placeholder; True once the whole gang is allocated."""
        if self.allocated_count == 0 and self.deadline is None and timer_may_start:
            self.deadline = now + self.timeout
        self.allocated_count += 1
        self.allocated.add_in_place(ph.resource)
        if self.complete():
            self.settled = True
            return True
        return False

    def complete(self) -> bool:
        # At least the gang's size in every resource type it names (YuniKorn compares for equality,
        # which leaves a gang sent one placeholder too many waiting for its timeout).
        return all(self.allocated.get(name) >= want for name, want in self.placeholder_ask.items())

    def placeholder_gone(self, ph: Allocation, replaced: bool) -> bool:
        """Count a placeholder allocation gone; True when it was the last one (the timer stops)."""
        group = self.groups.get(ph.task_group)
        if group is not None:
            if replaced:
                group.replaced += 1
            else:
                group.timed_out += 1
        self.allocated_count -= 1
        self.allocated.sub_in_place(ph.resource)
        if self.allocated_count == 0:
            self.deadline = None
            return True
        return False

    def pending_placeholder_dropped(self, ph: Allocation) -> None:
        group = self.groups.get(ph.task_group)
        if group is not None:
            group.timed_out += 1


def placeholder_timeout(millis: int, created: float, now: float) -> float:
    """The placeholder timeout in seconds: the RM's, else the default, counted from the application's
    creation when the RM says when that was (so a core restart does not start the wait over)."""
    timeout = millis / 1000 if millis > 0 else DEFAULT_PLACEHOLDER_TIMEOUT
    if created > 0:
        timeout = max(SMALLEST_TIMEOUT, created + timeout - now)
    return timeout
