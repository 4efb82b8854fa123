"""Which partition a node and a pod are in, and which partitions a queue configuration declares
(shim_k8s.readers.partitions)."""

from __future__ import annotations

from typing import Any

from shim_k8s.readers.partitions import DEFAULT, PARTITION_KEY, declared, node_partition, pod_partition

POOL = "example.com/pool"


def _node(**labels: str) -> dict[str, Any]:
    return {"metadata": {"name": "n1", "labels": labels}}


def _pod(label: str = "") -> dict[str, Any]:
    return {"metadata": {"name": "p", "labels": {PARTITION_KEY: label} if label else {}}}


def _namespace(annotation: str = "") -> dict[str, Any]:
    return {"metadata": {"name": "ns", "annotations": {PARTITION_KEY: annotation} if annotation else {}}}


def test_a_node_is_in_the_partition_its_label_names_and_default_without_one_or_without_a_key() -> None:
    assert node_partition(_node(**{POOL: "gpu"}), POOL) == "gpu"
    assert node_partition(_node(), POOL) == DEFAULT
    assert node_partition(_node(**{POOL: "gpu"}), "") == DEFAULT  # no key set: YuniKorn's one partition
    assert node_partition(_node(**{POOL: ""}), POOL) == DEFAULT


def test_a_pods_label_wins_over_its_namespaces_annotation() -> None:
    assert pod_partition(_pod("fpga"), _namespace("gpu")) == "fpga"
    assert pod_partition(_pod(), _namespace("gpu")) == "gpu"
    assert pod_partition(_pod(), _namespace()) == DEFAULT
    assert pod_partition(_pod(), None) == DEFAULT


def test_the_partitions_a_configuration_declares() -> None:
    two = "partitions: [{name: default, queues: [{name: root}]}, {name: GPU, queues: [{name: root}]}]"
    assert declared(two) == {"default", "GPU"}  # as written: the core keeps the case
    assert declared("") == {DEFAULT}  # none yet: the core's own default
    assert declared("partitions: [") == {DEFAULT}  # unreadable: the core refuses it and keeps the last
    assert declared("partitions: []") == {DEFAULT}
