"""One scheduling cycle over a partition.

First the reservations: a reserved ask goes to its node once that has room, or to any other node
with room. Then everything else in order: queues (fair), applications (the leaf's policy), asks
(priority, then age), nodes (the partition's node index). An ask that fits no node's free room but
fits some node's capacity reserves the best such node once it has waited RESERVATION_DELAY; a
reserved node takes no other ask.
"""

from __future__ import annotations

from time import perf_counter

from core.objects import change_events
from core.objects.allocation import Allocation
from core.objects.application import Application, AppState
from core.objects.node import Node
from core.objects.parking import Why
from core.objects.queue import Queue
from core.policies.queue_sort import sorted_children
from core.scheduler.cycle import pending_reasons, pod_groups
from core.scheduler.cycle.gangs import held_reason, replace_placeholders
from core.scheduler.cycle.parking import RESERVATION_DELAY, park
from core.scheduler.cycle.state import Cycle
from core.scheduler.metrics import SchedulingTimings
from core.scheduler.node_search import admits_now, find_node, fit_for
from core.scheduler.partition import Partition
from core.scheduler.preemption import inter_queue, required_node
from core.scheduler.results import Waiting

MAX_PREEMPTION_ATTEMPTS = 10  # asks that may look for victims in one cycle, as YuniKorn
# A cycle that has tried asks for this long stops, and the engine runs the rest in its next slice after
# the event loop had a turn: asks tried and not placed are parked meanwhile, so the next slice goes on
# with the others. (Slices are also bounded by the allocations they make.)
MAX_CYCLE_SECONDS = 0.05
CHECK_TIME_EVERY = 16  # asks tried between two looks at the time


def _may_allocate(partition: Partition, app: Application, now: float) -> bool:
    # An application still Accepted must fit under maxapplications before its first allocation: its
    # queues', and its user's and group's on the path.
    if app.state != AppState.ACCEPTED:
        return True
    queue_full = not app.queue.can_run_another_app()
    if queue_full != app.held_by_queue:  # held, or free again: say so once per change (as YuniKorn)
        app.held_by_queue = queue_full
        why = ""
        if queue_full:
            full = next(q for q in app.queue.path_to_root() if 0 < q.max_applications <= q.running_apps)
            why = f"queue {full.full_name} runs its maxapplications ({full.max_applications})"
        partition.events.append(
            change_events.app_runnable_in_queue(partition.rm_id, app.app_id, not queue_full, why, now)
        )
    # Both are looked at every time, as YuniKorn's updateRunnableStatus: each says when it changes.
    blocked = partition.user_groups.run_block(app)
    if (blocked is not None) != app.held_by_limit:
        app.held_by_limit = blocked is not None
        why = blocked.describe() if blocked is not None else ""
        partition.events.append(
            change_events.app_runnable(partition.rm_id, app.app_id, blocked is None, why, now)
        )
    return not queue_full and blocked is None


def _fit_score(ask: Allocation, node: Node) -> float:
    """How far the node's free room is from the ask: 0 fits; 1 per type with nothing free."""
    score = 0.0
    for name, want in ask.resource.items():
        if want <= 0:
            continue
        free = node.available.get(name)
        if free < want:
            score += (want - max(free, 0)) / want
    return score


def _reserve_candidate(partition: Partition, ask: Allocation) -> Node | None:
    best: Node | None = None
    best_score = 0.0
    fit = fit_for(partition, ask)
    for node in partition.node_index:
        if not (node.schedulable or node.cordoned) or node.reservations:
            continue
        if not node.fits_capacity(ask.resource):
            continue
        if not fit.admits(node):
            continue
        score = _fit_score(ask, node)
        if best is None or score < best_score:
            best, best_score = node, score
    return best


