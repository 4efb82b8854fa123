"""The nodes of the cluster as the core sees them: sent at a start, added, changed, drained and
removed as the informer sees them, each in its partition (shim_k8s.partition_map), with a node
relabelled into another partition moved there with the pods running on it; pods the core refused
while it did not know their node sent again once it does."""

from __future__ import annotations

from collections.abc import Coroutine, Iterable
from typing import Any, Protocol

import structlog

from rmclient import messages
from rmclient.client import SchedulerClient
from shim_k8s import partition_map
from shim_k8s.api import object_shapes
from shim_k8s.api.objects import Obj, WatchEvent, key_of
from shim_k8s.outbox import Outbox
from shim_k8s.partition_map import PartitionMap
from shim_k8s.pods import Pods
from shim_k8s.readers import service_config, translate
from shim_k8s.readers.bad_objects import BadObjects, Refused
from shim_k8s.shim_state import ShimBase, finished, node_of
from si.v1 import si_pb2
from si.v1.tags import ATTR_NODE_PARTITION

log = structlog.get_logger("pykorn.k8s")


class ShimForNodes(ShimBase, Protocol):
    """What of the shim the node side reads and calls."""

    @property
    def client(self) -> SchedulerClient: ...
    @property
    def outbox(self) -> Outbox: ...
    @property
    def partitions(self) -> PartitionMap: ...
    @property
    def bad(self) -> BadObjects: ...
    @property
    def service(self) -> service_config.ServiceConfig: ...
    async def refuse(self, kind: str, obj: Obj, exc: Exception) -> None: ...
    async def guarded(self, kind: str, obj: Obj, work: Coroutine[Any, Any, None]) -> None: ...


