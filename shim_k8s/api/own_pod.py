"""The scheduler's own pod, labelled while its shim is the one scheduling.

The Service `yunikorn-service` (the core's REST API: YuniKorn's web UI, `pykorn status`, the admission
controller's configuration check) selects scheduler pods by this label as well as by app and
component. With two replicas, or during a rolling update, only the leader's core holds the cluster's
state; a standby's core is idle and empty, and a Service that picked it would show an empty scheduler.

The shim clears the label when it starts (a label left by an earlier run of its container) and when
it stops, and sets it once it has synced with the core as the leader. The pod is named by the
downward API (POD_NAME, POD_NAMESPACE), as the manifests set them; without them nothing is labelled,
and the shim says so once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import structlog

from shim_k8s.api.kube_http import TRANSPORT_ERRORS, ApiError, KubeHTTP

log = structlog.get_logger("pykorn.k8s.leader")

LEADER_LABEL = "pykorn.apache.org/leader"


@dataclass
class OwnPod:
    namespace: str
    name: str

    @classmethod
    def from_environment(cls) -> OwnPod | None:
        name, namespace = os.environ.get("POD_NAME", ""), os.environ.get("POD_NAMESPACE", "")
        return cls(namespace, name) if name and namespace else None

    async def mark(self, http: KubeHTTP, leading: bool) -> bool:
        """Set (or clear) the label: a JSON merge patch of the pod's labels; whether it was done. A
        failure is logged, not raised: scheduling goes on, and the Service's lack of an endpoint
        (or its second one) is what the log line explains."""
        value = "true" if leading else None  # null removes the label
        body = {"metadata": {"labels": {LEADER_LABEL: value}}}
        path = f"/api/v1/namespaces/{self.namespace}/pods/{self.name}"
        try:
            await http.request("PATCH", path, body, content_type="application/merge-patch+json", answer=False)
        except ApiError as exc:
            log.error(
                "cannot label the scheduler's own pod; yunikorn-service selects the leader by this label",
                pod=f"{self.namespace}/{self.name}", label=LEADER_LABEL, leading=leading, status=exc.status,
                reason=str(exc),
            )  # fmt: skip
            return False
        except TRANSPORT_ERRORS as exc:
            log.warning("could not reach the API server to label the scheduler's own pod",
                        pod=f"{self.namespace}/{self.name}", leading=leading, error=repr(exc))  # fmt: skip
            return False
        log.info("scheduler pod labelled" if leading else "scheduler pod label cleared",
                 pod=f"{self.namespace}/{self.name}", label=LEADER_LABEL)  # fmt: skip
        return True