def _serve_reservations(partition: Partition, now: float, budget: int, cycle: Cycle) -> list[Allocation]:
    made: list[Allocation] = []
    for ref, node_id in list(partition.reservations.items()):
        if len(made) >= budget:
            break
        app = partition.applications.get(ref[0])
        ask = app.asks.get(ref[1]) if app is not None else None
        if app is None or ask is None:
            partition.reservations.release(ref)
            continue
        if ask.pod_group and app.pod_groups[ask.pod_group].waits_together:
            # A gang member's room is taken with its group's, never alone (cycle.pod_groups): once its
            # victims are gone the node goes back to the group's plan, which passes reserved nodes by.
            if partition.nodes[node_id].fits(ask.resource):
                partition.reservations.release(ref)
            continue
        if (
            not _may_allocate(partition, app, now)
            or partition.user_groups.resource_block(app, ask.resource) is not None
            or not app.queue.fits_headroom(ask.resource, not ask.required_node, ask.held)
        ):
            continue
        node = partition.nodes[node_id]
        if node.fits(ask.resource) and admits_now(partition, node, ask):
            partition.reservations.release(ref)
            partition.allocate(ask, node, now)
            made.append(ask)
            continue
        if ask.required_node:
            required_node.preempt_for(partition, ask, node, now)  # it can only ever run there
            continue
        # Any other node with room: unless one alike found none this cycle (room only shrinks within it).
        alike = cycle.key(partition, ask)
        if alike is not None and alike in cycle.no_room:
            continue
        other = find_node(partition, ask)
        if other is not None:
            partition.reservations.release(ref)
            partition.allocate(ask, other, now)
            made.append(ask)
        elif alike is not None:
            cycle.no_room.setdefault(alike, "")
    return made


def _try_required_node(partition: Partition, ask: Allocation, now: float) -> bool:
    """A required-node ask (a DaemonSet pod) goes to its node or reserves it at once."""
    node = partition.nodes.get(ask.required_node)
    if node is None:
        return False
    # Normal reservations give way to a required-node ask on their node.
    for ref in [r for r in node.reservations if r != ask.ref]:
        other = partition.applications.get(ref[0])
        other_ask = other.asks.get(ref[1]) if other is not None else None
        if other_ask is None or not other_ask.required_node:
            partition.reservations.release(ref)
    if node.fits(ask.resource) and admits_now(partition, node, ask):
        partition.allocate(ask, node, now)
        return True
    if node.fits_capacity(ask.resource):  # as YuniKorn's node.Reserve: never for what cannot fit
        partition.reservations.reserve(ask, node)
        required_node.preempt_for(partition, ask, node, now)
    return False


def _select(partition: Partition, queue: Queue, cycle: Cycle) -> tuple[Queue, Application, Allocation] | None:
    """Descend in the current sort order to the first leaf, application and ask not yet tried."""
    if queue.full_name in cycle.exhausted:
        return None
    if queue.is_leaf:
        # Applications with nothing left to try this cycle leave its order as they are passed, so
        # each pick walks past them once, not once per allocation: within a slice none of these
        # comes back (asks tried stay tried, and maxapplications, limits and backoff only tighten at
        # one time; a cycle resumed later makes its order afresh, see allocate).
        order = cycle.applications(queue)
        done: list[Application] = []
        found = None
        for _, app in order.entries():
            if app.backoff_until > cycle.now:
                done.append(app)  # backing off (application.unschedasks.backoff)
                continue
            if not _may_allocate(partition, app, cycle.now):
                pending_reasons.note_app_limit(partition, app, cycle)
                done.append(app)
                continue
            ask = cycle.next_ask(app)
            if ask is not None:
                found = queue, app, ask
                break
            done.append(app)
        for app in done:
            order.drop(app)
        if found is not None:
            return found
    else:
        for child in sorted_children(queue):
            found = _select(partition, child, cycle)
            if found is not None:
                return found
    cycle.exhausted.add(queue.full_name)
    return None


