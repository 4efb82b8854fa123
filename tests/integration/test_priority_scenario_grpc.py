"""The priority-scheduling document's example hierarchy, over real gRPC with the fake shim's client.

    root
    ├── system            (unfenced)
    ├── tenant1           (fence)
    │   ├── queueA        (fence)
    │   └── queueB
    └── tenant2
        ├── queue1
        └── queue2

The cluster has room for four asks at a time; asks finish one by one. The order in which asks get
room must follow the document's arrows: the system queue above everything; nothing under tenant 1
above anything outside it (even priority 2,000,000,000 in queueA); queueB above queueA, never the
reverse; tenant 2's queues ranked across each other by their asks' own priorities.
"""

from __future__ import annotations

from rmclient import messages
from si.v1 import si_pb2
from tests.recording_client import RecordingClient

HIERARCHY = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: system
          - name: tenant1
            properties: {priority.policy: fence}
            queues:
              - name: queueA
                properties: {priority.policy: fence}
              - name: queueB
          - name: tenant2
            queues:
              - name: queue1
              - name: queue2
"""

TASK = {"memory": 1_000, "vcore": 1_000}
NODE = {"memory": 4_000, "vcore": 4_000}  # room for four tasks

APPS = {
    "sys-app": "root.system",
    "a-app": "root.tenant1.queueA",
    "b-app": "root.tenant1.queueB",
    "q1-app": "root.tenant2.queue1",
    "q2-app": "root.tenant2.queue2",
}
# (application, ask key, priority)
ASKS = [
    ("a-app", "A-1", 2_000_000_000),
    ("a-app", "A-2", 2_000_000_000),
    ("b-app", "B-1", 10),
    ("b-app", "B-2", 10),
    ("q1-app", "Q1-90", 90),
    ("q1-app", "Q1-20", 20),
    ("q2-app", "Q2-60", 60),
    ("q2-app", "Q2-40", 40),
    ("sys-app", "SYS-1", 1_000),
    ("sys-app", "SYS-2", 1_000),
]
EXPECTED_ORDER = ["SYS-1", "SYS-2", "Q1-90", "Q2-60", "Q2-40", "Q1-20", "B-1", "B-2", "A-1", "A-2"]


async def _submit_everything(client: RecordingClient, config: str) -> list[si_pb2.Allocation]:
    """Register, add the five applications and all ten asks, then the node; returns the first four."""
    await client.register(config=config)
    await client.send_application_request(
        si_pb2.ApplicationRequest(
            rmID=client.rm_id, new=[messages.application(app, queue) for app, queue in APPS.items()]
        )
    )
    await client.wait_apps_answered(len(APPS))
    assert sorted(client.seen.accepted_apps) == sorted(APPS), client.seen.rejected_apps
    # Same creation time for every ask, so only priorities and the queue tree decide.
    created = {"creationTime": "1700000000"}
    await client.asks(messages.ask(app, key, TASK, priority=prio, tags=created) for app, key, prio in ASKS)
    await client.add_node("node-1", NODE)
    return await client.wait_allocations(4)


async def test_allocation_order_follows_fences_offsets_and_priorities(client: RecordingClient) -> None:
    first = await _submit_everything(client, HIERARCHY)
    order = [a.allocationKey for a in first]
    assert order == EXPECTED_ORDER[:4]

    # Tasks finish one at a time, oldest first; each freed slot goes to the next in the order.
    while len(order) < len(EXPECTED_ORDER):
        running = [k for k in order if k in client.seen.allocations]
        app_id = client.seen.allocations[running[0]].applicationID
        await client.release(app_id, running[0])
        allocations = await client.wait_allocations(len(order) + 1)
        order = [a.allocationKey for a in allocations]
    assert order == EXPECTED_ORDER


PRIORITY_OFF = HIERARCHY.replace(
    '        submitacl: "*"\n',
    '        submitacl: "*"\n        properties: {application.sort.priority: disabled}\n',
)


async def test_with_priority_sorting_disabled_fair_share_decides(client: RecordingClient) -> None:
    """application.sort.priority: disabled on root is inherited by the whole tree: no queue jumps ahead
    for its asks' priorities; the four slots go round the queues by fair share instead."""
    first = await _submit_everything(client, PRIORITY_OFF)
    queues = {APPS[a.applicationID] for a in first}
    # Fair share spreads the four slots: no queue gets two before every top-level queue got one.
    tops = {q.split(".")[1] for q in queues}
    assert tops == {"system", "tenant1", "tenant2"}
