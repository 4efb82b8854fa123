"""`pykorn admission` sets itself up, as YuniKorn's webhook manager does, against the API emulation with
the rendered roles enforced (it runs as the pykorn-admission ServiceAccount): its CAs in the Secret, its
serving certificate, its two webhook configurations; a restart, a rotation, two replicas at once.

The API server's side is played by a TLS client that trusts nothing but the CA bundle in the webhook
configuration and checks the certificate against the Service's DNS name, as the API server does."""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509 import DNSName
from cryptography.x509.verification import PolicyBuilder, Store

from shim_k8s.admission.certificates import make_ca
from shim_k8s.admission.server import SelfSetup, run_admission
from shim_k8s.admission.webhook_setup import MUTATING_NAME, SECRET_NAME, VALIDATING_NAME, SetupError
from tests.integration.kube_api import FakeKubeAPI
from tests.integration.manifests import ADMISSION_SA, find, render

SERVICE_DNS = "yunikorn-admission-controller-service.yunikorn.svc"
MUTATING = "mutatingwebhookconfigurations"
VALIDATING = "validatingwebhookconfigurations"


@dataclass
class Replica:
    port: int
    setup: SelfSetup


class Clock:
    def __init__(self) -> None:
        self.now = datetime.datetime.now(datetime.UTC)

    def __call__(self) -> datetime.datetime:
        return self.now


async def _with_secret(api: FakeKubeAPI, data: dict[str, str] | None = None) -> None:
    """What deploy/kubernetes ships for the controller: its Secret (empty, or with `data`) and its two
    webhook configurations (empty)."""
    objects = render()
    secret = find(objects, "Secret", SECRET_NAME)
    await api.put("secrets", {**secret, "data": data} if data else secret)
    await api.put(MUTATING, find(objects, "MutatingWebhookConfiguration", MUTATING_NAME))
    await api.put(VALIDATING, find(objects, "ValidatingWebhookConfiguration", VALIDATING_NAME))


@asynccontextmanager
async def _replica(
    api: FakeKubeAPI, clock: Callable[[], datetime.datetime] | None = None
) -> AsyncIterator[Replica]:
    """A controller with no certificate given, serving, its webhooks installed once."""
    stop = asyncio.Event()
    ready: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    setups: list[SelfSetup] = []
    extra: dict[str, Any] = {"clock": clock} if clock is not None else {}
    served = asyncio.create_task(run_admission(
        0, None, None, kubeconfig=api.kubeconfig(ADMISSION_SA), bind="127.0.0.1", stop=stop,
        on_ready=ready.set_result, on_setup=setups.append, core_rest="127.0.0.1:1", **extra,
    ))  # fmt: skip
    try:
        waiting: list[asyncio.Future[Any]] = [served, ready]
        done, _ = await asyncio.wait(waiting, timeout=20, return_when=asyncio.FIRST_COMPLETED)
        if served in done:
            served.result()  # the failure, raised
        port = ready.result()
        await asyncio.wait_for(setups[0].installed.wait(), 20)
        yield Replica(port, setups[0])
    finally:
        stop.set()
        await asyncio.wait_for(served, 20)


def _hook(api: FakeKubeAPI, kind: str, name: str) -> dict[str, Any]:
    found = api.objects[kind][f"/{name}"]
    [hook] = found["webhooks"]
    return dict(hook)


def _bundle(api: FakeKubeAPI) -> bytes:
    return base64.b64decode(_hook(api, MUTATING, MUTATING_NAME)["clientConfig"]["caBundle"])


def _secret_data(api: FakeKubeAPI) -> dict[str, bytes]:
    data = api.objects["secrets"][f"yunikorn/{SECRET_NAME}"].get("data") or {}
    return {k: base64.b64decode(v) for k, v in data.items()}


def _trusting(bundle: bytes) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=bundle.decode())


async def _served_certificate(
    port: int, bundle: bytes, at: datetime.datetime | None = None
) -> x509.Certificate:
    """The certificate the controller presents, verified as the API server verifies it (its chain to
    the bundle, the Service's name, its validity): in the handshake, or, when the test's clock has
    moved on (`at`), by the same checks at that time."""
    if at is None:
        context = _trusting(bundle)
    else:
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname=SERVICE_DNS)
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    writer.close()
    served = x509.load_der_x509_certificate(der)
    if at is not None:
        store = Store(x509.load_pem_x509_certificates(bundle))
        verifier = PolicyBuilder().store(store).time(at).build_server_verifier(DNSName(SERVICE_DNS))
        verifier.verify(served, [])
    return served