def allocate(
    partition: Partition, now: float, budget: int, timings: SchedulingTimings | None = None
) -> list[Allocation]:
    """Allocate as much as fits, at most `budget` allocations; returns the new allocations.

    After every allocation the order is taken again from the top, so usage just added counts:
    two queues with plenty pending share the cluster instead of the first one taking it all.
    `timings` (the metrics): how long picking each ask, finding it a node and preempting took.
    """
    timings = timings or _UNTIMED
    cycle_started = perf_counter()
    tries = 0
    partition.unfinished = False
    # What changed since the last cycle may let parked asks run.
    partition.parking.wake(now, turns=MAX_PREEMPTION_ATTEMPTS)
    # A cycle that ran out of time goes on where it stopped, unless its RM sent something meanwhile:
    # so asks that are never parked cannot keep it from the rest, slice after slice.
    cycle = partition.open_cycle if isinstance(partition.open_cycle, Cycle) else Cycle(now)
    if cycle.now != now:
        # Resumed in a later slice: time moved (a backoff may be over), asks may have woken, a tick
        # may have loosened a limit. The applications the cycle dropped as having nothing left to try
        # are looked at again: its order is made afresh (the cursors keep what was tried).
        cycle.app_orders.clear()
    cycle.now = now
    cycle.app_sorting = timings.sorting["app"]
    partition.open_cycle = None
    made = _serve_reservations(partition, now, budget, cycle) if partition.reservations else []
    if partition.gangs.apps:
        replace_placeholders(partition, now)
    if made:
        # Reservations served gave their nodes back: asks parked that may reserve one wake now, to be
        # tried in this cycle as they would be without parking.
        partition.parking.wake(now)
    preemption_attempts = MAX_PREEMPTION_ATTEMPTS
    while len(made) < budget:
        started = perf_counter()
        found = _select(partition, partition.root, cycle)
        timings.sorting["queue"].observe(perf_counter() - started)
        if found is None:
            break
        leaf, app, ask = found
        if ask.pod_group and app.pod_groups[ask.pod_group].waits_together:
            together, looked = _pod_group_turn(
                partition, leaf, app, ask, cycle, preemption_attempts > 0, timings
            )
            preemption_attempts -= looked
            if together:
                made.extend(together)
                cycle.allocated(leaf, app)
            tries += 1
            if _out_of_time(partition, cycle, tries, cycle_started):
                break
            continue
        if ask.task_group and _waits_for_placeholder(app, ask):
            pending_reasons.pending(partition, ask, held_reason(app, ask), now, Waiting.HELD)
            cycle.tried(app)
            continue
        placed = beyond_nodes = False
        held_by: Why | None = None  # what kept it from a node, when parking it until that changes may do
        may_preempt = False
        blocked = partition.user_groups.resource_block(app, ask.resource)
        if blocked is not None:
            # Only that user's (group's) own allocations elsewhere can make room under its limit: the
            # plan counts those alone for it (inter_queue).
            pending_reasons.note_user_limit(partition, ask, blocked, now)
            held_by = Why.LIMIT
            may_preempt = _may_preempt(partition, leaf, ask, now)
        elif partition.reservations and ask.ref in partition.reservations:
            node_id = partition.reservations[ask.ref]
            pending_reasons.pending(
                partition, ask, f"reserved node {node_id}, waiting for room there", now, Waiting.NO_NODE
            )
        else:
            if leaf.fits_headroom(ask.resource, not ask.required_node, ask.held):
                if ask.required_node:
                    placed = _try_required_node(partition, ask, now)
                else:
                    placed = _try_nodes(partition, ask, now, cycle, timings)
                    # Bigger than every node: no node, reservation or victims can make room for it.
                    beyond_nodes = not placed and not partition.largest_node.holds(ask.resource)
                if not placed:
                    pending_reasons.note_no_room(partition, ask, now, beyond_nodes, cycle)
                    held_by = Why.ROOM
                    if not ask.required_node:  # as YuniKorn: a required node's ask does not count
                        cycle.no_node(leaf, app)
            else:
                pending_reasons.note_headroom(partition, leaf, ask, now)
                held_by = Why.LIMIT
            # Preemption is tried when no node had room, and also when the headroom check failed:
            # a full cluster is exactly when a queue below its guarantee needs it.
            may_preempt = not placed and not beyond_nodes and _may_preempt(partition, leaf, ask, now)
        turn = False  # its turn to look for victims did not come: it gets one in a later cycle
        if may_preempt:
            if preemption_attempts > 0:
                preemption_attempts -= 1
                _preempt(partition, leaf, ask, now, timings)
            else:
                turn = True
        if placed:
            made.append(ask)
            cycle.allocated(leaf, app)
        elif held_by is None or not park(
            partition, leaf, app, ask, held_by, now, timers=not beyond_nodes, turn=turn
        ):
            cycle.tried(app)  # parked, it left the application's ready asks: the cursor stays
        tries += 1
        if _out_of_time(partition, cycle, tries, cycle_started):
            break
    return made


def _out_of_time(partition: Partition, cycle: Cycle, tries: int, started: float) -> bool:
    """Whether the cycle has run its time (looked at every CHECK_TIME_EVERY tries): the rest then goes
    in the next slice, after the event loop had a turn."""
    if tries % CHECK_TIME_EVERY or perf_counter() - started <= MAX_CYCLE_SECONDS:
        return False
    partition.unfinished = True
    partition.open_cycle = cycle
    return True


