"""The cluster context: every RM's partitions, and the synchronous application of commands.

This is the state the engine owns. It is plain Python with an injected clock, so tests and property
checks drive it directly: apply commands, run `schedule`, read `drain_results`.
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter
from typing import TypeVar

import structlog

from core.config.input_limits import DEFAULT_LIMITS
from core.config.schema import PartitionConfig, SchedulerConfig
from core.events import DEFAULT_CAPACITY as DEFAULT_EVENT_CAPACITY
from core.events import EventLog
from core.log_digest import RejectionDigest, WarningLimiter
from core.objects.allocation import Allocation
from core.objects.application import AppState
from core.objects.partition_key import PartitionKey
from core.objects.rejected_apps import RejectedApplication
from core.scheduler import rm_configs
from core.scheduler.app_gang import gang_of
from core.scheduler.commands import (
    AppAdd,
    AppRemove,
    Command,
    NodeAction,
    NodeChange,
    PreviewConfig,
    RegisterRM,
    ReleaseRequest,
    UnregisterRM,
    UpdateAllocations,
    UpdateApplications,
    UpdateConfig,
    UpdateNodes,
)
from core.scheduler.cycle.scheduling import allocate
from core.scheduler.early_asks import EarlyAsks
from core.scheduler.history import History
from core.scheduler.metrics import SchedulerMetrics
from core.scheduler.node_events import node_events, node_state
from core.scheduler.partition import Partition, applications
from core.scheduler.partition.removal import release_by_rm, remove_application, remove_node
from core.scheduler.partition.resize import resize
from core.scheduler.preemption.dry_run import QuotaPreview
from core.scheduler.rejection import Rejection, unknown_application
from core.scheduler.results import AppUpdate, RejectedItem, Released, ResultBatch, Termination

_Item = TypeVar("_Item", NodeChange, AppAdd, AppRemove, Allocation, ReleaseRequest)  # of an RM's request

log = structlog.get_logger("pykorn.cluster")
_ADDS = (NodeAction.CREATE, NodeAction.CREATE_DRAIN)


class ClusterContext:
    def __init__(
        self,
        clock: Callable[[], float],
        event_capacity: int = DEFAULT_EVENT_CAPACITY,
        max_pending_asks: int = DEFAULT_LIMITS.max_pending_asks_per_application,
        early: EarlyAsks | None = None,
    ) -> None:
        self.clock = clock
        # Limits.max_pending_asks_per_application, checked here against the asks the core holds, as
        # each ask of a message is added: whatever mix of releases, refusals and asks came before it
        # (rmproxy checks it early too, on what it has seen, which a refused release can mislead).
        self.max_pending_asks = max_pending_asks
        self.configs: dict[str, SchedulerConfig] = {}
        self.partitions: dict[PartitionKey, Partition] = {}
        self._results: dict[str, ResultBatch] = {}
        self.events = EventLog(event_capacity)
        self.metrics = SchedulerMetrics()
        self.unfinished = False  # the last schedule() left a partition's cycle unfinished (out of time)
        # Skip partitions nothing changed in since their last cycle ran out of work (Partition.stale).
        # The engine turns it on: its ticks mark every partition stale, which is what brings the
        # delays in (reservations, preemption, parked asks' timers). Off, every call schedules all.
        self.skip_quiet_partitions = False
        self.start_time = clock()
        self.history = History()
        self.history.record(self.start_time, 0, 0)  # the first record: a fresh core runs nothing
        self.rm_build: dict[str, dict[str, str]] = {}  # by rmID: its buildInfo and its rmId
        self.warnings = WarningLimiter()  # about what an RM sent: a few lines a second at most, per RM
        self._rejections = RejectionDigest()  # items of the command being applied that were refused
        self.early = early if early is not None else EarlyAsks()  # asks before their application
        # Called with a reason whenever an RM's state is dropped (it left, or registered again): the
        # daemon gives the memory back to the system there (core.server.memory).
        self.on_state_dropped: Callable[[str], None] | None = None
        # Called whenever an RM's configuration is put in force: (rmID, "registered" or "updated", the
        # text in force before or "" when none was, the text now, who sent it). The history records it.
        self.on_config_applied: Callable[[str, str, str, str, str], None] | None = None

    # Results ----------------------------------------------------------------------------------
    def _out(self, rm_id: str) -> ResultBatch:
        if (batch := self._results.get(rm_id)) is None:
            batch = self._results[rm_id] = ResultBatch(rm_id)
        return batch

    def drain_results(self) -> list[ResultBatch]:
        for part in self.partitions.values():
            if part.events:
                self.events.extend(part.events)
                part.events.clear()
            if part.scheduling_states:
                self._out(part.rm_id).scheduling_states.extend(part.scheduling_states)
                part.scheduling_states.clear()
            preempted = part.preemption.drain()
            if preempted:
                self._out(part.rm_id).released.extend(
                    Released(
                        part.key, victim.application_id, victim.key, Termination.PREEMPTED_BY_SCHEDULER, why
                    )
                    for victim, why in preempted
                )
            gangs = part.gangs
            if gangs.releases:
                self._out(part.rm_id).released.extend(gangs.releases)
                self._count_placeholder_releases(gangs.releases)
                gangs.releases.clear()
            if gangs.allocations:
                self._out(part.rm_id).new_allocations.extend(gangs.allocations)
                gangs.allocations.clear()
            changes = part.lifecycle.drain_changes()
            if changes:
                self._out(part.rm_id).updated_apps.extend(
                    AppUpdate(c.app_id, c.state, c.time, c.message) for c in changes
                )
        batches = list(self._results.values())
        self._results = {}
        return batches

    def _count_placeholder_releases(self, releases: list[Released]) -> None:
        counts = self.metrics.placeholder_releases
        for release in releases:
            if release.placeholder:
                counts[
                    "replaced" if release.termination == Termination.PLACEHOLDER_REPLACED else "timeout"
                ] += 1

    # Dispatch ---------------------------------------------------------------------------------
    def apply(self, command: Command) -> None:
        match command:
            case RegisterRM():
                rm_configs.register(self, command)
            case UnregisterRM():
                rm_configs.unregister(self, command.rm_id)
            case UpdateConfig():
                rm_configs.update_config(self, command)
            case PreviewConfig():
                command.reply(self.preview_config(command.rm_id, command.config))
            case UpdateNodes():
                for change in command.changes:
                    self._isolated(self._node_change, command.rm_id, change)
            case UpdateApplications():
                for add in command.adds:
                    self._isolated(self._add_app, command.rm_id, add)
                for remove in command.removes:
                    self._isolated(self._remove_app, command.rm_id, remove)
            case UpdateAllocations():
                for alloc in command.allocations:
                    self._isolated(self._add_allocation, command.rm_id, alloc)
                for release in command.releases:
                    self._isolated(self._release, command.rm_id, release)
        # Each item refused is answered on its own; the log gets a line per kind of reason.
        self._rejections.log(self.warnings, log, command.rm_id)
        # Only what an RM sends changes its partitions: the others need no cycle for it.
        for key, part in self.partitions.items():
            if key.rm_id == command.rm_id:
                part.stale = True
                part.open_cycle = None  # the next cycle starts afresh, with what the RM sent

    def _isolated(self, handle: Callable[[str, _Item], None], rm_id: str, item: _Item) -> None:
        """One item of a request, on its own: a fault of the core's while handling it (not a refusal,
        which the handler answers itself) refuses that item with the reason and never the items
        beside it. Logged with its trace: it is a defect to mend."""
        try:
            handle(rm_id, item)
        except Exception as exc:
            log.error("an item failed; refused", rmID=rm_id, item=type(item).__name__, exc_info=exc)
            reason = f"the core failed handling it: {exc!r}"
            out = self._out(rm_id)
            if isinstance(item, NodeChange):
                out.rejected_nodes.append(RejectedItem(item.node_id, "", reason))
            elif isinstance(item, AppAdd | AppRemove):
                out.rejected_apps.append(RejectedItem("", item.app_id, reason))
            elif isinstance(item, Allocation):
                out.rejected_allocations.append(RejectedItem(item.key, item.application_id, reason))
            else:
                out.rejected_allocations.append(RejectedItem(item.key, item.app_id, reason))

    def schedule(self, budget: int) -> int:
        """Allocate as much as fits, at most `budget` allocations over all partitions."""
        now = self.clock()
        made = 0
        self.unfinished = False
        latency = self.metrics.timings.scheduling
        for part in self.partitions.values():
            if made >= budget:
                break
            if not part.nodes:
                continue  # as YuniKorn: a partition without nodes is not scheduled, nor timed
            started = perf_counter()
            if (self.skip_quiet_partitions and not part.stale) or not part.root.has_pending():
                # Nothing changed there since its last cycle ran out of work (or it has none): timed
                # as YuniKorn times its idle partitions, so that its latency panels show them.
                latency.observe(perf_counter() - started)
                continue
            new = allocate(part, now, budget - made, self.metrics.timings)
            self.unfinished = self.unfinished or part.unfinished
            # Done until something changes, unless it ran out of time or of the slice's allocations.
            part.stale = part.unfinished or len(new) >= budget - made
            latency.observe(perf_counter() - started)
            if new:
                self._out(part.rm_id).new_allocations.extend(new)
                made += len(new)
                for alloc in new:
                    self.metrics.allocation_latency.observe(max(0.0, now - alloc.create_time))
        self.metrics.count("allocated", made)
        return made

    def tick(self) -> None:
        """Advance time-driven state (application timers) to the clock's now; keep the history."""
        now = self.clock()
        for key, asks in self.early.expired(now):  # their application never came
            waited = f" (its ask waited {self.early.hold_seconds:g}s for it)"
            for alloc in asks:
                self._refuse(key.rm_id, alloc, unknown_application(alloc.application_id, key.name) + waited)
        for part in self.partitions.values():
            part.tick(now)
            part.stale = True  # timers: delays may have passed (reservations, preemption, parked asks)
        if self.history.due(now):
            parts = self.partitions.values()
            running = sum(1 for p in parts for a in p.applications.values() if a.state == AppState.RUNNING)
            held = sum(len(a.allocations) for p in parts for a in p.applications.values())
            self.history.record(now, running, held)

    def has_pending(self) -> bool:
        return any(p.root.has_pending() for p in self.partitions.values())

    def is_registered(self, rm_id: str) -> bool:
        return rm_id in self.configs

    # RMs and configuration ----------------------------------------------------------------------
    def new_partition(self, key: PartitionKey, config: PartitionConfig, now: float) -> Partition:
        return Partition(key, config, now, self.clock, self.metrics.app_counts)  # the counts outlive it

    def drop_rm_state(self, rm_id: str) -> bool:
        """Forget the RM's partitions and results; True when it had any."""
        keys = [k for k in self.partitions if k.rm_id == rm_id]
        self.early.forget_rm(rm_id)
        for key in keys:
            del self.partitions[key]
        self._results.pop(rm_id, None)
        return bool(keys)

    def preview_config(self, rm_id: str, config: SchedulerConfig) -> list[QuotaPreview]:
        return rm_configs.preview(self, rm_id, config)

    def _partition(self, rm_id: str, key: PartitionKey) -> Partition:
        part = self.partitions.get(key)
        if part is None or key.rm_id != rm_id:
            raise Rejection(f"partition {key.name} does not exist for resource manager {rm_id}")
        return part

    # Nodes ------------------------------------------------------------------------------------
    def _node_change(self, rm_id: str, change: NodeChange) -> None:
        out = self._out(rm_id)
        try:
            part = self._partition(rm_id, change.partition)
            before = node_state(part, change.node_id)
            self._apply_node_change(part, change)
        except Rejection as exc:
            out.rejected_nodes.append(RejectedItem(change.node_id, "", str(exc)))
            self._rejections.add((change.node_id,), str(exc), "node changes")
            if change.action in _ADDS and change.partition not in self.partitions:
                self.metrics.nodes_failed += 1  # YuniKorn's failed nodes: one for a partition not there
            return
        out.accepted_nodes.append(change.node_id)
        part.events.extend(node_events(rm_id, part, change, before, self.clock()))

    def _apply_node_change(self, part: Partition, change: NodeChange) -> None:
        action = change.action
        if action in (NodeAction.CREATE, NodeAction.CREATE_DRAIN):
            if change.capacity is None:
                raise Rejection(f"node {change.node_id} reports no schedulable resource")
            part.add_node(change.node_id, change.capacity, change.attributes, action == NodeAction.CREATE)
        elif action == NodeAction.UPDATE:
            part.update_node(change.node_id, change.capacity, change.attributes)
        elif action == NodeAction.DRAIN:
            part.node(change.node_id).schedulable = False
        elif action == NodeAction.DRAIN_TO_SCHEDULABLE:
            node = part.node(change.node_id)
            if node.schedulable:
                raise Rejection(f"node {change.node_id} is not draining")
            node.schedulable = True
            part.parking.everything()
        elif action == NodeAction.DECOMMISSION:
            released = remove_node(part, change.node_id, self.clock())
            self.metrics.nodes_decommissioned += 1
            self._report_released(part, released, Termination.STOPPED_BY_RM, f"Node {change.node_id} Removed")
            self._complete_idle_apps(part, released)

    # Applications -----------------------------------------------------------------------------
    def _add_app(self, rm_id: str, add: AppAdd) -> None:
        out = self._out(rm_id)
        try:
            part = self._partition(rm_id, add.partition)
        except Rejection as exc:
            out.rejected_apps.append(RejectedItem("", add.app_id, str(exc)))
            self._rejections.add((add.app_id,), str(exc), "applications")
            return
        now = self.clock()
        submissions = self.metrics.app_submissions
        try:
            gang = gang_of(add, now, lambda what: self._warn_app(rm_id, add.app_id, what))
            app = applications.add_application(
                part, add.app_id, add.queue, add.user, add.groups, add.tags, now, gang
            )
        except Rejection as exc:
            out.rejected_apps.append(RejectedItem("", add.app_id, str(exc)))
            self._rejections.add((add.app_id,), str(exc), "applications")
            for alloc in self.early.take(part.key, add.app_id):
                self._refuse(rm_id, alloc, f"application {add.app_id} was rejected: {exc}")
            if add.app_id:
                duplicate = add.app_id in part.applications  # a duplicate ID keeps its live record
                refused = RejectedApplication(
                    add.app_id, add.queue, add.user, add.groups, dict(add.tags), str(exc), now
                )
                applications.record_rejection(part, refused, keep=not duplicate)
                asked = part.find_queue(add.queue) if add.queue and not duplicate else None
                if asked is not None:  # refused by the queue it asked for (its ACL, its state)
                    self.metrics.app_counts.rejected(asked.full_name)
            submissions["rejected"] += 1
            return
        # As YuniKorn's: "new" when the application gets its queue (SetQueue), so a refused one is
        # counted rejected only ("accepted" when it enters Accepted: core.objects.app_counts).
        submissions["new"] += 1
        out.accepted_apps.append(add.app_id)
        for alloc in self.early.take(part.key, add.app_id):  # they came first: added now, in order
            self._isolated(self._add_allocation, rm_id, alloc)
        log.debug("application accepted", rmID=rm_id, applicationID=add.app_id, queue=app.queue.full_name)

    def _warn_app(self, rm_id: str, app_id: str, what: str) -> None:
        self.warnings.warn(
            log, "application setting not used as sent", rm_id, applicationID=app_id, detail=what
        )

    def _remove_app(self, rm_id: str, remove: AppRemove) -> None:
        try:
            part = self._partition(rm_id, remove.partition)
            if remove.app_id not in part.applications:
                self.early.take(part.key, remove.app_id)  # its asks came before it: gone with it
                # Nothing to do, as YuniKorn: RMs remove applications that already completed, and a
                # RejectedApplication would make a Kubernetes shim fail the application.
                log.info("removal of an unknown application ignored", rmID=rm_id, applicationID=remove.app_id)
                return
            released = remove_application(part, remove.app_id, self.clock())
        except Rejection as exc:
            self._out(rm_id).rejected_apps.append(RejectedItem("", remove.app_id, str(exc)))
            return
        self._report_released(
            part, released, Termination.STOPPED_BY_RM, f"Application {remove.app_id} Removed"
        )
        log.debug("application removed", rmID=rm_id, applicationID=remove.app_id, released=len(released))

    # Allocations ------------------------------------------------------------------------------
    def _add_allocation(self, rm_id: str, alloc: Allocation) -> None:
        now = self.clock()
        try:
            part = self._partition(rm_id, alloc.partition)
            if alloc.node_id and resize(part, alloc, now):
                return  # one it holds already, now at this size (resized in place): nothing to confirm
            if alloc.foreign:
                part.add_foreign(alloc)
                return
            app_id = alloc.application_id
            if app_id and app_id not in part.applications:
                refused = part.rejected.get(app_id)
                if refused is not None:  # after its application, which was rejected: not held for it
                    raise Rejection(f"application {app_id} was rejected: {refused.message}")
                if self.early.hold(part.key, alloc, now):
                    return  # before its application: added when it comes (core.scheduler.early_asks)
            if alloc.node_id:
                part.add_existing(alloc, now)
                # Confirm an RM-reported allocation as YuniKorn does, so the RM knows it is counted.
                self._out(rm_id).new_allocations.append(alloc)
            else:
                self._check_pending(part, alloc.application_id, alloc.key)
                part.add_ask(alloc, now)
        except Rejection as exc:
            self._refuse(rm_id, alloc, str(exc))

    def _refuse(self, rm_id: str, alloc: Allocation, reason: str) -> None:
        self.metrics.count("rejected")
        self._out(rm_id).rejected_allocations.append(RejectedItem(alloc.key, alloc.application_id, reason))
        self._rejections.add((alloc.application_id, alloc.key), reason, "allocations")

    def _check_pending(self, part: Partition, app_id: str, key: str) -> None:
        """Over the limit: refused. Pending are the asks not yet placed, and the real asks of a gang
        waiting for their placeholder's place (they go back to pending if it goes). A key it knows is
        left to add_ask, which refuses it as a duplicate."""
        app = part.applications.get(app_id)
        if app is None:
            return
        pending = len(app.asks) + len(app.replacing)
        if pending >= self.max_pending_asks and not app.knows_key(key):
            raise Rejection(
                f"application {app_id} already has {pending:,} pending asks, the limit "
                "(max_pending_asks_per_application): send this ask again once some are allocated or released"
            )

    def _release(self, rm_id: str, release: ReleaseRequest) -> None:
        try:
            part = self._partition(rm_id, release.partition)
            if release.app_id not in part.applications and self.early.drop(
                part.key, release.app_id, release.key
            ):
                return  # an ask held for its application: taken back before it was ever added
            released = release_by_rm(part, release.app_id, release.key, self.clock(), release.termination)
        except Rejection as exc:
            self._out(rm_id).rejected_allocations.append(RejectedItem(release.key, release.app_id, str(exc)))
            self._rejections.add((release.app_id, release.key), str(exc), "releases")
            return
        if release.termination == Termination.TIMEOUT:
            return  # the RM confirms what the core asked for: nothing to tell it back (as YuniKorn)
        self._report_released(
            part, released, Termination.STOPPED_BY_RM, "allocation remove as per RM request"
        )

    def _report_released(
        self, part: Partition, released: list[Allocation], termination: Termination, message: str
    ) -> None:
        if not released:
            return
        self.metrics.count("released", len(released))
        self._out(part.rm_id).released.extend(
            Released(part.key, a.application_id, a.key, termination, message) for a in released
        )

    def _complete_idle_apps(self, part: Partition, released: list[Allocation]) -> None:
        now = self.clock()
        for app_id in {a.application_id for a in released}:
            app = part.applications.get(app_id)
            if app is not None and app.is_idle():
                part.lifecycle.complete_if_idle(app, now)
