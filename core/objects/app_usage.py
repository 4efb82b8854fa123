"""What an application used, as YuniKorn tracks it (yunikorn-core TrackedResource): for each allocation
that ends, its resource times the whole seconds it was held, summed by the instance type of the node it
ran on; kept apart for allocations that were preempted and for gang placeholders. The REST API shows
it as `resourceHistory`; the application's YK_APP_SUMMARY log line carries it when the application
ends; the partition sums it by queue and by user for the metrics."""

from __future__ import annotations

from collections.abc import Container, Mapping

from core.objects.allocation import Allocation
from si.v1.tags import ATTR_INSTANCE_TYPE

UNKNOWN_INSTANCE_TYPE = "UNKNOWN"  # YuniKorn's, for a node without it

# The three kinds, by their names in YuniKorn's dao ResourceHistory.
USED, PREEMPTED, PLACEHOLDER = "resourceUsage", "preemptedResource", "placeholderResource"
KINDS = (USED, PREEMPTED, PLACEHOLDER)

Tracked = dict[str, dict[str, int]]  # instance type -> resource type -> resource-seconds


def instance_type(attributes: Mapping[str, str]) -> str:
    return attributes.get(ATTR_INSTANCE_TYPE) or UNKNOWN_INSTANCE_TYPE


def kind_of(alloc: Allocation) -> str:
    """Which of the three an ended allocation counts in (YuniKorn's order: preempted first)."""
    if alloc.releasing:
        return PREEMPTED
    return PLACEHOLDER if alloc.placeholder else USED


class AppUsage:
    """An application's tracked usage; made when its first allocation ends."""

    __slots__ = ("tracked",)

    def __init__(self) -> None:
        self.tracked: dict[str, Tracked] = {kind: {} for kind in KINDS}

    def add(self, alloc: Allocation, now: float) -> tuple[str, dict[str, int]]:
        """Count `alloc`, ended at `now`; its kind and the resource-seconds it added."""
        # Whole seconds, as Go's int64(duration.Seconds()): an allocation held under one counts 0.
        seconds = max(0, int(now - alloc.allocated_time))
        kind = kind_of(alloc)
        by_type = self.tracked[kind].setdefault(alloc.instance_type or UNKNOWN_INSTANCE_TYPE, {})
        added = {name: value * seconds for name, value in alloc.resource.items()}
        for name, value in added.items():
            by_type[name] = by_type.get(name, 0) + value
        return kind, added

    def dao(self) -> dict[str, Tracked]:
        """YuniKorn's ResourceHistory: each kind with anything in it (omitempty)."""
        return {
            kind: {t: dict(r) for t, r in tracked.items()}
            for kind, tracked in self.tracked.items()
            if tracked
        }


def tracked_text(tracked: Tracked) -> str:
    """As YuniKorn prints a TrackedResource: TrackedResource{type:resource=value,...} (sorted here)."""
    parts = [
        f"{t}:{name}={value}" for t, res in sorted(tracked.items()) for name, value in sorted(res.items())
    ]
    return "TrackedResource{" + ",".join(parts) + "}"


class UsageTotals:
    """A partition's tracked usage summed by leaf queue and by user (for the metrics): (queue or user,
    kind, resource type) -> resource-seconds."""

    __slots__ = ("by_queue", "by_user")

    def __init__(self) -> None:
        self.by_queue: dict[tuple[str, str, str], int] = {}
        self.by_user: dict[tuple[str, str, str], int] = {}

    def add(self, queue: str, user: str, kind: str, added: Mapping[str, int]) -> None:
        for name, value in added.items():
            key = (queue, kind, name)
            self.by_queue[key] = self.by_queue.get(key, 0) + value
            key = (user, kind, name)
            self.by_user[key] = self.by_user.get(key, 0) + value

    def forget_queues(self, kept: Container[str]) -> None:
        """Drop the totals of queues no longer there (a removed dynamic queue's series go with it)."""
        for key in [key for key in self.by_queue if key[0] not in kept]:
            del self.by_queue[key]


def summary(
    rm_id: str, app_id: str, fields: Mapping[str, object], usage: AppUsage | None
) -> tuple[str, dict[str, object]]:
    """YuniKorn's YK_APP_SUMMARY line for an ended application, its text as YuniKorn writes it (times
    in Unix milliseconds) and the same as structured fields. `fields`: submissionTime, startTime,
    finishTime (seconds), user, queue, state."""
    tracked = usage.tracked if usage is not None else {kind: {} for kind in KINDS}

    def millis(key: str) -> int:
        value = fields.get(key)
        return int(float(value) * 1000) if isinstance(value, int | float) else 0

    user, queue, state = fields.get("user", ""), fields.get("queue", ""), fields.get("state", "")
    text = (
        f"YK_APP_SUMMARY: {{ApplicationID: {app_id}, SubmissionTime: {millis('submissionTime')}, "
        f"StartTime: {millis('startTime')}, FinishTime: {millis('finishTime')}, User: {user}, "
        f"Queue: {queue}, State: {state}, RmID: {rm_id}, ResourceUsage: {tracked_text(tracked[USED])}, "
        f"PreemptedResource: {tracked_text(tracked[PREEMPTED])}, "
        f"PlaceholderResource: {tracked_text(tracked[PLACEHOLDER])}}}"
    )
    structured: dict[str, object] = {
        "applicationID": app_id, "rmID": rm_id, "submissionTime": millis("submissionTime"),
        "startTime": millis("startTime"), "finishTime": millis("finishTime"), "user": fields.get("user", ""),
        "queue": fields.get("queue", ""), "state": fields.get("state", ""),
        **{kind: tracked[kind] for kind in KINDS},
    }  # fmt: skip
    return text, structured
