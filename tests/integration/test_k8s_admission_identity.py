"""Who a workload's pods run as cannot be forged through the webhook: AdmissionReview requests for every
kind the webhook sees, CREATE and UPDATE, from a tenant and from an allowed user, sent over HTTPS to a
running `pykorn admission` as the API server sends them.

A tenant's workload gets her identity stamped on creation; an update by her that adds, changes or
removes `yunikorn.apache.org/user.info` in the pod template (CronJob: spec.jobTemplate.spec.template) is
refused, one that leaves it as it was is allowed; a user of admissionController.accessControl.externalUsers
(or a group of externalGroups, or a trusted system user) may set it."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import uuid
from typing import Any

import pytest

from tests.integration.admission_helpers import post_review
from tests.integration.kube_api import FakeKubeAPI
from tests.tls_certs import PKI

USER_INFO = "yunikorn.apache.org/user.info"
TENANT = {"username": "alice", "groups": ["developers", "system:authenticated"]}
ADMIN = {"username": "ops-bot", "groups": ["system:authenticated"]}  # named in externalUsers below
ADMIN_GROUP = {"username": "carol", "groups": ["platform", "system:authenticated"]}  # externalGroups
CONTROLLER = {"username": "system:serviceaccount:kube-system:replicaset-controller", "groups": []}
FORGED = json.dumps({"user": "root-tenant", "groups": ["admins"]})
MINE = json.dumps({"user": "alice", "groups": ["developers", "system:authenticated"]})
# (kind, API group, resource)
KINDS = [
    ("ReplicationController", "", "replicationcontrollers"),
    ("Deployment", "apps", "deployments"),
    ("ReplicaSet", "apps", "replicasets"),
    ("StatefulSet", "apps", "statefulsets"),
    ("DaemonSet", "apps", "daemonsets"),
    ("Job", "batch", "jobs"),
    ("CronJob", "batch", "cronjobs"),
]


def _template(user_info: str | None) -> dict[str, Any]:
    annotations = {} if user_info is None else {USER_INFO: user_info}
    return {
        "metadata": {"labels": {"app": "web"}, "annotations": annotations},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


def _workload(kind: str, group: str, user_info: str | None, replicas: int = 2) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": "web"}}, "template": _template(user_info)}
    if kind in ("ReplicationController", "Deployment", "ReplicaSet", "StatefulSet"):
        spec["replicas"] = replicas
    if kind == "Job":
        spec = {"template": _template(user_info), "parallelism": replicas}
    if kind == "CronJob":
        spec = {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": _template(user_info)}}}
    version = f"{group}/v1" if group else "v1"
    return {
        "apiVersion": version,
        "kind": kind,
        "metadata": {"name": "web", "namespace": "team-a"},
        "spec": spec,
    }


def _review(
    kind: str, group: str, resource: str, operation: str, user: dict[str, Any],
    new: dict[str, Any], old: dict[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    version = "v1"
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": resource},
        "name": "web",
        "namespace": "team-a",
        "operation": operation,
        "userInfo": {**user, "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, user["username"]))},
        "object": new,
        "oldObject": old,
        "dryRun": False,
    }
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request}


def _template_of(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj["spec"]
    if obj["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    template: dict[str, Any] = spec["template"]
    return template


@pytest.fixture
async def allowing(webhook: str, api: FakeKubeAPI, pki: PKI) -> str:
    """The webhook with externalUsers ops-bot and externalGroups platform allowed to set user.info."""
    data = {
        "admissionController.filtering.processNamespaces": "^team-",
        "admissionController.accessControl.externalUsers": "^ops-bot$",
        "admissionController.accessControl.externalGroups": "^platform$",
        "queues.yaml": "partitions:\n  - name: default\n    queues:\n      - name: root\n",
    }
    await api.put(
        "configmaps", {"metadata": {"name": "yunikorn-configs", "namespace": "yunikorn"}, "data": data}
    )
    probe = _review(
        "Deployment", "apps", "deployments", "CREATE", ADMIN, _workload("Deployment", "apps", FORGED)
    )
    for _ in range(200):  # until the informer delivered the configuration: the admin may set it then
        if (await post_review(f"{webhook}/mutate", pki, probe))["allowed"]:
            return webhook
        await _sleep()
    raise AssertionError("the access control configuration never reached the webhook")


async def _sleep() -> None:
    await asyncio.sleep(0.05)


@pytest.mark.parametrize(("kind", "group", "resource"), KINDS)
async def test_a_tenants_workload_gets_her_identity_on_creation(
    allowing: str, pki: PKI, kind: str, group: str, resource: str
) -> None:
    review = _review(kind, group, resource, "CREATE", TENANT, _workload(kind, group, None))
    response = await post_review(f"{allowing}/mutate", pki, review)
    assert response["allowed"] is True
    (op,) = json.loads(base64.b64decode(response["patch"]))
    assert json.loads(op["value"][USER_INFO]) == {"user": "alice", "groups": TENANT["groups"]}
    forged = _review(kind, group, resource, "CREATE", TENANT, _workload(kind, group, FORGED))
    refused = await post_review(f"{allowing}/mutate", pki, forged)
    assert (
        refused["allowed"] is False and "not allowed to set user annotation" in refused["status"]["message"]
    )


@pytest.mark.parametrize(("kind", "group", "resource"), KINDS)
@pytest.mark.parametrize(
    ("before", "after", "change"),
    [(MINE, FORGED, "change"), (None, FORGED, "add"), (MINE, None, "remove")],
)
async def test_a_tenant_may_not_change_who_her_workloads_pods_run_as(
    allowing: str, pki: PKI, kind: str, group: str, resource: str,
    before: str | None, after: str | None, change: str,
) -> None:  # fmt: skip
    old, new = _workload(kind, group, before), _workload(kind, group, after)
    response = await post_review(
        f"{allowing}/mutate", pki, _review(kind, group, resource, "UPDATE", TENANT, new, old)
    )
    assert response["allowed"] is False
    message = response["status"]["message"]
    assert f"not allowed to {change} the annotation {USER_INFO} of the {kind}'s pod template" in message
    assert response["status"]["code"] == 403


@pytest.mark.parametrize(("kind", "group", "resource"), KINDS)
async def test_an_update_that_leaves_the_identity_as_it_was_is_allowed(
    allowing: str, pki: PKI, kind: str, group: str, resource: str
) -> None:
    old = _workload(kind, group, MINE)
    new = copy.deepcopy(old)
    _template_of(new)["spec"]["containers"][0]["image"] = "nginx:2"  # a rollout, say
    response = await post_review(
        f"{allowing}/mutate", pki, _review(kind, group, resource, "UPDATE", TENANT, new, old)
    )
    assert response == {"uid": response["uid"], "allowed": True}  # and nothing patched


@pytest.mark.parametrize(("kind", "group", "resource"), KINDS)
@pytest.mark.parametrize("user", [ADMIN, ADMIN_GROUP], ids=["externalUsers", "externalGroups"])
async def test_an_allowed_user_may_set_the_identity_on_update(
    allowing: str, pki: PKI, kind: str, group: str, resource: str, user: dict[str, Any]
) -> None:
    old, new = _workload(kind, group, MINE), _workload(kind, group, FORGED)
    response = await post_review(
        f"{allowing}/mutate", pki, _review(kind, group, resource, "UPDATE", user, new, old)
    )
    assert response["allowed"] is True
    broken = _workload(kind, group, "{not json")
    refused = await post_review(
        f"{allowing}/mutate", pki, _review(kind, group, resource, "UPDATE", user, broken, old)
    )
    assert refused["allowed"] is False and USER_INFO in refused["status"]["message"]


async def test_a_pods_own_update_of_its_identity_is_refused_even_for_an_allowed_user(
    allowing: str, pki: PKI
) -> None:
    # As YuniKorn: a pod's user.info never changes once it is created, whoever asks.
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a",
           "labels": {"applicationId": "app-1"}, "annotations": {USER_INFO: MINE}},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}  # fmt: skip
    forged = copy.deepcopy(pod)
    forged["metadata"]["annotations"][USER_INFO] = FORGED
    for user in (TENANT, ADMIN):
        review = _review("Pod", "", "pods", "UPDATE", user, forged, pod)
        response = await post_review(f"{allowing}/mutate", pki, review)
        assert (
            response["allowed"] is False
            and "user info annotation change is not allowed" in response["status"]["message"]
        )


async def test_the_trusted_controllers_may_create_pods_with_the_workloads_identity(
    allowing: str, pki: PKI
) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-1", "namespace": "team-a",
           "labels": {"app": "web"}, "annotations": {USER_INFO: MINE}},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}  # fmt: skip
    response = await post_review(
        f"{allowing}/mutate", pki, _review("Pod", "", "pods", "CREATE", CONTROLLER, pod)
    )
    assert response["allowed"] is True
    patch = json.loads(base64.b64decode(response.get("patch", "W10=")))
    assert all(USER_INFO not in json.dumps(op) for op in patch)  # the workload's identity is kept as it is


WAYS_ROUND = [
    # (what the tenant tries, the template's labels, its scheduler name, the namespace)
    ("labelled as the scheduler's own pods", {"app": "yunikorn"}, None, "team-a"),
    ("a namespace pykorn does not process", {"app": "web"}, "default-scheduler", "elsewhere"),
    ("our scheduler named in a namespace not processed", {"app": "web"}, "yunikorn", "elsewhere"),
]


@pytest.mark.parametrize(
    ("why", "labels", "scheduler", "namespace"), WAYS_ROUND, ids=[w[0] for w in WAYS_ROUND]
)
async def test_no_label_namespace_or_scheduler_name_gets_round_the_identity_rules(
    allowing: str, pki: PKI, why: str, labels: dict[str, str], scheduler: str | None, namespace: str
) -> None:
    """A workload outside our namespaces today may be moved to us by its next update (its scheduler
    name, or its namespace taken in): its pods' identity is checked wherever it is."""

    def deployment(user_info: str | None) -> dict[str, Any]:
        made = _workload("Deployment", "apps", user_info)
        made["metadata"]["namespace"] = namespace
        made["spec"]["template"]["metadata"]["labels"] = labels
        if scheduler is not None:
            made["spec"]["template"]["spec"]["schedulerName"] = scheduler
        return made

    def review(operation: str, new: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
        built = _review("Deployment", "apps", "deployments", operation, TENANT, new, old)
        built["request"]["namespace"] = namespace
        return built

    created = await post_review(f"{allowing}/mutate", pki, review("CREATE", deployment(FORGED)))
    assert created["allowed"] is False, why
    updated = await post_review(
        f"{allowing}/mutate", pki, review("UPDATE", deployment(FORGED), deployment(MINE))
    )
    assert updated["allowed"] is False, why
    stamped = await post_review(f"{allowing}/mutate", pki, review("CREATE", deployment(None)))
    (op,) = json.loads(base64.b64decode(stamped["patch"]))
    assert json.loads(op["value"][USER_INFO])["user"] == "alice", why  # her identity, whatever comes next


async def test_a_pods_identity_never_changes_outside_our_namespaces_either(allowing: str, pki: PKI) -> None:
    meta = {"name": "p", "namespace": "elsewhere", "annotations": {USER_INFO: MINE}}
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": []}}
    forged = copy.deepcopy(pod)
    forged["metadata"]["annotations"][USER_INFO] = FORGED
    review = _review("Pod", "", "pods", "UPDATE", TENANT, forged, pod)
    review["request"]["namespace"] = "elsewhere"
    assert (await post_review(f"{allowing}/mutate", pki, review))["allowed"] is False


async def test_a_template_without_metadata_is_stamped_with_a_patch_the_api_server_can_apply(
    allowing: str, pki: PKI
) -> None:
    cron = _workload("CronJob", "batch", None)
    del cron["spec"]["jobTemplate"]["spec"]["template"]["metadata"]  # as kubectl's `hello` example
    response = await post_review(
        f"{allowing}/mutate", pki, _review("CronJob", "batch", "cronjobs", "CREATE", TENANT, cron)
    )
    (op,) = json.loads(base64.b64decode(response["patch"]))
    assert op["op"] == "add" and op["path"] == "/spec/jobTemplate/spec/template/metadata"
    assert json.loads(op["value"]["annotations"][USER_INFO])["user"] == "alice"
