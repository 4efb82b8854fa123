"""Which partition each node, application and pod of the shim's is in (the rules are
shim_k8s.readers.partitions'), and what the shim does about it:

- a node is sent with its partition (`si/node-partition`); a node relabelled into another partition
  moves: it leaves the old one (its allocations there are released by the core) and joins the new,
  with the pods running on it counted there: ours in their queue when their application is in that
  partition, otherwise as occupying the node (as another scheduler's pod would);
- an application is in the partition of its first pod, and each of its asks goes there; a pod asking
  for another partition than its application's, or for one the queue configuration does not declare,
  waits and says why (a PodScheduled condition and an event), and is looked at again when it changes
  or the configuration does;
- a running pod belongs to its node's partition: it counts in its queue when its application is
  there too, otherwise it occupies its node there.
"""

from __future__ import annotations

from typing import Protocol

import structlog

from shim_k8s.api.objects import Obj
from shim_k8s.readers import partitions, service_config
from shim_k8s.readers.configmaps import ConfigMaps
from shim_k8s.shim_state import ShimBase

log = structlog.get_logger("pykorn.k8s")

DEFAULT = partitions.DEFAULT
CONFIGURED = "partitions/declared"  # wait key: the queue configuration the core took changed


class ShimForPartitions(ShimBase, Protocol):
    @property
    def service(self) -> service_config.ServiceConfig: ...
    @property
    def settings(self) -> ConfigMaps: ...


class PartitionMap:
    def __init__(self, shim: ShimForPartitions) -> None:
        self.shim = shim
        self.nodes: dict[str, str] = {}  # node -> its partition, when not `default`
        self.apps: dict[str, str] = {}  # application -> its partition, when not `default`
        # Nodes of a partition the queue configuration does not declare: not sent until it does.
        self.waiting_nodes: dict[str, Obj] = {}
        self._declared: tuple[str, frozenset[str]] = ("", frozenset({DEFAULT}))

    def clear(self) -> None:
        """A re-sync with a core that knows nothing: every node and application is sent afresh."""
        self.nodes.clear()
        self.apps.clear()
        self.waiting_nodes.clear()

    def node_waits(self, node: Obj, partition: str) -> bool:
        """Whether the node is of a partition not declared: kept aside (True), and told so once."""
        name = node["metadata"]["name"]
        if partition in self.declared():
            self.waiting_nodes.pop(name, None)
            return False
        if name not in self.waiting_nodes:
            label = self.shim.service.partition_node_label_key
            why = (f"its partition {partition!r} (label {label}) is not in the queue configuration: "
                   "nothing is scheduled on it until it is")  # fmt: skip
            log.warning("node of a partition not declared", node=name, partition=partition)
            shown = {**node, "kind": "Node"}
            self.shim.in_background(
                self.shim.kube.record_event(shown, "PartitionNotFound", why, warning=True)
            )
        self.waiting_nodes[name] = node
        return True

    # Nodes ------------------------------------------------------------------------------------
    def of_node(self, node: Obj) -> str:
        return partitions.node_partition(node, self.shim.service.partition_node_label_key)

    def node_was(self, name: str) -> str:
        return self.nodes.get(name, DEFAULT)

    def node_is(self, name: str, partition: str) -> None:
        if partition == DEFAULT:
            self.nodes.pop(name, None)
        else:
            self.nodes[name] = partition

    # Applications and pods --------------------------------------------------------------------
    def declared(self) -> frozenset[str]:
        """The partitions of the queue configuration the core took (its own default: `default`)."""
        text = self.shim.settings.accepted
        if self._declared[0] != text:
            self._declared = (text, partitions.declared(text))
        return self._declared[1]

    def app_is(self, app_id: str, partition: str) -> None:
        if partition == DEFAULT:
            self.apps.pop(app_id, None)
        else:
            self.apps[app_id] = partition

    def app_partition(self, app_id: str) -> str:
        return self.apps.get(app_id, DEFAULT)

    def for_pending(self, pod: Obj, namespace: Obj | None, app_id: str) -> tuple[str, tuple[str, str] | None]:
        """The partition a pending pod is asked for in, and (event reason, why) when it may not be
        asked for yet."""
        wanted = partitions.pod_partition(pod, namespace)
        declared = self.declared()
        if wanted not in declared:
            why = (f"partition {wanted!r} is not in the queue configuration (it declares "
                   f"{', '.join(sorted(declared))}): the pod waits until it is")  # fmt: skip
            return wanted, ("PartitionNotFound", why)
        if app_id in self.shim.state.apps and self.app_partition(app_id) != wanted:
            why = (f"application {app_id} is in partition {self.app_partition(app_id)!r}, this pod asks "
                   f"for {wanted!r}: an application's pods are in one partition (give this pod its own "
                   "applicationId)")  # fmt: skip
            return wanted, ("PartitionMismatch", why)
        return wanted, None

    def for_running(self, pod: Obj, namespace: Obj | None, app_id: str, node: str) -> tuple[str, bool]:
        """The partition a running pod of ours counts in (its node's), and whether it counts in its
        queue there (its application is, or will be, in that partition) or only occupies its node."""
        here = self.node_was(node)
        if here not in self.declared():  # its node waits for its partition: nothing counts there yet
            return here, False
        if app_id in self.shim.state.apps:
            return here, self.app_partition(app_id) == here
        return here, partitions.pod_partition(pod, namespace) == here