class Nodes:
    def __init__(self, shim: ShimForNodes, pods: Pods) -> None:
        self.shim = shim
        self.pods = pods  # the pods on a node: adopted, or moved with it
        self.seen = 0  # nodes the core answered (accepted or refused), counted
        self._answers: dict[str, int] = {}  # answers about each node that joins or moves, counted
        self.rejoining: set[str] = set()  # nodes coming back from a partition not declared

    def answered(self, response: si_pb2.NodeResponse) -> None:
        self.seen += len(response.accepted) + len(response.rejected)
        answers = self._answers
        if answers:  # a node joining or moving waits for the core's word on it
            for node_id in [a.nodeID for a in response.accepted] + [r.nodeID for r in response.rejected]:
                if node_id in answers:
                    answers[node_id] += 1

    async def send_all(self, nodes: Iterable[Obj]) -> None:
        """Every node, to a core that knows nothing of this RM, answered before any pod is sent; one
        that cannot be read is refused, one of a partition not declared waits."""
        shim = self.shim
        infos = []
        for node in nodes:
            try:
                found = object_shapes.diagnose("nodes", node)
                if found:
                    raise Refused(found)
                partition = shim.partitions.of_node(node)
                shim.partitions.node_is(node["metadata"]["name"], partition)
                if shim.partitions.node_waits(node, partition):
                    self.rejoining.add(node["metadata"]["name"])
                    continue
                infos.append(self.node_info(node, create=True))
                shim.state.nodes[node["metadata"]["name"]] = node
            except Exception as exc:
                await shim.refuse("nodes", node, exc)
        if infos:
            answered = self.seen
            await shim.client.add_nodes(*infos)
            await shim.outbox.until_answered(lambda: self.seen >= answered + len(infos), "the nodes")

    async def on_node(self, event: str, node: Obj) -> None:
        """A node added, changed or gone: the core told, in the node's partition (a relabelled one
        moves, see _move)."""
        shim = self.shim
        await shim.outbox.flush()  # pods sent already on this node must not arrive after it is gone
        name = node["metadata"]["name"]
        known = shim.state.nodes.get(name)
        if event == WatchEvent.DELETED:
            shim.partitions.waiting_nodes.pop(name, None)
            self.rejoining.discard(name)
            if shim.state.nodes.pop(name, None) is not None:
                await shim.client.add_nodes(self.node_action(name, si_pb2.NodeInfo.DECOMISSION))
                shim.partitions.node_is(name, partition_map.DEFAULT)
            shim.bad.forget(key_of(node))
            return
        partition = shim.partitions.of_node(node)
        if known is not None and partition != shim.partitions.node_was(name):
            await self._move(node, partition)  # relabelled into another partition
            return
        if known is None:
            shim.partitions.node_is(name, partition)
            if shim.partitions.node_waits(node, partition):
                self.rejoining.add(name)
                return
            if name in self.rejoining:  # back from a partition not declared: with its pods
                self.rejoining.discard(name)
                await self._join(node, answers_before=0)
                return
        info = self.node_info(node, create=known is None)  # read before anything changes
        shim.state.nodes[name] = node
        answered = self.seen
        await shim.client.add_nodes(info)
        if known is None:
            await self._adopt_orphans(name, answered)
            return
        was, now = translate.node_is_cordoned(known), translate.node_is_cordoned(node)
        if was != now:  # cordon drains; uncordon makes it schedulable again
            action = si_pb2.NodeInfo.DRAIN_NODE if now else si_pb2.NodeInfo.DRAIN_TO_SCHEDULABLE
            await shim.client.add_nodes(self.node_action(name, action))

    def node_info(self, node: Obj, create: bool) -> si_pb2.NodeInfo:
        """The node as the core sees it, with its CSINode's attach limits and its partition (as the
        partition map has it: a move records the new one first)."""
        name = node["metadata"]["name"]
        limits = self.pods.volumes.csi_limits(name)
        action = si_pb2.NodeInfo.CREATE_DRAIN if translate.node_is_cordoned(node) else si_pb2.NodeInfo.CREATE
        action = action if create else si_pb2.NodeInfo.UPDATE
        info = translate.node_info(node, action, limits, self.shim.service.instance_type_label)
        partition = self.shim.partitions.node_was(name)
        if partition != partition_map.DEFAULT:
            info.attributes[ATTR_NODE_PARTITION] = partition
        return info

    def node_action(self, name: str, action: si_pb2.NodeInfo.ActionFromRM) -> si_pb2.NodeInfo:
        """A drain, a return to service or a removal of the node, in its partition."""
        partition = self.shim.partitions.node_was(name)
        attributes = {ATTR_NODE_PARTITION: partition} if partition != partition_map.DEFAULT else None
        return messages.node(name, action=action, attributes=attributes)

    async def _adopt_orphans(self, name: str, answered: int) -> None:
        """The pods the core refused because it did not know their node: sent again now it does (once
        the core answered the node, counted from `answered`)."""
        shim = self.shim
        orphans = shim.state.ledger.adopted(name)
        if not orphans:
            return
        await shim.outbox.until_answered(lambda: self.seen > answered, f"node {name}")
        for uid in orphans:
            pod = shim.state.ledger.pod(uid)
            if pod is None or node_of(pod) != name:
                continue
            shim.state.ledger.no_longer_foreign(uid)  # sent afresh, to its node's partition
            await shim.guarded("pods", pod, self.pods.add_pod(pod))

    async def _move(self, node: Obj, new: str) -> None:
        """The node was relabelled into partition `new`: it leaves its old partition (the core
        releases what ran on it there) and joins the new one with the pods running on it (_join).
        Into a partition not declared, it waits out of scheduling until one declares it."""
        shim = self.shim
        name = node["metadata"]["name"]
        old = shim.partitions.node_was(name)
        await shim.outbox.flush()  # what was sent for it goes first
        self._answers[name] = 0
        await shim.client.add_nodes(self.node_action(name, si_pb2.NodeInfo.DECOMISSION))
        shim.partitions.node_is(name, new)
        ledger = shim.state.ledger
        for pod in ledger.on_node(name):  # the old partition's counts of them are going
            uid = key_of(pod)
            ledger.left(uid, old)
            ledger.no_longer_foreign(uid)
            ledger.moved_away(uid)
        log.info("node moved to another partition", node=name, before=old, now=new)
        message = f"node moved from partition {old} to partition {new} (its partition label changed)"
        shim.in_background(shim.kube.record_event({**node, "kind": "Node"}, "NodePartitionChanged", message))
        if shim.partitions.node_waits(node, new):
            shim.state.nodes.pop(name, None)
            self._answers.pop(name, None)
            self.rejoining.add(name)
            return
        await self._join(node, answers_before=1)

    async def _join(self, node: Obj, answers_before: int) -> None:
        """The node joins its partition with the pods running on it: closed to new work until they
        are counted there (so nothing is placed in room they hold), then open unless cordoned. Each
        pod is sent afresh: ours in its queue when its application is in this partition, every other
        one as occupying the node. `answers_before`: the core's answers about the node still awaited
        from before (a move's removal)."""
        shim = self.shim
        name = node["metadata"]["name"]
        shim.state.nodes[name] = node
        self._answers.setdefault(name, 0)
        info = self.node_info(node, create=True)
        info.action = si_pb2.NodeInfo.CREATE_DRAIN
        await shim.client.add_nodes(info)
        try:
            await shim.outbox.until_answered(
                lambda: self._answers[name] >= answers_before + 1, f"node {name} joining its partition"
            )
        finally:
            self._answers.pop(name, None)
        ledger = shim.state.ledger
        for pod in ledger.on_node(name):
            if finished(pod):
                continue
            uid = key_of(pod)
            ledger.no_longer_foreign(uid)
            ledger.moved_away(uid)
            await shim.guarded("pods", pod, self.pods.add_pod(pod))
        await shim.outbox.flush()
        if not translate.node_is_cordoned(node):
            await shim.client.add_nodes(self.node_action(name, si_pb2.NodeInfo.DRAIN_TO_SCHEDULABLE))