async def _mutate(port: int, bundle: bytes) -> dict[str, Any]:
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "r1", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
        "namespace": "team-a", "userInfo": {"username": "alice", "groups": ["dev"]},
        "object": {"metadata": {"name": "p", "namespace": "team-a"}, "spec": {"containers": []}},
    }}  # fmt: skip
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"https://127.0.0.1:{port}/mutate",
            json=review,
            ssl=_trusting(bundle),
            server_hostname=SERVICE_DNS,
        ) as answer,  # fmt: skip
    ):
        assert answer.status == 200, await answer.text()
        body: dict[str, Any] = await answer.json()
    return dict(body["response"])


async def test_a_first_start_makes_the_cas_the_certificate_and_both_webhooks(api: FakeKubeAPI) -> None:
    await _with_secret(api)
    async with _replica(api) as replica:
        data = _secret_data(api)
        assert sorted(data) == ["ca1.crt", "ca1.key", "ca2.crt", "ca2.key"]
        cas = [x509.load_pem_x509_certificate(data[k]) for k in ("ca1.crt", "ca2.crt")]
        # Staggered: the first expires about six months before the second.
        gap = cas[1].not_valid_after_utc - cas[0].not_valid_after_utc
        assert datetime.timedelta(days=170) < gap < datetime.timedelta(days=190)
        assert _bundle(api) == data["ca1.crt"] + data["ca2.crt"]

        mutate = _hook(api, MUTATING, MUTATING_NAME)
        assert mutate["clientConfig"]["service"] == {
            "name": "yunikorn-admission-controller-service", "namespace": "yunikorn", "path": "/mutate",
            "port": 443}  # fmt: skip
        assert (mutate["failurePolicy"], mutate["sideEffects"]) == ("Ignore", "None")
        resources = [
            "pods", "replicationcontrollers", "deployments", "replicasets", "statefulsets", "daemonsets",
            "jobs", "cronjobs",
        ]  # fmt: skip
        assert mutate["rules"][0]["resources"] == resources
        assert mutate["namespaceSelector"] == {}  # user.info is checked in every namespace
        validate = _hook(api, VALIDATING, VALIDATING_NAME)
        assert validate["clientConfig"]["service"]["path"] == "/validate-conf"
        assert validate["failurePolicy"] == "Ignore"
        assert validate["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "yunikorn"}}
        assert validate["clientConfig"]["caBundle"] == mutate["clientConfig"]["caBundle"]

        served = await _served_certificate(replica.port, _bundle(api))
        names = served.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert SERVICE_DNS in names.get_values_for_type(x509.DNSName)
        # Signed by the CA that expires last.
        assert served.issuer == cas[1].subject
        response = await _mutate(replica.port, _bundle(api))
        assert response["allowed"] and response["patchType"] == "JSONPatch"
        patch = json.loads(base64.b64decode(response["patch"]))
        assert {"op": "add", "path": "/spec/schedulerName", "value": "yunikorn"} in patch


async def test_a_restart_keeps_the_cas_and_writes_nothing(api: FakeKubeAPI) -> None:
    await _with_secret(api)
    async with _replica(api) as first:
        before = await _served_certificate(first.port, _bundle(api))
    writes = list(api.writes)
    versions = {k: api.objects[k][key]["metadata"]["resourceVersion"] for k, key in (
        ("secrets", f"yunikorn/{SECRET_NAME}"), (MUTATING, f"/{MUTATING_NAME}"),
        (VALIDATING, f"/{VALIDATING_NAME}"))}  # fmt: skip
    async with _replica(api) as second:
        after = await _served_certificate(second.port, _bundle(api))
        assert api.writes == writes  # neither the Secret nor a webhook configuration written again
        for kind, key in (("secrets", f"yunikorn/{SECRET_NAME}"), (MUTATING, f"/{MUTATING_NAME}")):
            assert api.objects[kind][key]["metadata"]["resourceVersion"] == versions[kind]
    assert after.serial_number != before.serial_number  # its own serving certificate, same CA
    assert after.issuer == before.issuer


async def test_a_ca_about_to_expire_is_replaced_at_start(api: FakeKubeAPI) -> None:
    now = datetime.datetime.now(datetime.UTC)
    old = make_ca(now - datetime.timedelta(days=335))  # 30 days left
    kept = make_ca(now - datetime.timedelta(days=100))
    pems = {
        "ca1.crt": old.cert_pem,
        "ca1.key": old.key_pem,
        "ca2.crt": kept.cert_pem,
        "ca2.key": kept.key_pem,
    }
    await _with_secret(api, {key: base64.b64encode(pem).decode() for key, pem in pems.items()})
    async with _replica(api) as replica:
        data = _secret_data(api)
        assert data["ca2.crt"] == kept.cert_pem and data["ca1.crt"] != old.cert_pem
        new = x509.load_pem_x509_certificate(data["ca1.crt"])
        assert new.not_valid_after_utc > now + datetime.timedelta(days=360)
        assert _bundle(api) == data["ca1.crt"] + kept.cert_pem
        served = await _served_certificate(replica.port, _bundle(api))
        assert served.issuer == new.subject  # the CA that expires last signs


async def test_the_certificates_are_rotated_when_the_clock_reaches_the_renewal(api: FakeKubeAPI) -> None:
    """The expiring CA is replaced and the bundle updated; the new serving certificate is signed by the
    CA that stays, so both the bundle the API servers had and the new one trust it."""
    await _with_secret(api)
    clock = Clock()
    async with _replica(api, clock) as replica:
        first_bundle = _bundle(api)
        before = await _served_certificate(replica.port, first_bundle)
        staying = x509.load_pem_x509_certificate(_secret_data(api)["ca2.crt"])
        due = replica.setup.manager.renewal_due()
        # The first CA expires in about six months: its renewal comes 90 days before that.
        assert datetime.timedelta(days=85) < due - clock.now < datetime.timedelta(days=95)
        clock.now = due + datetime.timedelta(seconds=1)
        replica.setup.installed.clear()
        replica.setup.wake.set()  # the timer's wait, ended as the clock says it would have
        await asyncio.wait_for(replica.setup.installed.wait(), 20)
        data = _secret_data(api)
        assert data["ca1.crt"] not in first_bundle and data["ca2.crt"] == staying.public_bytes(Encoding.PEM)
        assert _bundle(api) == data["ca1.crt"] + data["ca2.crt"]
        for bundle in (first_bundle, _bundle(api)):  # an API server not yet told, and one told
            after = await _served_certificate(replica.port, bundle, at=clock.now)
        assert after.serial_number != before.serial_number and after.issuer == staying.subject
        # At the next renewal the CA made now signs: its bundle has been installed for months by then.
        clock.now = replica.setup.manager.renewal_due() + datetime.timedelta(seconds=1)
        second_bundle = _bundle(api)
        replica.setup.installed.clear()
        replica.setup.wake.set()
        await asyncio.wait_for(replica.setup.installed.wait(), 20)
        later = await _served_certificate(replica.port, second_bundle, at=clock.now)
        assert later.issuer == x509.load_pem_x509_certificate(data["ca1.crt"]).subject


async def _both_read_the_secret_then_write(api: FakeKubeAPI, release: asyncio.Event) -> None:
    """Hold the Secret's writers back until two replicas have read it: both then write, and one must
    lose (409), as when two replicas start on the same empty Secret."""
    deadline = asyncio.get_running_loop().time() + 20
    while api.reads.count(("secrets", SECRET_NAME)) < 2:
        assert asyncio.get_running_loop().time() < deadline, "the replicas did not both read the Secret"
        await asyncio.sleep(0.01)
    release.set()


async def test_two_replicas_share_one_secret_without_fighting(api: FakeKubeAPI) -> None:
    await _with_secret(api)
    release = api.hold_updates["secrets"] = asyncio.Event()
    racing = asyncio.create_task(_both_read_the_secret_then_write(api, release))
    async with AsyncExitStack() as stack:
        one, two = await asyncio.gather(
            stack.enter_async_context(_replica(api)), stack.enter_async_context(_replica(api))
        )
        await racing
        # The loser read again and took the winner's (as for the webhook configurations, if they raced).
        assert [c for c in api.conflicts if c[0] == "secrets"] == [("secrets", SECRET_NAME)]
        secret_updates = [w for w in api.writes if w[1] == "secrets"]
        assert secret_updates == [("update", "secrets", SECRET_NAME)]
        webhook_writes = [w for w in api.writes if w[1] in (MUTATING, VALIDATING)]
        assert sorted(webhook_writes) == [("update", MUTATING, MUTATING_NAME),
                                          ("update", VALIDATING, VALIDATING_NAME)]  # fmt: skip
        for replica in (one, two):  # each one's certificate is trusted by the one bundle
            await _served_certificate(replica.port, _bundle(api))
        # Told to look again, neither writes: they agree on what the configurations should say.
        for replica in (one, two):
            replica.setup.installed.clear()
            replica.setup.wake.set()
            await asyncio.wait_for(replica.setup.installed.wait(), 20)
        assert [w for w in api.writes if w[1] in (MUTATING, VALIDATING)] == webhook_writes


async def test_with_bypass_auth_the_bypassed_namespaces_are_left_out_of_the_webhook(api: FakeKubeAPI) -> None:
    await api.put("configmaps", {"metadata": {"name": "yunikorn-configs", "namespace": "yunikorn"}, "data": {
        "admissionController.accessControl.bypassAuth": "true",
        "admissionController.filtering.bypassNamespaces": "^kube-system$,^monitoring$"}})  # fmt: skip
    await _with_secret(api)
    async with _replica(api) as replica:
        left_out = {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                    "values": ["kube-system", "monitoring"]}  # fmt: skip
        assert _hook(api, MUTATING, MUTATING_NAME)["namespaceSelector"] == {"matchExpressions": [left_out]}
        # A namespace that asks for YuniKorn by its annotation is sent to the webhook again.
        replica.setup.installed.clear()
        await api.put("namespaces", {"metadata": {"name": "monitoring", "annotations": {
            "yunikorn.apache.org/namespace.enableYuniKorn": "true"}}})  # fmt: skip
        await asyncio.wait_for(replica.setup.installed.wait(), 20)
        selector = _hook(api, MUTATING, MUTATING_NAME)["namespaceSelector"]
        assert selector == {"matchExpressions": [{**left_out, "values": ["kube-system"]}]}


async def test_a_missing_secret_stops_the_start_with_the_reason(api: FakeKubeAPI) -> None:
    try:
        async with _replica(api):
            raise AssertionError("started without its Secret")
    except SetupError as exc:
        assert "pykorn-admission-certs does not exist" in str(exc)


async def test_a_missing_webhook_configuration_the_role_may_not_create_stops_the_start(
    api: FakeKubeAPI,
) -> None:
    """The role has no `create` on webhook configurations (it could not be limited to names): one that
    was not applied is said, and the controller does not run without its webhooks."""
    api.forbidden_expected = True
    secret = find(render(), "Secret", SECRET_NAME)
    await api.put("secrets", secret)
    try:
        async with _replica(api):
            raise AssertionError("started without its webhook configurations")
    except SetupError as exc:
        assert "it does not exist: apply deploy/kubernetes" in str(exc) and "403" in str(exc)
    assert {(w.verb, w.resource) for _, w in api.forbidden} == {("create", VALIDATING)}


async def test_a_configuration_changed_by_hand_is_put_right(api: FakeKubeAPI) -> None:
    await _with_secret(api)
    async with _replica(api) as replica:
        stored = api.objects[MUTATING][f"/{MUTATING_NAME}"]
        [hook] = stored["webhooks"]
        await api.put(MUTATING, {**stored, "webhooks": [{**hook, "failurePolicy": "Fail"}]})
        replica.setup.installed.clear()
        replica.setup.wake.set()  # as at a renewal: read back, and put right
        await asyncio.wait_for(replica.setup.installed.wait(), 20)
        assert _hook(api, MUTATING, MUTATING_NAME)["failurePolicy"] == "Ignore"
        assert api.writes[-1] == ("update", MUTATING, MUTATING_NAME)
