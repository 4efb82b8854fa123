"""The admission controller sets itself up, as YuniKorn's webhook manager does: its CAs in a Secret, its
serving certificate, and its MutatingWebhookConfiguration and ValidatingWebhookConfiguration.

- **The Secret** (`pykorn-admission-certs` in the scheduler's namespace, shipped empty by
  deploy/kubernetes) holds two CAs (`ca1.crt`/`ca1.key`, `ca2.crt`/`ca2.key`). One that is missing,
  unreadable or expiring within 90 days is made anew; the first pair is made with staggered expiries
  (6 and 12 months), so the two never expire together. Writes carry the resourceVersion read: when
  another replica wrote first (409 Conflict) this one reads again and takes what it wrote, so replicas
  share one pair of CAs without fighting.
- **The serving certificate** is made by each replica in memory, for the Service's names
  (`admissionController.webHook.amServiceName`, YuniKorn's `yunikorn-admission-controller-service` by
  default), signed by the CA that expires last **among those the API server already trusts** (the
  bundle in the webhook configuration before this change): a CA just made signs only from the next
  renewal on, months after its bundle was installed, so no replica ever serves a certificate an API
  server cannot verify yet.
- **The webhook configurations** carry both CAs as their bundle. deploy/kubernetes ships both empty,
  so the role needs no `create` (which could not be limited to their names): each is updated (with
  its resourceVersion; a conflict reads it again) only when it differs from what it should be, so
  replicas agreeing on the CAs agree on the configuration and write nothing; one that is missing is
  created when the role allows it. They are read back every hour and at each renewal, and put right
  when someone changed them; in between only a change of the controller's own is written.
  Failure policy `Ignore` and side effects `None`, as YuniKorn's: a controller that is down never
  blocks a pod or a ConfigMap. The validating webhook is limited to the scheduler's namespace, where
  the ConfigMaps it checks live. The mutating one sees every namespace: the controller refuses a
  forged user.info in any namespace (as YuniKorn does), so `filtering.bypassNamespaces` and
  `filtering.processNamespaces` become a namespaceSelector only with `accessControl.bypassAuth: "true"`
  (namespaces named exactly, less those whose `namespace.enableYuniKorn` annotation is "true").
- **Rotation:** `renewal_due()` is when the first CA comes within 90 days of its expiry or the serving
  certificate within 30 days of its own; then the CAs are loaded again (the expiring one replaced),
  the serving certificate made again (by the CA that stays) and the bundle updated.
"""

from __future__ import annotations

import base64
import datetime
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from shim_k8s.admission.certificates import (
    CA_RENEW_BEFORE,
    SERVING_RENEW_BEFORE,
    CertificateAuthority,
    ServingCertificate,
    make_ca,
    make_serving,
    service_names,
)
from shim_k8s.admission.controller import AdmissionConfig, Cluster
from shim_k8s.api.kube_http import ApiError, KubeHTTP
from shim_k8s.readers import namespaces

log = structlog.get_logger("pykorn.admission.setup")

SECRET_NAME = "pykorn-admission-certs"
MUTATING_NAME = "pykorn-admission-controller-mutations"
VALIDATING_NAME = "pykorn-admission-controller-validations"
MUTATE_HOOK = "admission-webhook.pykorn.mutate-pods"
VALIDATE_HOOK = "admission-webhook.pykorn.validate-conf"
WEBHOOK_LABELS = {"app": "yunikorn"}
CONFLICT_ATTEMPTS = 10  # as YuniKorn's: a write that keeps conflicting is given up, and said
SLOTS = (("ca1.crt", "ca1.key"), ("ca2.crt", "ca2.key"))
WEBHOOK_PATHS = {
    "mutating": "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    "validating": "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
}
_LITERAL = re.compile(r"^\^?([a-z0-9]([-a-z0-9]*[a-z0-9])?)\$?$")  # a namespace named exactly


