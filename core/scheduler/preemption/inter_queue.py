"""Inter-queue preemption: an ask in a queue below its guarantee takes from queues above theirs.

1. The fence root: walking up from the ask's queue, the first queue that is `preemption.policy: fence`,
   or whose max the ask would exceed, or root. Victims are looked for only below it.
2. Priorities are compared as seen across fences and offsets, in the frame of the queue where the
   ask's path and the victim's path meet: each side is lifted through the offsets of its own queues
   below that point; a priority-fenced queue shows only its offset. A victim may not outrank the ask.
3. Guarantees: the asking queues (those on the ask's path with a guarantee) must not rise above their
   guarantee with the ask; a victim's queues must not drop below theirs once it is gone. A queue with
   `preemption.policy: disabled` gives no victims.
4. Everything that blocks the ask is planned for: room on a node, and the headroom of each queue on
   the ask's path whose max the ask would pass (up to the fence root, which victims are all below, so
   each counts for those maxes wherever it runs). Per node that admits the ask, the preferred victims
   there are taken until the ask fits the node, then more (that node's first, then any) until it
   fits under every max; the node needing the fewest (then the least) wins, and the ask reserves it.
   No such node, or maxes that victims cannot bring down: no preemption.
5. The pod rules (Kubernetes' inter-pod affinity): a node kept off only by anti-affinity counts the
   pods behind that rule as victims that must all go (and may); affinity and spread are not fixed
   by preempting, so such nodes are not candidates.
"""

from __future__ import annotations

from collections import defaultdict

from core.config.properties import PREEMPTION_DISABLED, PREEMPTION_FENCE
from core.objects import change_events
from core.objects.allocation import Allocation
from core.objects.node import Node
from core.objects.queue import Queue
from core.resources import Resource
from core.scheduler.fit.checks import WhatIfCheck
from core.scheduler.node_search import AskFit, find_node, fit_for
from core.scheduler.partition import Partition
from core.scheduler.partition.preemption_ledger import PreemptionKind
from core.scheduler.partition.victim_order import VictimKey, may_be_victim, victim_order
from core.ugm.tracker import Key as LimitKey

BlockKey = str | LimitKey  # a queue on the ask's path (its max), or a user's or group's limit there


def _lift(queue: Queue, value: int) -> int:
    """A priority inside `queue` as its parent sees it."""
    if queue.props.is_priority_fence:
        return queue.props.priority_offset
    return value + queue.props.priority_offset


def _ask_frames(leaf: Queue, priority: int, ask: Resource) -> tuple[Queue, dict[str, int]]:
    frames: dict[str, int] = {}
    queue = leaf
    value = priority
    while True:
        frames[queue.full_name] = value  # the ask's priority as seen inside this queue
        used = queue.committed() if queue.held else queue.allocated
        exceeds_max = queue.max is not None and not (used + ask).fits_in_limit(queue.max)
        if queue.parent is None or queue.props.preemption_policy == PREEMPTION_FENCE or exceeds_max:
            return queue, frames
        value = _lift(queue, value)
        queue = queue.parent


def _asking_side_allows(leaf: Queue, ask: Resource) -> bool:
    """Some queue on the ask's path guarantees a type it needs, and none would pass its guarantee:
    what it uses, what it holds for its other asks whose victims are on their way out (they will be
    placed too), and this ask. Without the held room, two asks that each fit the guarantee alone
    would both preempt, the queue would end above its guarantee, and the next queue below its own
    would preempt the room straight back."""
    guaranteed_somewhere = False
    for queue in leaf.path_to_root():
        if queue.guaranteed is None or queue.parent is None:
            continue
        for name, want in ask.items():
            if want <= 0 or name not in queue.guaranteed:
                continue
            guaranteed_somewhere = True
            if queue.allocated.get(name) + queue.held.get(name) + want > queue.guaranteed[name]:
                return False
    return guaranteed_somewhere


