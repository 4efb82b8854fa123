"""Which cluster the shim and the admission controller talk to, and how they prove who they are.

Found as kubectl and kube-scheduler find it: `--kubeconfig` when given; else, in a pod, its service
account; else `$KUBECONFIG` (a list of files, merged); else `~/.kube/config`. The official client reads
the files (contexts, exec plugins, refreshing tokens); whatever keeps it from giving an API server to
talk to is a `KubeconfigError` that says which source was tried and what to do.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from pathlib import Path

import yaml
from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException


class KubeconfigError(Exception):
    """No API server to talk to from what was given, said in one line with the fix."""


@dataclass
class ClusterAccess:
    """Where the API server is and how to prove who we are."""

    host: str
    ssl_context: ssl.SSLContext | bool = False  # False: plain HTTP (tests) or no verification
    configuration: client.Configuration | None = None  # for bearer tokens that refresh

    def authorization(self) -> str | None:
        """The Authorization header the kubeconfig or the service account gives: a bearer token
        (refreshed by the client's hook: in-cluster and exec credentials expire), or a kubeconfig's
        username and password as basic auth, which the official loader keeps in the same place."""
        cfg = self.configuration
        if cfg is None:
            return None
        # The official client keeps it under "BearerToken" (since v31) or "authorization" (before).
        token = cfg.get_api_key_with_prefix("BearerToken", alias="authorization")
        return str(token) if token else None


# What the official loader raises for a file it cannot use: not YAML, not a kubeconfig's shape
# (a list where a mapping goes, a context naming no cluster), a credential file it cannot read.
_UNUSABLE = (ConfigException, yaml.YAMLError, OSError, ValueError, TypeError, AttributeError, KeyError)


def cluster_access(kubeconfig: str | None = None, host: str | None = None) -> ClusterAccess:
    """From a kubeconfig file, the in-cluster service account, or (tests) a plain host URL."""
    if host is not None:
        return ClusterAccess(host.rstrip("/"))
    cfg = client.Configuration()
    source = _load(kubeconfig, cfg)
    try:
        return ClusterAccess(cfg.host.rstrip("/"), _tls_context(cfg), cfg)
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        raise KubeconfigError(f"{source}: cannot use its certificates: {_one_line(exc)}") from exc


def _load(kubeconfig: str | None, cfg: client.Configuration) -> str:
    """Fill `cfg` from the first source there is; the source's name, for messages."""
    if kubeconfig:
        if not Path(kubeconfig).expanduser().is_file():
            raise KubeconfigError(f"--kubeconfig {kubeconfig}: no such file")
        return _from_files(kubeconfig, f"--kubeconfig {kubeconfig}", cfg)
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        try:
            # The official client ships no type hints; its loaders fill `cfg` and return nothing.
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        except ConfigException as exc:
            raise KubeconfigError(
                f"in a pod (KUBERNETES_SERVICE_HOST is set) but its service account cannot be used: {exc} "
                "(is automountServiceAccountToken off?)"
            ) from exc
        return "the pod's service account"
    listed = os.environ.get("KUBECONFIG", "")
    if listed:
        if not any(Path(p).expanduser().is_file() for p in listed.split(os.pathsep) if p):
            raise KubeconfigError(f"$KUBECONFIG={listed}: no such file")
        return _from_files(listed, f"$KUBECONFIG={listed}", cfg)
    default = Path("~/.kube/config").expanduser()
    if default.is_file():
        return _from_files(str(default), str(default), cfg)
    raise KubeconfigError(
        "no cluster to talk to: not in a pod, no --kubeconfig, $KUBECONFIG unset and no ~/.kube/config; "
        "give --kubeconfig FILE"
    )


def _from_files(files: str, source: str, cfg: client.Configuration) -> str:
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=files, context=_first_current_context(files), client_configuration=cfg
        )
    except _UNUSABLE as exc:
        raise KubeconfigError(f"{source} is not a usable kubeconfig: {_one_line(exc)}") from exc
    return source


def _first_current_context(files: str) -> str | None:
    """kubectl's rule for a list of files: the first that sets current-context chooses it (the official
    Python client's merge would take the last)."""
    for name in files.split(os.pathsep):
        path = Path(name).expanduser()
        if name and path.is_file():
            document = yaml.safe_load(path.read_text())
            if isinstance(document, dict) and document.get("current-context"):
                return str(document["current-context"])
    return None


def _tls_context(cfg: client.Configuration) -> ssl.SSLContext | bool:
    if not cfg.host.startswith("https"):
        return False
    context = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None)
    if cfg.cert_file:
        context.load_cert_chain(cfg.cert_file, cfg.key_file)
    if not cfg.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _one_line(exc: BaseException) -> str:
    """A YAML error spans lines (the problem, then where): joined, for a one-line message."""
    return " ".join(str(exc).split()) or type(exc).__name__
