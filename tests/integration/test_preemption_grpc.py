"""Preemption over real gRPC: required-node (DaemonSet) and inter-queue, with the RM's confirmations.

The client plays the RM: when the core releases an allocation with PREEMPTED_BY_SCHEDULER, the test
kills the task and confirms with a release of the same type, as a real shim would.

The asks carry a creationTime long past, so the queues' preemption.delay (1s) has already passed when
they arrive: the core may preempt for them in the first scheduling cycle that sees them. A check that
no preemption happens therefore waits for facts, not for time: a barrier (every decision the core took
for what was sent has arrived) and the ask's pending reason over REST (the core looked at it and left
it pending, with no victims chosen for it).
"""

from __future__ import annotations

from functools import partial

import aiohttp

from rmclient import messages
from si.v1 import si_pb2
from tests.integration.rest_helpers import get_json, partition_url, pending_request
from tests.recording_client import RecordingClient
from tests.unit.test_preemption import PARENT_MAX, USER_LIMIT  # PARENT_MAX: YuniKorn's TestPreemption queues

SLOT = {"memory": 1_000, "vcore": 100}
NODE4 = {"memory": 4_000, "vcore": 400}
LONG_AGO = 1_700_000_000  # a creationTime (Unix seconds) past every delay

TWO_TENANTS = """
partitions:
  - name: default
    preemption: {enabled: %(enabled)s}
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: low
            resources: {guaranteed: {memory: 2000, vcore: 200m}}
            properties: {preemption.delay: 1s%(low_extra)s}
          - name: high
            resources: {guaranteed: {memory: 2000, vcore: 200m}}
            properties: {preemption.delay: 1s%(high_extra)s}
          - name: fortress
            properties: {priority.policy: fence, priority.offset: "10"}
          - name: fenced
            properties: {preemption.policy: fence, preemption.delay: 1s}
            resources: {guaranteed: {memory: 2000, vcore: 200m}}
            queues:
              - name: inside
                resources: {guaranteed: {memory: 2000, vcore: 200m}}
"""


def _config(enabled: bool = True, low_extra: str = "", high_extra: str = "") -> str:
    return TWO_TENANTS % {"enabled": str(enabled).lower(), "low_extra": low_extra, "high_extra": high_extra}


def preempted(client: RecordingClient) -> list[si_pb2.AllocationRelease]:
    return [r for r in client.seen.released if r.terminationType == si_pb2.PREEMPTED_BY_SCHEDULER]


async def confirm(client: RecordingClient, releases: list[si_pb2.AllocationRelease]) -> None:
    """The RM killed the victims: tell the core they are gone."""
    await client.release_many(
        ((r.applicationID, r.allocationKey) for r in releases), termination=si_pb2.PREEMPTED_BY_SCHEDULER
    )


async def _apps(client: RecordingClient, apps: dict[str, str]) -> None:
    await client.send_application_request(
        si_pb2.ApplicationRequest(
            rmID=client.rm_id, new=[messages.application(a, q) for a, q in apps.items()]
        )
    )
    await client.wait_apps_answered(len(apps))
    assert sorted(client.seen.accepted_apps) == sorted(apps), client.seen.rejected_apps


async def _fill(client: RecordingClient, app: str, count: int, priority: int = 0, start: int = 0) -> None:
    await client.asks(
        messages.ask(app, f"{app}-{i}", SLOT, priority=priority, tags={"creationTime": str(LONG_AGO + i)})
        for i in range(start, start + count)
    )


async def left_pending(client: RecordingClient, rest_url: str, app: str, key: str, since_ns: int = 0) -> None:
    """Once the core has taken and delivered every decision about what was sent (a barrier): `app/key`
    is pending with a reason noted at `since_ns` or later, and no victims are chosen for it."""
    await client.barrier()
    async with aiohttp.ClientSession() as session:
        body = await get_json(session, f"{partition_url(rest_url, client.rm_id)}/application/{app}")
    request = pending_request(body, key)
    assert request is not None, f"{app}/{key} is not pending: {body}"
    log = request.get("allocationLog", [])
    assert log and log[0]["lastOccurrence"] >= since_ns, f"{app}/{key} not looked at since {since_ns}: {log}"
    assert request["pykorn"]["preempting"] is False, request


