"""Why an ask is still pending ("why is this pending?"), as the cycle finds it: kept on the ask for
the REST API (its pending reason, how often and since when), a REQUEST event when the reason changes,
and for its RM the way it waits (the Kubernetes shim shows it on the pod: Unschedulable for the
autoscaler, or SchedulingSkipped)."""

from __future__ import annotations

from core.constraints.ask import NO_CONSTRAINTS
from core.objects import change_events
from core.objects.allocation import Allocation
from core.objects.application import Application
from core.objects.queue import Queue
from core.scheduler.cycle.state import Cycle
from core.scheduler.fit.checks import insufficient
from core.scheduler.node_search import why_no_node
from core.scheduler.partition import Partition
from core.scheduler.results import SchedulingState, Waiting
from core.ugm.tracker import Block

TALLY_EVERY = 10.0  # seconds between two node-by-node tallies of why an ask finds no node (a full pass)


def pending(partition: Partition, ask: Allocation, why: str, now: float, waiting: Waiting) -> None:
    """Note why the ask waits; when that changes, a REQUEST event and, for its RM, the way it waits
    (the Kubernetes shim shows it on the pod: Unschedulable for the autoscaler, or SchedulingSkipped)."""
    if why != ask.pending_reason:
        partition.events.append(change_events.ask_pending(partition.rm_id, ask, why, now))
        waits(partition, ask, why, waiting)
    ask.note_pending(why, now)


def waits(partition: Partition, ask: Allocation, why: str, waiting: Waiting) -> None:
    partition.scheduling_states.append(SchedulingState(ask.application_id, ask.key, waiting, why))
    ask.waiting = waiting.value
    if waiting is Waiting.NO_NODE:
        ask.triggered_scale_up = True


def note_app_limit(partition: Partition, app: Application, cycle: Cycle) -> None:
    ask = cycle.next_ask(app)
    if ask is not None:
        full = [q for q in app.queue.path_to_root() if 0 < q.max_applications <= q.running_apps]
        where = ""
        if full:
            where = f"queue {full[0].full_name} runs its maxapplications ({full[0].max_applications})"
        elif (blocked := partition.user_groups.run_block(app)) is not None:
            where = blocked.describe()
        why = f"application {app.app_id} may not start yet: {where or 'application limit'}"
        pending(partition, ask, why, cycle.now, Waiting.HELD)


def note_user_limit(partition: Partition, ask: Allocation, blocked: Block, now: float) -> None:
    why = blocked.describe()
    if why != ask.pending_reason:  # an event per change, not per cycle
        partition.events.append(change_events.ask_over_limit(partition.rm_id, ask, why, now))
        waits(partition, ask, why, Waiting.HELD)
    ask.note_pending(why, now)


def note_headroom(partition: Partition, leaf: Queue, ask: Allocation, now: float) -> None:
    found = leaf.headroom_shortfall(ask.resource, not ask.required_node, ask.held)
    if found is None:
        return
    queue, short = found
    limit = queue.max
    assert limit is not None  # a shortfall is always against a max
    used = queue.committed(ask.resource if ask.held else None) if queue.held else queue.allocated
    room = {k: max(0, limit[k] - used.get(k)) for k in short}
    what = "the cluster's capacity" if queue.is_root else f"queue {queue.full_name}'s max"
    # Root's max is the nodes' room: more nodes would help there (YuniKorn's outstanding requests
    # leave it out too), a queue's max they would not.
    waiting = Waiting.NO_NODE if queue.is_root else Waiting.HELD
    pending(partition, ask, f"over {what}: asks {short}, room left {room}", now, waiting)


def note_no_room(partition: Partition, ask: Allocation, now: float, beyond_nodes: bool, cycle: Cycle) -> None:
    waiting = Waiting.NO_NODE
    if beyond_nodes:
        # Every node lacks each type the ask wants more of than any node has: said without a pass over
        # the nodes, in the tally's words (as kube-scheduler, a node counts once per reason).
        largest = partition.largest_node.most()
        total = len(partition.nodes)
        short = ", ".join(
            f"{total} {insufficient(k)}" for k, v in sorted(ask.resource.items()) if v > largest.get(k, 0)
        )
        message = f"no node has room for it (0/{total} nodes are available: {short})"
    elif ask.required_node:  # more nodes would not help it (YuniKorn reports no such ask to autoscaling)
        message = f"required node {ask.required_node} has no room (or is not schedulable)"
        waiting = Waiting.HELD
    elif ask.ref in partition.reservations:
        message = f"no node has room; reserved node {partition.reservations[ask.ref]}"
    else:
        if now - ask.tallied_at >= TALLY_EVERY:
            alike = cycle.key(partition, ask)
            tally = cycle.no_room.get(alike, "") if alike is not None else ""
            if not tally:
                tally = why_no_node(partition, ask)
                if alike is not None and alike in cycle.no_room:
                    cycle.no_room[alike] = tally  # the next ask alike fails the same way this cycle
            ask.no_node_tally, ask.tallied_at = tally, now
        where = " that it may run on" if ask.constraints is not NO_CONSTRAINTS else ""
        message = f"no node has room for it{where} ({ask.no_node_tally})"
    pending(partition, ask, message, now, waiting)
