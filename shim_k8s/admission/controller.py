"""The admission controller's decisions, as YuniKorn's makes them: AdmissionReview v1 in, a response out.

Nothing here does I/O: shim_k8s.admission.server serves it over HTTPS and keeps what it reads (the
configuration, namespaces, priority classes) current with informers.

Mutating (`/mutate`):
- a Pod being created: its `yunikorn.apache.org/user.info` annotation is set from the request's
  authenticated user and groups (unless `accessControl.bypassAuth`); a pod that already carries one
  keeps it only when its creator may set it (a trusted controller, `accessControl.systemUsers`, or an
  allowed external user or group), otherwise the pod is refused. Then, in a processed namespace
  (`filtering.processNamespaces` / `bypassNamespaces`, or the namespace's `namespace.enableYuniKorn`
  annotation), `schedulerName` is set, and where application IDs are generated
  (`labelNamespaces` / `noLabelNamespaces`, or `namespace.generateAppId`) the application ID labels
  and `yunikorn.apache.org/allow-preemption` (from the priority class) are added;
- a Pod being updated: changing its user.info annotation is refused, whoever asks, wherever it runs;
- a workload (ReplicationController, Deployment, DaemonSet, StatefulSet, ReplicaSet, Job, CronJob)
  being created: its pod template gets the user.info annotation, so its pods carry the user who created
  the workload; one that carries it already is checked as a pod is;
- a workload being updated: adding, changing or removing the user.info annotation of its pod template
  is refused unless the updating user may set it (the same users as on creation); an update that leaves
  it as it was is allowed. YuniKorn lets every workload update through, so one `kubectl edit` of a
  Deployment would have its controller create pods under any identity the tenant chose.
The identity rules hold for every workload and pod, whatever its namespace, labels or scheduler name, as
for a pod's creation: a workload outside our namespaces today may be moved to us by its next update, or
its namespace taken in later, and its pods' identity must already be the one it was given.

Validating (`/validate-conf`): a change to `yunikorn-configs` or `yunikorn-defaults` in the scheduler's
namespace is refused when the core rejects the queue configuration the two make together.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shim_k8s.api.objects import Obj
from shim_k8s.readers import namespaces, service_config
from shim_k8s.readers.pod_identity import (
    APP_ID_KEY,
    APP_ID_LABEL,
    QUEUE_KEY,
    QUEUE_LABEL,
    SPARK_APP_ID,
    USER_INFO,
    generated_application_id,
    user_info_problem,
    workload_application_id,
)
from shim_k8s.readers.service_config import CONFIGMAP_NAMES

SCHEDULER_NAME = "yunikorn"
ALLOW_PREEMPTION = "yunikorn.apache.org/allow-preemption"
PREFIX = "admissionController."
WORKLOAD_TEMPLATES = {  # kind -> where its pod template's annotations are
    "ReplicationController": "/spec/template/metadata/annotations",
    "Deployment": "/spec/template/metadata/annotations",
    "DaemonSet": "/spec/template/metadata/annotations",
    "StatefulSet": "/spec/template/metadata/annotations",
    "ReplicaSet": "/spec/template/metadata/annotations",
    "Job": "/spec/template/metadata/annotations",
    "CronJob": "/spec/jobTemplate/spec/template/metadata/annotations",
}


@dataclass(frozen=True)
class AdmissionConfig:
    """YuniKorn's `admissionController.*` keys, with its defaults."""

    process_namespaces: tuple[re.Pattern[str], ...] = ()
    bypass_namespaces: tuple[re.Pattern[str], ...] = (re.compile("^kube-system$"),)
    label_namespaces: tuple[re.Pattern[str], ...] = ()
    no_label_namespaces: tuple[re.Pattern[str], ...] = ()
    generate_unique_app_ids: bool = False
    bypass_auth: bool = False
    trust_controllers: bool = True
    system_users: tuple[re.Pattern[str], ...] = (re.compile("^system:serviceaccount:kube-system:"),)
    external_users: tuple[re.Pattern[str], ...] = ()
    external_groups: tuple[re.Pattern[str], ...] = ()
    scheduler_service_address: str = "yunikorn-service:9080"
    # The Service the API server calls the webhooks through (shim_k8s.admission.webhook_setup registers it).
    service_name: str = "yunikorn-admission-controller-service"
    policy_group: str = "queues"


