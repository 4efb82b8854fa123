"""deploy/kubernetes as `kubectl kustomize` renders it: every object read by the official Kubernetes
client's models, and what the objects say agrees with what the code does (the CLI's flags, the ports
it listens on, the paths it answers, the names it uses, the image's user)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from core.server.rest import HEALTHCHECK_PATH
from pykorn_cli.main import build_parser
from shim_k8s.admission.controller import AdmissionConfig
from shim_k8s.admission.webhook_setup import MUTATING_NAME, SECRET_NAME, VALIDATING_NAME
from tests.integration.manifests import ADMISSION_SA, DEPLOY, NAMESPACE, SCHEDULER_SA, find, render

ROOT = DEPLOY.parent.parent
OVERLAYS = {"base": DEPLOY, "ha": DEPLOY / "overlays" / "ha", "rest-tls": DEPLOY / "overlays" / "rest-tls"}
Obj = dict[str, Any]
CLUSTER_SCOPED = {
    "Namespace", "ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration", "PriorityClass",
}  # fmt: skip


def _model(obj: Obj) -> Any:
    """The object as the official client reads an API server's answer of its kind."""
    return client.ApiClient().deserialize(json.dumps(obj), f"V1{obj['kind']}", "application/json")


def _args(container: Obj) -> Any:
    """The container's arguments as `pykorn` parses them, with the downward API's variables put in."""
    values = {"POD_NAMESPACE": NAMESPACE, "POD_NAME": "pykorn-scheduler-0"}
    args = [re.sub(r"\$\((\w+)\)", lambda m: values[m.group(1)], a) for a in container["args"]]
    return build_parser().parse_args(args)


def _containers(objects: list[Obj], deployment: str) -> dict[str, Obj]:
    spec = find(objects, "Deployment", deployment)["spec"]["template"]["spec"]
    return {c["name"]: c for c in spec["containers"]}


def _port(container: Obj, name: str) -> int:
    [port] = [p["containerPort"] for p in container["ports"] if p["name"] == name]
    return int(port)


@pytest.mark.parametrize("overlay", sorted(OVERLAYS))
def test_every_rendered_object_is_read_whole_by_the_official_models(overlay: str) -> None:
    """Read into the official models and written back, each object is what was rendered: a field the
    models do not know (a misspelling) would be lost on the way and fail here."""
    objects = render(OVERLAYS[overlay])
    assert {o["kind"] for o in objects} >= {
        "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
        "ConfigMap", "Secret", "Deployment", "Service", "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration", "PriorityClass", "PodDisruptionBudget",
    }  # fmt: skip
    sanitize = client.ApiClient().sanitize_for_serialization
    for obj in objects:
        assert sanitize(_model(obj)) == obj, f"{obj['kind']} {obj['metadata']['name']} not read whole"
        if obj["kind"] not in CLUSTER_SCOPED:
            assert obj["metadata"]["namespace"] == NAMESPACE


