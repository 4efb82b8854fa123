"""A pod read once into the shim's typed reading: what is sent for it, why it waits, what is said on
it when first asked; a pod that cannot be read raises before anything is read into a message."""

from __future__ import annotations

from typing import Any

import pytest

from shim_k8s.pod_reading import PodReader
from shim_k8s.readers import pod_identity
from shim_k8s.readers.bad_objects import Refused
from shim_k8s.readers.priority import PriorityResolver, UnknownPriorityClass
from shim_k8s.volumes.cache import Volumes

GI = 2**30


def _pod(node: str = "", memory: str = "1Gi", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web-1", "namespace": "shop", "uid": "uid-1", "labels": {"app": "web"}},
        "spec": {"schedulerName": "yunikorn", "nodeName": node, **spec, "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": memory}}}]},
    }  # fmt: skip


def _reader() -> PodReader:
    namespaces = {"shop": {"metadata": {"name": "shop", "labels": {"team": "a"}}}}
    return PodReader(PriorityResolver(), Volumes(), namespaces, pod_identity.application_id)


def test_a_pending_pod_reads_into_its_ask_under_its_application() -> None:
    reading = _reader().read(_pod(), asked=False)
    assert (reading.uid, reading.app_id, reading.node, reading.wait) == (
        "uid-1",
        "yunikorn-shop-autogen",
        "",
        None,
    )
    assert reading.request == {"vcore": 500, "memory": GI, "pods": 1}
    assert reading.message is not None and reading.message.allocationKey == "uid-1"
    assert reading.message.applicationID == "yunikorn-shop-autogen" and not reading.message.nodeID


def test_an_asked_pod_reads_its_application_only_and_a_running_one_its_allocation() -> None:
    asked = _reader().read(_pod(), asked=True)
    assert asked.message is None and asked.request == {} and asked.app_id == "yunikorn-shop-autogen"
    running = _reader().read(_pod(node="n1"), asked=True)
    assert running.node == "n1" and running.message is not None and running.message.nodeID == "n1"


def test_a_gated_pod_reads_why_it_waits_and_nothing_to_send() -> None:
    reading = _reader().read(_pod(schedulingGates=[{"name": "quota"}]), asked=False)
    assert reading.message is None
    assert reading.wait == ("SchedulingGated", "waiting for its scheduling gates to be removed: quota")


def test_unhonoured_rules_are_noted_to_be_said_once_when_it_is_asked() -> None:
    reading = _reader().read(_pod(resourceClaims=[{"name": "gpu"}]), asked=False)
    assert reading.message is not None
    assert reading.notes == ((
        "PlacementConstraintsIgnored",
        "not honoured by pykorn yet, the pod is placed without them: dynamic resource claims "
        "(spec.resourceClaims: gpu)",
    ),)  # fmt: skip


def test_a_pod_that_cannot_be_read_raises_and_an_unknown_class_says_so() -> None:
    with pytest.raises(Refused):
        _reader().read(_pod(memory="lots"), asked=False)
    with pytest.raises(UnknownPriorityClass):
        _reader().read(_pod(priorityClassName="gold"), asked=False)
