"""The per-application pending-asks limit holds whatever an RM sends: asks, releases of one ask or of
everything (an empty key), releases the core refuses (an unknown application, a partition that is
not the RM's), removals and re-adds of the application, in any order and any mix within a message.

Checked against what the core holds (its applications' pending asks) after every message, through
rmproxy and a ClusterContext that applies each command at once (tests/unit/test_limits.Harness)."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from core.config.input_limits import Limits
from rmclient import messages
from si.v1 import si_pb2
from tests.unit.test_limits import RM, Harness, drain

LIMIT = 5
APPS = ("app-1", "app-2")

ask = st.builds(lambda app, k: ("ask", app, f"k{k}"), st.sampled_from(APPS), st.integers(0, 15))
release = st.builds(
    lambda app, k, partition: ("release", app, k, partition),
    st.sampled_from((*APPS, "nobody's")),
    st.one_of(st.just(""), st.integers(0, 15).map(lambda k: f"k{k}")),  # "": release everything
    st.sampled_from(("", "default", "not-this-rms")),  # a partition the core refuses, sometimes
)
app_change = st.builds(
    lambda verb, app: (verb, app), st.sampled_from(("remove", "add")), st.sampled_from(APPS)
)
# A message: a few items, asks and releases mixed; a few messages a run.
message = st.lists(st.one_of(ask, ask, release), min_size=1, max_size=12)
run = st.lists(st.one_of(message, app_change.map(lambda change: [change])), min_size=1, max_size=25)


def _send(h: Harness, items: list[tuple[Any, ...]]) -> None:
    if items[0][0] in ("remove", "add"):
        verb, app = items[0]
        if verb == "add":
            h.app(app)
        else:
            remove = si_pb2.RemoveApplicationRequest(applicationID=app, partitionName="default")
            h.proxy.on_application_request(si_pb2.ApplicationRequest(rmID=RM, remove=[remove]), h.apps)
        return
    asks = [messages.ask(app, key, {"memory": 1000}) for kind, app, key, *_ in items if kind == "ask"]
    releases = [
        messages.release(app, key, partition=partition)
        for kind, app, key, *rest in items
        if kind == "release"
        for partition in rest
    ]
    request = si_pb2.AllocationRequest(
        rmID=RM, allocations=asks, releases=si_pb2.AllocationReleasesRequest(allocationsToRelease=releases)
    )
    h.proxy.on_allocation_request(request, h.alloc)


def _pending(h: Harness) -> dict[str, int]:
    return {
        app_id: len(app.asks)
        for part in h.ctx.partitions.values()
        for app_id, app in part.applications.items()
    }


@settings(max_examples=150, deadline=None)
@given(run)
def test_no_application_ever_holds_more_pending_asks_than_the_limit(
    steps: list[list[tuple[Any, ...]]],
) -> None:
    async def scenario() -> None:
        # A node too small for any ask: asks stay pending, so only the limit bounds them.
        h = Harness(Limits(max_pending_asks_per_application=LIMIT))
        await h.register()
        h.node("node-1", {"memory": 10, "vcore": 10})
        for app in APPS:
            h.app(app)
        for items in steps:
            _send(h, items)
            drain(h.alloc)
            held = _pending(h)
            assert all(n <= LIMIT for n in held.values()), held

    asyncio.run(scenario())
