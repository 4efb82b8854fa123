"""The admission controller's own certificates and the webhooks' namespace filters, without I/O."""

from __future__ import annotations

import datetime
import re

from shim_k8s.admission.certificates import CertificateAuthority, make_ca, make_serving, service_names
from shim_k8s.admission.controller import AdmissionConfig, Cluster
from shim_k8s.admission.webhook_setup import mutating_selector

NOW = datetime.datetime(2026, 11, 27, tzinfo=datetime.UTC)
NAME = "kubernetes.io/metadata.name"


def _config(**values: object) -> AdmissionConfig:
    patterns = {k: tuple(re.compile(p) for p in v) for k, v in values.items() if isinstance(v, list)}
    rest = {k: v for k, v in values.items() if not isinstance(v, list)}
    return AdmissionConfig(**patterns, **rest)  # type: ignore[arg-type]


def _enabled(*names: str) -> Cluster:
    flag = {"yunikorn.apache.org/namespace.enableYuniKorn": "true"}
    return Cluster(namespaces={n: {"metadata": {"name": n, "annotations": flag}} for n in names})


def test_a_ca_is_used_until_ninety_days_before_it_expires() -> None:
    ca = make_ca(NOW)
    assert ca.usable(NOW) and ca.usable(NOW + datetime.timedelta(days=274))
    assert not ca.usable(NOW + datetime.timedelta(days=276))
    other = make_ca(NOW)
    assert not CertificateAuthority(ca.cert_pem, other.key_pem).usable(NOW)  # a key that is not its own
    assert not CertificateAuthority(b"not a certificate", ca.key_pem).usable(NOW)


def test_the_serving_certificate_names_the_service_and_never_outlives_its_ca() -> None:
    short = make_ca(NOW, datetime.timedelta(days=100))
    serving = make_serving(short, service_names("hooks", "yunikorn"), NOW)
    assert serving.not_after == short.not_after
    assert serving.chain_pem.endswith(short.cert_pem)  # the chain: the certificate, then its CA
    assert service_names("hooks", "yunikorn") == ["hooks", "hooks.yunikorn", "hooks.yunikorn.svc"]


def test_every_namespace_is_sent_while_user_info_is_checked() -> None:
    assert mutating_selector(AdmissionConfig(), Cluster()) == {}  # kube-system bypassed, yet checked


def test_with_bypass_auth_namespaces_named_exactly_become_the_selector() -> None:
    config = _config(bypass_auth=True, bypass_namespaces=["^kube-system$", "^monitoring$"])
    assert mutating_selector(config, Cluster()) == {
        "matchExpressions": [{"key": NAME, "operator": "NotIn", "values": ["kube-system", "monitoring"]}]
    }
    assert mutating_selector(config, _enabled("kube-system", "monitoring")) == {}
    processed = _config(bypass_auth=True, process_namespaces=["^team-a$", "^team-b$"], bypass_namespaces=[])
    assert mutating_selector(processed, _enabled("batch")) == {
        "matchExpressions": [{"key": NAME, "operator": "In", "values": ["batch", "team-a", "team-b"]}]
    }


def test_a_real_regular_expression_is_left_to_the_controller() -> None:
    config = _config(bypass_auth=True, bypass_namespaces=["^kube-"], process_namespaces=["team"])
    assert mutating_selector(config, Cluster()) == {}


def test_processed_namespaces_all_bypassed_select_none_rather_than_an_empty_list() -> None:
    """An `In` with no values is refused by the API server: a selector that matches no namespace."""
    config = _config(bypass_auth=True, process_namespaces=["^a$"], bypass_namespaces=["^a$"])
    left_out = {"key": NAME, "operator": "NotIn", "values": ["a"]}
    none = {"key": NAME, "operator": "DoesNotExist"}
    assert mutating_selector(config, Cluster()) == {"matchExpressions": [left_out, none]}
