"""The fact table of change details: the situations, what yunikorn-core records in each (read from
its event code: pkg/scheduler/objects/events/*.go, pkg/scheduler/ugm/ugm_events.go and their call
sites in pkg/scheduler: context.go, partition.go, objects/{application,node,queue}.go,
objects/{preemption,quota_preemptor}.go, ugm/{user,group}_tracker.go, ugm/manager.go), and the check
the tests run: drive the situation through the core and compare what it recorded while it happened,
as a multiset of (type, object, change, detail, reference, resource), with the events YuniKorn
records there; free-text messages where YuniKorn's are fixed texts.

What pykorn records beyond YuniKorn (and is not in these facts, or is marked so): QUEUE_CONFIG on a
reload that changes a queue's state or properties, NODE_OCCUPIED and APP_ALLOC SET on an in-place
resize, and the REQUEST events that say why an ask is pending.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from core.config import load_config
from core.events import Event
from core.objects.allocation import Allocation
from core.objects.gang import GangStyle
from core.resources import Resource
from core.scheduler.commands import (
    AppAdd,
    ReleaseRequest,
    UpdateAllocations,
    UpdateApplications,
    UpdateConfig,
)
from core.scheduler.results import Termination
from tests.unit.domain_helpers import Cluster, drained

Key = tuple[str, str, str, str, str, tuple[tuple[str, int], ...]]


def ev(
    kind: str, obj: str, change: str, detail: str, ref: str = "", res: Mapping[str, int] | None = None
) -> Key:
    """One expected event: (type, objectID, change type, change detail, referenceID, resource)."""
    return (kind, obj, change, detail, ref, tuple(sorted((res or {}).items())))


def key(e: Event) -> Key:
    return (
        e.type,
        e.object_id,
        e.change_type,
        e.change_detail,
        e.reference_id,
        tuple(sorted(e.resource.items())),
    )


MEM = {"memory": 2}
NODE = {"memory": 10}
ROOT_MAX = ev("QUEUE", "root", "SET", "QUEUE_MAX", res=NODE)  # root's max follows the nodes

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
          - name: small
            maxapplications: 1
          - name: limited
            limits:
              - limit: per user
                users: [u]
                maxapplications: 1
              - limit: per group
                groups: [dev]
                maxresources: {memory: 100}
"""


Step = Callable[[Cluster], object]


@dataclass
class Fact:
    """A situation, what YuniKorn records in it, and where its code says so."""

    situation: str
    yunikorn: str  # the call sites that record these events
    setup: list[Step]  # what is there before
    act: list[Step]  # the situation: what it records is compared
    expected: list[Key]
    messages: dict[tuple[str, str], str] = field(default_factory=dict)  # (object, detail) -> fixed text
    # Whether the REQUEST events (NONE, DETAILS_NONE) count: YuniKorn's say why an ask waits (headroom,
    # predicates, quota) in texts and at rates of its own, as pykorn's do; only who preempted a victim
    # is a fact here.
    requests: frozenset[str] = frozenset()  # the REQUEST events of these objects count


def cluster() -> Cluster:
    return Cluster(CONFIG)


def app(c: Cluster, app_id: str = "app", queue: str = "root.default", groups: tuple[str, ...] = ()) -> None:
    c.app(app_id, queue, user="u", groups=groups)


def running(c: Cluster, app_id: str = "app", key: str = "t0", queue: str = "root.default") -> None:
    """Node n1 (memory 10) and an application with allocation `key` (memory 2) running on it."""
    if "n1" not in c.partition.nodes:
        c.node("n1", NODE)
    app(c, app_id, queue)
    c.ask(app_id, key, MEM)
    c.schedule()


SIX = {"memory": 6}


def busy(c: Cluster) -> None:
    """Nodes n1 and n2 (memory 10 each), each running an allocation of 6 (f1 on n1, f2 on n2)."""
    c.node("n1", NODE)
    c.node("n2", NODE)
    app(c)
    c.ask("app", "f1", SIX)
    c.ask("app", "f2", SIX)
    c.schedule()
    placed = {a.key: a.node_id for a in c.partition.applications["app"].allocations.values()}
    assert placed == {"f1": "n1", "f2": "n2"}


def release(c: Cluster, app_id: str, key: str, termination: Termination | None) -> None:
    release = ReleaseRequest(c.pname(), app_id, key, termination=termination)
    c.ctx.apply(UpdateAllocations(c.rm_id, releases=(release,)))


def gang(c: Cluster, members: int, style: GangStyle = GangStyle.SOFT) -> None:
    add = AppAdd(
        "job", c.pname(), "root.default", user="u", placeholder_ask=Resource({"memory": 2 * members}),
        gang_style=style, placeholder_timeout_ms=60_000,
    )  # fmt: skip
    c.ctx.apply(UpdateApplications(c.rm_id, adds=(add,)))
    asks = tuple(
        Allocation(f"ph-{i}", "job", c.pname(), Resource(MEM), task_group="tg", placeholder=True)
        for i in range(members)
    )
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=asks))


def real_task(c: Cluster, key: str, resource: Mapping[str, int] = MEM) -> None:
    real = Allocation(key, "job", c.pname(), Resource(resource), task_group="tg")
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(real,)))


def reload(c: Cluster, text: str) -> None:
    c.ctx.apply(UpdateConfig(c.rm_id, load_config(text).config))


# No root.default: an application placement does not place is refused.
NO_DEFAULT = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: other
"""

RELOADED = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
            resources: {max: {memory: 8}}
          - name: small
            queues:
              - name: child
          - name: fresh
"""

USER_A1 = ev("USERGROUP", "u", "ADD", "UG_USER_RESOURCE", "root.default", MEM)


def check(fact: Fact) -> None:
    c = cluster()
    for step in fact.setup:
        step(c)
    drained(c)
    before = c.ctx.events.highest_id
    for step in fact.act:
        step(c)
    drained(c)
    recorded = [
        e
        for _, e in c.ctx.events.since(before + 1, 10_000)
        if e.type != "REQUEST" or e.object_id in fact.requests
    ]
    assert Counter(map(key, recorded)) == Counter(fact.expected), fact.yunikorn
    for (obj, detail), text in fact.messages.items():
        said = [e.message for e in recorded if e.object_id == obj and e.change_detail == detail]
        assert said and all(m == text for m in said), (obj, detail, said)
