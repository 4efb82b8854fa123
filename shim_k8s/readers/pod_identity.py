"""Who a pod is, as YuniKorn's shim reads it: its application ID, its queue, and the user and groups it
runs as, from the labels and annotations YuniKorn's users set.

The application ID comes from the `yunikorn.apache.org/app-id` label or annotation, the `applicationId`
or `spark-app-selector` label, or is generated (a Workload API group's pods: their Workload's or
PodGroup's); the queue from the `yunikorn.apache.org/queue` label or
annotation or the `queue` label; the user and groups from the `yunikorn.apache.org/user.info`
annotation (the admission controller stamps it). Where one of them is given in more than one place with
different values, YuniKorn's precedence decides and the pod is told (identity_conflicts).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

APP_ID_KEY = "yunikorn.apache.org/app-id"
APP_ID_LABEL = "applicationId"
SPARK_APP_ID = "spark-app-selector"
AUTOGEN_PREFIX, AUTOGEN_SUFFIX = "yunikorn", "autogen"
UNIQUE_AUTOGEN_SUFFIX = "-uniqueautogen"
QUEUE_KEY = "yunikorn.apache.org/queue"
QUEUE_LABEL = "queue"
USER_INFO = "yunikorn.apache.org/user.info"
USERNAME_LABEL = "yunikorn.apache.org/username"  # deprecated; YuniKorn 1.9 still falls back to it
DEFAULT_USER = "nobody"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _first(*values: str | None) -> str:
    return next((v for v in values if v), "")


@dataclass(frozen=True)
class Note:
    """Something of an object used otherwise than written (YuniKorn's fallback): reported on it."""

    reason: str  # the metric's label, e.g. user-info
    message: str


def application_id(pod: Mapping[str, Any], unique: bool = False) -> str:
    """YuniKorn's order: the `yunikorn.apache.org/app-id` label, then annotation, then the
    `applicationId` label, then Spark's `spark-app-selector` label. An ID ending in `-uniqueautogen`
    (what the admission controller writes before the pod has a UID) gets the pod's UID instead. With
    none, the namespace's shared `yunikorn-<namespace>-autogen`, or with `unique` (YuniKorn's
    admissionController.filtering.generateUniqueAppId) one per pod: `<namespace>-<uid>`."""
    meta = _meta(pod)
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    uid = str(meta.get("uid") or meta.get("name", ""))
    found = (  # the first set, in YuniKorn's order (read for every pod event: no generator)
        labels.get(APP_ID_KEY) or annotations.get(APP_ID_KEY) or labels.get(APP_ID_LABEL)
        or labels.get(SPARK_APP_ID) or ""
    )  # fmt: skip
    if found.endswith(UNIQUE_AUTOGEN_SUFFIX):
        found = f"{found.removesuffix(UNIQUE_AUTOGEN_SUFFIX)}-{uid}"
    if found:
        return found
    namespace = meta.get("namespace") or "default"
    return workload_application_id(pod, namespace) or generated_application_id(
        namespace, uid if unique else None
    )


def workload_application_id(pod: Mapping[str, Any], namespace: str) -> str:
    """The application of a pod that names a Kubernetes Workload API group and no application ID:
    its Workload's (`workload-<namespace>-<name>`, v1alpha1 spec.workloadRef) or its PodGroup's
    (`podgroup-<namespace>-<name>`, v1alpha2 spec.schedulingGroup), so that a job's groups are one
    application and a group is never split (not the namespace's shared one, nor one per pod with
    generateUniqueAppId); "" for any other pod."""
    spec = pod.get("spec") or {}
    ref, group = spec.get("workloadRef"), spec.get("schedulingGroup")
    if ref is None and group is None:
        return ""
    if isinstance(ref, Mapping) and isinstance(ref.get("name"), str) and ref["name"]:
        return f"workload-{namespace}-{ref['name']}"[:63]
    if isinstance(group, Mapping) and isinstance(group.get("podGroupName"), str) and group["podGroupName"]:
        return f"podgroup-{namespace}-{group['podGroupName']}"[:63]
    return ""


def generated_application_id(namespace: str, uid: str | None) -> str:
    """An application ID for a pod that names none (63 characters at most, as a label value): shared by
    the namespace, or with `uid`, the pod's own (`uid` "" is the admission controller's placeholder
    for a pod that has no UID yet)."""
    if uid is None:
        generated = f"{AUTOGEN_PREFIX}-{namespace}-{AUTOGEN_SUFFIX}"
    elif not uid:
        generated = f"{namespace[:26]}{UNIQUE_AUTOGEN_SUFFIX}"
    else:
        generated = f"{namespace[:26]}-{uid}"
    return generated[:63]


def identity_conflicts(pod: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(event reason, message) for each of the application ID and the queue that the pod gives in more
    than one place with different values: YuniKorn's precedence (application_id, queue_name) decides,
    and the pod is told which value won and which it overrode, never a silent choice."""
    meta = _meta(pod)
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    out = []
    for reason, what, places in (
        ("ApplicationIDConflict", "application ID", [("label", APP_ID_KEY), ("annotation", APP_ID_KEY),
                                                     ("label", APP_ID_LABEL), ("label", SPARK_APP_ID)]),
        ("QueueConflict", "queue", [("label", QUEUE_KEY), ("annotation", QUEUE_KEY), ("label", QUEUE_LABEL)]),
    ):  # fmt: skip
        given = [
            (f"{kind} {key}", str(value))
            for kind, key in places
            if (value := (labels if kind == "label" else annotations).get(key))
        ]
        if len({value for _, value in given}) > 1:
            (winner, used), others = given[0], given[1:]
            overridden = "; ".join(f"{where} {value!r}" for where, value in others if value != used)
            out.append((reason, f"{what} {used!r} from the {winner} is used; it overrides {overridden}"))
    return out


def queue_name(pod: Mapping[str, Any]) -> str:
    """The queue asked for; empty leaves it to the placement rules (by namespace, by default)."""
    meta = _meta(pod)
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    return _first(labels.get(QUEUE_KEY), annotations.get(QUEUE_KEY), labels.get(QUEUE_LABEL))


@dataclass(frozen=True)
class UserInfo:
    user: str
    groups: tuple[str, ...] = ()
    notes: tuple[Note, ...] = ()  # the annotation or label not used as written, and why


def user_info(pod: Mapping[str, Any]) -> UserInfo:
    """The pod's user and groups, as YuniKorn reads them: the `yunikorn.apache.org/user.info`
    annotation, a JSON object with a string `user` and a list of strings `groups` (keys matched
    without regard to case, as Go's JSON decoding does). When it is missing, the deprecated
    `yunikorn.apache.org/username` label (YuniKorn 1.9 still reads it). A value that cannot be used
    gives YuniKorn's default user, `nobody`; each such case is a Note to report on the pod."""
    meta = _meta(pod)
    raw = (meta.get("annotations") or {}).get(USER_INFO)
    if not raw:
        label = (meta.get("labels") or {}).get(USERNAME_LABEL)
        if label:
            why = (f"metadata.labels[{USERNAME_LABEL}]: the user is taken from this deprecated label; "
                   f"set the {USER_INFO} annotation instead (the admission controller does)")  # fmt: skip
            return UserInfo(str(label), (), (Note("username-label", why),))
        return UserInfo(DEFAULT_USER)
    where = f"metadata.annotations[{USER_INFO}]"
    problem, user, groups, unknown = _read_user_info(raw)
    if problem:
        why = (
            f"{where}: {problem}; the pod runs as user {DEFAULT_USER} (YuniKorn's default). {USER_INFO_SHAPE}"
        )
        return UserInfo(DEFAULT_USER, groups, (Note("user-info", why),))
    notes: tuple[Note, ...] = ()
    if unknown:
        notes = (Note("user-info", f"{where}: {sorted(unknown)} not used: only user and groups are"),)
    return UserInfo(user, groups, notes)


USER_INFO_SHAPE = 'Expected a JSON object such as {"user": "alice", "groups": ["dev", "ops"]}.'


def user_info_problem(raw: str) -> str:
    """Why a user.info value is not a user YuniKorn can use ("" when it is): for the admission
    controller, which refuses such a value."""
    problem, *_ = _read_user_info(raw)
    return f"{problem}. {USER_INFO_SHAPE}" if problem else ""


def _read_user_info(raw: str) -> tuple[str, str, tuple[str, ...], set[str]]:
    """(what is wrong or "", user, groups, keys not used)."""
    try:
        info = json.loads(raw)
    except (json.JSONDecodeError, RecursionError) as exc:
        return f"not JSON ({exc})", "", (), set()
    if not isinstance(info, dict):
        return f"not a JSON object but {_json_kind(info)}", "", (), set()
    user: object = None
    groups: object = None
    unknown = set()
    for key, value in info.items():  # as Go: case-insensitive keys, the last one wins
        if key.lower() == "user":
            user = value
        elif key.lower() == "groups":
            groups = value
        else:
            unknown.add(key)
    if user is not None and not isinstance(user, str):
        return f"user is {_json_kind(user)}, not a string", "", (), unknown
    if groups is not None and not (isinstance(groups, list) and all(isinstance(g, str) for g in groups)):
        return f"groups is {_json_kind(groups)}, not a list of strings", "", (), unknown
    group_names = tuple(groups or ())
    if not user:
        return "it names no user", "", group_names, unknown
    return "", user, group_names, unknown


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"
