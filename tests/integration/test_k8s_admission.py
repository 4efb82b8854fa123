"""`pykorn admission` over HTTPS: the API server's side of the webhook (AdmissionReview in, a patch or a
refusal out), with its configuration and namespaces from the HTTP emulation of the API and the queue
configuration checked by a real core."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from shim_k8s.admission.server import run_admission
from tests.integration.kube_api import FakeKubeAPI
from tests.integration.manifests import ADMISSION_SA
from tests.tls_certs import PKI, make_pki

DATA = Path(__file__).parent.parent / "data" / "admission"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    return make_pki(tmp_path_factory.mktemp("webhook-pki"))


@pytest.fixture
async def webhook(api: FakeKubeAPI, pki: PKI, rest_url: str) -> AsyncIterator[str]:
    """The controller serving over TLS; its base URL (the API server's view)."""
    await api.put("configmaps", {"metadata": {"name": "yunikorn-configs", "namespace": "yunikorn"}, "data": {
        "admissionController.filtering.processNamespaces": "^team-",
        "queues.yaml": "partitions:\n  - name: default\n    queues:\n      - name: root\n"}})  # fmt: skip
    await api.put("namespaces", {"metadata": {"name": "team-a", "annotations": {
        "yunikorn.apache.org/namespace.generateAppId": "false"}}})  # fmt: skip
    stop, port = asyncio.Event(), asyncio.get_running_loop().create_future()
    served = asyncio.create_task(run_admission(
        0, str(pki.server.cert), str(pki.server.key), kubeconfig=api.kubeconfig(ADMISSION_SA),
        core_rest=rest_url.removeprefix("http://"), bind="127.0.0.1", stop=stop, on_ready=port.set_result,
    ))  # fmt: skip
    yield f"https://127.0.0.1:{await asyncio.wait_for(port, 10)}"
    stop.set()
    await asyncio.wait_for(served, 10)


async def _post(url: str, pki: PKI, body: Any, content_type: str = "application/json") -> dict[str, Any]:
    trust = ssl.create_default_context(cafile=str(pki.ca))
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=json.dumps(body), headers={"Content-Type": content_type}, ssl=trust) as answer,
    ):
        assert answer.status == 200, await answer.text()
        review: dict[str, Any] = await answer.json()
    assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
    response: dict[str, Any] = review["response"]
    return response


def _review(name: str) -> dict[str, Any]:
    review: dict[str, Any] = json.loads((DATA / name).read_text())
    return review


async def test_a_pod_in_a_processed_namespace_is_patched_over_https(webhook: str, pki: PKI) -> None:
    response = await _post(f"{webhook}/mutate", pki, _review("pod-create-by-user.json"))
    patch = json.loads(base64.b64decode(response["patch"]))
    # The namespace's generateAppId "false" wins over the default: no labels; the scheduler name is set.
    assert [op["path"] for op in patch] == ["/metadata/annotations", "/spec/schedulerName"]
    assert json.loads(patch[0]["value"]["yunikorn.apache.org/user.info"])["user"] == "alice"


async def test_the_configmaps_filters_apply_live(webhook: str, pki: PKI, api: FakeKubeAPI) -> None:
    review = _review("pod-create-by-user.json")
    review["request"]["namespace"] = "other"
    assert await _post(f"{webhook}/mutate", pki, review) == {"uid": review["request"]["uid"], "allowed": True}
    everything = {"admissionController.filtering.processNamespaces": ""}
    await api.put(
        "configmaps", {"metadata": {"name": "yunikorn-configs", "namespace": "yunikorn"}, "data": everything}
    )
    for _ in range(200):  # until the informer delivered the change: the pod is processed then
        response = await _post(f"{webhook}/mutate", pki, review)
        if "patch" in response:
            break
        await asyncio.sleep(0.05)
    assert "patch" in response


async def test_an_invalid_queue_configuration_is_refused_with_the_cores_errors(
    webhook: str, pki: PKI
) -> None:
    response = await _post(f"{webhook}/validate-conf", pki, _review("configmap-update-invalid.json"))
    assert response["allowed"] is False
    assert "lots" in response["status"]["message"]  # the core's own reason names the bad quantity
    valid = _review("configmap-update-invalid.json")
    valid["request"]["object"]["data"]["queues.yaml"] = (
        "partitions:\n  - name: default\n    queues:\n      - name: root\n"
    )
    assert (await _post(f"{webhook}/validate-conf", pki, valid))["allowed"] is True


async def test_a_body_that_is_not_a_review_is_refused(webhook: str, pki: PKI) -> None:
    response = await _post(f"{webhook}/mutate", pki, {"not": "a review"})
    assert response == {"uid": "yunikorn-invalid-body", "allowed": False,
                        "status": {"message": "body decode failed", "code": 403}}  # fmt: skip
    trust = ssl.create_default_context(cafile=str(pki.ca))
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{webhook}/mutate", data="x", headers={"Content-Type": "text/plain"},
                                ssl=trust) as answer:  # fmt: skip
            assert answer.status == 415
        async with session.get(f"{webhook}/health", ssl=trust) as answer:
            assert answer.status == 200 and (await answer.text()).strip() == "OK"
