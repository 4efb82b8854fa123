"""Hypothesis strategies for what a cluster may hold that the shim does not expect: every kind the shim
watches, made from a template that uses each field the shim reads, with some of those fields replaced by
values of any shape (wrong types at every level, nulls, missing fields, huge and unicode text, odd
quantities), unknown keys added, and keys written twice in the JSON.

Names and namespaces stay readable: the API server (and its emulation) stores nothing without them.
Hostile objects live apart from the well-formed pods they are mixed with (their own namespaces and
nodes), so that what they may legitimately do (take room, hold a host port) never keeps a well-formed
pod from its node."""

from __future__ import annotations

import base64
import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from core import config

Json = Any
KEPT = {("metadata", "name"), ("metadata", "namespace")}

ODD_QUANTITIES = [
    "400m", "1500u", "1e3", ".5", "129e6", "-1", "1e100", "9Ei", "0.1n", "1.", "+1", ".", "Ki",
    "1e4294967297", " 1", "1 ", "lots", "", "\u221e", "\uff11", "1e-100000", "1" * 300, "12E",
    "0.000000000001Ki",
]  # fmt: skip
_text = st.text(max_size=20)
_huge_text = st.text(min_size=2_000, max_size=5_000)
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False),
    _text, _huge_text, st.sampled_from(ODD_QUANTITIES),
)  # fmt: skip
values: st.SearchStrategy[Json] = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_text, inner, max_size=3)),
    max_leaves=6,
)

_NOTES = base64.b64encode(gzip.compress(b"notes")).decode()
_GROUPS = json.dumps([{"name": "tg", "minMember": 1, "minResource": {"cpu": "10m", "memory": "8Mi"}}])
_AFFINITY = {
    "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["hostile"]}]}]}},
    "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10,
        "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "x"}},
                            "topologyKey": "kubernetes.io/hostname"}}]},
}  # fmt: skip


def pod_template(i: int) -> Json:
    """A pod of ours that uses every field the shim reads; it may only run on the hostile nodes."""
    return {
        "metadata": {
            "name": f"hostile-pod-{i}", "namespace": "hostile", "uid": f"uid-hostile-pod-{i}",
            "labels": {"applicationId": f"hostile-app-{i % 3}", "queue": "root.hostile", "app": "x"},
            "annotations": {
                "yunikorn.apache.org/user.info": '{"user": "eve", "groups": ["x"]}',
                "yunikorn.apache.org/task-groups": _GROUPS, "yunikorn.apache.org/task-group-name": "tg",
                "yunikorn.apache.org/schedulingPolicyParameters": "placeholderTimeoutInSeconds=30",
                "yunikorn.apache.org/allow-preemption": "false",
            },
            "creationTimestamp": "2026-11-27T00:00:00Z",
            "ownerReferences": [{"kind": "Job", "name": "j", "uid": "j-1"}],
        },
        "spec": {
            "schedulerName": "yunikorn", "nodeName": "", "priority": 10, "priorityClassName": "",
            "preemptionPolicy": "Never", "runtimeClassName": "",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "10m", "memory": "8Mi"}},
                            "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}]}],
            "initContainers": [{"name": "side", "restartPolicy": "Always",
                                "resources": {"requests": {"cpu": "10m"}}}],
            "overhead": {"cpu": "1m"}, "resources": {"requests": {"memory": "16Mi"}},
            "nodeSelector": {"zone": "hostile"},
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": _AFFINITY,
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable":
                                           "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "x"}}}],
            "volumes": [{"name": "v", "emptyDir": {}}], "schedulingGates": [],
        },
        "status": {"phase": "Pending", "containerStatuses": [
            {"name": "c", "allocatedResources": {"cpu": "10m"}, "resources": {"requests": {"cpu": "10m"}}}]},
    }  # fmt: skip


def foreign_template(i: int) -> Json:
    """Another scheduler's pod, running on a hostile node."""
    made = pod_template(i)
    made["metadata"]["name"] = made["metadata"]["uid"] = f"hostile-foreign-{i}"
    made["spec"].update(schedulerName="default-scheduler", nodeName=f"hostile-node-{i % 2}")
    made["status"]["phase"] = "Running"
    return made


