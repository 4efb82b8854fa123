"""PriorityClass semantics as ../shared/design/kubernetes-priority.md defines them, resolved per pod."""

from __future__ import annotations

from typing import Any

import pytest

from shim_k8s.readers.priority import (
    SYSTEM_CLUSTER_CRITICAL,
    SYSTEM_NODE_CRITICAL,
    PriorityResolver,
    UnknownPriorityClass,
)


def _pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": spec}


def _class(name: str, value: int, default: bool = False, policy: str | None = None, allow: str | None = None
           ) -> dict[str, Any]:  # fmt: skip
    obj: dict[str, Any] = {"metadata": {"name": name}, "value": value, "globalDefault": default}
    if policy:
        obj["preemptionPolicy"] = policy
    if allow is not None:
        obj["metadata"]["annotations"] = {"yunikorn.apache.org/allow-preemption": allow}
    return obj


@pytest.fixture
def resolver() -> PriorityResolver:
    r = PriorityResolver()
    r.upsert(_class("high", 1000))
    r.upsert(_class("batch", -10, policy="Never"))
    r.upsert(_class("protected", 500, allow="false"))
    return r


def test_spec_priority_set_by_admission_wins(resolver: PriorityResolver) -> None:
    assert resolver.resolve(_pod(priority=7, priorityClassName="high")).value == 7


def test_the_class_value_when_admission_did_not_set_one(resolver: PriorityResolver) -> None:
    assert resolver.resolve(_pod(priorityClassName="high")).value == 1000


def test_system_classes_are_known_without_objects(resolver: PriorityResolver) -> None:
    assert (
        resolver.resolve(_pod(priorityClassName="system-cluster-critical")).value == SYSTEM_CLUSTER_CRITICAL
    )
    assert resolver.resolve(_pod(priorityClassName="system-node-critical")).value == SYSTEM_NODE_CRITICAL
    assert SYSTEM_NODE_CRITICAL == 2_000_001_000


def test_no_class_takes_the_global_default_or_zero(resolver: PriorityResolver) -> None:
    assert resolver.resolve(_pod()).value == 0
    resolver.upsert(_class("everyday", 42, default=True))
    assert resolver.resolve(_pod()).value == 42
    resolver.remove("everyday")
    assert resolver.resolve(_pod()).value == 0


def test_an_unknown_class_is_an_error_naming_it(resolver: PriorityResolver) -> None:
    with pytest.raises(UnknownPriorityClass) as err:
        resolver.resolve(_pod(priorityClassName="nope"))
    assert err.value.name == "nope" and "'nope' does not exist" in str(err.value)
    resolver.upsert(_class("nope", 3))  # created later: the pod resolves then
    assert resolver.resolve(_pod(priorityClassName="nope")).value == 3


def test_preemption_policy_never_means_the_pod_may_not_preempt(resolver: PriorityResolver) -> None:
    assert resolver.resolve(_pod(priorityClassName="batch")).allow_preempt_other is False  # from the class
    assert (
        resolver.resolve(_pod(priorityClassName="high", preemptionPolicy="Never")).allow_preempt_other
        is False
    )
    assert resolver.resolve(_pod(priorityClassName="high")).allow_preempt_other is True


def test_the_allow_preemption_annotation_protects_a_class(resolver: PriorityResolver) -> None:
    assert resolver.resolve(_pod(priorityClassName="protected")).allow_preempt_self is False
    assert resolver.resolve(_pod(priorityClassName="high")).allow_preempt_self is True
    assert resolver.resolve(_pod()).allow_preempt_self is True


def test_the_pods_own_allow_preemption_annotation_wins_over_its_class(resolver: PriorityResolver) -> None:
    def annotated(allow: str, **spec: Any) -> dict[str, Any]:
        made = _pod(**spec)
        made["metadata"]["annotations"] = {"yunikorn.apache.org/allow-preemption": allow}
        return made

    assert resolver.resolve(annotated("false", priorityClassName="high")).allow_preempt_self is False
    assert resolver.resolve(annotated("false")).allow_preempt_self is False  # no class at all
    assert resolver.resolve(annotated("true", priorityClassName="protected")).allow_preempt_self is True
    assert resolver.resolve(annotated("FALSE", priorityClassName="high")).allow_preempt_self is False
