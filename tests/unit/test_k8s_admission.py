"""The admission controller's decisions on recorded AdmissionReview requests (tests/data/admission):
the JSON patches YuniKorn's controller makes, bypassed namespaces untouched, trusted controllers keeping
a pod's user.info, and the configuration keys that steer it."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from shim_k8s.admission import controller as admission
from shim_k8s.readers import service_config

DATA = Path(__file__).parent.parent / "data" / "admission"
USER_INFO = "yunikorn.apache.org/user.info"
ALICE = '{"user":"alice","groups":["developers","system:authenticated"]}'


def _request(name: str) -> dict[str, Any]:
    review = json.loads((DATA / name).read_text())
    assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
    request: dict[str, Any] = review["request"]
    return request


def _controller(
    data: dict[str, str] | None = None, cluster: admission.Cluster | None = None
) -> admission.Controller:
    parsed = admission.admission_config(data or {})
    assert not parsed.warnings, parsed.warnings
    return admission.Controller(parsed.config, cluster or admission.Cluster())


def _patch(response: dict[str, Any]) -> list[dict[str, Any]]:
    assert response["allowed"] and response["patchType"] == "JSONPatch"
    patch: list[dict[str, Any]] = json.loads(base64.b64decode(response["patch"]))
    return patch


def test_a_users_pod_gets_user_info_scheduler_name_labels_and_preemption() -> None:
    request = _request("pod-create-by-user.json")
    response = _controller().mutate(request)
    assert response["uid"] == request["uid"]
    assert _patch(response) == [
        {"op": "add", "path": "/metadata/annotations",
         "value": {USER_INFO: ALICE, "yunikorn.apache.org/allow-preemption": "true"}},
        {"op": "add", "path": "/spec/schedulerName", "value": "yunikorn"},
        {"op": "add", "path": "/metadata/labels", "value": {
            "run": "sleep", "yunikorn.apache.org/app-id": "yunikorn-team-a-autogen",
            "applicationId": "yunikorn-team-a-autogen"}},
    ]  # fmt: skip


def test_a_named_application_keeps_its_id_and_the_class_decides_preemption() -> None:
    cluster = admission.Cluster(priority_classes={"batch-low": {"metadata": {
        "name": "batch-low", "annotations": {"yunikorn.apache.org/allow-preemption": "false"}}}})  # fmt: skip
    patch = _patch(_controller(cluster=cluster).mutate(_request("pod-create-with-app-and-class.json")))
    labels = next(op["value"] for op in patch if op["path"] == "/metadata/labels")
    assert labels == {
        "yunikorn.apache.org/app-id": "spark-42", "applicationId": "spark-42",
        "yunikorn.apache.org/queue": "root.batch", "queue": "root.batch",
    }  # fmt: skip
    notes = next(op["value"] for op in patch if op["path"] == "/metadata/annotations")
    assert notes == {"note": "x", USER_INFO: ALICE, "yunikorn.apache.org/allow-preemption": "false"}


def test_a_bypassed_namespace_is_untouched() -> None:
    response = _controller().mutate(_request("pod-create-kube-system.json"))
    assert response == {"uid": "0f1e2d3c-1111-4aaa-8bbb-000000000003", "allowed": True}


def test_a_trusted_controller_keeps_the_pods_user_info() -> None:
    patch = _patch(_controller().mutate(_request("pod-create-by-replicaset-controller.json")))
    assert not any(op["path"] == "/metadata/annotations" and USER_INFO in op["value"]
                   and op["value"][USER_INFO] != ALICE for op in patch)  # fmt: skip
    notes = next(op["value"] for op in patch if op["path"] == "/metadata/annotations")
    assert notes[USER_INFO] == ALICE  # the Deployment's creator, set on its template
    # Not trusting controllers: the same pod is refused, its creator may not set user.info.
    untrusted = _controller({"admissionController.accessControl.trustControllers": "false"})
    response = untrusted.mutate(_request("pod-create-by-replicaset-controller.json"))
    assert not response["allowed"]
    assert "system:serviceaccount:kube-system:replicaset-controller" in response["status"]["message"]


def test_a_user_may_not_set_user_info_unless_allowed() -> None:
    response = _controller().mutate(_request("pod-create-user-sets-user-info.json"))
    assert not response["allowed"]
    assert response["status"]["message"] == (
        "user mallory with groups [system:authenticated] is not allowed to set user annotation"
    )
    allowed = _controller({"admissionController.accessControl.externalUsers": "^mallory$"})
    patch = _patch(allowed.mutate(_request("pod-create-user-sets-user-info.json")))
    assert all(USER_INFO not in op.get("value", {}) or "admin" in op["value"][USER_INFO] for op in patch
               if isinstance(op.get("value"), dict))  # fmt: skip


def test_changing_user_info_on_update_is_refused() -> None:
    response = _controller().mutate(_request("pod-update-user-info.json"))
    refusal = {"message": "user info annotation change is not allowed", "code": 403}
    assert response == {"uid": "0f1e2d3c-1111-4aaa-8bbb-000000000006", "allowed": False, "status": refusal}


def test_a_workloads_pod_template_gets_the_creators_user_info() -> None:
    patch = _patch(_controller().mutate(_request("deployment-create.json")))
    assert patch == [
        {"op": "add", "path": "/spec/template/metadata/annotations", "value": {USER_INFO: ALICE}}
    ]


def test_namespace_lists_and_annotations_decide_what_is_processed_and_labelled() -> None:
    only_b = _controller({"admissionController.filtering.processNamespaces": "^team-b$"})
    assert only_b.mutate(_request("pod-create-by-user.json")) == {
        "uid": "0f1e2d3c-1111-4aaa-8bbb-000000000001", "allowed": True,
    }  # fmt: skip
    # The namespace's own annotations win over the lists.
    cluster = admission.Cluster(namespaces={"team-a": {"metadata": {"name": "team-a", "annotations": {
        "yunikorn.apache.org/namespace.enableYuniKorn": "true",
        "yunikorn.apache.org/namespace.generateAppId": "false"}}}})  # fmt: skip
    forced = admission.Controller(only_b.config, cluster)
    paths = [op["path"] for op in _patch(forced.mutate(_request("pod-create-by-user.json")))]
    assert paths == ["/metadata/annotations", "/spec/schedulerName"]  # no labels: generateAppId false
    unique = _controller({"admissionController.filtering.generateUniqueAppId": "true"})
    labels = next(op["value"] for op in _patch(unique.mutate(_request("pod-create-by-user.json")))
                  if op["path"] == "/metadata/labels")  # fmt: skip
    assert labels["applicationId"] == "team-a-uniqueautogen"  # no UID yet: the shim puts it in


def test_bad_configuration_values_keep_the_defaults_and_are_named() -> None:
    parsed = admission.admission_config({
        "admissionController.filtering.bypassNamespaces": "^(kube-system$",
        "admissionController.accessControl.bypassAuth": "maybe",
        "admissionController.filtering.sillyKey": "1",
        "admissionController.webHook.amServiceName": "Not_A_Service",
        "service.policyGroup": "queues",
    })  # fmt: skip
    assert parsed.config.bypass_namespaces == admission.AdmissionConfig().bypass_namespaces
    assert not parsed.config.bypass_auth
    assert parsed.config.service_name == "yunikorn-admission-controller-service"
    assert [w.split(":")[0] for w in parsed.warnings] == [
        "admissionController.filtering.bypassNamespaces", "admissionController.accessControl.bypassAuth",
        "admissionController.filtering.sillyKey", "admissionController.webHook.amServiceName",
    ]  # fmt: skip


def test_the_webhook_service_name_is_taken_from_the_configmaps() -> None:
    parsed = admission.admission_config({"admissionController.webHook.amServiceName": "pykorn-admission"})
    assert parsed.config.service_name == "pykorn-admission" and not parsed.warnings


def test_the_configmap_check_covers_the_two_configmaps_together() -> None:
    controller = _controller()
    request = _request("configmap-update-invalid.json")
    text = controller.config_to_check(request, "yunikorn", {})
    assert text is not None and "memory: lots" in text
    assert controller.config_to_check(request, "elsewhere", {}) is None  # not the scheduler's namespace
    # yunikorn-defaults holds queues.yaml; an update of yunikorn-configs without one keeps it.
    defaults = {"metadata": {"name": "yunikorn-defaults"}, "data": {"queues.yaml": "from defaults"}}
    empty = {**request, "object": {"metadata": {"name": "yunikorn-configs"}, "data": {"log.level": "info"}}}
    assert controller.config_to_check(empty, "yunikorn", {"yunikorn-defaults": defaults}) == "from defaults"


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.json")))
def test_every_recorded_request_gets_an_answer_with_its_uid(name: str) -> None:
    request = _request(name)
    response = _controller().mutate(request)
    assert response["uid"] == request["uid"] and isinstance(response["allowed"], bool)


@pytest.mark.parametrize(
    ("value", "why"),
    [("[1]", "not a JSON object but a list"), ('"alice"', "not a JSON object but a string"),
     ('{"groups": 5}', "groups is a number"), ("{not json", "not JSON"), ("null", "but null"),
     ('{"groups": ["dev"]}', "names no user")],
)  # fmt: skip
def test_a_user_info_the_scheduler_could_not_use_is_refused_showing_the_shape(value: str, why: str) -> None:
    """YuniKorn's controller checks only that the value parses; the scheduler would then run the pod
    as `nobody`. Refused here, where whoever wrote it sees why and what is expected."""
    request = _request("pod-create-user-sets-user-info.json")
    request["object"]["metadata"]["annotations"][USER_INFO] = value
    allowed = _controller({"admissionController.accessControl.externalUsers": "^mallory$"})
    response = allowed.mutate(request)
    assert not response["allowed"]
    message = response["status"]["message"]
    assert USER_INFO in message and why in message
    assert '{"user": "alice", "groups": ["dev", "ops"]}' in message
    request["object"]["metadata"]["annotations"][USER_INFO] = '{"user": "mallory", "groups": ["dev"]}'
    assert allowed.mutate(request)["allowed"]


def test_the_configmaps_gzipped_binary_data_is_read_as_yunikorn_reads_it() -> None:
    import gzip

    packed = base64.b64encode(gzip.compress(b"queues from gzip")).decode()
    configs = {
        "metadata": {"name": "yunikorn-configs"},
        "data": {"queues.yaml": "from data", "admissionController.filtering.generateUniqueAppId": "true"},
        "binaryData": {"queues.yaml.gz": packed, "notes.txt": packed, "broken.gz": "bm90IGd6aXA="},
    }
    warnings: list[str] = []
    data = service_config.merged({"yunikorn-configs": configs}, warnings)
    assert data["queues.yaml"] == "queues from gzip"  # binaryData over data, as YuniKorn flattens them
    assert admission.admission_config(data).config.generate_unique_app_ids
    assert [w.split(": ")[1] for w in warnings] == ["binaryData.notes.txt", "binaryData.broken.gz"]
    request = {
        "kind": {"kind": "ConfigMap"},
        "namespace": "yunikorn",
        "operation": "UPDATE",
        "object": configs,
    }
    assert _controller().config_to_check(request, "yunikorn", {}) == "queues from gzip"
