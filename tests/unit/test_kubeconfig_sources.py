"""Which cluster `pykorn k8s` and `pykorn admission` talk to, found as kubectl and kube-scheduler find
it: --kubeconfig, else the pod's service account, else $KUBECONFIG (a list, merged), else
~/.kube/config; and what each says when it cannot be used (shim_k8s/api/kubeconfig.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kubernetes.config import incluster_config

from shim_k8s.api.kubeconfig import KubeconfigError, cluster_access
from tests.tls_certs import make_pki


def kubeconfig(path: Path, server: str, context: str = "c") -> Path:
    path.write_text(
        f"apiVersion: v1\nkind: Config\ncurrent-context: {context}\n"
        f"clusters: [{{name: {context}, cluster: {{server: '{server}'}}}}]\n"
        f"users: [{{name: {context}, user: {{token: token-of-{context}}}}}]\n"
        f"contexts: [{{name: {context}, context: {{cluster: {context}, user: {context}}}}}]\n"
    )
    return path


@pytest.fixture(autouse=True)
def nowhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Not in a pod, no $KUBECONFIG, an empty home."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    return home


def test_the_flag_wins_over_the_environment_and_the_pod(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    given = kubeconfig(tmp_path / "given", "http://10.0.0.1:6443", "given")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "env", "http://10.0.0.2:6443", "env")))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    access = cluster_access(str(given))
    assert access.host == "http://10.0.0.1:6443"
    assert access.authorization() == "Bearer token-of-given"


def test_in_a_pod_the_service_account_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("sa-token")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(make_pki(tmp_path).ca))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "env", "http://10.0.0.2:6443", "env")))
    access = cluster_access()
    assert access.host == "https://10.96.0.1:443"
    assert (access.authorization() or "").lower() == "bearer sa-token"


def test_a_pod_without_its_token_says_what_to_check(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(tmp_path / "no-token"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with pytest.raises(
        KubeconfigError, match=r"service account cannot be used.*automountServiceAccountToken"
    ):
        cluster_access()


def test_kubeconfig_from_the_environment_merges_a_list(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    first = kubeconfig(tmp_path / "first", "http://10.0.0.3:6443", "first")
    second = kubeconfig(tmp_path / "second", "http://10.0.0.4:6443", "second")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(tmp_path / "absent"), str(first), str(second)]))
    assert cluster_access().host == "http://10.0.0.3:6443"  # as kubectl: the first current-context


def test_home_kube_config_is_the_last_resort(nowhere: Path) -> None:
    (nowhere / ".kube").mkdir()
    kubeconfig(nowhere / ".kube" / "config", "http://10.0.0.5:6443")
    assert cluster_access().host == "http://10.0.0.5:6443"


def test_nothing_to_find_says_where_it_looked() -> None:
    with pytest.raises(KubeconfigError) as refused:
        cluster_access()
    assert str(refused.value) == (
        "no cluster to talk to: not in a pod, no --kubeconfig, $KUBECONFIG unset and no ~/.kube/config; "
        "give --kubeconfig FILE"
    )


def test_kubeconfig_naming_only_missing_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "gone"))
    with pytest.raises(KubeconfigError, match=r"^\$KUBECONFIG=.*gone: no such file$"):
        cluster_access()


def test_a_client_certificate_that_is_not_there_is_named(tmp_path: Path) -> None:
    path = tmp_path / "tls"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://10.0.0.6:6443', insecure-skip-tls-verify: true}}]\n"
        f"users: [{{name: c, user: {{client-certificate: {tmp_path}/no.crt, "
        f"client-key: {tmp_path}/no.key}}}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: c}}]\n"
    )
    with pytest.raises(KubeconfigError, match=f"--kubeconfig {path}"):
        cluster_access(str(path))