def _above_guarantee(leaf: Queue) -> bool:
    """Whether any queue from this leaf up uses more than it is guaranteed (in some guaranteed type),
    or has no guarantee at all: only such queues can give victims."""
    if leaf.guaranteed is None:
        return True
    return any(
        leaf.allocated.get(name) - leaf.preempting.get(name) > limit
        for name, limit in leaf.guaranteed.items()
    )


def _candidates(root: Queue, ask_leaf: Queue, frames: dict[str, int], ask: Allocation) -> list[Allocation]:
    out: list[Allocation] = []

    def collect(queue: Queue, limit: int | None) -> None:
        # limit: the highest victim priority allowed, in this queue's own frame; None: any (fenced).
        if queue.props.preemption_policy == PREEMPTION_DISABLED:
            return
        if queue.is_leaf:
            if not _above_guarantee(queue):
                return
            for app in queue.applications.values():
                for alloc in app.allocations.values():
                    if not may_be_victim(alloc) or not alloc.resource.shares_type_with(ask.resource):
                        continue
                    if limit is None or alloc.priority <= limit:
                        out.append(alloc)
            return
        for child in queue.children.values():
            walk_child(child, limit)

    def walk_child(child: Queue, parent_limit: int | None) -> None:
        if parent_limit is None:
            collect(child, None)
        elif child.props.is_priority_fence:
            # The whole subtree shows its parent only the fence's offset.
            if child.props.priority_offset <= parent_limit:
                collect(child, None)
        else:
            collect(child, parent_limit - child.props.priority_offset)

    def descend(queue: Queue) -> None:
        """Walk down the ask's own path; subtrees off it are compared in the frame where they meet."""
        if queue is ask_leaf:
            return
        here = frames[queue.full_name]
        for child in queue.children.values():
            if child.full_name in frames:
                descend(child)
            else:
                walk_child(child, here)

    descend(root)
    return out


def _guard(victim: Allocation, partition: Partition, taken: dict[str, Resource], ask_path: set[str]) -> bool:
    """Whether the victim's queues stay at or above their guarantees once it (and those taken) are gone."""
    app = partition.applications.get(victim.application_id)
    if app is None:
        return False
    for queue in app.queue.path_to_root():
        if queue.full_name in ask_path:
            break  # from where the paths meet, what the victim frees the ask takes: no net change
        if queue.guaranteed is None:
            continue
        gone = taken.get(queue.full_name)
        for name, limit in queue.guaranteed.items():
            want = victim.resource.get(name)
            if want <= 0:
                continue
            left = queue.allocated.get(name) - queue.preempting.get(name) - (gone.get(name) if gone else 0)
            if left - want < limit:
                return False
    return True


def _headroom_shortfalls(leaf: Queue, root: Queue, ask: Resource) -> dict[BlockKey, dict[str, int]]:
    """Per queue on the ask's path, from its leaf up to the fence root, whose max the ask would pass:
    how much of each type must be freed below it. What is being preempted there counts as freed, and
    the asks held there (preempting, or placed once their victims are gone) as used."""
    out: dict[BlockKey, dict[str, int]] = {}
    for queue in leaf.path_to_root():
        if queue.max is not None and queue.parent is not None:
            short = {}
            for name, want in ask.items():
                if want > 0 and name in queue.max:
                    used = queue.allocated.get(name) - queue.preempting.get(name) + queue.held.get(name)
                    over = used + want - queue.max[name]
                    if over > 0:
                        short[name] = over
            if short:
                out[queue.full_name] = short
        if queue is root:
            break
    return out


