"""Kubernetes pods and nodes into si messages, with the k8s shim's conventions."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shim_k8s.readers import pod_identity as who
from shim_k8s.readers import translate as t
from shim_k8s.readers.bad_objects import Refused
from shim_k8s.readers.priority import PodPriority
from si.v1 import si_pb2
from si.v1 import tags as wire

PRIORITY = PodPriority(5, allow_preempt_other=True, allow_preempt_self=False)
GI = 2**30


def _pod(labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None, **spec: Any
         ) -> dict[str, Any]:  # fmt: skip
    return {
        "metadata": {
            "name": "web-1", "namespace": "shop", "uid": "uid-1", "labels": labels or {},
            "annotations": annotations or {}, "creationTimestamp": "2026-11-22T10:00:00Z",
        },
        "spec": {"schedulerName": "yunikorn", "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "1", "memory": "512Mi", "nvidia.com/gpu": "1"}}},
        ], **spec},
    }  # fmt: skip


def test_requests_are_summed_with_init_containers_overhead_and_a_pod_slot() -> None:
    pod = _pod(initContainers=[{"resources": {"requests": {"cpu": "2", "memory": "100Mi"}}}],
               overhead={"cpu": "100m"})  # fmt: skip
    assert t.pod_request(pod) == {"vcore": 2100, "memory": GI + 512 * 2**20, "nvidia.com/gpu": 1, "pods": 1}


def test_application_and_queue_follow_the_k8s_shim_order() -> None:
    assert who.application_id(_pod(labels={"yunikorn.apache.org/app-id": "L", "applicationId": "old"})) == "L"
    assert who.application_id(_pod(annotations={"yunikorn.apache.org/app-id": "A"})) == "A"
    assert who.application_id(_pod(labels={"applicationId": "spark-1"})) == "spark-1"
    assert who.application_id(_pod(labels={"spark-app-selector": "spark-2"})) == "spark-2"
    assert who.application_id(_pod(labels={"applicationId": "a", "spark-app-selector": "s"})) == "a"
    # None named: the namespace's shared application, or with unique IDs one per pod (as YuniKorn).
    assert who.application_id(_pod()) == "yunikorn-shop-autogen"
    assert who.application_id(_pod(), unique=True) == "shop-uid-1"
    # The admission controller's placeholder for a pod without a UID yet gets the UID here.
    assert who.application_id(_pod(labels={"applicationId": "shop-uniqueautogen"})) == "shop-uid-1"
    assert who.generated_application_id("n" * 80, None) == f"yunikorn-{'n' * 80}"[:63]
    assert who.generated_application_id("n" * 80, "") == "n" * 26 + "-uniqueautogen"
    assert who.queue_name(_pod(labels={"queue": "root.a"})) == "root.a"
    assert who.queue_name(_pod(annotations={"yunikorn.apache.org/queue": "root.b"})) == "root.b"
    assert who.queue_name(_pod()) == ""  # placement by namespace


USER_INFO = "yunikorn.apache.org/user.info"


def test_user_and_groups_from_the_annotation() -> None:
    info = json.dumps({"user": "alice", "groups": ["dev", "ops"]})
    assert who.user_info(_pod(annotations={USER_INFO: info})) == who.UserInfo("alice", ("dev", "ops"))
    assert who.user_info(_pod()) == who.UserInfo("nobody")
    # Keys are matched as Go's JSON decoding matches them; groups are optional.
    assert who.user_info(_pod(annotations={USER_INFO: '{"USER": "bob"}'})) == who.UserInfo("bob")


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("{not json", "not JSON"),
        ("[1]", "not a JSON object but a list"),
        ('"alice"', "not a JSON object but a string"),
        ("null", "not a JSON object but null"),
        ('{"groups": 5}', "groups is a number, not a list of strings"),
        ('{"user": "alice", "groups": [1]}', "groups is a list, not a list of strings"),
        ('{"user": 7}', "user is a number, not a string"),
        ('{"user": ""}', "names no user"),
        ("[" * 100_000, "not JSON"),  # deeper than the decoder goes: still only a fallback
    ],
)
def test_a_user_info_that_cannot_be_used_gives_nobody_and_says_why(value: str, why: str) -> None:
    """As YuniKorn: the pod runs as `nobody`; here the note (a Warning event on the pod) says why."""
    info = who.user_info(_pod(annotations={USER_INFO: value}))
    assert info.user == "nobody"
    (note,) = info.notes
    assert note.reason == "user-info" and why in note.message and USER_INFO in note.message
    assert '{"user": "alice", "groups": ["dev", "ops"]}' in note.message  # the shape expected


def test_a_nameless_user_info_keeps_its_groups_and_unknown_keys_are_named() -> None:
    info = who.user_info(_pod(annotations={USER_INFO: '{"user": "", "groups": ["dev"]}'}))
    assert (info.user, info.groups) == ("nobody", ("dev",))  # as YuniKorn
    extra = who.user_info(_pod(annotations={USER_INFO: '{"user": "al", "team": "x"}'}))
    assert extra.user == "al" and "['team'] not used" in extra.notes[0].message


USERNAME = "yunikorn.apache.org/username"


def test_the_deprecated_username_label_is_the_fallback_and_says_so() -> None:
    info = who.user_info(_pod(labels={USERNAME: "carol"}))
    assert (info.user, info.groups) == ("carol", ())
    assert info.notes[0].reason == "username-label" and "deprecated" in info.notes[0].message
    both = _pod(
        labels={"yunikorn.apache.org/username": "carol"}, annotations={USER_INFO: '{"user": "alice"}'}
    )
    assert who.user_info(both).user == "alice"


def test_placeholders_of_every_yunikorn_version_are_recognised() -> None:
    assert t.is_placeholder(_pod(annotations={"internal.yunikorn.apache.org/placeholder": "true"}))  # 1.6+
    assert t.is_placeholder(_pod(annotations={"internal.yunikorn.apache.org/placeholder": "T"}))  # ParseBool
    assert t.is_placeholder(_pod(annotations={"yunikorn.apache.org/placeholder": "true"}))  # before 1.6
    member = {"yunikorn.apache.org/task-group-name": "workers"}
    assert t.is_placeholder(_pod(labels={"placeholder": "true"}, annotations=member))  # before 1.6, the label
    assert not t.is_placeholder(_pod(labels={"placeholder": "true"}))  # a common word: not alone
    assert not t.is_placeholder(_pod(annotations={"internal.yunikorn.apache.org/placeholder": "yes"}))
    both = {"internal.yunikorn.apache.org/placeholder": "false", "yunikorn.apache.org/placeholder": "true"}
    assert not t.is_placeholder(_pod(annotations=both))  # the current marker decides, as YuniKorn's
    assert not t.is_placeholder(_pod())
    ask = t.pod_ask(_pod(annotations={"internal.yunikorn.apache.org/placeholder": "true"}), PRIORITY)
    assert ask.placeholder


def test_a_pending_pod_becomes_an_ask_with_its_tags_and_priority() -> None:
    pod = _pod(labels={"app": "web"}, nodeSelector={"zone": "a"},
               tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}])  # fmt: skip
    ask = t.pod_ask(pod, PRIORITY)
    assert (ask.allocationKey, ask.applicationID, ask.nodeID, ask.priority) == (
        "uid-1", "yunikorn-shop-autogen", "", 5
    )  # fmt: skip
    assert ask.preemptionPolicy.allowPreemptOther and not ask.preemptionPolicy.allowPreemptSelf
    tags = dict(ask.allocationTags)
    assert tags["kubernetes.io/meta/namespace"] == "shop" and tags["kubernetes.io/meta/podName"] == "web-1"
    assert tags["kubernetes.io/label/app"] == "web"
    assert tags["creationTime"] == "1795341600"
    assert json.loads(tags["pykorn.io/node-selector"]) == {"zone": "a"}
    assert json.loads(tags["pykorn.io/tolerations"])[0]["key"] == "gpu"
    assert ask.resourcePerAlloc.resources["vcore"].value == 1500


def test_a_daemonset_pod_requires_its_node() -> None:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-7"]}]}]}}}  # fmt: skip
    pod = _pod(affinity=affinity)
    pod["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "agent"}]
    assert t.pod_tags(pod)[wire.TAG_REQUIRED_NODE] == "node-7"
    pod["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "web"}]
    assert wire.TAG_REQUIRED_NODE not in t.pod_tags(pod)


def test_bound_pods_are_existing_or_foreign_allocations() -> None:
    ours = t.bound_pod_allocation(_pod(nodeName="n1"), PRIORITY, ours=True)
    assert ours.nodeID == "n1" and ours.applicationID == "yunikorn-shop-autogen"
    assert "foreign" not in ours.allocationTags
    foreign = t.bound_pod_allocation(
        _pod(nodeName="n1", schedulerName="default-scheduler"), PRIORITY, ours=False
    )
    assert (
        foreign.nodeID == "n1"
        and foreign.applicationID == ""
        and foreign.allocationTags["foreign"] == "default"
    )


def test_a_node_becomes_node_info_with_labels_and_taints() -> None:
    node = {
        "metadata": {"name": "n1", "labels": {"zone": "a"}},
        "spec": {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"},
                            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}],
                 "unschedulable": True},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }  # fmt: skip
    info = t.node_info(node, si_pb2.NodeInfo.CREATE_DRAIN)
    assert info.nodeID == "n1" and info.action == si_pb2.NodeInfo.CREATE_DRAIN
    assert {k: v.value for k, v in info.schedulableResource.resources.items()} == {
        "vcore": 8000, "memory": 32 * GI, "pods": 110,
    }  # fmt: skip
    assert info.attributes["kubernetes.io/label/zone"] == "a" and info.attributes["si/hostname"] == "n1"
    # The cordon's taint goes with the node, so pods that tolerate it may still go there.
    assert json.loads(info.attributes["pykorn.io/taints"]) == [
        {"effect": "NoSchedule", "key": "gpu", "value": "true"},
        {"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable", "value": ""},
    ]
    assert t.node_is_cordoned(node)


def test_a_cordoned_node_without_the_taint_yet_is_sent_with_it() -> None:
    node = {
        "metadata": {"name": "n1"},
        "spec": {"unschedulable": True},
        "status": {"allocatable": {"cpu": "1", "memory": "1Gi"}},
    }
    info = t.node_info(node, si_pb2.NodeInfo.CREATE_DRAIN)
    assert json.loads(info.attributes["pykorn.io/taints"]) == [
        {"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable", "value": ""}
    ]


def test_a_bad_quantity_is_a_refusal_naming_the_field() -> None:
    pod = _pod()
    pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = "lots"
    with pytest.raises(Refused) as err:
        t.pod_request(pod)
    assert "spec.containers[0].resources.requests.memory: 'lots' is not a quantity" in str(err.value)
    assert err.value.reason == "invalid-quantity"


def test_node_affinity_travels_as_the_pod_spec_has_it() -> None:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}]}}}  # fmt: skip
    tags = t.pod_tags(_pod(affinity=affinity))
    assert json.loads(tags[wire.TAG_NODE_AFFINITY]) == affinity["nodeAffinity"]
    assert wire.TAG_NODE_AFFINITY not in t.pod_tags(_pod())


def test_host_ports_of_containers_and_sidecars_with_kubernetes_defaults() -> None:
    pod = _pod()
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81}]
    pod["spec"]["initContainers"] = [
        {"name": "side", "restartPolicy": "Always",
         "ports": [{"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"}]},
        {"name": "init", "ports": [{"containerPort": 9, "hostPort": 9}]},  # done before the pod runs
    ]  # fmt: skip
    assert json.loads(t.pod_tags(pod)[wire.TAG_HOST_PORTS]) == [
        {"hostPort": 8080, "protocol": "TCP", "hostIP": "0.0.0.0"},
        {"hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"},
    ]
    assert wire.TAG_HOST_PORTS not in t.pod_tags(_pod())


def test_placement_fields_not_yet_honoured_are_named() -> None:
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
    pod = _pod(
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [term],
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": term}],
            }
        },
        topologySpreadConstraints=[
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
            {"maxSkew": 2, "topologyKey": "rack", "whenUnsatisfiable": "ScheduleAnyway"},
        ],
        volumes=[
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}},
            {"name": "tmp", "emptyDir": {}},
        ],
    )
    assert t.ignored_placement(pod) == []  # every one of these is honoured by the core or the shim
    gpu = _pod(resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu-0"}], runtimeClassName="kata")
    assert t.ignored_placement(gpu) == [
        "dynamic resource claims (spec.resourceClaims: gpu)",
        "the RuntimeClass's scheduling rules (spec.runtimeClassName kata)",
    ]
    assert t.ignored_placement(_pod(nodeSelector={"zone": "a"})) == []
    assert json.loads(t.pod_tags(pod)[wire.TAG_TOPOLOGY_SPREAD])[0]["topologyKey"] == "zone"
    required_only = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    assert t.ignored_placement(_pod(affinity=required_only)) == []  # honoured by the core
    assert (
        json.loads(t.pod_tags(_pod(affinity=required_only))[wire.TAG_POD_ANTI_AFFINITY])
        == required_only["podAntiAffinity"]
    )


def test_an_application_id_or_queue_given_twice_differently_is_said_on_the_pod() -> None:
    pod = _pod(
        labels={"yunikorn.apache.org/app-id": "a", "applicationId": "b", "queue": "root.x"},
        annotations={"yunikorn.apache.org/app-id": "a", "yunikorn.apache.org/queue": "root.y"},
    )
    conflicts = dict(who.identity_conflicts(pod))
    assert who.application_id(pod) == "a" and who.queue_name(pod) == "root.y"  # YuniKorn's precedence
    assert conflicts["ApplicationIDConflict"] == (
        "application ID 'a' from the label yunikorn.apache.org/app-id is used; "
        "it overrides label applicationId 'b'"
    )
    assert conflicts["QueueConflict"] == (
        "queue 'root.y' from the annotation yunikorn.apache.org/queue is used; "
        "it overrides label queue 'root.x'"
    )
    agreeing = _pod(labels={"applicationId": "a"}, annotations={"yunikorn.apache.org/app-id": "a"})
    assert who.identity_conflicts(agreeing) == []