async def test_a_daemonset_ask_on_a_full_node_preempts_the_lowest_priority_there(
    client: RecordingClient,
) -> None:
    await client.register(config=_config())
    await client.add_node("n1", NODE4)
    await client.wait_nodes_answered(1)
    await _apps(client, {"work": "root.low", "ds": "root.high"})
    for i, prio in enumerate([5, 1, 9, 5]):  # n1 full, priorities 5, 1, 9, 5
        await client.ask("work", f"w{i}", SLOT, priority=prio)
    await client.wait_allocations(4)
    # The DaemonSet pod for n1 (priority 3): only w1 (priority 1) may go; w0/w3 (5) and w2 (9) outrank it.
    await client.ask("ds", "ds-n1", SLOT, priority=3, tags={"yunikorn.apache.org/requiredNode": "n1"})
    await client.wait_for(lambda: bool(preempted(client)), what="a preemption")
    victims = preempted(client)
    assert [(r.applicationID, r.allocationKey) for r in victims] == [("work", "w1")]
    assert "ds/ds-n1" in victims[0].message
    assert "ds-n1" not in client.seen.allocations  # placed only once the victim is gone
    await confirm(client, victims)
    allocations = await client.wait_allocations(5)
    assert allocations[-1].allocationKey == "ds-n1" and allocations[-1].nodeID == "n1"
    assert len(preempted(client)) == 1  # released exactly once


async def test_a_queue_below_its_guarantee_takes_back_what_it_needs_and_no_more(
    client: RecordingClient, rest_url: str
) -> None:
    await client.register(config=_config())
    await client.add_node("n1", NODE4)
    await client.wait_nodes_answered(1)
    await _apps(client, {"hog": "root.high", "starved": "root.low"})
    await _fill(client, "hog", 4)  # high uses 4000, twice its guarantee of 2000
    await client.wait_allocations(4)
    await _fill(client, "starved", 3)  # low wants 3000 but is guaranteed 2000
    # One preemption at a time per node: the RM confirms each as it comes, until low holds its guarantee.
    confirmed = 0

    def starved_running() -> int:
        return sum(a.applicationID == "starved" for a in client.seen.allocations.values())

    def preempted_more(than: int) -> bool:
        return len(preempted(client)) > than or starved_running() >= 2

    def running_at_least(count: int) -> bool:
        return starved_running() >= min(count, 2)

    while starved_running() < 2:
        await client.wait_for(partial(preempted_more, confirmed), timeout=15, what="a preemption")
        await confirm(client, preempted(client)[confirmed:])
        confirmed = len(preempted(client))
        await client.wait_for(partial(running_at_least, confirmed), timeout=15, what="an allocation")
    # Nothing more may be taken: the core looked at the third ask after low reached its guarantee (in
    # the cycle that placed the second, or later) and left it pending without victims.
    async with aiohttp.ClientSession() as session:
        body = await get_json(session, f"{partition_url(rest_url, client.rm_id)}/application/starved")
    placed_at = max(a["allocationTime"] for a in body.get("allocations", []))
    await left_pending(client, rest_url, "starved", "starved-2", since_ns=placed_at)
    victims = preempted(client)
    assert len(victims) == 2  # low reached its guarantee (2000): its third ask may not preempt
    assert {r.applicationID for r in victims} == {"hog"}
    assert [r.allocationKey for r in victims] == ["hog-3", "hog-2"]  # youngest first
    hog_left = [a for a in client.seen.allocations.values() if a.applicationID == "hog"]
    assert len(hog_left) == 2  # high kept exactly its guarantee


async def test_a_victim_of_higher_priority_is_not_taken(client: RecordingClient, rest_url: str) -> None:
    await client.register(config=_config())
    await client.add_node("n1", NODE4)
    await client.wait_nodes_answered(1)
    await _apps(client, {"vip": "root.high", "starved": "root.low"})
    await _fill(client, "vip", 4, priority=100)
    await client.wait_allocations(4)
    await _fill(client, "starved", 1, priority=50)
    await left_pending(client, rest_url, "starved", "starved-0")
    assert preempted(client) == []
    assert "starved-0" not in client.seen.allocations


async def test_an_equal_priority_victim_may_be_taken_to_restore_a_guarantee(client: RecordingClient) -> None:
    await client.register(config=_config())
    await client.add_node("n1", NODE4)
    await client.wait_nodes_answered(1)
    await _apps(client, {"peer": "root.high", "starved": "root.low"})
    await _fill(client, "peer", 4, priority=7)
    await client.wait_allocations(4)
    await _fill(client, "starved", 1, priority=7)
    await client.wait_for(lambda: bool(preempted(client)), timeout=10, what="a preemption")
    assert [r.applicationID for r in preempted(client)] == ["peer"]


