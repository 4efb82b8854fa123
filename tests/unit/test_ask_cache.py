"""AskCache: the RM's ask messages the core has not answered, what each answer takes out, and the
refusals that keep the count of pending asks true."""

from __future__ import annotations

import pytest

from core.rm.ask_cache import AskCache
from core.rm.bad_item import BadItem
from rmclient import messages
from si.v1 import si_pb2


def _ask(app: str, key: str) -> si_pb2.Allocation:
    return messages.ask(app, key, {"memory": 1}, tags={"creationTime": "1"})


def test_an_answered_ask_comes_back_as_the_message_sent_and_is_no_longer_held() -> None:
    cache = AskCache()
    sent = messages.ask("app-1", "t1", {"memory": 5}, tags={"k": "v"})
    cache.hold(sent, most_per_app=10)
    sent.allocationTags["k"] = "changed later by the sender"  # the cache holds the bytes sent
    taken = cache.take("app-1", "t1")
    assert taken is not None
    kept = si_pb2.Allocation.FromString(taken)
    assert kept.allocationKey == "t1" and kept.allocationTags["k"] == "v"
    assert cache.take("app-1", "t1") is None
    assert len(cache) == 0


def test_a_key_still_held_is_refused_for_a_second_ask_and_for_a_running_allocation() -> None:
    cache = AskCache()
    cache.hold(_ask("app-1", "t1"), most_per_app=10)
    with pytest.raises(BadItem, match="t1 already exists in application app-1 as a pending ask"):
        cache.hold(_ask("app-1", "t1"), most_per_app=10)
    with pytest.raises(BadItem, match="as a pending ask"):
        cache.refuse_held("app-1", "t1")
    cache.refuse_held("app-2", "t1")  # another application's key space
    cache.hold(_ask("app-2", "t1"), most_per_app=10)
    assert len(cache) == 2


def test_the_pending_asks_of_an_application_are_bounded_and_free_again_when_answered() -> None:
    cache = AskCache()
    for i in range(3):
        cache.hold(_ask("app-1", f"t{i}"), most_per_app=3)
    with pytest.raises(BadItem, match=r"already has 3 pending asks.*max_pending_asks_per_application"):
        cache.hold(_ask("app-1", "t3"), most_per_app=3)
    cache.hold(_ask("app-2", "t0"), most_per_app=3)  # the limit is per application
    cache.take("app-1", "t0")
    cache.hold(_ask("app-1", "t3"), most_per_app=3)
    assert len(cache) == 4


def test_withdrawing_forgets_one_ask_or_a_whole_application() -> None:
    cache = AskCache()
    for key in ("a", "b", "c"):
        cache.hold(_ask("app-1", key), most_per_app=10)
    cache.hold(_ask("app-2", "a"), most_per_app=10)
    cache.forget("app-1", "a")
    assert cache.take("app-1", "a") is None and len(cache) == 3
    cache.forget("app-1")
    assert cache.take("app-1", "b") is None and len(cache) == 1
    cache.forget("unknown", "x")  # nothing held: nothing to do
    cache.clear()
    assert len(cache) == 0