def _preempt(
    partition: Partition, leaf: Queue, ask: Allocation, now: float, timings: SchedulingTimings
) -> None:
    started = perf_counter()
    inter_queue.preempt_for(partition, leaf, ask, now)
    timings.try_preemption.observe(perf_counter() - started)


def _pod_group_turn(
    partition: Partition,
    leaf: Queue,
    app: Application,
    ask: Allocation,
    cycle: Cycle,
    may_look: bool,
    timings: SchedulingTimings,
) -> tuple[list[Allocation], bool]:
    """The ask's pod group tried as one (cycle.pod_groups): (its members placed, whether it used one of
    the cycle's attempts to look for victims). A group is tried once per cycle; its members that wait
    are parked until a change may let them all start."""
    now = cycle.now
    ref = (app.app_id, ask.pod_group)
    if ref in cycle.pod_groups_tried:
        cycle.tried(app)
        return [], False
    cycle.pod_groups_tried.add(ref)
    looked = False

    def look_for_victims(member: Allocation) -> bool:
        """Room for one more member, as for any ask (one of the cycle's attempts at most)."""
        nonlocal looked
        if looked or not may_look or not _may_preempt(partition, leaf, member, now):
            return False
        looked = True
        _preempt(partition, leaf, member, now, timings)
        return True

    group = app.pod_groups[ask.pod_group]
    attempt = pod_groups.start_together(partition, leaf, app, group, now, look_for_victims)
    if attempt.placed:
        return attempt.placed, looked
    waiting = Waiting.HELD if attempt.held_by is Why.LIMIT else Waiting.NO_NODE
    for member in attempt.waiting:
        pending_reasons.pending(partition, member, attempt.why, now, waiting)
    picked_parked = False
    for member in attempt.waiting:
        if member.key in app.parked:  # parked on its own earlier (its own timer, size, turn): afresh
            partition.parking.discard(member)
            app.unpark(member)
        if park(partition, leaf, app, member, attempt.held_by, now):
            picked_parked = picked_parked or member is ask
    if not picked_parked:
        cycle.tried(app)
    return [], looked


_UNTIMED = SchedulingTimings()  # observed and never read: callers without metrics (tests, dry runs)


def _waits_for_placeholder(app: Application, ask: Allocation) -> bool:
    """A real task of a task group is placed in a placeholder's stead, never on its own."""
    return not ask.placeholder and app.gang is not None and app.gang.waits_for_placeholder(ask)


def _may_preempt(partition: Partition, leaf: Queue, ask: Allocation, now: float) -> bool:
    return (
        partition.config.preemption.enabled
        and not ask.required_node
        and ask.allow_preempt_other  # Kubernetes' preemptionPolicy: Never clears this
        and not ask.preempting  # at most one preemption outstanding per ask
        and now - ask.create_time >= leaf.props.preemption_delay
    )


def _try_nodes(
    partition: Partition, ask: Allocation, now: float, cycle: Cycle, timings: SchedulingTimings
) -> bool:
    # Only once something failed this cycle is it worth asking whether this ask is alike.
    alike = cycle.key(partition, ask) if cycle.no_room else None
    if alike is None or alike not in cycle.no_room:
        # Timed as YuniKorn's tryNodes (evaluation: the walk over the nodes for one ask, placed or not;
        # not when an ask alike already failed this cycle and nothing is walked) and its tryNode that
        # produced the allocation (latency: placing the ask on the node the walk found).
        started = perf_counter()
        node = find_node(partition, ask)
        if node is not None:
            placing = perf_counter()
            partition.allocate(ask, node, now)
            ended = perf_counter()
            timings.try_node.observe(ended - placing)
            timings.try_node_evaluation.observe(ended - started)
            return True
        timings.try_node_evaluation.observe(perf_counter() - started)
        alike = cycle.key(partition, ask)
        if alike is not None:
            cycle.no_room.setdefault(alike, "")  # its tally, once one is made (_note_no_room)
    # Strictly after the delay, as YuniKorn's time.Since(create) > delay; never for what no node holds.
    if (
        now - ask.create_time > RESERVATION_DELAY
        and (alike is None or alike not in cycle.no_candidate)
        and partition.largest_node.holds(ask.resource)
    ):
        candidate = _reserve_candidate(partition, ask)
        if candidate is not None:
            partition.reservations.reserve(ask, candidate)
        elif alike is not None:
            cycle.no_candidate.add(alike)
    return False