class SetupError(RuntimeError):
    """The controller cannot set itself up (the Secret is missing, a write keeps conflicting, the role
    does not allow it): a cause of the installation's, said in one line."""


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@dataclass
class WebhookManager:
    http: KubeHTTP
    namespace: str
    secret: str = SECRET_NAME
    clock: Callable[[], datetime.datetime] = utc_now
    cas: tuple[CertificateAuthority, CertificateAuthority] | None = None
    serving: ServingCertificate | None = None
    installed: dict[str, dict[str, Any]] | None = None  # what the last install made sure of
    trusted: bytes | None = None  # the CA bundle the API server has (None: no webhook installed yet)

    # The CAs ------------------------------------------------------------------------------------
    async def load_cas(self) -> tuple[CertificateAuthority, CertificateAuthority]:
        """The two CAs from the Secret, each made anew when missing, unreadable or expiring soon."""
        path = f"/api/v1/namespaces/{self.namespace}/secrets/{self.secret}"
        for _ in range(CONFLICT_ATTEMPTS):
            try:
                secret = await self.http.request("GET", path)
            except ApiError as exc:
                if exc.status == 404:
                    raise SetupError(
                        f"the Secret {self.namespace}/{self.secret} does not exist: deploy/kubernetes "
                        "makes it (an empty Opaque Secret the controller fills)"
                    ) from None
                raise SetupError(f"reading the Secret {self.namespace}/{self.secret}: {exc}") from None
            found, made = self._usable_or_new(secret.get("data") or {})
            if not made:
                self.cas = found
                return found
            data = dict(secret.get("data") or {})
            for (cert_key, key_key), ca in zip(SLOTS, found, strict=True):
                data[cert_key] = _b64(ca.cert_pem)
                data[key_key] = _b64(ca.key_pem)
            try:
                await self.http.request("PUT", path, {**secret, "data": data}, answer=False)
            except ApiError as exc:
                if exc.status == 409:  # another replica wrote first: read what it wrote
                    continue
                raise SetupError(f"writing the Secret {self.namespace}/{self.secret}: {exc}") from None
            log.info("admission CAs written", secret=self.secret, made=made)
        raise SetupError(f"the Secret {self.namespace}/{self.secret} kept changing; gave up")

    def _usable_or_new(
        self, data: dict[str, str]
    ) -> tuple[tuple[CertificateAuthority, CertificateAuthority], int]:
        now = self.clock()
        found: list[CertificateAuthority | None] = []
        for cert_key, key_key in SLOTS:
            ca = _from_secret(data, cert_key, key_key)
            found.append(ca if ca is not None and ca.usable(now) else None)
        made = sum(1 for ca in found if ca is None)
        if found[0] is None:
            # Both new: the first expires six months before the second, so they are replaced in turn.
            stagger = datetime.timedelta(days=182) if found[1] is None else datetime.timedelta(0)
            found[0] = make_ca(now, datetime.timedelta(days=365) - stagger)
        if found[1] is None:
            found[1] = make_ca(now)
        first, second = found
        assert first is not None and second is not None
        return (first, second), made

    @property
    def bundle(self) -> bytes:
        """Both CAs: what the API server trusts."""
        assert self.cas is not None, "load_cas() first"
        return self.cas[0].cert_pem + self.cas[1].cert_pem

    async def read_trusted(self) -> bytes | None:
        """The CA bundle of the mutating webhook configuration as it stands, or None without one."""
        try:
            current = await self.http.request("GET", f"{WEBHOOK_PATHS['mutating']}/{MUTATING_NAME}")
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise SetupError(f"reading the mutating webhook configuration {MUTATING_NAME}: {exc}") from None
        hooks = current.get("webhooks") or [{}]
        bundle = str((hooks[0].get("clientConfig") or {}).get("caBundle") or "")
        self.trusted = base64.b64decode(bundle) if bundle else None
        return self.trusted

    # The serving certificate ----------------------------------------------------------------------
    def make_serving(self, service: str) -> ServingCertificate:
        """Signed by the CA that expires last among those the API server trusts (any of ours when it
        trusts none yet, as before the first install: nothing calls the webhook then)."""
        assert self.cas is not None, "load_cas() first"
        trusted = [ca for ca in self.cas if self.trusted is not None and ca.cert_pem in self.trusted]
        if self.trusted and not trusted:
            log.warning("no CA of the Secret is in the installed bundle: serving with the newest until "
                        "the bundle is updated")  # fmt: skip
        best = max(trusted or self.cas, key=lambda ca: ca.not_after)
        self.serving = make_serving(best, service_names(service, self.namespace), self.clock())
        return self.serving

    def renewal_due(self) -> datetime.datetime:
        assert self.cas is not None and self.serving is not None
        first_ca = min(ca.not_after for ca in self.cas) - CA_RENEW_BEFORE
        return min(first_ca, self.serving.not_after - SERVING_RENEW_BEFORE)

    # The webhook configurations -------------------------------------------------------------------
    async def install(
        self, service: str, config: AdmissionConfig, cluster: Cluster, force: bool = False
    ) -> int:
        """Both configurations as they should be; the number written (0 when both already were). Unless
        `force`d, nothing is read when they should be what the last install made sure of (a namespace
        changing, say, that changes no filter)."""
        bundle = _b64(self.bundle)
        desired = {
            "validating": validating_webhook(service, self.namespace, bundle),
            "mutating": mutating_webhook(service, self.namespace, bundle, mutating_selector(config, cluster)),
        }
        if desired == self.installed and not force:
            return 0
        written = 0
        for kind, wanted in desired.items():
            written += await self._install_one(kind, wanted)
        self.installed, self.trusted = desired, self.bundle
        return written

    async def _install_one(self, kind: str, wanted: dict[str, Any]) -> int:
        name = wanted["metadata"]["name"]
        path = f"{WEBHOOK_PATHS[kind]}/{name}"
        for _ in range(CONFLICT_ATTEMPTS):
            try:
                current: dict[str, Any] | None = await self.http.request("GET", path)
            except ApiError as exc:
                if exc.status != 404:
                    raise SetupError(f"reading the {kind} webhook configuration {name}: {exc}") from None
                current = None
            try:
                if current is None:  # not applied with deploy/kubernetes: made, if the role allows it
                    await self.http.request("POST", WEBHOOK_PATHS[kind], wanted, answer=False)
                elif _differs(current, wanted):
                    meta = {
                        **current["metadata"],
                        "labels": {**(current["metadata"].get("labels") or {}), **WEBHOOK_LABELS},
                    }
                    await self.http.request(
                        "PUT",
                        path,
                        {**current, "metadata": meta, "webhooks": wanted["webhooks"]},
                        answer=False,
                    )
                else:
                    return 0
            except ApiError as exc:
                if exc.status in (404, 409):  # changed or removed under us: read it again
                    continue
                missing = (
                    " (it does not exist: apply deploy/kubernetes, which makes it)" if current is None else ""
                )
                raise SetupError(f"writing the {kind} webhook configuration {name}{missing}: {exc}") from None
            log.info("webhook configuration written", kind=kind, name=name, created=current is None)
            return 1
        raise SetupError(f"the {kind} webhook configuration {name} kept changing; gave up")


