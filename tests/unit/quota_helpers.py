"""Shared builders for the quota preemption tests (../shared/design/quota-enforcement-preemption.txt).

Driven through the cluster context with an injected clock: a queue's max is lowered by a configuration
reload, time passes, `tick` fires the quota timers, and the victims come back to the RM as releases
with termination PREEMPTED_BY_SCHEDULER.
"""

from __future__ import annotations

from typing import Any

import yaml

from core.config import load_config
from core.objects.allocation import Allocation
from core.objects.queue import Queue
from core.resources import Resource
from core.scheduler.commands import (
    ReleaseRequest,
    UpdateAllocations,
    UpdateConfig,
)
from core.scheduler.results import Termination
from si.v1.tags import TAG_REQUIRED_NODE
from tests.unit.domain_helpers import Cluster

G = 10**9  # the document's "G" of memory
M = "memory"
CPU = "vcore"
NODE = {M: 10**15, CPU: 10**9}


# Helpers --------------------------------------------------------------------------------------


def _quantities(values: dict[str, int]) -> dict[str, int | str]:
    # vcore is configured in cores; written in milli-cores here, so that every number in these tests
    # is the one the core counts with.
    return {k: f"{v}m" if k == CPU else v for k, v in values.items()}


def q(
    name: str,
    max: dict[str, int] | None = None,
    guaranteed: dict[str, int] | None = None,
    delay: str | None = None,
    props: dict[str, str] | None = None,
    children: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One queue of a configuration."""
    queue: dict[str, Any] = {"name": name}
    resources = {}
    if guaranteed is not None:
        resources["guaranteed"] = _quantities(guaranteed)
    if max is not None:
        resources["max"] = _quantities(max)
    if resources:
        queue["resources"] = resources
    properties = dict(props or {})
    if delay is not None:
        properties["quota.preemption.delay"] = delay
    if properties:
        queue["properties"] = properties
    if children is not None:
        queue["queues"] = children
    return queue


def config(*queues: dict[str, Any], quota_enabled: bool = True, inter_queue: bool = True) -> str:
    partition = {
        "name": "default",
        "preemption": {"enabled": inter_queue, "quotapreemptionenabled": quota_enabled},
        "queues": [{"name": "root", "submitacl": "*", "queues": list(queues)}],
    }
    return yaml.safe_dump({"partitions": [partition]}, sort_keys=False)


def cluster(text: str) -> Cluster:
    c = Cluster(text)
    c.node("n1", NODE)
    return c


def running(
    c: Cluster,
    app: str,
    key: str,
    memory: int = 0,
    vcore: int = 0,
    *,
    priority: int = 0,
    originator: bool = False,
    allow: bool = False,
    age: float = 0.0,
    required_node: bool = False,
) -> Allocation:
    """An allocation the RM already runs on n1; `age` seconds old (older ones have larger ages)."""
    res = {k: v for k, v in ((M, memory), (CPU, vcore)) if v}
    alloc = Allocation(
        key, app, c.pname(), Resource(res), priority=priority, node_id="n1", originator=originator,
        allow_preempt_self=allow, create_time=c.clock.now - age,
        tags={TAG_REQUIRED_NODE: "n1"} if required_node else {},
    )  # fmt: skip
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(alloc,)))
    return alloc


def fill(c: Cluster, app: str, count: int, memory: int, prefix: str | None = None) -> list[str]:
    """`count` allocations of `memory`; the key with the highest index is the youngest."""
    prefix = prefix if prefix is not None else app
    keys = [f"{prefix}{i}" for i in range(count)]
    for i, key in enumerate(keys):
        running(c, app, key, memory, age=count - i)
    return keys


def reload(c: Cluster, text: str) -> None:
    c.ctx.apply(UpdateConfig(c.rm_id, load_config(text).config))


def preempted(c: Cluster) -> list[tuple[str, str, str]]:
    """(app, key, message) of every release by quota (or other) preemption since the last drain."""
    return [
        (r.app_id, r.key, r.message)
        for b in c.ctx.drain_results()
        for r in b.released
        if r.termination == Termination.PREEMPTED_BY_SCHEDULER
    ]


def keys(victims: list[tuple[str, str, str]]) -> list[str]:
    return [key for _, key, _ in victims]


def advance(c: Cluster, seconds: float) -> list[tuple[str, str, str]]:
    """Let time pass, fire what is due; the preempted (app, key, message)."""
    c.clock.advance(seconds)
    c.ctx.tick()
    return preempted(c)


def confirm(c: Cluster, victims: list[tuple[str, str, str]]) -> None:
    """The RM releases the victims, as it does once their pods are gone."""
    for app, key, _ in victims:
        c.ctx.apply(UpdateAllocations(c.rm_id, releases=(ReleaseRequest(c.pname(), app, key),)))


def queue(c: Cluster, name: str) -> Queue:
    found = c.partition.find_queue(name)
    assert found is not None, name
    return found


def leaf_cluster(
    max: dict[str, int], guaranteed: dict[str, int] | None = None, delay: str = "10s"
) -> Cluster:
    """root.leaf with application "a", its max as given; lower it with lower_leaf()."""
    c = cluster(config(q("leaf", max=max, guaranteed=guaranteed, delay=delay)))
    c.app("a", "root.leaf")
    return c


def lower_leaf(
    c: Cluster, max: dict[str, int], guaranteed: dict[str, int] | None = None, delay: str = "10s"
) -> None:
    reload(c, config(q("leaf", max=max, guaranteed=guaranteed, delay=delay)))
    preempted(c)  # drop the confirmations of the existing allocations


def _parent_cluster(p_max: int, p_delay: str = "10s", **kw: Any) -> Cluster:
    """root.p with a (guaranteed 20), b (no guarantee), c (empty); applications a, b, c."""
    c = cluster(_parent_config(p_max, p_delay, **kw))
    for app in "abc":
        c.app(app, f"root.p.{app}")
    return c


def _parent_config(
    p_max: int,
    p_delay: str = "10s",
    p_props: dict[str, str] | None = None,
    child_props: dict[str, str] | None = None,
    **kw: Any,
) -> str:
    return config(
        q("p", max={M: p_max}, delay=p_delay, props=p_props, children=[
            q("a", guaranteed={M: 20}, props=child_props),
            q("b", props=child_props),
            q("c", props=child_props),
        ]),
        **kw,
    )  # fmt: skip
