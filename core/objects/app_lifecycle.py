"""Application state changes of one partition, as YuniKorn's state machine makes them.

Each change keeps the queues' running counts (maxapplications) right, is reported to the RM
(`UpdatedApplication`) and recorded as an event. Time moves applications on: Completing becomes
Completed after `completing_timeout`, and a finished application is forgotten (Expired) after
`terminated_timeout`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from core.events import RawEvent
from core.objects import change_events
from core.objects.app_counts import AppCounts
from core.objects.application import TRANSITIONS, AppEvent, Application, AppState

COMPLETING_TIMEOUT = 30.0  # Completing -> Completed, as YuniKorn
TERMINATED_TIMEOUT = 3 * 24 * 3600.0  # Completed/Failed/Rejected -> Expired, then forgotten
COMPLETED_KEEP = 10_000  # completed applications kept for the REST API, at most
TERMINAL = frozenset({AppState.REJECTED, AppState.COMPLETED, AppState.FAILED, AppState.EXPIRED})


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs 3x, and one is made per change
class AppStateChange:
    app_id: str
    state: AppState
    time: float
    message: str = ""


_EVENT_TEXT = {event: event.value for event in AppEvent}  # a plain str, looked up, not an enum property
_STATE_NAME = {state: state.value.lower() for state in AppState}  # as the metrics' labels spell them
_COUNTED = frozenset({AppState.ACCEPTED, AppState.COMPLETED, AppState.FAILED})


class AppLifecycle:
    def __init__(
        self, rm_id: str, record: Callable[[RawEvent], None], counts: AppCounts | None = None
    ) -> None:
        self._rm_id = rm_id
        self._record = record
        self.changes: list[AppStateChange] = []  # for the RM, drained by the cluster
        # Completed and no longer in a queue, until they expire (the newest COMPLETED_KEEP of them).
        self.completed: deque[Application] = deque(maxlen=COMPLETED_KEEP)
        self.completing_timeout = COMPLETING_TIMEOUT
        self.terminated_timeout = TERMINATED_TIMEOUT
        # Those Completing now, by ID: what the timeout looks at on every tick (not every application).
        self.completing: dict[str, Application] = {}
        # The states applications entered, counted as YuniKorn's metrics count them: the cluster's
        # (core.objects.app_counts), so that they outlive this partition.
        self.counts = counts if counts is not None else AppCounts()

    def transition(self, app: Application, event: AppEvent, now: float, message: str = "") -> None:
        """Apply `event` when the application's state allows it; otherwise nothing happens."""
        before = app.state
        if (event, before) not in TRANSITIONS:
            return
        after = app.handle(event, now)
        if after is None:
            return
        self.counts.entered_state(app.queue.full_name, _STATE_NAME[after], after in _COUNTED)
        # maxapplications counts running applications, on the leaf and every ancestor.
        if after is AppState.RUNNING:
            app.queue.count_running(+1)  # `before` differs: handle answers None for no change
        elif before is AppState.RUNNING:
            app.queue.count_running(-1)
        if after is AppState.COMPLETING:
            self.completing[app.app_id] = app
        elif before is AppState.COMPLETING:
            self.completing.pop(app.app_id, None)
        self.changes.append(AppStateChange(app.app_id, after, now, message or _EVENT_TEXT[event]))
        self._record(change_events.app_state_changed(self._rm_id, app.app_id, before, after, message, now))

    def complete_if_idle(self, app: Application, now: float) -> None:
        if app.is_idle():
            self.transition(app, AppEvent.COMPLETE, now, "all allocations and asks are gone")

    def completing_over(self, apps: Mapping[str, Application], now: float) -> list[Application]:
        """Complete the Completing applications of `apps` (the partition's, by ID) whose timeout
        passed; returns them (to be forgotten by their queues and kept here until they expire)."""
        for app_id, app in list(self.completing.items()):
            if apps.get(app_id) is not app or app.state != AppState.COMPLETING:
                del self.completing[app_id]  # gone from the partition meanwhile
        done = [
            app for app in self.completing.values()
            if now - app.state_time >= self.completing_timeout
            and not (app.gang is not None and app.gang.allocated_count)  # its placeholders go first
        ]  # fmt: skip
        for app in done:
            self.transition(app, AppEvent.COMPLETE, now, "completing timeout")
        return done

    def expire(self, now: float) -> None:
        for app in [a for a in self.completed if now - a.state_time >= self.terminated_timeout]:
            if not app.removed_by_rm:  # the RM removed it: it hears nothing more of it
                self.transition(app, AppEvent.EXPIRE, now, "terminated timeout")
            self.completed.remove(app)

    def drain_changes(self) -> list[AppStateChange]:
        changes, self.changes = self.changes, []
        return changes