def validating_webhook(service: str, namespace: str, bundle: str) -> dict[str, Any]:
    rule = {
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"],
        "resources": ["configmaps"],
        "scope": "*",
    }
    hook = _hook(VALIDATE_HOOK, service, namespace, "/validate-conf", bundle, [rule])
    hook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": VALIDATING_NAME, "labels": dict(WEBHOOK_LABELS)},
        "webhooks": [hook],
    }


def mutating_webhook(service: str, namespace: str, bundle: str, selector: dict[str, Any]) -> dict[str, Any]:
    rule = {
        "apiGroups": ["", "apps", "batch"],
        "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"],
        "resources": [
            "pods",
            "replicationcontrollers",
            "deployments",
            "replicasets",
            "statefulsets",
            "daemonsets",
            "jobs",
            "cronjobs",
        ],
        "scope": "*",
    }
    hook = _hook(MUTATE_HOOK, service, namespace, "/mutate", bundle, [rule])
    hook["namespaceSelector"] = selector
    hook["reinvocationPolicy"] = "Never"
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": MUTATING_NAME, "labels": dict(WEBHOOK_LABELS)},
        "webhooks": [hook],
    }


def _hook(
    name: str, service: str, namespace: str, path: str, bundle: str, rules: list[dict[str, Any]]
) -> dict[str, Any]:
    """Every field the API server would default is given, so that a stored configuration compares
    equal to the one wanted and replicas write nothing."""
    return {
        "name": name,
        "clientConfig": {
            "service": {"name": service, "namespace": namespace, "path": path, "port": 443},
            "caBundle": bundle,
        },
        "rules": rules,
        "failurePolicy": "Ignore",
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "timeoutSeconds": 10,
        "admissionReviewVersions": ["v1"],
        "objectSelector": {},
    }


def mutating_selector(config: AdmissionConfig, cluster: Cluster) -> dict[str, Any]:
    """The namespaces the API server sends pods and workloads of. All of them unless user.info is not
    checked (`bypassAuth`): only then is a namespace the controller leaves alone truly untouched."""
    if not config.bypass_auth:
        return {}
    enabled = {
        name
        for name, ns in cluster.namespaces.items()
        if namespaces.flag(ns, namespaces.ENABLE_YUNIKORN) is True
    }
    expressions: list[dict[str, Any]] = []
    bypassed = _literal_names(config.bypass_namespaces)
    if bypassed:
        left_out = sorted(set(bypassed) - enabled)
        if left_out:
            expressions.append(
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": left_out}
            )
    processed = _literal_names(config.process_namespaces)
    if processed:
        wanted = sorted((set(processed) | enabled) - (set(bypassed or []) - enabled))
        if wanted:
            expressions.append({"key": "kubernetes.io/metadata.name", "operator": "In", "values": wanted})
        else:  # every processed namespace is bypassed: none (an empty In is refused by the API server)
            expressions.append({"key": "kubernetes.io/metadata.name", "operator": "DoesNotExist"})
    return {"matchExpressions": expressions} if expressions else {}


def _literal_names(patterns: tuple[re.Pattern[str], ...]) -> list[str] | None:
    """The namespace names the patterns match when each is a name written exactly (`^team-a$`); None
    when any is a real regular expression (the controller filters those itself)."""
    names = []
    for pattern in patterns:
        found = _LITERAL.match(pattern.pattern)
        if found is None or not (pattern.pattern.startswith("^") and pattern.pattern.endswith("$")):
            return None
        names.append(found.group(1))
    return names


def _differs(current: dict[str, Any], wanted: dict[str, Any]) -> bool:
    labels = current.get("metadata", {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in WEBHOOK_LABELS.items()):
        return True
    return json.dumps(current.get("webhooks"), sort_keys=True) != json.dumps(
        wanted["webhooks"], sort_keys=True
    )


def _from_secret(data: dict[str, str], cert_key: str, key_key: str) -> CertificateAuthority | None:
    try:
        return CertificateAuthority(base64.b64decode(data[cert_key]), base64.b64decode(data[key_key]))
    except (KeyError, ValueError, TypeError):
        return None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
