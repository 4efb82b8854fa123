"""A pod's request as kube-scheduler computes it: the facts are upstream's own, the cases of
kubernetes/kubernetes `staging/src/k8s.io/component-helpers/resource/helpers_test.go` (`PodRequests`;
the commit is in tests/data/k8s_pod_requests_facts.json), translated to the API's JSON as data.

The shim computes a pod's request as the scheduler's resource fit does: with the containers' statuses
(UseStatusResources), pod-level resources and the overhead. Cases for options the scheduler does not
use (NonMissingContainerRequests, used for scoring), or for features the shim does not count (dynamic
resource claims' node-allocatable resources, the alpha pod-level in-place resize, a container-less
computation) are left out, with the count of each said below."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shim_k8s.readers import quantity
from shim_k8s.readers.pod_resources import PodResourceError, pod_requests, request_nanos

FACTS: dict[str, Any] = json.loads(
    (Path(__file__).parent.parent / "data" / "k8s_pod_requests_facts.json").read_text()
)
NOT_MODELLED = (
    "nonMissingContainerRequests", "useDRANodeAllocatableResourceClaimStatus",
    "inPlacePodLevelResourcesVerticalScalingEnabled", "skipContainerLevelResources",
)  # fmt: skip


def _has_statuses(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    return bool(status.get("containerStatuses") or status.get("initContainerStatuses"))


def _modelled(case: dict[str, Any]) -> bool:
    options = case["options"]
    if any(options.get(name) for name in NOT_MODELLED):
        return False
    # Without UseStatusResources the statuses are not read; with none, both readings agree.
    return bool(options["useStatusResources"]) or not _has_statuses(case["pod"])


CASES = [c for c in FACTS["cases"] if _modelled(c)]


def test_most_of_upstreams_cases_are_checked() -> None:
    """What is left out is named in the module's docstring; this keeps the bulk of them in."""
    assert len(CASES) >= 50, len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["test"])
def test_the_request_is_kube_schedulers(case: dict[str, Any]) -> None:
    options = case["options"]
    got = request_nanos(
        case["pod"], overhead=not options["excludeOverhead"], pod_level=not options["skipPodLevelResources"]
    )
    expected = {name: quantity.parse(raw).nanos for name, raw in case["expected"].items()}
    assert got == expected


def test_a_sidecar_counts_beside_the_main_container() -> None:
    """The issue's case: a 1-cpu native sidecar and a 1-cpu main container need 2 cpus."""
    pod = {"spec": {
        "initContainers": [{"name": "proxy", "restartPolicy": "Always",
                            "resources": {"requests": {"cpu": "1"}}}],
        "containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}],
    }}  # fmt: skip
    assert pod_requests(pod) == {"vcore": 2000, "pods": 1}


def test_pod_level_requests_alone_are_what_the_pod_asks() -> None:
    pod = {"spec": {"resources": {"requests": {"cpu": "2", "memory": "1Gi"}}, "containers": [{"name": "c"}]}}
    assert pod_requests(pod) == {"vcore": 2000, "memory": 2**30, "pods": 1}


def test_units_round_up_once_at_the_end_and_extended_resources_count() -> None:
    """Two containers of 0.5 bytes are one byte, as Kubernetes adds quantities before rounding."""
    pod = {"spec": {"containers": [
        {"name": "a", "resources": {"requests": {"memory": "500m", "cpu": "1500u", "nvidia.com/gpu": "1"}}},
        {"name": "b", "resources": {"requests": {"memory": "500m", "hugepages-2Mi": "4Mi",
                                                 "ephemeral-storage": "1e9"}}},
    ], "overhead": {"cpu": "250m"}}}  # fmt: skip
    assert pod_requests(pod) == {
        "memory": 1, "vcore": 252, "nvidia.com/gpu": 1, "hugepages-2Mi": 4 * 2**20,
        "ephemeral-storage": 10**9, "pods": 1,
    }  # fmt: skip


def test_a_field_that_cannot_be_counted_is_named() -> None:
    bad = {"spec": {"containers": [{"name": "a", "resources": {"requests": {"memory": "4x"}}}]}}
    with pytest.raises(PodResourceError, match=r"spec\.containers\[0\]\.resources\.requests\.memory"):
        pod_requests(bad)
    negative = {"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "-1"}}}]}}
    with pytest.raises(PodResourceError, match="below zero"):
        pod_requests(negative)
    huge = {"spec": {"containers": [{"name": "a", "resources": {"requests": {"memory": "1e30"}}}]}}
    with pytest.raises(PodResourceError, match="beyond int64"):
        pod_requests(huge)