async def test_a_fenced_subtree_is_not_raided_from_outside(client: RecordingClient, rest_url: str) -> None:
    """root.fortress is priority-fenced with offset 10: outside, its tasks count as priority 10
    whatever they are inside, so an ask of priority 5 cannot take them, though fortress has no
    guarantee to protect it; an ask of priority 10 can."""
    await client.register(config=_config())
    await client.add_node("n1", NODE4)
    await client.wait_nodes_answered(1)
    await _apps(client, {"keep": "root.fortress", "outside": "root.low", "urgent": "root.high"})
    await _fill(client, "keep", 4, priority=0)
    await client.wait_allocations(4)
    await _fill(client, "outside", 1, priority=5)
    await left_pending(client, rest_url, "outside", "outside-0")
    assert preempted(client) == []
    await _fill(client, "urgent", 1, priority=10)
    await client.wait_for(lambda: bool(preempted(client)), timeout=10, what="a preemption at priority 10")
    assert {r.applicationID for r in preempted(client)} == {"keep"}


async def test_asks_inside_a_preemption_fence_look_for_victims_only_inside(
    client: RecordingClient, rest_url: str
) -> None:
    await client.register(config=_config())
    await client.add_node("n1", NODE4)
    await client.wait_nodes_answered(1)
    await _apps(client, {"outsider": "root.high", "insider": "root.fenced.inside"})
    await _fill(client, "outsider", 4)  # high at twice its guarantee: a victim for anyone outside the fence
    await client.wait_allocations(4)
    await _fill(client, "insider", 1)  # below its guarantee, but its fence root is root.fenced
    await left_pending(client, rest_url, "insider", "insider-0")
    assert preempted(client) == []


async def test_an_ask_that_may_not_preempt_never_does(client: RecordingClient, rest_url: str) -> None:
    await client.register(config=_config())
    await client.add_node("n1", NODE4)
    await client.wait_nodes_answered(1)
    await _apps(client, {"hog": "root.high", "polite": "root.low"})
    await _fill(client, "hog", 4)
    await client.wait_allocations(4)
    # preemptionPolicy: Never in Kubernetes: allowPreemptOther false. Created long ago, so only that
    # flag, not the preemption delay, can hold it back.
    await client.ask("polite", "p0", SLOT, allow_preempt_other=False, tags={"creationTime": str(LONG_AGO)})
    await left_pending(client, rest_url, "polite", "p0")
    assert preempted(client) == []


async def test_preemption_disabled_for_the_partition_stops_it(client: RecordingClient, rest_url: str) -> None:
    await client.register(config=_config(enabled=False))
    await client.add_node("n1", NODE4)
    await client.wait_nodes_answered(1)
    await _apps(client, {"hog": "root.high", "starved": "root.low"})
    await _fill(client, "hog", 4)
    await client.wait_allocations(4)
    await _fill(client, "starved", 2)
    await left_pending(client, rest_url, "starved", "starved-0")
    await left_pending(client, rest_url, "starved", "starved-1")
    assert preempted(client) == []


async def test_a_queue_with_preemption_disabled_gives_no_victims(
    client: RecordingClient, rest_url: str
) -> None:
    await client.register(config=_config(high_extra=", preemption.policy: disabled"))
    await client.add_node("n1", NODE4)
    await client.wait_nodes_answered(1)
    await _apps(client, {"hog": "root.high", "starved": "root.low"})
    await _fill(client, "hog", 4)
    await client.wait_allocations(4)
    await _fill(client, "starved", 1)
    await left_pending(client, rest_url, "starved", "starved-0")
    assert preempted(client) == []


FIVE_CORES = {"vcore": 5_000}
ZONE_A = {"kubernetes.io/label/zone": "a"}


async def _leaf1_runs_two(
    client: RecordingClient, nodes: tuple[str, str], parent_max: bool = True, top: int = 100
) -> None:
    """YuniKorn's TestPreemption shape on two roomy nodes (zone a): leaf1 runs 2 x 5 vcore, placed on
    `nodes` (as an RM reports running tasks), and a max above leaf2 blocks its ask."""
    parent = "                resources: {max: {vcore: 10}}\n" if parent_max else ""
    await client.register(config=PARENT_MAX % {"parent": parent, "top": top})
    await client.add_nodes(*(messages.node(n, {"vcore": 20_000}, attributes=ZONE_A) for n in ("n1", "n2")))
    await client.wait_nodes_answered(2)
    await _apps(client, {"one": "root.top.parent.leaf1", "two": "root.top.parent.leaf2"})
    await client.asks(
        messages.ask("one", f"one-{i}", FIVE_CORES, node_id=node, tags={"creationTime": str(LONG_AGO + i)})
        for i, node in enumerate(nodes)
    )
    await client.wait_allocations(2)  # each reported allocation is confirmed


