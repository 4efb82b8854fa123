"""The roles of deploy/kubernetes, enforced by the API emulation as the API server enforces them.

Every test of the shim and the admission controller runs under them (tests/integration/conftest.py
fails a test in which either made a request its role does not grant). Here: the emulation answers as
the API server does, the roles grant no more than the code calls, and a rule taken away fails loudly,
with a Warning event and a metric, not a silent stall."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from shim_k8s.main import run_shim
from tests.integration.kube_api import FakeKubeAPI
from tests.integration.kube_rbac import RBAC, attributes
from tests.integration.manifests import ADMISSION_SA, NAMESPACE, SCHEDULER_SA, render
from tests.integration.test_k8s_api import _until, node, pod
from tests.integration.test_k8s_faults import _metrics
from tests.integration.test_k8s_hostile_objects import free_port


async def _get(api: FakeKubeAPI, path: str, token: str | None = None) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{api.port}{path}", headers=headers) as answer,
    ):
        return answer.status, await answer.json()


async def test_the_emulation_answers_as_the_api_server_does(api: FakeKubeAPI) -> None:
    api.forbidden_expected = True
    assert api.rbac is not None
    status, body = await _get(api, "/api/v1/nodes")
    assert status == 403 and body["reason"] == "Forbidden" and body["code"] == 403
    assert body["message"] == (
        'nodes is forbidden: User "system:anonymous" cannot list resource "nodes" in API group "" '
        "at the cluster scope"
    )
    status, body = await _get(api, "/api/v1/nodes", token="made-up")
    assert (status, body["reason"]) == (401, "Unauthorized")
    admission = api.rbac.token_for(NAMESPACE, ADMISSION_SA)
    status, body = await _get(api, "/api/v1/namespaces/team-a/pods/web", token=admission)
    assert status == 403
    assert body["message"] == (
        'pods "web" is forbidden: User "system:serviceaccount:yunikorn:pykorn-admission" cannot get '
        'resource "pods" in API group "" in the namespace "team-a"'
    )
    assert body["details"] == {"name": "web", "group": "", "kind": "pods"}
    scheduler = api.rbac.token_for(NAMESPACE, SCHEDULER_SA)
    assert (await _get(api, "/api/v1/nodes", token=scheduler))[0] == 200


def test_the_roles_grant_what_the_code_calls_and_no_more() -> None:
    rbac = RBAC.from_manifests(render())
    scheduler = f"system:serviceaccount:{NAMESPACE}:{SCHEDULER_SA}"
    admission = f"system:serviceaccount:{NAMESPACE}:{ADMISSION_SA}"

    def may(user: str, method: str, path: str, query: dict[str, str] | None = None) -> bool:
        wanted = attributes(method, path, query or {})
        assert wanted is not None
        return rbac.allows(user, wanted)

    assert may(scheduler, "POST", "/api/v1/namespaces/team-a/pods/web/binding")
    assert may(scheduler, "POST", "/api/v1/namespaces/team-a/pods/web/eviction")
    assert may(scheduler, "PATCH", "/api/v1/namespaces/team-a/pods/web/status")
    assert may(scheduler, "GET", "/api/v1/pods", {"watch": "true"})
    assert may(scheduler, "GET", "/api/v1/namespaces/yunikorn/configmaps")
    assert may(scheduler, "PUT", "/apis/coordination.k8s.io/v1/namespaces/yunikorn/leases/pykorn")
    # Binding WaitForFirstConsumer volumes: a volume's claimRef, a claim's selected-node annotation.
    assert may(scheduler, "PUT", "/api/v1/persistentvolumes/pv-1")
    assert may(scheduler, "PUT", "/api/v1/namespaces/team-a/persistentvolumeclaims/data-0")
    assert may(scheduler, "GET", "/api/v1/namespaces/team-a/persistentvolumeclaims/data-0")
    assert not may(scheduler, "DELETE", "/api/v1/persistentvolumes/pv-1")
    assert not may(scheduler, "POST", "/api/v1/namespaces/team-a/persistentvolumeclaims")
    # Not: other namespaces' ConfigMaps, other Leases, Secrets, changing pods or nodes.
    assert not may(scheduler, "GET", "/api/v1/namespaces/team-a/configmaps")
    assert not may(scheduler, "PUT", "/apis/coordination.k8s.io/v1/namespaces/yunikorn/leases/other")
    assert not may(scheduler, "GET", "/api/v1/namespaces/yunikorn/secrets/pykorn-admission-certs")
    assert not may(scheduler, "PUT", "/api/v1/namespaces/team-a/pods/web")
    assert not may(scheduler, "PATCH", "/api/v1/nodes/n1")
    # The admission controller: its own Secret and webhook configurations only, and no pods at all.
    assert may(admission, "PUT", "/api/v1/namespaces/yunikorn/secrets/pykorn-admission-certs")
    assert not may(admission, "GET", "/api/v1/namespaces/yunikorn/secrets/someone-elses")
    assert not may(
        admission, "PUT", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/other"
    )
    assert may(
        admission,
        "PUT",
        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/pykorn-admission-controller-mutations",
    )
    # No `create` of webhook configurations (it cannot be limited to names): deploy/kubernetes ships them.
    assert not may(admission, "POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations")
    assert not may(admission, "GET", "/api/v1/pods")
    assert not may(admission, "POST", "/api/v1/namespaces/team-a/pods/web/binding")


async def test_a_verb_taken_from_the_role_fails_loudly(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    """Without `create` on pods/binding the pod is not bound, and the shim says why: a BindingFailed
    Warning event on the pod naming the refusal, and pykorn_k8s_api_forbidden_total."""
    assert api.rbac is not None
    api.rbac = api.rbac.without("pykorn-scheduler", "pods/binding", "create")
    api.forbidden_expected = True
    await api.put("nodes", node("n1"))
    await api.put("pods", pod("web"))
    port, stop = free_port(), asyncio.Event()
    shim = asyncio.create_task(
        run_shim(
            core_address,
            kubeconfig=api.kubeconfig(SCHEDULER_SA),
            rm_id=rm_id,
            stop=stop,
            metrics_listen=f"127.0.0.1:{port}",
        )
    )
    try:

        def warned() -> bool:
            return any(
                e.get("reason") == "BindingFailed"
                and e.get("type") == "Warning"
                and "forbidden" in e.get("message", "")
                and e["involvedObject"]["name"] == "web"
                for e in api.events
            )

        await _until(warned, "a BindingFailed warning on web naming the refusal")
        found = await _metrics(f"http://127.0.0.1:{port}/metrics")
        assert found['pykorn_k8s_api_forbidden_total{resource="pods/binding",verb="create"}'] >= 1
        assert api.bindings == []
        users = {user for user, _ in api.forbidden}
        assert users == {f"system:serviceaccount:{NAMESPACE}:{SCHEDULER_SA}"}
        assert {(w.verb, w.resource) for _, w in api.forbidden} == {("create", "pods/binding")}
    finally:
        stop.set()
        await asyncio.wait_for(shim, 15)


async def test_the_shim_serves_its_probes_as_a_standby_too(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    """/healthz answers in every state; /readyz once synced, or while a standby waits for the Lease."""
    from shim_k8s.api.leader import LeaderElection

    later = "2999-01-01T00:00:00.000000Z"
    spec = {
        "holderIdentity": "someone-else",
        "leaseDurationSeconds": 3600,
        "renewTime": later,
        "acquireTime": later,
    }
    await api.put("leases", {"metadata": {"name": "pykorn", "namespace": NAMESPACE}, "spec": spec})
    port, stop = free_port(), asyncio.Event()
    election = LeaderElection(
        identity="replica-2", lease_duration=3600.0, renew_deadline=10.0, retry_period=0.2
    )
    shim = asyncio.create_task(
        run_shim(
            core_address,
            kubeconfig=api.kubeconfig(SCHEDULER_SA),
            rm_id=rm_id,
            stop=stop,
            metrics_listen=f"127.0.0.1:{port}",
            election=election,
        )
    )
    try:
        async with aiohttp.ClientSession() as session:
            deadline = asyncio.get_running_loop().time() + 15
            while True:
                try:
                    async with session.get(f"http://127.0.0.1:{port}/readyz") as answer:
                        ready = (answer.status, (await answer.text()).strip())
                    break
                except aiohttp.ClientConnectionError:
                    assert asyncio.get_running_loop().time() < deadline, "no /readyz"
                    await asyncio.sleep(0.05)
            assert ready == (200, "standby")
            async with session.get(f"http://127.0.0.1:{port}/healthz") as answer:
                assert answer.status == 200
        assert not shim.done()
    finally:
        stop.set()
        await asyncio.wait_for(shim, 15)


async def test_an_admission_role_without_update_on_its_secret_stops_the_start_with_the_reason(
    api: FakeKubeAPI,
) -> None:
    """The controller cannot keep its CAs: it does not serve half set up, it says why and exits."""
    from shim_k8s.admission.server import run_admission
    from shim_k8s.admission.webhook_setup import SECRET_NAME, SetupError
    from tests.integration.manifests import find

    assert api.rbac is not None
    api.rbac = api.rbac.without("pykorn-admission", "secrets", "update")
    api.forbidden_expected = True
    await api.put("secrets", find(render(), "Secret", SECRET_NAME))
    try:
        await asyncio.wait_for(
            run_admission(0, None, None, kubeconfig=api.kubeconfig(ADMISSION_SA), bind="127.0.0.1"), 20
        )
        raise AssertionError("started without being able to write its Secret")
    except SetupError as exc:
        assert f"writing the Secret yunikorn/{SECRET_NAME}: 403" in str(exc)
        assert "cannot update resource" in str(exc)
    assert {(w.verb, w.resource, w.name) for _, w in api.forbidden} == {("update", "secrets", SECRET_NAME)}
