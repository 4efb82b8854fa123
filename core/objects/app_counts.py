"""Counts of application states that only rise, as YuniKorn's metrics keep them: cluster-wide (how many
entered Accepted, Completed, Failed) and per queue path (the states entered there, and how many
applications were rejected, completed or failed there).

They belong to the cluster, not to a partition or a queue object: an RM registering again rebuilds its
partitions, and several RMs may share a queue path, yet YuniKorn's counters never fall (its queues stay
on a re-registration, and yunikorn_queue_app_total is never unregistered). The per-queue gauge entries
go when the queue is gone from every partition (core.views.metrics_view).
"""

from __future__ import annotations

RISING = ("completed", "failed", "rejected")  # per queue: states whose count only rises


class AppCounts:
    def __init__(self) -> None:
        # Applications that entered each state, in every partition ever.
        self.entered: dict[str, int] = {"accepted": 0, "completed": 0, "failed": 0}
        # Per queue path: every state entered there (yunikorn_queue_app keeps a series once touched),
        # with the rising states' counts; the others are 0 here and counted live at scrape time.
        self.queue_states: dict[str, dict[str, int]] = {}
        # Per (queue path, state) of RISING: yunikorn_queue_app_total, never dropped.
        self.queue_totals: dict[tuple[str, str], int] = {}

    def entered_state(self, queue: str, state: str, counted: bool) -> None:
        """An application entered `state` (lower-case) in `queue`; `counted`: a cluster-wide count."""
        states = self.queue_states.get(queue)
        if states is None:
            states = self.queue_states[queue] = {}
        if state in RISING:
            states[state] = states.get(state, 0) + 1
            self.queue_totals[(queue, state)] = self.queue_totals.get((queue, state), 0) + 1
        elif state not in states:
            states[state] = 0
        if counted:
            self.entered[state] = self.entered.get(state, 0) + 1

    def rejected(self, queue: str) -> None:
        """Refused by the queue it asked for (its ACL, its state)."""
        self.entered_state(queue, "rejected", counted=False)

    def forget_queues(self, live: set[str]) -> None:
        """The gauge's entries of queues no partition has any more (their series end, as upstream's
        RemoveQueueMetrics); the totals stay."""
        for queue in [q for q in self.queue_states if q not in live]:
            del self.queue_states[queue]