def node_template(i: int) -> Json:
    return {
        "metadata": {"name": f"hostile-node-{i}", "uid": f"uid-hostile-node-{i}",
                     "labels": {"zone": "hostile", "kubernetes.io/hostname": f"hostile-node-{i}"}},
        "spec": {"unschedulable": False, "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "2", "memory": "1Gi", "pods": "20"}},
    }  # fmt: skip


def namespace_template(i: int) -> Json:
    notes = {"yunikorn.apache.org/namespace.quota": '{"cpu": "1", "memory": "1Gi"}',
             "yunikorn.apache.org/namespace.maxApps": "3"}  # fmt: skip
    return {"metadata": {"name": f"hostile-ns-{i}", "uid": f"uid-hostile-ns-{i}", "labels": {"team": "x"},
                         "annotations": notes}}  # fmt: skip


def configmap_template(i: int) -> Json:
    queues = (Path(config.__file__).parent / "default_queues.yaml").read_text()  # a config that schedules
    name = ("yunikorn-configs", "yunikorn-defaults", f"other-{i}")[i % 3]
    return {"metadata": {"name": name, "namespace": "yunikorn", "uid": f"uid-{name}"},
            "data": {"queues.yaml": queues, "log.level": "info", "service.disableGangScheduling": "false"},
            "binaryData": {"notes.gz": _NOTES}}  # fmt: skip


def priority_class_template(i: int) -> Json:
    return {"metadata": {"name": f"hostile-class-{i}", "annotations": {
                "yunikorn.apache.org/allow-preemption": "false"}},
            "value": 100 + i, "globalDefault": False, "preemptionPolicy": "Never"}  # fmt: skip


def claim_template(i: int) -> Json:
    return {"metadata": {"name": f"hostile-claim-{i}", "namespace": "hostile"},
            "spec": {"volumeName": f"hostile-volume-{i}", "storageClassName": "hostile-class"}}  # fmt: skip


def volume_template(i: int) -> Json:
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["hostile"]}]}
    return {"metadata": {"name": f"hostile-volume-{i}"},
            "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}}}  # fmt: skip


def storage_class_template(i: int) -> Json:
    return {"metadata": {"name": f"hostile-class-{i}",
                         "annotations": {"storageclass.kubernetes.io/is-default-class": "false"}},
            "volumeBindingMode": "WaitForFirstConsumer"}  # fmt: skip


def csinode_template(i: int) -> Json:
    return {"metadata": {"name": f"hostile-node-{i}"},
            "spec": {"drivers": [{"name": "hostile.csi.example.com", "nodeID": f"hostile-{i}",
                                  "allocatable": {"count": 3}}]}}  # fmt: skip


TEMPLATES = {
    "pods": pod_template, "foreign": foreign_template, "nodes": node_template,
    "namespaces": namespace_template, "configmaps": configmap_template,
    "priorityclasses": priority_class_template, "persistentvolumeclaims": claim_template,
    "persistentvolumes": volume_template, "storageclasses": storage_class_template,
    "csinodes": csinode_template,
}  # fmt: skip


@dataclass(frozen=True)
class Hostile:
    kind: str  # the API's collection
    text: str  # the JSON the API serves (keys may be written twice)
    early: bool  # there before the shim starts (its initial list), or arriving through the watch


def _paths(value: Json, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every field's path but those the store needs (metadata, its name and namespace)."""
    kept = path in KEPT or any(k[: len(path)] == path for k in KEPT)
    out = [path] if path and not kept else []
    if isinstance(value, dict):
        for key, inner in value.items():
            out += _paths(inner, (*path, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            out += _paths(inner, (*path, i))
    return out


def _set(obj: Json, path: tuple[Any, ...], value: Json, delete: bool) -> None:
    for step in path[:-1]:
        obj = obj[step]
    if delete and isinstance(obj, dict):
        del obj[path[-1]]
    else:
        obj[path[-1]] = value


@st.composite
def hostile_objects(draw: st.DrawFn, index: int) -> Hostile:
    kind = draw(st.sampled_from(sorted(TEMPLATES)))
    obj = json.loads(json.dumps(TEMPLATES[kind](index)))  # a fresh copy: nothing shared is changed
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(obj)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        _set(obj, path, draw(values), delete=draw(st.booleans()) and draw(st.booleans()))
    if draw(st.booleans()):  # an unknown key somewhere the shim reads
        holders = [p for p in _paths(obj) if isinstance(_get(obj, p), dict)]
        if holders:
            _get(obj, draw(st.sampled_from(holders)))[draw(_text)] = draw(values)
    text = json.dumps(obj)
    if draw(st.booleans()):  # a key written twice: the API's decoder (and the shim's) keeps the last
        first = json.dumps(draw(values))
        text = text.replace('"metadata": {', f'"metadata": {{"labels": {first}, ', 1)
    return Hostile("pods" if kind == "foreign" else kind, text, draw(st.booleans()))


def _get(obj: Json, path: tuple[Any, ...]) -> Json:
    for step in path:
        obj = obj[step]
    return obj
