"""`pykorn admission` served over TLS for a test, and the API server's side of a webhook call."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from shim_k8s.admission.server import run_admission
from tests.integration.kube_api import FakeKubeAPI
from tests.integration.manifests import ADMISSION_SA
from tests.tls_certs import PKI


async def serving_webhook(api: FakeKubeAPI, pki: PKI, rest_url: str) -> AsyncIterator[str]:
    """The controller serving over TLS, `^team-` namespaces processed; its URL as the API server sees it."""
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


async def post_review(
    url: str, pki: PKI, body: Any, content_type: str = "application/json"
) -> dict[str, Any]:
    """POST an AdmissionReview as the API server does; the response part of the review answered."""
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
