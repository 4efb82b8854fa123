"""The victims of preemption inside a partition: marking them, holding the headroom they free for the
ask they were chosen for, and their release as their RM confirms it.

A victim stays counted (in its queue's `preempting`) until its RM confirms the release; the ask keeps
the headroom the victims free until it is placed or gone, so another ask cannot take it meanwhile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.objects import change_events
from core.objects.allocation import Allocation
from core.scheduler.partition.preemption_ledger import PreemptionKind, Ref

if TYPE_CHECKING:  # the partition owns this part and hands itself in
    from core.scheduler.partition.partition import Partition


UNCONFIRMED_KEPT = 10_000


class PartitionVictims:
    def __init__(self, part: Partition) -> None:
        self.part = part
        self._gone_unconfirmed: dict[Ref, bool] = {}  # core-released allocations gone before the RM said so

    def confirmed_late(self, ref: Ref) -> bool:
        """Whether the RM's release confirms an allocation that was already gone (forgotten once read)."""
        return self._gone_unconfirmed.pop(ref, False)

    def remember_unconfirmed(self, ref: Ref) -> None:
        """An allocation the core asked the RM to release went another way first: its confirmation
        may still come, and is then no mistake (the newest UNCONFIRMED_KEPT are remembered)."""
        self._gone_unconfirmed[ref] = True
        if len(self._gone_unconfirmed) > UNCONFIRMED_KEPT:
            del self._gone_unconfirmed[next(iter(self._gone_unconfirmed))]

    def preempt(self, ask: Allocation, victims: list[Allocation], now: float, kind: PreemptionKind) -> None:
        """Mark victims for release on the ask's behalf; they stay counted until the RM confirms."""
        queue = self.part.applications[ask.application_id].queue.full_name
        said = f"Preempted by {ask.key} from application {ask.application_id} in {queue}"  # YuniKorn's text
        for victim in victims:
            self.mark(victim, f"preempted to make room for {ask.application_id}/{ask.key}", now, kind, said)
        self.part.preemption.for_ask(ask.ref, victims)
        ask.preempting = True
        ask.triggered_preemption = True
        self.part.parking.everything()  # held headroom and victims on their way: limits look different
        if not ask.held:  # the headroom the victims free is the ask's until it is placed or removed
            ask.held = True
            self.part.applications[ask.application_id].queue.add_held(ask.resource)
        self.part.log.info(
            "preempting", applicationID=ask.application_id, allocationKey=ask.key,
            victims=[f"{v.application_id}/{v.key}" for v in victims],
        )  # fmt: skip

    def drop_hold(self, ask: Allocation) -> None:
        """Give back the headroom held for the ask (it was placed, went, or looks for victims again)."""
        if ask.held:
            ask.held = False
            self.part.applications[ask.application_id].queue.remove_held(ask.resource)
            self.part.parking.everything()  # the headroom it held is free for others

    def mark(self, victim: Allocation, why: str, now: float, kind: PreemptionKind, said: str) -> None:
        """`why` goes to the RM with the release; `said` is the victim's event ("Preempted by ...")."""
        self.part.preemption.chosen(victim, why, kind)
        self.part.events.append(change_events.victim_chosen(self.part.rm_id, victim, said, now))
        self.part.applications[victim.application_id].queue.add_preempting(victim.resource)
        self.part.parking.everything()

    def gone(self, victim: Ref) -> None:
        enforced, ask_ref = self.part.preemption.released(victim)
        if enforced is not None:
            self.part.quota.released(victim, enforced)
        if ask_ref is not None:
            app = self.part.applications.get(ask_ref[0])
            ask = app.asks.get(ask_ref[1]) if app is not None else None
            if ask is not None:
                ask.preempting = False  # all its victims are gone; its reservation takes the room
