"""Several partitions on one cluster: which partition a node and a pod are in.

YuniKorn's core serves several partitions, but its Kubernetes shim puts every node and pod in
`default`. pykorn's shim reads them from the objects:
- a node: the value of the node label that `service.partitionNodeLabelKey` names (pykorn's key; unset,
  the default, every node is in `default`, as YuniKorn's);
- a pod of ours: its label `pykorn.apache.org/partition`, else its namespace's annotation of that name,
  else `default`.
A partition is served when the queue configuration (queues.yaml) declares it; shim_k8s.pods decides what
a pod of a partition that is not declared does (it waits, and says why).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

PARTITION_KEY = "pykorn.apache.org/partition"  # pod label, namespace annotation
DEFAULT = "default"
NAME_LIMIT = 63  # a label value's length, and so a partition named by one


def node_partition(node: Mapping[str, Any], label_key: str) -> str:
    """The node's partition: its `label_key` label's value; `default` without one (or no key set)."""
    if not label_key:
        return DEFAULT
    labels = (node.get("metadata") or {}).get("labels") or {}
    value = labels.get(label_key)
    return str(value) if isinstance(value, str) and value else DEFAULT


def pod_partition(pod: Mapping[str, Any], namespace: Mapping[str, Any] | None) -> str:
    """The partition a pod asks for: its label, else its namespace's annotation, else `default`."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    value = labels.get(PARTITION_KEY)
    if not value and namespace is not None:
        value = ((namespace.get("metadata") or {}).get("annotations") or {}).get(PARTITION_KEY)
    return str(value) if isinstance(value, str) and value else DEFAULT


def declared(queues_yaml: str) -> frozenset[str]:
    """The partitions a queue configuration declares (`default` when it says none, or cannot be read:
    the core refuses such a configuration with the reason, and keeps the last good one)."""
    try:
        doc = yaml.safe_load(queues_yaml) if queues_yaml else None
    except yaml.YAMLError:
        return frozenset({DEFAULT})
    names = {
        str(p.get("name") or DEFAULT)  # a partition without a name is the core's `default`
        for p in ((doc or {}).get("partitions") or [] if isinstance(doc, dict) else [])
        if isinstance(p, dict)
    }
    return frozenset(names or {DEFAULT})
