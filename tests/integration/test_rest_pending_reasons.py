""" "Why is this pending?": each pending ask's latest reason, shown by /application/{id} over REST."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

import aiohttp

from si.v1 import si_pb2
from tests.integration.rest_helpers import get_json, named_event, pending_request, resource, rest_until
from tests.recording_client import RecordingClient

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: limited
            resources: {max: {memory: 1000}}
          - name: capped
            maxapplications: 1
          - name: default
"""


async def _reason(
    client: RecordingClient, session: aiohttp.ClientSession, base: str, app: str, key: str, expect: str
) -> str:
    """The ask's latest pending reason, which must mention `expect` once the core has processed and
    scheduled everything sent before (a barrier): the reason is noted in the cycle that leaves it pending."""
    await client.barrier()
    body = await get_json(session, f"{base}/application/{app}")
    ask = pending_request(body, key)
    assert ask is not None, f"{app}/{key} is not pending; it should be waiting: {body}"
    log = ask.get("allocationLog", [])
    message = log[0]["message"] if log else ""
    assert expect in message, f"{app}/{key} pending reason does not mention {expect!r}: {message!r}"
    assert log[0]["count"] >= 1 and log[0]["lastOccurrence"] > 0
    return message


def _latest(request: dict[str, Any] | None) -> str:
    """A pending request's latest reason ("" when it has none, or is not pending)."""
    log = request.get("allocationLog", []) if request is not None else []
    return log[0]["message"] if log else ""


def _ask(app: str, key: str, memory: int, tags: dict[str, str] | None = None) -> si_pb2.Allocation:
    return si_pb2.Allocation(
        allocationKey=key,
        applicationID=app,
        resourcePerAlloc=resource({"memory": memory}),
        allocationTags=tags,
    )


async def test_each_cause_of_waiting_is_named(client: RecordingClient, rm_id: str, rest_url: str) -> None:
    await client.register(config=CONFIG)
    await client.add_node("node-1", {"memory": 2_000})
    await client.add_node("node-2", {"memory": 2_000})
    await client.wait_nodes_answered(2)
    apps = {"q": "root.limited", "big": "root.default", "c1": "root.capped", "c2": "root.capped",
            "fill": "root.default", "wait": "root.default"}  # fmt: skip
    for app, queue in apps.items():
        await client.add_application(app, queue)
    await client.wait_apps_answered(len(apps))
    await client.asks([_ask("c1", "c1-0", 100)])
    await client.wait_allocations(1)
    await client.asks([_ask("q", "q-0", 2_000), _ask("big", "big-0", 3_000), _ask("c2", "c2-0", 100)])
    part = quote(f"[{rm_id}]default", safe="")
    base = f"{rest_url}/ws/v1/partition/{part}"
    async with aiohttp.ClientSession() as session:
        headroom = await _reason(client, session, base, "q", "q-0", "queue root.limited's max")
        assert "{'memory': 2000}" in headroom and "room left {'memory': 1000}" in headroom
        # 3,900 free in all, 1,900 and 2,000 per node: no one node can take 3,000.
        assert await _reason(client, session, base, "big", "big-0", "no node has room")
        limit = await _reason(client, session, base, "c2", "c2-0", "may not start yet")
        assert "queue root.capped runs its maxapplications (1)" in limit

        # Nodes that could hold the ask but are too full: after the reservation delay it reserves one.
        # The delay (2 s) counts from the task's creation: created 1.5 s ago, the ask is past it half a
        # second after it arrives. Nothing is sent after it, so the reservation comes from a cycle the
        # engine runs on its own tick (every 0.5 s while asks are pending): that short wait is inherent.
        await client.asks([_ask("fill", "fill-0", 1_000), _ask("fill", "fill-1", 1_000)])
        await client.wait_allocations(3)  # free: 900 and 1,000
        created = f"{time.time() - 1.5:.3f}"
        await client.asks([_ask("wait", "wait-0", 1_800, tags={"creationTime": created})])
        await rest_until(
            session,
            f"{base}/application/wait",
            lambda app: "reserved node node-" in _latest(pending_request(app, "wait-0")),
            "wait-0 to reserve a node",
        )
        assert await _reason(client, session, base, "wait", "wait-0", "reserved node node-")
        # big-0 is bigger than any node: parked, it is not tried again while nothing could let it run,
        # and keeps that reason. One that a node could hold, over what the cluster has left:
        await client.asks([_ask("big", "big-1", 1_950)])
        over = await _reason(client, session, base, "big", "big-1", "the cluster's capacity")
        assert "room left {'memory': 1900}" in over
        assert await _reason(client, session, base, "big", "big-0", "2 insufficient memory")


ACL_CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: secret
            submitacl: "alice"
            adminacl: " ops"
"""


async def test_an_acl_refusal_is_shown_as_the_applications_rejection(
    client: RecordingClient, rm_id: str, rest_url: str
) -> None:
    # ACLs are checked when the application is submitted, as in YuniKorn: bob's application is rejected
    # then and never waits, and /application/{id} keeps the reason.
    await client.register(config=ACL_CONFIG)
    await client.add_application("bobs", "root.secret", user="bob")
    await client.add_application("alices", "root.secret", user="alice")
    await client.add_application("operators", "root.secret", user="dave", groups=("ops",))  # adminacl
    await client.wait_apps_answered(3)
    assert [r.applicationID for r in client.seen.rejected_apps] == ["bobs"]
    assert sorted(client.seen.accepted_apps) == ["alices", "operators"]
    base = f"{rest_url}/ws/v1/partition/{quote(f'[{rm_id}]default', safe='')}"
    async with aiohttp.ClientSession() as session:
        bobs = await get_json(session, f"{base}/application/bobs")
        assert bobs["applicationState"] == "Rejected"
        assert bobs["queueName"] == "root.secret" and bobs["user"] == "bob"
        assert "bob" in bobs["rejectedMessage"] and "root.secret" in bobs["rejectedMessage"]
        assert (
            "requests" not in bobs and "allocations" not in bobs
        )  # nothing asked or held: omitted, as upstream
        alices = await get_json(session, f"{base}/application/alices")
        assert alices["applicationState"] in {"New", "Accepted"} and "rejectedMessage" not in alices
        rejected = await get_json(session, f"{base}/applications/rejected")
        assert [a["applicationID"] for a in rejected] == ["bobs"]
        events = await get_json(session, f"{rest_url}/ws/v1/events/batch")
        named = [named_event(e) for e in events["EventRecords"]]
        refusals = [e for e in named if e["rmID"] == rm_id and e["objectID"] == "bobs"]
        assert [e["eventChangeDetail"] for e in refusals] == ["APP_NEW", "APP_REJECT"]  # as YuniKorn
