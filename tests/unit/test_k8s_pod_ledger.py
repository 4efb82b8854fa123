"""The shim's pod ledger: one record per pod, changed by named transitions, and what the core is told
when a pod goes, whatever it stood for (asked, bound by us, another scheduler's, a placeholder being
deleted, given up)."""

from __future__ import annotations

from typing import Any

from shim_k8s.pod_ledger import Forgotten, PodLedger


def _pod(uid: str, node: str = "") -> dict[str, Any]:
    return {"metadata": {"uid": uid, "name": uid, "namespace": "default"}, "spec": {"nodeName": node}}


def test_an_asked_pod_bound_by_us_and_then_deleted_is_released_under_its_application() -> None:
    ledger = PodLedger()
    assert ledger.seen(_pod("p1")) is None  # new to the shim
    ledger.asked("p1", "app-1", {"memory": 5})
    ledger.core_placed("p1", "app-1", "n1")
    ledger.binding("p1")
    ledger.bound("p1")
    assert not ledger.is_asked("p1") and ledger.bound_by_us("p1") and ledger.placed("p1") == ("app-1", "n1")
    ledger.gone("p1")
    assert ledger.pod("p1") is None and ledger.size("p1") is None
    assert ledger.forgotten("p1") == Forgotten(True, "app-1")
    assert ledger.placed_uids() == [] and len(ledger) == 0  # nothing of it is left


def test_a_failed_binding_releases_it_and_the_record_keeps_only_the_pod() -> None:
    ledger = PodLedger()
    ledger.seen(_pod("p1"))
    ledger.asked("p1", "app-1", {"memory": 5})
    ledger.core_placed("p1", "app-1", "n1")
    ledger.binding("p1")
    ledger.not_bound("p1")
    assert (ledger.is_asked("p1"), ledger.bound_by_us("p1"), ledger.placed("p1")) == (False, False, None)
    assert ledger.pod("p1") is not None


def test_what_the_core_holds_for_a_pod_that_is_gone_stays_for_the_reconciliation() -> None:
    ledger = PodLedger()
    ledger.seen(_pod("p1"))
    ledger.gone("p1")
    assert ledger.forgotten("p1") == Forgotten(False)  # never asked: nothing to tell
    ledger.core_placed("p1", "app-1", "n1")  # the core's allocation arrives after the pod went
    assert ledger.placed_uids() == ["p1"] and ledger.pod("p1") is None
    assert ledger.repaired("p1") == ("app-1", "n1")
    ledger.relisted("p1", None)
    assert ledger.placed_uids() == []


def test_a_placeholder_being_deleted_tells_the_core_nothing_when_it_goes() -> None:
    ledger = PodLedger()
    ledger.seen(_pod("ph", node="n1"))
    ledger.sent_running("ph", "app-1", "n1", {"memory": 1})
    assert ledger.placeholder_deleting("ph") is True  # it held room
    ledger.gone("ph")
    assert ledger.forgotten("ph") == Forgotten(False)


def test_a_foreign_pod_is_released_with_no_application_and_a_given_up_pod_only_once() -> None:
    ledger = PodLedger()
    ledger.seen(_pod("other", node="n1"))
    ledger.counted_foreign("other")
    ledger.sized("other", {"memory": 2})
    assert ledger.any_foreign() and ledger.size("other") == {"memory": 2}
    ledger.gone("other")
    assert ledger.forgotten("other") == Forgotten(True, "", foreign=True)
    ledger.seen(_pod("p2"))
    ledger.asked("p2", "app-2", {})
    assert ledger.gave_up("p2", "ApplicationRejected:no") and not ledger.gave_up("p2", "again")
    assert not ledger.is_asked("p2") and ledger.condition("p2") == "ApplicationRejected:no"
    assert not ledger.said_condition("p2", "ApplicationRejected:no")  # said already
    assert ledger.said_condition("p2", "Unschedulable:full")


def test_bound_by_another_scheduler_withdraws_the_ask() -> None:
    ledger = PodLedger()
    ledger.seen(_pod("p1"))
    assert ledger.taken_by_another("p1") is None  # not asked: nothing to withdraw
    ledger.asked("p1", "app-1", {})
    ledger.core_placed("p1", "app-1", "n2")
    assert ledger.taken_by_another("p1") == "app-1"
    assert not ledger.is_asked("p1") and ledger.placed("p1") is None


def test_waiting_pods_are_woken_by_what_they_wait_on_and_forgotten_when_gone() -> None:
    ledger = PodLedger()
    gated, claimed, classless = _pod("g"), _pod("c"), _pod("k")
    ledger.waits("g", gated, ())  # gates: looked at again when it changes itself
    ledger.waits("c", claimed, ["claim/a", "class/fast"])
    ledger.waits_for_class("k", classless)
    assert ledger.is_waiting("g") and ledger.is_waiting("k") and ledger.waits_for_volumes("c")
    assert ledger.woken_by(["claim/b"]) == []
    assert ledger.woken_by(["claim/a"]) == [claimed] and not ledger.is_waiting("c")
    assert ledger.woken_by(["class/fast"]) == []  # woken once, by the first change
    assert ledger.changed_while_waiting("g") and not ledger.changed_while_waiting("g")
    assert ledger.class_arrived() == [classless] and ledger.class_arrived() == []
    ledger.waits("c", claimed, ["claim/a"])
    ledger.gone("c", ["claim/a"])
    assert ledger.woken_by(["claim/a"]) == []


def test_orphans_wait_for_their_node_and_reasks_for_their_application() -> None:
    ledger = PodLedger()
    ledger.orphaned("p1", "n9")
    ledger.orphaned("p2", "n9")
    assert ledger.adopted("n9") == {"p1", "p2"} and ledger.adopted("n9") == set()
    ledger.ask_again_when_accepted("app-1", "p3")
    assert ledger.awaiting_reasks()
    assert ledger.answered("app-1") == {"p3"} and ledger.answered("app-1") is None
    assert not ledger.awaiting_reasks()


def test_a_given_up_pod_stops_waiting() -> None:
    ledger = PodLedger()
    ledger.waits_for_class("p", _pod("p"))
    assert ledger.gave_up("p", "ApplicationFailed:x") and not ledger.is_waiting("p")
