"""Preemption in flight: the victims chosen and not yet confirmed released by their RM.

A victim keeps its room (counted `preempting` on its queues) until its RM confirms the release; then
the ledger says what that release completes: the ask all of whose victims are now gone (its
reservation takes the room), and the queue whose max a quota victim enforced.
"""

from __future__ import annotations

from enum import StrEnum

from core.objects.allocation import Allocation

Ref = tuple[str, str]  # (application, allocation key)


class PreemptionKind(StrEnum):
    """Why victims were taken; the preemption metric counts victims by it."""

    REQUIRED_NODE = "required_node"  # a DaemonSet-style ask takes room on its node
    INTER_QUEUE = "inter_queue"  # a queue below its guarantee takes back from others
    QUOTA = "quota"  # a queue over its lowered max gives back


class PreemptionLedger:
    def __init__(self) -> None:
        self.victims_of: dict[Ref, set[Ref]] = {}  # ask -> its victims not yet released
        self.preempted_for: dict[Ref, Ref] = {}  # victim -> the ask it makes room for
        self.enforcing: dict[Ref, str] = {}  # quota victim -> the queue whose max it enforces
        self.counts: dict[PreemptionKind, int] = dict.fromkeys(PreemptionKind, 0)
        self._to_report: list[tuple[Allocation, str]] = []  # (victim, why), for the RM

    def chosen(self, victim: Allocation, why: str, kind: PreemptionKind) -> None:
        victim.releasing = True
        self.counts[kind] += 1
        self._to_report.append((victim, why))

    def for_ask(self, ask: Ref, victims: list[Allocation]) -> None:
        for victim in victims:
            self.preempted_for[victim.ref] = ask
        self.victims_of[ask] = {v.ref for v in victims}

    def for_quota(self, victim: Ref, queue: str) -> None:
        self.enforcing[victim] = queue

    def released(self, victim: Ref) -> tuple[str | None, Ref | None]:
        """Forget a victim whose release is confirmed. Returns the queue whose max it enforced (None
        for other kinds), and the ask it made room for when it was that ask's last victim."""
        enforced = self.enforcing.pop(victim, None)
        ask = self.preempted_for.pop(victim, None)
        if ask is None:
            return enforced, None
        waiting = self.victims_of.get(ask)
        if waiting is None:
            return enforced, None
        waiting.discard(victim)
        if waiting:
            return enforced, None
        del self.victims_of[ask]
        return enforced, ask

    def drain(self) -> list[tuple[Allocation, str]]:
        """The victims chosen since the last call, with why, to report to their RM."""
        chosen, self._to_report = self._to_report, []
        return chosen
