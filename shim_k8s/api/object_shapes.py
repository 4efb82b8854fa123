"""The shape of what the shim reads of each kind of object, to name the field at fault.

Reading an object assumes the types the API server guarantees (the shim's hot path checks nothing it
need not). When reading one fails anyway, `diagnose` walks the fields the shim reads and names the
first whose type is not what Kubernetes defines, so the object's Warning event can say which field to
correct. Only the fields the shim reads are described; everything else is the API server's business.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shim_k8s.api.objects import clip

# A shape is a type (str, int, bool), OBJECT (any JSON object), STRINGS (an object of strings), a dict
# of field -> shape (an object with those fields, each optional), or a one-item list [shape] (a list
# of those).
OBJECT: Any = Mapping
STRINGS: Any = "strings"
QUANTITY: Any = "quantity"  # a string or a number (null is zero)

_RESOURCES = {"requests": {"*": QUANTITY}, "limits": {"*": QUANTITY}}
_CONTAINER = {
    "name": str,
    "restartPolicy": str,
    "resources": _RESOURCES,
    "ports": [{"hostPort": int, "protocol": str, "hostIP": str}],
}
METADATA = {
    "name": str,
    "namespace": str,
    "uid": str,
    "labels": STRINGS,
    "annotations": STRINGS,
    "creationTimestamp": str,
    "ownerReferences": [{"kind": str, "name": str, "uid": str}],
}
_AFFINITY = {"nodeAffinity": OBJECT, "podAffinity": OBJECT, "podAntiAffinity": OBJECT}
POD = {
    "metadata": METADATA,
    "spec": {
        "schedulerName": str,
        "nodeName": str,
        "priority": int,
        "priorityClassName": str,
        "preemptionPolicy": str,
        "containers": [_CONTAINER],
        "initContainers": [_CONTAINER],
        "overhead": {"*": QUANTITY},
        "resources": _RESOURCES,
        "nodeSelector": STRINGS,
        "tolerations": [OBJECT],
        "affinity": _AFFINITY,
        "topologySpreadConstraints": [OBJECT],
        "volumes": [{"name": str, "persistentVolumeClaim": {"claimName": str}, "ephemeral": OBJECT}],
        "schedulingGates": [{"name": str}],
        "resourceClaims": [{"name": str}],
        "runtimeClassName": str,
        "imagePullSecrets": [OBJECT],
    },
    "status": {"phase": str},
}
NODE = {
    "metadata": METADATA,
    "spec": {"unschedulable": bool, "taints": [{"key": str, "value": str, "effect": str}]},
    "status": {"allocatable": {"*": QUANTITY}},
}
NAMESPACE = {"metadata": METADATA}
CONFIGMAP = {"metadata": METADATA, "data": STRINGS, "binaryData": STRINGS}
PRIORITY_CLASS = {"metadata": METADATA, "value": int, "globalDefault": bool, "preemptionPolicy": str}
CLAIM = {"metadata": METADATA, "spec": {"volumeName": str, "storageClassName": str, "accessModes": [str]}}
VOLUME = {
    "metadata": METADATA,
    "spec": {
        "nodeAffinity": {"required": {"nodeSelectorTerms": [OBJECT]}},
        "csi": {"driver": str, "volumeHandle": str},
    },
}
CSINODE = {"metadata": METADATA, "spec": {"drivers": [{"name": str, "allocatable": {"count": int}}]}}
STORAGE_CLASS = {"metadata": METADATA, "volumeBindingMode": str}
CSI_DRIVER = {"metadata": METADATA, "spec": {"storageCapacity": bool}}

SHAPES: dict[str, Any] = {
    "pods": POD,
    "nodes": NODE,
    "namespaces": NAMESPACE,
    "configmaps": CONFIGMAP,
    "priorityclasses": PRIORITY_CLASS,
    "persistentvolumeclaims": CLAIM,
    "persistentvolumes": VOLUME,
    "storageclasses": STORAGE_CLASS,
    "csinodes": CSINODE,
    "csidrivers": CSI_DRIVER,
}


def diagnose(kind: str, obj: object) -> str | None:
    """The first field of `obj` the shim reads whose type is wrong, with what it is; None when every
    such field has its type."""
    return _check(obj, SHAPES.get(kind, {"metadata": METADATA}), "")


def _check(value: object, shape: Any, where: str) -> str | None:
    if value is None:
        return None  # absent or null: every field the shim reads may be
    if isinstance(shape, dict):
        if not isinstance(value, Mapping):
            return _wrong(where or "the object", "an object", value)
        for field, inner in shape.items():
            items = value.items() if field == "*" else [(field, value.get(field))]
            for name, item in items:
                found = _check(item, inner, f"{where}.{clip(name)}" if where else clip(name))
                if found:
                    return found
        return None
    if isinstance(shape, list):
        if not isinstance(value, list):
            return _wrong(where, "a list", value)
        for i, item in enumerate(value):
            if item is None and shape[0] is not QUANTITY:  # a field may be absent; an item is never null
                return _wrong(f"{where}[{i}]", _expected(shape[0]), item)
            found = _check(item, shape[0], f"{where}[{i}]")
            if found:
                return found
        return None
    return _leaf(value, shape, where)


def _leaf(value: object, shape: Any, where: str) -> str | None:
    if shape is STRINGS:
        if not isinstance(value, Mapping):
            return _wrong(where, "an object of strings", value)
        for key, item in value.items():
            if not isinstance(key, str) or not isinstance(item, str):
                return _wrong(f"{where}[{clip(key)}]", "a string", item)
        return None
    if shape is QUANTITY:
        ok = isinstance(value, str | int | float) and not isinstance(value, bool)
        return None if ok else _wrong(where, "a quantity (a string such as 500m)", value)
    if shape is OBJECT:
        return None if isinstance(value, Mapping) else _wrong(where, "an object", value)
    if shape is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else _wrong(where, "a whole number", value)
    if not isinstance(value, shape):
        return _wrong(where, _NAMES.get(shape, shape.__name__), value)
    return None


_NAMES = {str: "a string", bool: "true or false"}


def _expected(shape: Any) -> str:
    if isinstance(shape, dict) or shape is OBJECT:
        return "an object"
    if isinstance(shape, list):
        return "a list"
    if shape is STRINGS:
        return "an object of strings"
    return "a whole number" if shape is int else _NAMES.get(shape, "a value")


def _wrong(where: str, expected: str, value: object) -> str:
    return f"{where}: expected {expected}, got {clip(repr(value))}"