def test_the_containers_agree_with_the_cli_and_with_each_other() -> None:
    objects = render()
    scheduler = _containers(objects, "pykorn-scheduler")
    core, shim = _args(scheduler["core"]), _args(scheduler["shim"])
    assert (core.command, shim.command) == ("core", "k8s")
    assert shim.core == core.listen and core.listen.startswith("127.0.0.1:")  # gRPC on loopback only
    assert shim.namespace == NAMESPACE and shim.leader_elect
    # Probes: on the ports the processes listen on, at paths they answer.
    rest_port = int(core.rest_listen.rsplit(":", 1)[1])
    assert _port(scheduler["core"], "http-rest") == rest_port
    for probe in ("livenessProbe", "readinessProbe"):
        assert scheduler["core"][probe]["httpGet"] == {"path": HEALTHCHECK_PATH, "port": "http-rest"}
    assert _port(scheduler["shim"], "http-metrics") == int(shim.metrics_listen.rsplit(":", 1)[1])
    assert scheduler["shim"]["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert scheduler["shim"]["readinessProbe"]["httpGet"]["path"] == "/readyz"

    [webhook] = _containers(objects, "pykorn-admission").values()
    admission = _args(webhook)
    assert admission.command == "admission" and admission.tls_cert is None  # it makes its own
    assert _port(webhook, "https-webhook") == admission.port
    assert webhook["readinessProbe"]["httpGet"] == {
        "path": "/health",
        "port": "https-webhook",
        "scheme": "HTTPS",
    }
    assert admission.namespace == NAMESPACE and admission.secret_name == SECRET_NAME
    find(objects, "Secret", SECRET_NAME)

    # Services under the names the controller defaults to: no ConfigMap key needs setting.
    defaults = AdmissionConfig()
    service = find(objects, "Service", defaults.service_name)
    assert service["spec"]["ports"] == [{"name": "https-webhook", "port": 443, "targetPort": "https-webhook"}]
    host, port = defaults.scheduler_service_address.split(":")
    rest = find(objects, "Service", host)
    assert (
        rest["spec"]["ports"][0]["port"] == int(port)
        and rest["spec"]["ports"][0]["targetPort"] == "http-rest"
    )

    # One image, the project's version, for every container.
    version = re.search(r'^version = "(.+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert version is not None
    images = {
        c["image"] for d in ("pykorn-scheduler", "pykorn-admission") for c in _containers(objects, d).values()
    }
    assert images == {f"pykorn:{version.group(1)}"}


def test_the_pods_run_as_the_images_user_on_a_read_only_root() -> None:
    user = re.search(r"^USER (\d+):(\d+)$", (ROOT / "Containerfile").read_text(), re.M)
    assert user is not None
    for deployment, account in (("pykorn-scheduler", SCHEDULER_SA), ("pykorn-admission", ADMISSION_SA)):
        spec = find(render(), "Deployment", deployment)["spec"]["template"]["spec"]
        assert spec["serviceAccountName"] == account
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert (spec["securityContext"]["runAsUser"], spec["securityContext"]["runAsGroup"]) == (
            int(user.group(1)), int(user.group(2)))  # fmt: skip
        mounts = {v["name"] for v in spec["volumes"] if "emptyDir" in v}
        for container in spec["containers"]:
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] and not context["allowPrivilegeEscalation"]
            assert context["capabilities"] == {"drop": ["ALL"]}
            assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"] and "tmp" in mounts


def test_the_roles_name_what_the_code_names() -> None:
    objects = render()
    scheduler_role = find(objects, "Role", "pykorn-scheduler")
    lease = build_parser().parse_args(["k8s"]).leader_elect_resource_name
    assert any(lease in (r.get("resourceNames") or []) for r in scheduler_role["rules"])
    admission_role = find(objects, "ClusterRole", "pykorn-admission")
    named = {n for r in admission_role["rules"] for n in r.get("resourceNames") or []}
    assert named == {MUTATING_NAME, VALIDATING_NAME}
    secret_rules = [
        r for r in find(objects, "Role", "pykorn-admission")["rules"] if "secrets" in r["resources"]
    ]
    assert secret_rules == [
        {
            "apiGroups": [""],
            "resources": ["secrets"],
            "resourceNames": [SECRET_NAME],
            "verbs": ["get", "update"],
        }
    ]
    for binding in ("pykorn-scheduler", "pykorn-admission"):
        for kind in ("ClusterRoleBinding", "RoleBinding"):
            subjects = find(objects, kind, binding)["subjects"]
            assert subjects == [{"kind": "ServiceAccount", "name": binding, "namespace": NAMESPACE}]
            find(objects, "ServiceAccount", binding)


def test_the_overlays_change_what_they_say() -> None:
    ha = render(OVERLAYS["ha"])
    for name in ("pykorn-scheduler", "pykorn-admission"):
        assert find(ha, "Deployment", name)["spec"]["replicas"] == 2
    assert _args(_containers(ha, "pykorn-scheduler")["shim"]).leader_elect

    tls = render(OVERLAYS["rest-tls"])
    scheduler = _containers(tls, "pykorn-scheduler")
    core = _args(scheduler["core"])
    mounted = {m["mountPath"] for m in scheduler["core"]["volumeMounts"]}
    assert core.rest_tls_cert is not None and str(Path(core.rest_tls_cert).parent) in mounted
    assert scheduler["core"]["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    [webhook] = _containers(tls, "pykorn-admission").values()
    admission = _args(webhook)
    assert admission.core_rest == f"https://yunikorn-service.{NAMESPACE}.svc:9080"
    assert str(Path(admission.core_rest_ca).parent) in {m["mountPath"] for m in webhook["volumeMounts"]}


@pytest.mark.parametrize("overlay", sorted(OVERLAYS))
def test_day_two_objects_point_at_what_is_rendered(overlay: str) -> None:
    """The disruption budgets select the Deployments' pods and let one go at a time; both Deployments
    run at the rendered priority class; the REST Service selects the leader's pod only; the metrics
    Services name ports the containers have, with the paths their servers answer."""
    objects = render(OVERLAYS[overlay])
    priority = find(objects, "PriorityClass", "pykorn-critical")
    assert priority["value"] == 1_000_000_000 and not priority.get("globalDefault")
    for name in ("pykorn-scheduler", "pykorn-admission"):
        template = find(objects, "Deployment", name)["spec"]["template"]
        assert template["spec"]["priorityClassName"] == "pykorn-critical"
        budget = find(objects, "PodDisruptionBudget", name)["spec"]
        assert budget["maxUnavailable"] == 1
        labels = template["metadata"]["labels"]
        assert all(labels.get(k) == v for k, v in budget["selector"]["matchLabels"].items())
    template = find(objects, "Deployment", "pykorn-scheduler")["spec"]["template"]
    labels = template["metadata"]["labels"]
    rest = find(objects, "Service", "yunikorn-service")["spec"]["selector"]
    assert rest == {**{k: labels[k] for k in rest if k in labels}, "pykorn.apache.org/leader": "true"}
    assert "pykorn.apache.org/leader" not in labels  # set by the leader's shim alone
    containers = {c["name"]: c for c in template["spec"]["containers"]}
    ports = {p["name"]: p["containerPort"] for c in containers.values() for p in c.get("ports", [])}
    for service, path in (("pykorn-core-metrics", "/ws/v1/metrics"), ("pykorn-shim-metrics", "/metrics")):
        svc = find(objects, "Service", service)
        notes = svc["metadata"]["annotations"]
        assert notes["prometheus.io/scrape"] == "true" and notes["prometheus.io/path"] == path
        [port] = svc["spec"]["ports"]
        assert ports[port["targetPort"]] == port["port"] == int(notes["prometheus.io/port"])
        assert svc["spec"]["clusterIP"] == "None"
        assert all(labels.get(k) == v for k, v in svc["spec"]["selector"].items())
    assert _args(containers["shim"]).metrics_listen.endswith(":9090")
