"""Kubernetes objects (as the API serves them, JSON) into scheduler-interface messages.

The conventions are YuniKorn's k8s shim's, so its users' pods work unchanged: application ID, queue, user
and groups as shim_k8s.readers.pod_identity reads them; pod labels as `kubernetes.io/label/*` tags and the
namespace and pod name as `kubernetes.io/meta/*` tags; a DaemonSet pod's node as its required node.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from shim_k8s.readers import pod_resources
from shim_k8s.readers.bad_objects import Refused
from shim_k8s.readers.pod_identity import UserInfo, application_id, queue_name, user_info
from shim_k8s.readers.priority import PodPriority
from shim_k8s.readers.volume_terms import with_volume_terms
from si.v1 import si_pb2
from si.v1.tags import (
    ATTR_CSI_VOLUME_LIMITS,
    ATTR_HOSTNAME,
    ATTR_INSTANCE_TYPE,
    ATTR_TAINTS,
    LABEL_PREFIX,
    NAMESPACE_LABEL_PREFIX,
    TAG_APP_CREATION_TIME,
    TAG_CREATE_FORCE,
    TAG_CREATION_TIME,
    TAG_FOREIGN,
    TAG_HOST_PORTS,
    TAG_NAMESPACE,
    TAG_NODE_AFFINITY,
    TAG_NODE_SELECTOR,
    TAG_POD_AFFINITY,
    TAG_POD_ANTI_AFFINITY,
    TAG_POD_NAME,
    TAG_REQUIRED_NODE,
    TAG_TERMINATING,
    TAG_TOLERATIONS,
    TAG_TOPOLOGY_SPREAD,
    TAINT_CORDON,
)

TASK_GROUP_NAME = "yunikorn.apache.org/task-group-name"
PLACEHOLDER = "internal.yunikorn.apache.org/placeholder"  # YuniKorn's marker since 1.6
LEGACY_PLACEHOLDER = "yunikorn.apache.org/placeholder"  # before 1.6, and pykorn's before the switch
LEGACY_PLACEHOLDER_LABEL = "placeholder"  # a label, before YuniKorn 1.6
_PLACEHOLDER_MARKERS = (PLACEHOLDER, LEGACY_PLACEHOLDER)  # the first readable one decides
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})  # what Go's strconv.ParseBool takes as true
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class TranslationError(Refused):
    """A pod, node or annotation the shim cannot use; the text names the field."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _first(*values: str | None) -> str:
    return next((v for v in values if v), "")


# Resources ---------------------------------------------------------------------------------------


def quantities(values: Mapping[str, Any] | None, where: str = "resources") -> dict[str, int]:
    """Kubernetes quantities as si resources: cpu in milli-cores as vcore, memory in bytes, others as
    counted; each rounded up as Kubernetes rounds (shim_k8s.readers.quantity)."""
    return pod_resources.quantities(values, where)


def pod_request(pod: Mapping[str, Any]) -> dict[str, int]:
    """What a pod needs, as kube-scheduler counts it (shim_k8s.readers.pod_resources), plus one `pods`
    slot."""
    return pod_resources.pod_requests(pod)


# Pods --------------------------------------------------------------------------------------------


def is_placeholder(pod: Mapping[str, Any]) -> bool:
    """A gang placeholder: YuniKorn's marker since 1.6, else the annotation of earlier versions (and of
    pykorn before it followed them), each read as Go's ParseBool reads it, the first readable one
    deciding; else YuniKorn's label before 1.6, on a task group's member only (a label named
    `placeholder` is too common a word to trust alone)."""
    meta = _meta(pod)
    annotations = meta.get("annotations")
    if not annotations:  # most pods: nothing to read
        return False
    for key in _PLACEHOLDER_MARKERS:
        marker = annotations.get(key)
        if marker is not None and (marker in _TRUE or marker in _FALSE):
            return marker in _TRUE
    legacy = (meta.get("labels") or {}).get(LEGACY_PLACEHOLDER_LABEL) == "true"
    return legacy and bool(annotations.get(TASK_GROUP_NAME))


def creation_time(obj: Mapping[str, Any]) -> int:
    stamp = _meta(obj).get("creationTimestamp")
    if not stamp:
        return 0
    try:
        return _seconds(str(stamp))
    except ValueError:
        raise TranslationError(f"metadata.creationTimestamp: {stamp!r} is not a time") from None


@functools.lru_cache(maxsize=1024)
def _seconds(stamp: str) -> int:
    """An RFC 3339 time in whole seconds: pods made together share their stamp (a second's), so
    most are found here."""
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())


def required_node(pod: Mapping[str, Any]) -> str:
    """A DaemonSet pod's node: from its required node affinity on metadata.name, as the k8s shim reads it."""
    meta, spec = _meta(pod), pod.get("spec") or {}
    if not any(ref.get("kind") == "DaemonSet" for ref in meta.get("ownerReferences") or []):
        return ""
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})  # fmt: skip
    for term in required.get("nodeSelectorTerms") or []:
        for match in term.get("matchFields") or []:
            if match.get("key") == "metadata.name" and match.get("values"):
                return str(match["values"][0])
    return ""