_REGEX_KEYS = {
    "filtering.processNamespaces": "process_namespaces",
    "filtering.bypassNamespaces": "bypass_namespaces",
    "filtering.labelNamespaces": "label_namespaces",
    "filtering.noLabelNamespaces": "no_label_namespaces",
    "accessControl.systemUsers": "system_users",
    "accessControl.externalUsers": "external_users",
    "accessControl.externalGroups": "external_groups",
}
_BOOL_KEYS = {
    "filtering.generateUniqueAppId": "generate_unique_app_ids",
    "accessControl.bypassAuth": "bypass_auth",
    "accessControl.trustControllers": "trust_controllers",
}


@dataclass
class ParsedConfig:
    config: AdmissionConfig
    warnings: list[str] = field(default_factory=list)


def admission_config(data: Mapping[str, str]) -> ParsedConfig:
    """The admission keys of the merged configmaps; a bad value keeps the default and is named."""
    values: dict[str, Any] = {}
    warnings: list[str] = []
    for key, raw in data.items():
        if key == "service.policyGroup" and raw.strip():
            values["policy_group"] = raw.strip()
        if not key.startswith(PREFIX):
            continue
        short = key.removeprefix(PREFIX)
        if short in _REGEX_KEYS:
            try:
                values[_REGEX_KEYS[short]] = _patterns(raw)
            except re.error as exc:
                warnings.append(f"{key}: {raw!r} is not a list of regular expressions ({exc}); default kept")
        elif short in _BOOL_KEYS:
            if raw.strip().lower() in ("true", "false"):
                values[_BOOL_KEYS[short]] = raw.strip().lower() == "true"
            else:
                warnings.append(f"{key}: {raw!r} is not true or false; default kept")
        elif short == "webHook.schedulerServiceAddress":
            values["scheduler_service_address"] = raw.strip()
        elif short == "webHook.amServiceName":
            if _SERVICE_NAME.match(raw.strip()):
                values["service_name"] = raw.strip()
            else:
                warnings.append(f"{key}: {raw!r} is not a Service name; default kept")
        else:
            warnings.append(f"{key}: not a key pykorn's admission controller knows; ignored")
    return ParsedConfig(AdmissionConfig(**values), warnings)


_SERVICE_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")  # a DNS-1035 label, as Services need


def _patterns(raw: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p.strip()) for p in raw.split(",") if p.strip())


def _matches(patterns: tuple[re.Pattern[str], ...], text: str) -> bool:
    return any(p.search(text) for p in patterns)  # Go's MatchString: anywhere unless anchored


# Decisions -----------------------------------------------------------------------------------------


@dataclass
class Cluster:
    """What the controller knows of the cluster: namespaces and priority classes by name."""

    namespaces: dict[str, Obj] = field(default_factory=dict)
    priority_classes: dict[str, Obj] = field(default_factory=dict)

    def preempt_self_allowed(self, class_name: str) -> bool:
        found = self.priority_classes.get(class_name)
        notes = ((found or {}).get("metadata") or {}).get("annotations") or {}
        return str(notes.get(ALLOW_PREEMPTION, "true")).lower() != "false"


