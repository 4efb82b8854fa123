"""Applications and asks travel on separate streams, so the core may read an ask before its
application. However the two streams interleave, the outcome must be the one of the application
first: the same asks pending, the same allocations, nothing refused; and what the core holds for
applications not yet come is exactly the asks sent for them and not released."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler.commands import AppAdd, ReleaseRequest, UpdateAllocations, UpdateApplications
from tests.unit.domain_helpers import Cluster

# Per application: each ask's memory, and whether the RM releases it again later.
apps = st.lists(
    st.lists(st.tuples(st.integers(1, 3), st.booleans()), min_size=1, max_size=4), min_size=1, max_size=5
)


def _streams(plan: list[list[tuple[int, bool]]]) -> tuple[list[str], list[tuple[str, str, int]]]:
    """The application stream (IDs) and the allocation stream (("ask" | "release", app, key), memory)."""
    app_stream = [f"app-{i}" for i in range(len(plan))]
    alloc_stream: list[tuple[str, str, int]] = []
    for i, asks in enumerate(plan):
        for j, (memory, _) in enumerate(asks):
            alloc_stream.append(("ask", f"app-{i}", memory * 100 + j))
        for j, (_, released) in enumerate(asks):
            if released:
                alloc_stream.append(("release", f"app-{i}", j))
    return app_stream, alloc_stream


def _send(c: Cluster, item: tuple[str, str, int]) -> None:
    kind, app_id, value = item
    if kind == "ask":
        key = f"{app_id}-{value % 100}"
        alloc = Allocation(key, app_id, c.pname(), Resource({"memory": value // 100}))
        c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(alloc,)))
    else:
        release = ReleaseRequest(c.pname(), app_id, f"{app_id}-{value}")
        c.ctx.apply(UpdateAllocations(c.rm_id, releases=(release,)))


def _add(c: Cluster, app_id: str) -> None:
    c.ctx.apply(UpdateApplications(c.rm_id, adds=(AppAdd(app_id, c.pname(), "root.default"),)))


def _outcome(c: Cluster) -> dict[str, tuple[list[str], list[str]]]:
    c.schedule()
    return {
        app_id: (sorted(app.asks), sorted(app.allocations))
        for app_id, app in c.partition.applications.items()
    }


def _cluster() -> Cluster:
    c = Cluster()
    c.node("n1", {"memory": 1_000})  # room for everything: the order of arrival decides nothing
    return c


@settings(max_examples=150, deadline=None)
@given(plan=apps, picks=st.lists(st.booleans(), max_size=60))
def test_any_interleaving_of_the_two_streams_ends_as_the_application_first(
    plan: list[list[tuple[int, bool]]], picks: list[bool]
) -> None:
    app_stream, alloc_stream = _streams(plan)

    first = _cluster()
    for app_id in app_stream:
        _add(first, app_id)
    for item in alloc_stream:
        _send(first, item)
    expected = _outcome(first)

    mixed = _cluster()
    added: set[str] = set()
    held: dict[str, list[str]] = {}  # what the core should hold, by application: keys, in order
    a, b = 0, 0
    choices = iter(picks)
    while a < len(app_stream) or b < len(alloc_stream):
        take_app = b >= len(alloc_stream) or (a < len(app_stream) and next(choices, True))
        if take_app:
            app_id = app_stream[a]
            _add(mixed, app_id)
            added.add(app_id)
            held.pop(app_id, None)
            a += 1
        else:
            kind, app_id, value = alloc_stream[b]
            _send(mixed, alloc_stream[b])
            if app_id not in added:
                keys = held.setdefault(app_id, [])
                if kind == "ask":
                    keys.append(f"{app_id}-{value % 100}")
                else:
                    keys.remove(f"{app_id}-{value}")
            b += 1
        assert len(mixed.ctx.early) == sum(len(keys) for keys in held.values())
    assert _outcome(mixed) == expected
    assert [batch.rejected_allocations for batch in mixed.ctx.drain_results()] in ([], [[]])
    assert len(mixed.ctx.early) == 0
