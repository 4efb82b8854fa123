"""Pod groups: asks of one application that start together (Kubernetes' Workload API gang policy).

Unlike YuniKorn's task groups there are no placeholders: every member is a real ask from the start (the
RM asks for a group's pods once it sees at least `min_count` of them, as kube-scheduler's PreEnqueue
does), and the scheduler places `min_count` of them in one decision or none at all
(core.scheduler.cycle.pod_groups). Once that many run, the group has started: a member added later (a
pod recreated, a group larger than its minimum) is placed on its own, as kube-scheduler lets pods of a
scheduled gang through. A group with `min_count` 1 is a basic group: its asks are placed one by one and
the group is kept for observability.

The RM names the group and its minimum in two ask tags (si.v1.tags TAG_POD_GROUP and
TAG_POD_GROUP_MIN_COUNT); `read_pod_group` reads them, and a malformed one is refused with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from si.v1.tags import TAG_POD_GROUP, TAG_POD_GROUP_MIN_COUNT

MAX_NAME = 512  # characters: a Workload's name, pod group and replica key, with room to spare


class PodGroupError(ValueError):
    """The ask's pod group tags cannot be used; the text says why."""


@dataclass(slots=True)
class PodGroup:
    name: str
    min_count: int
    pending: int = 0  # asks of the group not yet placed
    allocated: int = 0  # members placed and not yet gone

    def to_start(self) -> int:
        """How many members must be placed in one decision now: 0 or 1 once it has started (each then
        goes on its own), else the members its minimum still lacks."""
        return max(0, self.min_count - self.allocated)

    @property
    def waits_together(self) -> bool:
        """Whether its next member waits for others: more than one still to be placed at once."""
        return self.min_count - self.allocated > 1

    @property
    def empty(self) -> bool:
        return not self.pending and not self.allocated


def read_pod_group(tags: Mapping[str, str]) -> tuple[str, int] | None:
    """(group name, minimum) from an ask's tags; None when it names no group."""
    name = tags.get(TAG_POD_GROUP)
    raw_min = tags.get(TAG_POD_GROUP_MIN_COUNT)
    if name is None:
        if raw_min is not None:
            raise PodGroupError(f"tag {TAG_POD_GROUP_MIN_COUNT} without {TAG_POD_GROUP}")
        return None
    if not name or len(name) > MAX_NAME:
        raise PodGroupError(f"tag {TAG_POD_GROUP} must be a name of 1 to {MAX_NAME} characters")
    if raw_min is None:
        return name, 1
    if not raw_min.isdigit() or int(raw_min) < 1:
        raise PodGroupError(
            f"tag {TAG_POD_GROUP_MIN_COUNT} must be a whole number of at least 1, got {raw_min!r}"
        )
    return name, int(raw_min)
