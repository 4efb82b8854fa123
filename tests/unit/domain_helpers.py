"""Builders for driving ClusterContext directly in unit and property tests."""

from __future__ import annotations

from collections.abc import Mapping

from core.config import load_config
from core.objects.allocation import Allocation
from core.objects.partition_key import PartitionKey
from core.resources import Resource
from core.scheduler.cluster import ClusterContext
from core.scheduler.commands import (
    AppAdd,
    NodeAction,
    NodeChange,
    RegisterRM,
    ReleaseRequest,
    UpdateAllocations,
    UpdateApplications,
    UpdateNodes,
)
from core.scheduler.partition import Partition
from core.scheduler.results import ResultBatch

ONE_LEAF = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
            resources:
              max: {memory: 100, vcore: 100}
"""


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Cluster:
    """A ClusterContext for one RM with terse helpers."""

    def __init__(
        self, config: str = ONE_LEAF, rm_id: str = "rm-1", ctx: ClusterContext | None = None
    ) -> None:
        self.clock = FakeClock()
        self.ctx = ctx or ClusterContext(self.clock)
        self.rm_id = rm_id
        self.ctx.apply(RegisterRM(rm_id, load_config(config).config))

    @property
    def partition(self) -> Partition:
        return self.ctx.partitions[PartitionKey(self.rm_id, "default")]

    def pname(self, name: str = "default") -> PartitionKey:
        return PartitionKey(self.rm_id, name)

    def node(self, node_id: str, capacity: Mapping[str, int], action: NodeAction = NodeAction.CREATE) -> None:
        self.ctx.apply(
            UpdateNodes(self.rm_id, (NodeChange(node_id, action, self.pname(), {}, Resource(capacity)),))
        )

    def node_action(
        self, node_id: str, action: NodeAction, capacity: Mapping[str, int] | None = None
    ) -> None:
        res = Resource(capacity) if capacity is not None else None
        self.ctx.apply(UpdateNodes(self.rm_id, (NodeChange(node_id, action, self.pname(), {}, res),)))

    def app(
        self, app_id: str, queue: str = "root.default", user: str = "", groups: tuple[str, ...] = ()
    ) -> None:
        add = AppAdd(app_id, self.pname(), queue, user=user, groups=groups)
        self.ctx.apply(UpdateApplications(self.rm_id, adds=(add,)))

    def ask(
        self, app_id: str, key: str, resource: Mapping[str, int], priority: int = 0, node_id: str = ""
    ) -> None:
        alloc = Allocation(key, app_id, self.pname(), Resource(resource), priority=priority, node_id=node_id)
        self.ctx.apply(UpdateAllocations(self.rm_id, allocations=(alloc,)))

    def release(self, app_id: str, key: str = "") -> None:
        self.ctx.apply(UpdateAllocations(self.rm_id, releases=(ReleaseRequest(self.pname(), app_id, key),)))

    def schedule(self, budget: int = 10_000) -> int:
        return self.ctx.schedule(budget)


def drained(c: Cluster) -> ResultBatch:
    """Everything the core has to tell `c`'s RM since the last drain, in one batch."""
    merged = ResultBatch(c.rm_id)
    for batch in c.ctx.drain_results():
        if batch.rm_id == c.rm_id:
            for name in vars(merged):
                if name != "rm_id":
                    getattr(merged, name).extend(getattr(batch, name))
    return merged