def pod_tags(
    pod: Mapping[str, Any],
    volume_terms: list[list[Any]] | None = None,
    namespace_labels: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The ask's tags; `volume_terms`: the required node selector terms of the pod's bound volumes
    (shim_k8s.volumes.cache), ANDed into its node affinity; `namespace_labels`: its namespace's labels, which
    pod (anti-)affinity terms' namespaceSelector match."""
    meta, spec = _meta(pod), pod.get("spec") or {}
    tags = {TAG_NAMESPACE: meta.get("namespace", "default"), TAG_POD_NAME: meta.get("name", "")}
    for key, value in (meta.get("labels") or {}).items():
        tags[LABEL_PREFIX + key] = str(value)
    for key, value in (namespace_labels or {}).items():
        tags[NAMESPACE_LABEL_PREFIX + key] = str(value)
    created = creation_time(pod)
    if created:
        tags[TAG_CREATION_TIME] = str(created)
    if spec.get("nodeSelector"):
        tags[TAG_NODE_SELECTOR] = json.dumps(spec["nodeSelector"], sort_keys=True)
    if spec.get("tolerations"):
        tags[TAG_TOLERATIONS] = json.dumps(spec["tolerations"], sort_keys=True)
    affinity = dict(spec.get("affinity") or {})
    if volume_terms:
        affinity["nodeAffinity"] = with_volume_terms(affinity.get("nodeAffinity"), volume_terms)
    for field, tag in (
        ("nodeAffinity", TAG_NODE_AFFINITY), ("podAffinity", TAG_POD_AFFINITY),
        ("podAntiAffinity", TAG_POD_ANTI_AFFINITY),
    ):  # fmt: skip
        if affinity.get(field):
            tags[tag] = json.dumps(affinity[field], sort_keys=True)
    if spec.get("topologySpreadConstraints"):
        tags[TAG_TOPOLOGY_SPREAD] = json.dumps(spec["topologySpreadConstraints"], sort_keys=True)
    ports = host_ports(spec)
    if ports:
        tags[TAG_HOST_PORTS] = json.dumps(ports, sort_keys=True)
    node = required_node(pod)
    if node:
        tags[TAG_REQUIRED_NODE] = node
    return tags


def host_ports(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The container ports with a hostPort, as Kubernetes' NodePorts plugin collects them: every
    container's, and those of sidecars (init containers with restartPolicy Always), which run beside
    them."""
    containers = list(spec.get("containers") or [])
    containers += [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    out = []
    for container in containers:
        for port in container.get("ports") or []:
            if port.get("hostPort"):
                out.append({
                    "hostPort": port["hostPort"], "protocol": port.get("protocol") or "TCP",
                    "hostIP": port.get("hostIP") or "0.0.0.0",
                })  # fmt: skip
    return out


def ignored_placement(pod: Mapping[str, Any]) -> list[str]:
    """What in the pod would constrain its placement and is not honoured: each is reported on the pod
    (an event), never dropped without a word."""
    spec = pod.get("spec") or {}
    out = []
    if spec.get("resourceClaims"):
        names = ", ".join(str(c.get("name", "")) for c in spec["resourceClaims"])
        out.append(f"dynamic resource claims (spec.resourceClaims: {names})")
    if spec.get("runtimeClassName"):
        out.append(f"the RuntimeClass's scheduling rules (spec.runtimeClassName {spec['runtimeClassName']})")
    return out


def pod_ask(
    pod: Mapping[str, Any],
    priority: PodPriority,
    app_id: str | None = None,
    task_group: str | None = None,
    volume_terms: list[list[Any]] | None = None,
    namespace_labels: Mapping[str, str] | None = None,
    request: Mapping[str, int] | None = None,
) -> si_pb2.Allocation:
    """A pending pod as an ask (its UID is the allocation key); a gang member names its task group
    (`task_group` overrides the annotation), a placeholder pod says so. `request`: the pod's request
    when the caller has it already (pod_request)."""
    meta = _meta(pod)
    annotations = meta.get("annotations") or {}
    ask = si_pb2.Allocation(
        allocationKey=meta.get("uid", ""),
        applicationID=application_id(pod) if app_id is None else app_id,
        allocationTags=pod_tags(pod, volume_terms, namespace_labels),
        priority=priority.value,
        taskGroupName=annotations.get(TASK_GROUP_NAME, "") if task_group is None else task_group,
        placeholder=is_placeholder(pod),
    )
    # Filled in place: half the cost of building the nested messages and copying them in.
    _fill_resource(ask.resourcePerAlloc, pod_request(pod) if request is None else request)
    policy = ask.preemptionPolicy
    policy.allowPreemptSelf = priority.allow_preempt_self
    policy.allowPreemptOther = priority.allow_preempt_other
    return ask


def bound_pod_allocation(
    pod: Mapping[str, Any],
    priority: PodPriority,
    ours: bool,
    task_group: str | None = None,
    namespace_labels: Mapping[str, str] | None = None,
    app_id: str | None = None,
    request: Mapping[str, int] | None = None,
) -> si_pb2.Allocation:
    """A pod already on a node: an existing allocation of ours, or a foreign one occupying the node (a
    pod being deleted says so: spread no longer counts it)."""
    alloc = pod_ask(
        pod, priority, app_id=app_id if ours else "", task_group=task_group if ours else "",
        namespace_labels=namespace_labels, request=request,
    )  # fmt: skip
    alloc.nodeID = (pod.get("spec") or {}).get("nodeName", "")
    if _meta(pod).get("deletionTimestamp"):
        alloc.allocationTags[TAG_TERMINATING] = "true"
    if not ours:
        alloc.allocationTags[TAG_FOREIGN] = "default"
    return alloc


def application_request(
    pod: Mapping[str, Any],
    app_id: str | None = None,
    gang_size: Mapping[str, int] | None = None,
    gang_style: str = "",
    placeholder_timeout_seconds: int = 0,
    user: UserInfo | None = None,
) -> si_pb2.AddApplicationRequest:
    """The pod's application; a gang names its size, style and placeholder timeout, and its creation
    time, from which the core counts the timeout (so a restart does not start the wait over). Its user
    comes from `user_info` (whose notes the caller reports)."""
    user = user or user_info(pod)
    namespace = _meta(pod).get("namespace", "default")
    request = si_pb2.AddApplicationRequest(
        applicationID=app_id or application_id(pod),
        queueName=queue_name(pod),
        ugi=si_pb2.UserGroupInformation(user=user.user, groups=list(user.groups)),
        # As YuniKorn's shim: an application whose first pod runs already (a restart) is forced, so a
        # core whose rules no longer place it keeps it in its recovery queue instead of losing the room.
        tags={"namespace": namespace, TAG_CREATE_FORCE: "true" if _spec(pod).get("nodeName") else "false"},
    )
    if gang_size is not None:
        request.placeholderAsk.CopyFrom(_si_resource(gang_size))
        request.gangSchedulingStyle = gang_style
        request.executionTimeoutMilliSeconds = placeholder_timeout_seconds * 1000
        created = creation_time(pod)
        if created:
            request.tags[TAG_APP_CREATION_TIME] = str(created)
    return request


# Nodes -------------------------------------------------------------------------------------------

INSTANCE_TYPE_LABEL = (
    "node.kubernetes.io/instance-type"  # YuniKorn's service.instanceTypeNodeLabelKey default
)


def node_info(
    node: Mapping[str, Any],
    action: si_pb2.NodeInfo.ActionFromRM,
    csi_limits: Mapping[str, int] | None = None,
    instance_type_label: str = INSTANCE_TYPE_LABEL,
) -> si_pb2.NodeInfo:
    """A node: allocatable as its schedulable resource, labels, taints and its CSINode's attach limits
    (`csi_limits`, driver -> count) as attributes; its instance type from the label
    `instance_type_label` (YuniKorn's service.instanceTypeNodeLabelKey), "" without it."""
    meta, spec, status = _meta(node), node.get("spec") or {}, node.get("status") or {}
    labels = meta.get("labels") or {}
    attributes = {
        ATTR_HOSTNAME: meta.get("name", ""),
        ATTR_INSTANCE_TYPE: str(labels.get(instance_type_label, "")),
    }
    for key, value in labels.items():
        attributes[LABEL_PREFIX + key] = str(value)
    taints = [
        {"key": t.get("key", ""), "value": t.get("value", ""), "effect": t.get("effect", "NoSchedule")}
        for t in spec.get("taints") or []
        if t.get("key")
    ]
    if spec.get("unschedulable") and not any(
        t["key"] == TAINT_CORDON and t["effect"] == "NoSchedule" for t in taints
    ):
        # Cordoned (the node is sent unschedulable): the taint the node controller adds for it, sent
        # at once, lets the pods that tolerate it in (kube-scheduler's NodeUnschedulable filter).
        taints.append({"key": TAINT_CORDON, "value": "", "effect": "NoSchedule"})
    if taints:
        attributes[ATTR_TAINTS] = json.dumps(taints, sort_keys=True)
    if csi_limits:
        attributes[ATTR_CSI_VOLUME_LIMITS] = json.dumps(dict(csi_limits), sort_keys=True)
    return si_pb2.NodeInfo(
        nodeID=meta.get("name", ""),
        action=action,
        attributes=attributes,
        schedulableResource=_si_resource(quantities(status.get("allocatable"), "status.allocatable")),
    )


def node_is_cordoned(node: Mapping[str, Any]) -> bool:
    return bool((node.get("spec") or {}).get("unschedulable"))


def _si_resource(values: Mapping[str, int]) -> si_pb2.Resource:
    out = si_pb2.Resource()
    _fill_resource(out, values)
    return out


def _fill_resource(out: si_pb2.Resource, values: Mapping[str, int]) -> None:
    resources = out.resources
    for name, value in values.items():
        resources[name].value = value