class Controller:
    def __init__(self, config: AdmissionConfig, cluster: Cluster) -> None:
        self.config = config
        self.cluster = cluster

    def should_process(self, namespace: str) -> bool:
        enabled = namespaces.flag(self.cluster.namespaces.get(namespace), namespaces.ENABLE_YUNIKORN)
        if enabled is not None:
            return enabled
        listed = not self.config.process_namespaces or _matches(self.config.process_namespaces, namespace)
        return listed and not _matches(self.config.bypass_namespaces, namespace)

    def should_label(self, namespace: str) -> bool:
        generate = namespaces.flag(self.cluster.namespaces.get(namespace), namespaces.GENERATE_APP_ID)
        if generate is not None:
            return generate
        listed = not self.config.label_namespaces or _matches(self.config.label_namespaces, namespace)
        return listed and not _matches(self.config.no_label_namespaces, namespace)

    def may_set_user_info(self, user: str, groups: list[str]) -> bool:
        config = self.config
        if config.trust_controllers and _matches(config.system_users, user):
            return True
        if _matches(config.external_users, user):
            return True
        return any(_matches(config.external_groups, g) for g in groups)

    def mutate(self, request: Obj) -> dict[str, Any]:
        namespace = request.get("namespace") or "default"
        kind = (request.get("kind") or {}).get("kind", "")
        operation = request.get("operation", "")
        obj = request.get("object") or {}
        if operation == "UPDATE" and kind in WORKLOAD_TEMPLATES:
            return self._workload_update(request, kind)
        if operation == "UPDATE":
            return self._pod_update(request) if kind == "Pod" else allow(request)
        if kind == "Pod":
            return self._pod_create(request, obj, namespace)
        if kind in WORKLOAD_TEMPLATES and operation == "CREATE":
            return self._workload(request, obj, kind)
        return allow(request)

    def _user_info_patch(
        self, request: Obj, annotations: Mapping[str, str], path: str
    ) -> tuple[dict[str, Any] | None, str]:
        """The patch that sets user.info, or none; or a reason to refuse the request."""
        info = request.get("userInfo") or {}
        user, groups = str(info.get("username", "")), [str(g) for g in info.get("groups") or []]
        if self.config.bypass_auth:
            return None, ""
        if USER_INFO in annotations:
            if not self.may_set_user_info(user, groups):
                return (
                    None,
                    f"user {user} with groups [{','.join(groups)}] is not allowed to set user annotation",
                )
            problem = user_info_problem(str(annotations[USER_INFO]))
            if problem:  # the scheduler would run it as `nobody`: refused here, where the author sees why
                return None, f"annotation {USER_INFO}: {problem}"
            return None, ""
        value = json.dumps({"user": user, "groups": groups}, separators=(",", ":"))
        return {"op": "add", "path": path, "value": {**annotations, USER_INFO: value}}, ""

    def _pod_create(self, request: Obj, pod: Obj, namespace: str) -> dict[str, Any]:
        meta = pod.get("metadata") or {}
        labels, notes = dict(meta.get("labels") or {}), dict(meta.get("annotations") or {})
        user_patch, refused = self._user_info_patch(request, notes, "/metadata/annotations")
        if refused:
            return refuse(request, refused)
        patch = [user_patch] if user_patch else []
        if labels.get("app") == "yunikorn":  # the scheduler's own pods
            return allow(request)
        if not self.should_process(namespace):
            return allow(request)  # untouched, the user.info too, as YuniKorn
        patch.append({"op": "add", "path": "/spec/schedulerName", "value": SCHEDULER_NAME})
        if self.should_label(namespace):
            patch.append({"op": "add", "path": "/metadata/labels", "value": self._labels(pod, namespace)})
            self._preemption(pod, notes, patch)
        return allow(request, patch)

    def _labels(self, pod: Obj, namespace: str) -> dict[str, str]:
        meta = pod.get("metadata") or {}
        labels, notes = dict(meta.get("labels") or {}), meta.get("annotations") or {}
        named = labels.get(APP_ID_KEY) or labels.get(SPARK_APP_ID) or labels.get(APP_ID_LABEL)
        if not named and not notes.get(APP_ID_KEY):
            uid = str(meta.get("uid") or "")
            generated = workload_application_id(pod, namespace) or generated_application_id(
                namespace, uid if self.config.generate_unique_app_ids else None
            )
            labels[APP_ID_KEY] = labels[APP_ID_LABEL] = generated
        elif labels.get(APP_ID_KEY):
            labels[APP_ID_LABEL] = labels[APP_ID_KEY]  # the legacy label too, as YuniKorn
        if labels.get(QUEUE_KEY):
            labels[QUEUE_LABEL] = labels[QUEUE_KEY]
        return labels

    def _preemption(self, pod: Obj, notes: Mapping[str, str], patch: list[dict[str, Any]]) -> None:
        """`allow-preemption` from the pod's priority class, unless the pod says true or false itself."""
        if notes.get(ALLOW_PREEMPTION) in ("true", "false"):
            return
        class_name = (pod.get("spec") or {}).get("priorityClassName") or ""
        value = "true" if self.cluster.preempt_self_allowed(class_name) else "false"
        for op in patch:  # the annotations are being replaced already: add it to them
            if op["path"] == "/metadata/annotations":
                op["value"][ALLOW_PREEMPTION] = value
                return
        patch.append(
            {"op": "add", "path": "/metadata/annotations", "value": {**notes, ALLOW_PREEMPTION: value}}
        )

    def _pod_update(self, request: Obj) -> dict[str, Any]:
        # Whoever asks and wherever the pod runs (YuniKorn checks only where it labels pods): the shim
        # reads a pod's user.info again when it recovers it, so a changed one would take effect then.
        new, old = request.get("object") or {}, request.get("oldObject") or {}
        new_meta, old_meta = new.get("metadata") or {}, old.get("metadata") or {}
        before = (old_meta.get("annotations") or {}).get(USER_INFO)
        if (new_meta.get("annotations") or {}).get(USER_INFO) != before:
            return refuse(request, "user info annotation change is not allowed")
        return allow(request)

    def _handled(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """A namespace we process, for something that names an application or gets one generated."""
        named = any(labels.get(k) for k in (APP_ID_KEY, APP_ID_LABEL, SPARK_APP_ID))
        return self.should_process(namespace) and (named or self.should_label(namespace))

    def _workload(self, request: Obj, obj: Obj, kind: str) -> dict[str, Any]:
        if kind == "ReplicaSet" and _matches(self.config.system_users, _username(request)):
            return allow(request)  # made by the Deployment controller: the Deployment was annotated
        template = _pod_template(obj, kind)
        meta = template.get("metadata")
        path = WORKLOAD_TEMPLATES[kind]
        user_patch, refused = self._user_info_patch(
            request, dict((meta or {}).get("annotations") or {}), path
        )
        if user_patch is not None and not isinstance(meta, dict):  # a template without metadata: made whole
            user_patch = {"op": "add", "path": path.removesuffix("/annotations"), "value": {
                "annotations": user_patch["value"]}}  # fmt: skip
        if refused:
            return refuse(request, refused)
        return allow(request, [user_patch] if user_patch else [])

    def _workload_update(self, request: Obj, kind: str) -> dict[str, Any]:
        """A workload's update may not change who its pods run as, unless its author may set that."""
        new = _pod_template(request.get("object") or {}, kind)
        old = _pod_template(request.get("oldObject") or {}, kind)
        before = ((old.get("metadata") or {}).get("annotations") or {}).get(USER_INFO)
        after = ((new.get("metadata") or {}).get("annotations") or {}).get(USER_INFO)
        if after == before or self.config.bypass_auth:
            return allow(request)
        info = request.get("userInfo") or {}
        user, groups = str(info.get("username", "")), [str(g) for g in info.get("groups") or []]
        if not self.may_set_user_info(user, groups):
            change = "remove" if after is None else "add" if before is None else "change"
            return refuse(
                request,
                f"user {user} with groups [{','.join(groups)}] is not allowed to {change} the annotation "
                f"{USER_INFO} of the {kind}'s pod template",
            )
        problem = user_info_problem(str(after)) if after is not None else ""
        return refuse(request, f"annotation {USER_INFO}: {problem}") if problem else allow(request)

    def config_to_check(
        self, request: Obj, scheduler_namespace: str, current: Mapping[str, Obj | None]
    ) -> str | None:
        """The queue configuration a change to one of the scheduler's configmaps would make, together
        with the other one as it is (the core must accept it); None for any other object."""
        obj = request.get("object") or {}
        name = (obj.get("metadata") or {}).get("name", "")
        kind = (request.get("kind") or {}).get("kind", "")
        namespace = request.get("namespace") or "default"
        if kind != "ConfigMap" or namespace != scheduler_namespace or name not in CONFIGMAP_NAMES:
            return None
        if request.get("operation") == "DELETE":
            return None
        data = service_config.merged({**current, name: obj})
        group = data.get("service.policyGroup", "").strip() or self.config.policy_group
        return data.get(f"{group}.yaml", "")


def _pod_template(obj: Obj, kind: str) -> Obj:
    spec = obj.get("spec") or {}
    if kind == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec")) or {}
    return spec.get("template") or {}


def _username(request: Obj) -> str:
    return str((request.get("userInfo") or {}).get("username", ""))


def allow(request: Obj, patch: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": True}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    return response


def refuse(request: Obj, message: str) -> dict[str, Any]:
    return {"uid": request.get("uid", ""), "allowed": False, "status": {"message": message, "code": 403}}


def review(response: dict[str, Any]) -> dict[str, Any]:
    """The AdmissionReview a webhook answers with."""
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