async def _preempts_one_and_places(client: RecordingClient) -> None:
    await client.asks([messages.ask("two", "want", FIVE_CORES, tags={"creationTime": str(LONG_AGO + 5)})])
    await client.wait_for(lambda: bool(preempted(client)), timeout=15, what="a preemption")
    await confirm(client, preempted(client))
    await client.wait_for(lambda: "want" in client.seen.allocations, timeout=15, what="leaf2's ask placed")
    await client.barrier()
    assert [r.allocationKey for r in preempted(client)] == ["one-1"]  # exactly one, the youngest
    assert sorted(client.seen.allocations) == ["one-0", "want"]


async def test_an_ask_blocked_only_by_its_parents_max_preempts_one_allocation_on_one_node(
    client: RecordingClient,
) -> None:
    await _leaf1_runs_two(client, ("n1", "n1"))
    await _preempts_one_and_places(client)


async def test_an_ask_blocked_only_by_its_parents_max_preempts_one_allocation_on_two_nodes(
    client: RecordingClient,
) -> None:
    await _leaf1_runs_two(client, ("n1", "n2"))
    await _preempts_one_and_places(client)


async def test_an_ask_blocked_by_a_grandparents_max_preempts_below_it(client: RecordingClient) -> None:
    await _leaf1_runs_two(client, ("n1", "n2"), parent_max=False, top=10)
    await _preempts_one_and_places(client)


async def test_no_preemption_when_no_node_would_admit_the_ask(client: RecordingClient, rest_url: str) -> None:
    await _leaf1_runs_two(client, ("n1", "n2"))
    picky = messages.ask(
        "two", "picky", FIVE_CORES,
        tags={"creationTime": str(LONG_AGO + 5), "pykorn.io/node-selector": '{"zone": "b"}'},
    )  # fmt: skip
    await client.asks([picky])
    await left_pending(client, rest_url, "two", "picky")
    assert preempted(client) == []
    async with aiohttp.ClientSession() as session:
        body = await get_json(session, f"{partition_url(rest_url, client.rm_id)}/application/two")
    log = [entry["message"] for entry in (pending_request(body, "picky") or {}).get("allocationLog", [])]
    assert any(m.startswith("preemption tried, none possible: no plan") for m in log), log


async def test_an_ask_over_its_users_limit_preempts_that_users_task_and_nobody_elses(
    client: RecordingClient,
) -> None:
    await client.register(config=USER_LIMIT)  # alice may use 50 memory under root.tenants
    await client.add_node("n1", {"memory": 200})  # roomy: only alice's limit blocks
    await client.wait_nodes_answered(1)
    apps = (("alice-batch", "root.tenants.batch", "alice"), ("bob-batch", "root.tenants.batch", "bob"),
            ("alice-prod", "root.tenants.prod", "alice"))  # fmt: skip
    await client.send_application_request(
        si_pb2.ApplicationRequest(
            rmID=client.rm_id, new=[messages.application(a, q, user=u) for a, q, u in apps]
        )
    )
    await client.wait_apps_answered(len(apps))
    ten = {"memory": 10}
    await client.asks(  # alice's four first, then bob's four: bob's are the youngest
        messages.ask(app, f"{app}-{i}", ten, tags={"creationTime": str(LONG_AGO + n * 4 + i)})
        for n, app in enumerate(("alice-batch", "bob-batch"))
        for i in range(4)
    )
    await client.wait_allocations(8)
    await client.asks(
        [messages.ask("alice-prod", "want", {"memory": 30}, tags={"creationTime": str(LONG_AGO + 9)})]
    )
    await client.wait_for(lambda: bool(preempted(client)), timeout=15, what="a preemption")
    await client.barrier()
    assert sorted(r.allocationKey for r in preempted(client)) == ["alice-batch-2", "alice-batch-3"]
    await confirm(client, preempted(client))
    await client.wait_for(lambda: "want" in client.seen.allocations, timeout=15, what="alice's ask placed")
