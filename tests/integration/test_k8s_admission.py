"""`pykorn admission` over HTTPS: the API server's side of the webhook (AdmissionReview in, a patch or a
refusal out), with its configuration and namespaces from the HTTP emulation of the API and the queue
configuration checked by a real core."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
from pathlib import Path
from typing import Any

import aiohttp

from tests.integration.admission_helpers import post_review
from tests.integration.kube_api import FakeKubeAPI
from tests.tls_certs import PKI

DATA = Path(__file__).parent.parent / "data" / "admission"


def _review(name: str) -> dict[str, Any]:
    review: dict[str, Any] = json.loads((DATA / name).read_text())
    return review


async def test_a_pod_in_a_processed_namespace_is_patched_over_https(webhook: str, pki: PKI) -> None:
    response = await post_review(f"{webhook}/mutate", pki, _review("pod-create-by-user.json"))
    patch = json.loads(base64.b64decode(response["patch"]))
    # The namespace's generateAppId "false" wins over the default: no labels; the scheduler name is set.
    assert [op["path"] for op in patch] == ["/metadata/annotations", "/spec/schedulerName"]
    assert json.loads(patch[0]["value"]["yunikorn.apache.org/user.info"])["user"] == "alice"


async def test_the_configmaps_filters_apply_live(webhook: str, pki: PKI, api: FakeKubeAPI) -> None:
    review = _review("pod-create-by-user.json")
    review["request"]["namespace"] = "other"
    assert await post_review(f"{webhook}/mutate", pki, review) == {
        "uid": review["request"]["uid"],
        "allowed": True,
    }
    everything = {"admissionController.filtering.processNamespaces": ""}
    await api.put(
        "configmaps", {"metadata": {"name": "yunikorn-configs", "namespace": "yunikorn"}, "data": everything}
    )
    for _ in range(200):  # until the informer delivered the change: the pod is processed then
        response = await post_review(f"{webhook}/mutate", pki, review)
        if "patch" in response:
            break
        await asyncio.sleep(0.05)
    assert "patch" in response


async def test_an_invalid_queue_configuration_is_refused_with_the_cores_errors(
    webhook: str, pki: PKI
) -> None:
    response = await post_review(f"{webhook}/validate-conf", pki, _review("configmap-update-invalid.json"))
    assert response["allowed"] is False
    assert "lots" in response["status"]["message"]  # the core's own reason names the bad quantity
    valid = _review("configmap-update-invalid.json")
    valid["request"]["object"]["data"]["queues.yaml"] = (
        "partitions:\n  - name: default\n    queues:\n      - name: root\n"
    )
    assert (await post_review(f"{webhook}/validate-conf", pki, valid))["allowed"] is True


async def test_a_body_that_is_not_a_review_is_refused(webhook: str, pki: PKI) -> None:
    response = await post_review(f"{webhook}/mutate", pki, {"not": "a review"})
    assert response == {"uid": "yunikorn-invalid-body", "allowed": False,
                        "status": {"message": "body decode failed", "code": 403}}  # fmt: skip
    trust = ssl.create_default_context(cafile=str(pki.ca))
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{webhook}/mutate", data="x", headers={"Content-Type": "text/plain"},
                                ssl=trust) as answer:  # fmt: skip
            assert answer.status == 415
        async with session.get(f"{webhook}/health", ssl=trust) as answer:
            assert answer.status == 200 and (await answer.text()).strip() == "OK"
