"""The gang annotations a YuniKorn user writes on pods, read as YuniKorn's k8s shim reads them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shim_k8s.readers import translate
from shim_k8s.readers.priority import PodPriority
from shim_k8s.readers.task_groups import (
    SCHEDULING_POLICY,
    TASK_GROUPS,
    TaskGroupError,
    gang_policy,
    gang_size,
    placeholder_pod,
    task_groups,
)
from shim_k8s.readers.translate import TASK_GROUP_NAME

GI = 2**30


def _pod(**annotations: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "driver", "namespace": "spark", "uid": "u-1", "annotations": annotations,
                     "creationTimestamp": "2026-11-23T10:00:00Z"},
        "spec": {"priorityClassName": "batch", "containers": []},
    }  # fmt: skip


def test_task_groups_policy_and_the_gang_size() -> None:
    groups = [
        {"name": "driver", "minMember": 1, "minResource": {"cpu": "1", "memory": "2Gi"}},
        {"name": "exec", "minMember": 4, "minResource": {"cpu": "500m", "memory": "1Gi"},
         "nodeSelector": {"disk": "ssd"}, "labels": {"team": "a"}},
    ]  # fmt: skip
    pod = _pod(
        **{
            TASK_GROUPS: json.dumps(groups),
            SCHEDULING_POLICY: "placeholderTimeoutInSeconds=30 gangSchedulingStyle=Hard",
        }
    )
    parsed = task_groups(pod)
    assert [(g.name, g.min_member) for g in parsed] == [("driver", 1), ("exec", 4)]
    assert gang_size(parsed) == {"vcore": 1000 + 4 * 500, "memory": 2 * GI + 4 * GI, "pods": 5}
    policy = gang_policy(pod)
    assert (policy.timeout_seconds, policy.style, policy.warnings) == (30, "Hard", ())
    request = translate.application_request(pod, gang_size=gang_size(parsed), gang_style="Hard",
                                            placeholder_timeout_seconds=30)  # fmt: skip
    assert request.gangSchedulingStyle == "Hard" and request.executionTimeoutMilliSeconds == 30_000
    assert request.placeholderAsk.resources["pods"].value == 5
    assert request.tags["yunikorn.apache.org/creationTime"] == "1795428000"
    ph = placeholder_pod(pod, "spark-1", "root.spark", parsed[1], "pause:1", "yunikorn")
    assert ph["metadata"]["labels"] == {"team": "a", "applicationId": "spark-1", "queue": "root.spark"}
    assert ph["spec"]["nodeSelector"] == {"disk": "ssd"} and ph["spec"]["priorityClassName"] == "batch"
    assert ph["metadata"]["annotations"][TASK_GROUP_NAME] == "exec"
    ask = translate.pod_ask(
        {**ph, "metadata": {**ph["metadata"], "uid": "p-1"}},
        PodPriority(0, allow_preempt_other=True, allow_preempt_self=True),
    )
    assert ask.placeholder and ask.taskGroupName == "exec"
    assert dict(ask.resourcePerAlloc.resources)["memory"].value == GI


@pytest.mark.parametrize(
    ("annotation", "words"),
    [
        ("{not json", "is not JSON"),
        ("[]", "non-empty JSON list"),
        ('[{"minMember": 1, "minResource": {"cpu": "1"}}]', "has no name"),
        ('[{"name": "a", "minMember": 0, "minResource": {"cpu": "1"}}]', "minMember must be"),
        ('[{"name": "a", "minMember": 1}]', "minResource must name"),
        (
            '[{"name": "a", "minMember": 1, "minResource": {"cpu": "lots"}}]',
            r"minResource\.cpu: 'lots' is not a quantity",
        ),
        ('[{"name": "a", "minMember": 1, "minResource": {"cpu": "1"}, "colour": "red"}]', "unknown fields"),
        (
            '[{"name": "a", "minMember": 1, "minResource": {"cpu": "1"}, "tolerations": {}}]',
            "must be a JSON list",
        ),
        (
            '[{"name": "a", "minMember": 1, "minResource": {"cpu": "1"}},'
            ' {"name": "a", "minMember": 1, "minResource": {"cpu": "1"}}]',
            "declared twice",
        ),
    ],
)
def test_unusable_task_groups_are_refused_with_a_reason(annotation: str, words: str) -> None:
    with pytest.raises(TaskGroupError, match=words):
        task_groups(_pod(**{TASK_GROUPS: annotation}))


def test_policy_parameters_not_used_as_written_are_each_named() -> None:
    policy = gang_policy(
        _pod(
            **{SCHEDULING_POLICY: "gangSchedulingStyle=Firm placeholderTimeoutInSeconds=soon odd colour=red"}
        )
    )
    assert (policy.timeout_seconds, policy.style) == (0, "Soft")
    assert len(policy.warnings) == 4
    assert any("'Firm' is not Soft or Hard" in w for w in policy.warnings)
    assert any("unknown parameter 'colour'" in w for w in policy.warnings)