class _Plan:
    """Victims chosen for one node: what they free on it, and what is still short under each max and
    user or group limit (a victim counts for a limit only when it is that user's or group's)."""

    def __init__(
        self, partition: Partition, node: Node, ask: Allocation, shortfalls: dict[BlockKey, dict[str, int]]
    ):
        self.partition = partition
        self.node = node
        self.ask = ask
        self.free = node.available.copy()
        self.short = {key: dict(s) for key, s in shortfalls.items()}
        self.taken: dict[str, Resource] = {}
        self.chosen: list[Allocation] = []
        self.ids: set[int] = set()

    def node_short(self) -> bool:
        return any(self.free.get(name) < want for name, want in self.ask.resource.items() if want > 0)

    def frees_node_room(self, victim: Allocation) -> bool:
        return victim.node_id == self.node.node_id and any(
            want > 0 and victim.resource.get(name) > 0 and self.free.get(name) < want
            for name, want in self.ask.resource.items()
        )

    def _blocks_of(self, victim: Allocation) -> list[BlockKey]:
        app = self.partition.applications[victim.application_id]
        keys: list[BlockKey] = [q.full_name for q in app.queue.path_to_root()]
        if self.partition.user_groups.table:
            keys.extend(self.partition.user_groups.keys_of(app))
        return keys

    def frees_headroom(self, victim: Allocation) -> bool:
        return any(
            victim.resource.get(name) > 0
            for key in self._blocks_of(victim)
            for name, left in self.short.get(key, {}).items()
            if left > 0
        )

    def take(self, victim: Allocation) -> None:
        self.chosen.append(victim)
        self.ids.add(id(victim))
        if victim.node_id == self.node.node_id:
            self.free.add_in_place(victim.resource)
        for queue in self.partition.applications[victim.application_id].queue.path_to_root():
            self.taken.setdefault(queue.full_name, Resource()).add_in_place(victim.resource)
        for key in self._blocks_of(victim):
            short = self.short.get(key)
            if short:
                for name in short:
                    short[name] -= victim.resource.get(name)

    def complete(self) -> bool:
        return not self.node_short() and all(left <= 0 for s in self.short.values() for left in s.values())


def _plan_node(
    partition: Partition,
    node: Node,
    ask: Allocation,
    on_node: list[Allocation],
    everywhere: list[Allocation],
    shortfalls: dict[BlockKey, dict[str, int]],
    ask_path: set[str],
    demanded: list[Allocation],
) -> list[Allocation] | None:
    plan = _Plan(partition, node, ask, shortfalls)
    for victim in demanded:  # the pods the pod rules need gone (anti-affinity, spread): all must go
        if not _guard(victim, partition, plan.taken, ask_path):
            return None
        plan.take(victim)
    for victim in sorted(on_node, key=victim_order):  # room on the node first
        if not plan.node_short():
            break
        if plan.frees_node_room(victim) and _guard(victim, partition, plan.taken, ask_path):
            plan.take(victim)
    if plan.node_short():
        return None
    if not plan.complete():  # then the maxes on the ask's path: this node's victims first
        here = [v for v in sorted(on_node, key=victim_order) if id(v) not in plan.ids]
        elsewhere = sorted((v for v in everywhere if v.node_id != node.node_id), key=victim_order)
        for victim in here + elsewhere:
            if plan.complete():
                break
            if plan.frees_headroom(victim) and _guard(victim, partition, plan.taken, ask_path):
                plan.take(victim)
    return plan.chosen if plan.chosen and plan.complete() else None


def _demanded_victims(node: Node, fit: AskFit, candidate_ids: set[int]) -> list[Allocation] | None:
    """The victims the ask's checks demand on this node: none when every check passes; for a check
    that refuses it and can say what must go (the pod rules: the pods behind an anti-affinity rule,
    those a spread constraint counts beyond its maxSkew), those pods when they may be victims; None
    when a check keeps the ask off whatever is preempted."""
    demanded: list[Allocation] = []
    for check in fit.checks:
        if not check.refusal(node):
            continue
        if not isinstance(check, WhatIfCheck):  # the node's own traits and ports: no victim changes them
            return None
        victims = check.victims_for(node, lambda pod: id(pod) in candidate_ids, victim_order)
        if victims is None:
            return None
        demanded += victims
    return demanded


def _reservations_give_way(partition: Partition, node: Node, ask: Allocation) -> bool:
    """A node reserved for another ask is usable only if that is an ordinary reservation: one made
    by an ask waiting for room, not by a preemption in flight nor by a required-node ask. Otherwise a
    large ask waiting on a node could keep a queue from ever getting its guarantee back."""
    for ref in node.reservations:
        if ref == ask.ref:
            continue
        app = partition.applications.get(ref[0])
        holder = app.asks.get(ref[1]) if app is not None else None
        if holder is not None and (holder.preempting or holder.required_node):
            return False
    return True


