"""Gang scheduling inside a partition: placeholders in, real tasks in their place, timers.

The flow is YuniKorn's (scheduler/objects/application.go, partition.go):

1. Placeholder asks are scheduled like any ask and count in usage. The application stays Accepted
   until the whole gang (`placeholderAsk`) is allocated, then runs. The first placeholder allocation
   starts the placeholder timer.
2. A real task of a task group with placeholders left does not get a node of its own. Once the gang
   runs, it takes a placeholder's place: on the placeholder's node if it may run there, else on any
   node with room. The core sends the placeholder's release (`PLACEHOLDER_REPLACED`); the real
   allocation goes out when the RM confirms that release. A real task larger than its placeholder
   releases that placeholder (`TIMEOUT`) and tries the next.
3. When the timer fires before the gang ran, `Soft` releases every placeholder (`TIMEOUT`), goes
   through Resuming back to Accepted and schedules the real tasks normally; `Hard` fails the
   application (Failing, then Failed once the placeholders are gone). When it fires after the gang
   ran, the placeholders not replaced yet are released. Placeholders still held when a Completing
   application's timeout comes are released too.

Unlike YuniKorn's core, the real tasks of an incomplete gang are held here rather than only in the
Kubernetes shim, so every RM gets the same all-or-nothing start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.events import ChangeDetail
from core.objects import change_events, priority
from core.objects.allocation import Allocation
from core.objects.application import AppEvent, Application, AppState
from core.objects.gang import Gang, GangStyle
from core.resources import Resource
from core.scheduler.partition import applications
from core.scheduler.results import Released, Termination

if TYPE_CHECKING:  # the partition owns this part and hands itself in
    from core.scheduler.partition.partition import Partition


TIMEOUT_REASON = "ResourceReservationTimeout"  # the message YuniKorn sends with Resuming and Failing


class PartitionGangs:
    """The gang steps of one partition, using the partition's own bookkeeping helpers."""

    def __init__(self, part: Partition) -> None:
        self.part = part
        self.apps: dict[str, Application] = {}  # applications with task groups
        # What gang scheduling tells the RM outside a scheduling cycle's allocations: placeholders to
        # release, and real tasks confirmed in a placeholder's place. Drained by the cluster.
        self.releases: list[Released] = []
        self.allocations: list[Allocation] = []

    def gang_of(self, app: Application) -> Gang:
        """The application's gang state, made on its first placeholder when the RM sent no
        placeholderAsk (the gang is then complete with its first placeholder allocated)."""
        if app.gang is None:
            app.gang = Gang(Resource())
            app.gang.pending_real = sum(1 for a in app.asks.values() if a.task_group and not a.placeholder)
            self.apps[app.app_id] = app
        return app.gang

    def ask_added(self, app: Application, ask: Allocation) -> None:
        if ask.placeholder:
            self.gang_of(app).placeholder_asked(ask)
        elif app.gang is not None:
            app.gang.pending_real += 1

    # Replacement --------------------------------------------------------------------------------
    def begin_replacement(
        self, app: Application, real: Allocation, ph: Allocation, node_id: str, now: float
    ) -> None:
        """Put `real` in `ph`'s place on `node_id`, and ask the RM to release `ph` first."""
        self.part.remove_ask(app, real.key)
        real.node_id = node_id
        real.allocated_time = now
        real.replaces, ph.replaced_by = ph, real
        ph.released_by_core = True
        app.replacing[real.key] = real
        if node_id != ph.node_id:  # hold the room on the other node until the swap is confirmed
            node = self.part.nodes[node_id]
            node.add_allocation(real)
            self.part.node_index.update(node)
        self.releases.append(
            Released(
                self.part.key, app.app_id, ph.key, Termination.PLACEHOLDER_REPLACED,
                f"placeholder replaced by {real.key}", placeholder=True,
            )
        )  # fmt: skip

    def confirm_replacement(self, app: Application, ph: Allocation, now: float) -> None:
        """The RM released `ph` as replaced: its real task takes the room and is sent to the RM."""
        real = ph.replaced_by
        if real is not None:
            real.replaces = ph.replaced_by = None
            app.replacing.pop(real.key, None)
        said = f"placeholder {ph.key} of task group {ph.task_group} replaced"
        if real is not None:
            said += f" by {real.key} on node {real.node_id}"
        self.part.unallocate(ph, now, ChangeDetail.ALLOC_REPLACED, replaced=True, message=said)
        # As YuniKorn: the placeholder's ask goes with its release (any but a timeout's).
        self.part.events.append(
            change_events.ask_removed(self.part.rm_id, ph, ChangeDetail.REQUEST_CANCEL, now)
        )
        if real is None:  # the real task went away meanwhile: the placeholder just goes
            return
        node = self.part.nodes[real.node_id]
        if real.key in node.allocations:  # on another node: it held the room, now it takes it
            node.remove_allocation(real.key)
        real.placeholder_used = True
        real.allocated_time = now  # bound now, as YuniKorn's ReplaceAllocation: its usage counts from here
        self.part.place_on(app, real, node, now)
        self.allocations.append(real)
        self.part.lifecycle.transition(app, AppEvent.RUN, now)

    def cancel_replacement(self, app: Application, real: Allocation, back_to_pending: bool) -> None:
        """Undo a replacement not confirmed yet: its node went away, or the RM ended the real task.
        The placeholder's release was already sent; its confirmation then only removes it."""
        ph = real.replaces
        real.replaces = None
        if ph is not None:
            ph.replaced_by = None
        app.replacing.pop(real.key, None)
        node = self.part.nodes.get(real.node_id)
        if node is not None and real.key in node.allocations:
            node.remove_allocation(real.key)
            self.part.node_index.update(node)
        real.node_id = ""
        if back_to_pending:
            self.ask_added(app, real)
            app.add_ask(real)
            app.queue.add_pending(real.resource)
            priority.update_application(app)

    def release_placeholder(self, ph: Allocation, why: str, now: float) -> None:
        """Ask the RM to release a placeholder (TIMEOUT); it stays counted until the RM confirms."""
        ph.released_by_core = True
        self.releases.append(
            Released(self.part.key, ph.application_id, ph.key, Termination.TIMEOUT, why, placeholder=True)
        )

    def placeholder_gone(self, app: Application, ph: Allocation, replaced: bool, now: float) -> None:
        gang = app.gang
        if gang is not None and gang.placeholder_gone(ph, replaced):
            self._after_last_placeholder(app, now)

    # Timers -------------------------------------------------------------------------------------
    def tick(self, now: float) -> None:
        for app in list(self.apps.values()):
            gang = app.gang
            assert gang is not None
            if gang.deadline is not None and now >= gang.deadline:
                self._placeholder_timeout(app, gang, now)
            elif (
                app.state == AppState.COMPLETING
                and gang.allocated_count
                and now - app.state_time >= self.part.lifecycle.completing_timeout
            ):
                for ph in _held_placeholders(app):
                    self.release_placeholder(ph, "releasing placeholders on application completion", now)

    def _placeholder_timeout(self, app: Application, gang: Gang, now: float) -> None:
        gang.deadline = None
        gang.settled = True
        if app.state in (AppState.RUNNING, AppState.COMPLETING):
            for ph in _held_placeholders(app):
                self.release_placeholder(ph, "placeholder timeout: not replaced in time", now)
            return
        hard = gang.style == GangStyle.HARD
        self.part.lifecycle.transition(app, AppEvent.FAIL if hard else AppEvent.RESUME, now, TIMEOUT_REASON)
        for ph in _held_placeholders(app):
            self.release_placeholder(ph, "placeholder timeout: the gang was not allocated in time", now)
            # YuniKorn times out every request of the gang, those allocated too (ALLOC_TIMEOUT follows
            # when the RM confirms the release).
            self.part.events.append(
                change_events.ask_removed(self.part.rm_id, ph, ChangeDetail.REQUEST_TIMEOUT, now)
            )
        for ask in [a for a in app.sorted_asks() if a.placeholder or hard]:
            self.part.cancel_ask(app, ask.key, now, timeout=True)
            if ask.placeholder:
                gang.pending_placeholder_dropped(ask)
                why = "placeholder timeout: pending placeholder removed"
            else:
                why = "application failed: its gang was not allocated within the placeholder timeout (Hard)"
            self.releases.append(
                Released(self.part.key, app.app_id, ask.key, Termination.TIMEOUT, why, ask.placeholder)
            )
        if gang.allocated_count == 0:  # nothing to wait for: move on now
            self._after_last_placeholder(app, now)

    def _after_last_placeholder(self, app: Application, now: float) -> None:
        """A timed-out gang moves on once its last placeholder is gone."""
        if app.state == AppState.RESUMING:
            self.part.lifecycle.transition(
                app, AppEvent.RUN, now, "placeholders released: real tasks scheduled"
            )
        elif app.state == AppState.FAILING:
            self.part.lifecycle.transition(app, AppEvent.FAIL, now, TIMEOUT_REASON)
            applications.retire(self.part, app)


def _held_placeholders(app: Application) -> list[Allocation]:
    """Placeholders nobody has asked the RM to release yet (not given up, replaced or preempted)."""
    return [
        a for a in app.allocations.values() if a.placeholder and not a.released_by_core and not a.releasing
    ]