def _no_plan(partition: Partition, ask: Allocation, now: float, why: str) -> bool:
    reason = f"preemption tried, none possible: {why}"
    if ask.note_no_preemption(reason, now):
        partition.events.append(change_events.no_preemption(partition.rm_id, ask, reason, now))
    return False


def preempt_for(partition: Partition, leaf: Queue, ask: Allocation, now: float) -> bool:
    """Try to make room for `ask` by preempting; True when victims were chosen and the node reserved.
    When none could be, the ask says why (REST allocationLog) and an event records each new reason."""
    if ask.preempting:
        return False
    partition.drop_hold(ask)  # from an earlier preemption: it looks again, with that room free
    if not _asking_side_allows(leaf, ask.resource):
        return _no_plan(partition, ask, now, "no queue on its path is below a guarantee it would stay within")
    root, frames = _ask_frames(leaf, ask.priority, ask.resource)
    candidates = _candidates(root, leaf, frames, ask)
    if not candidates:
        fence = " (a preemption fence)" if root.props.preemption_policy == PREEMPTION_FENCE else ""
        return _no_plan(
            partition, ask, now,
            f"no victim below {root.full_name}{fence}: none of lower or equal priority, in a queue above "
            "its guarantee, that preemption may take",
        )  # fmt: skip
    by_node: dict[str, list[Allocation]] = defaultdict(list)
    for victim in candidates:
        by_node[victim.node_id].append(victim)
    shortfalls = _headroom_shortfalls(leaf, root, ask.resource)
    app = partition.applications[ask.application_id]
    if partition.user_groups.table:  # the user's and group's limits on the path, as victims of theirs free
        for key, short in partition.user_groups.resource_shortfalls(app, ask.resource).items():
            shortfalls[key] = short
    if shortfalls:  # a node with room now may be all the ask needs once the maxes allow it
        roomy = find_node(partition, ask)
        if roomy is not None:
            by_node.setdefault(roomy.node_id, [])
    ask_path = {q.full_name for q in leaf.path_to_root()}
    fit = fit_for(partition, ask)
    candidate_ids = {id(v) for v in candidates}
    best: tuple[tuple[int, int, list[VictimKey], str], Node, list[Allocation]] | None = None
    for node_id, victims in by_node.items():
        node = partition.nodes.get(node_id)
        if node is None or not (node.schedulable or node.cordoned) or not node.fits_capacity(ask.resource):
            continue
        if not _reservations_give_way(partition, node, ask):
            continue
        demanded = _demanded_victims(node, fit, candidate_ids)
        if demanded is None:
            continue
        plan = _plan_node(partition, node, ask, victims, candidates, shortfalls, ask_path, demanded)
        if plan is None:
            continue
        # Fewest victims, then the least taken, then the most preferred victims, then the node's name.
        score = (
            len(plan),
            sum(sum(v.resource.values()) for v in plan),
            sorted(map(victim_order, plan)),
            node_id,
        )
        if best is None or score < best[0]:
            best = (score, node, plan)
    if best is None:
        return _no_plan(
            partition, ask, now,
            "no plan: taking victims would push their queues below their guarantees, or would still leave "
            "no node that admits the ask with room under every max and user or group limit on its path",
        )  # fmt: skip
    _, node, plan = best
    ask.preemption_reason, ask.preemption_count = "", 0  # it found a plan: an older "none" no longer holds
    if ask.ref in partition.reservations:
        partition.reservations.release(ask.ref)
    for other in [r for r in node.reservations if r != ask.ref]:
        partition.reservations.release(other)  # an ordinary reservation gives way; it is made again later
    partition.reservations.reserve(ask, node)
    partition.preempt(ask, plan, now, PreemptionKind.INTER_QUEUE)
    return True
