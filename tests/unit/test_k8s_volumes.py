"""A pod's volumes, as the Kubernetes shim reads them: where bound volumes let it run, and why it waits."""

from __future__ import annotations

from typing import Any

from core.constraints.node_affinity import parse_node_affinity
from shim_k8s.volumes import Volumes, with_volume_terms

ZONE_B: list[dict[str, Any]] = [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]


def _pod(*volumes: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "db-0", "namespace": "shop"}, "spec": {"volumes": list(volumes)}}


def _claim(name: str, volume: str = "", storage_class: str = "") -> dict[str, Any]:
    spec = {"volumeName": volume} if volume else {}
    if storage_class:
        spec["storageClassName"] = storage_class
    return {"metadata": {"name": name, "namespace": "shop"}, "spec": spec}


def _volumes() -> Volumes:
    v = Volumes()
    v.update("persistentvolumes", "ADDED", {"metadata": {"name": "pv-b"},
             "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": ZONE_B}}}})  # fmt: skip
    v.update(
        "storageclasses",
        "ADDED",
        {"metadata": {"name": "local"}, "volumeBindingMode": "WaitForFirstConsumer"},
    )
    v.update("storageclasses", "ADDED", {"metadata": {"name": "fast"}, "volumeBindingMode": "Immediate"})
    return v


def test_a_bound_claim_brings_its_volumes_node_affinity() -> None:
    v = _volumes()
    v.update("persistentvolumeclaims", "ADDED", _claim("data", volume="pv-b"))
    assert v.placement(_pod({"name": "d", "persistentVolumeClaim": {"claimName": "data"}})) == ("", [ZONE_B])
    assert v.placement(
        _pod({"name": "tmp", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "x"}})
    ) == ("", [])


def test_the_pod_waits_for_a_claim_that_is_missing_unbound_or_waiting_for_its_consumer() -> None:
    v = _volumes()
    pvc = _pod({"name": "d", "persistentVolumeClaim": {"claimName": "data"}})
    assert v.placement(pvc)[0] == "persistentvolumeclaim data not found"
    v.update("persistentvolumeclaims", "ADDED", _claim("data", storage_class="fast"))
    assert v.placement(pvc)[0] == "persistentvolumeclaim data is not bound yet"
    v.update("persistentvolumeclaims", "MODIFIED", _claim("data", storage_class="local"))
    assert "binds WaitForFirstConsumer" in v.placement(pvc)[0]
    v.update("persistentvolumeclaims", "MODIFIED", _claim("data", volume="pv-gone"))
    assert v.placement(pvc)[0] == "persistentvolume pv-gone of claim data not found"
    # A generic ephemeral volume is the claim <pod>-<volume>.
    v.update("persistentvolumeclaims", "ADDED", _claim("db-0-scratch", volume="pv-b"))
    assert v.placement(_pod({"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}})) == ("", [ZONE_B])


def test_a_volume_kind_that_constrains_nodes_unchecked_makes_the_pod_wait() -> None:
    why, _ = _volumes().placement(_pod({"name": "disk", "awsElasticBlockStore": {"volumeID": "vol-1"}}))
    assert why == "volume disk is of a kind pykorn does not place by (awsElasticBlockStore)"


def test_volume_terms_are_anded_with_the_pods_own() -> None:
    own = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
        {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["nvme"]}]},
    ]}, "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}]}  # fmt: skip
    merged = with_volume_terms(own, [ZONE_B])
    assert merged is not None
    terms = merged["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert [[e["values"][0] for e in t["matchExpressions"]] for t in terms] == [["ssd", "b"], ["nvme", "b"]]
    assert (
        merged["preferredDuringSchedulingIgnoredDuringExecution"]
        == own["preferredDuringSchedulingIgnoredDuringExecution"]
    )
    alone = with_volume_terms(None, [ZONE_B])
    assert alone == {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": ZONE_B}}


def test_a_volumes_zone_labels_keep_the_pod_in_that_zone_as_volume_zone_does() -> None:
    """kube-scheduler's VolumeZone: a node labelled with the volume's zone (or its beta twin) passes, one
    in another zone does not, and a node with no topology label at all passes."""
    v = Volumes()
    zoned = {"name": "pv-z", "labels": {"topology.kubernetes.io/zone": "us-east-1a__us-east-1b"}}
    v.update("persistentvolumes", "ADDED", {"metadata": zoned, "spec": {}})
    v.update("persistentvolumeclaims", "ADDED", _claim("data", volume="pv-z"))
    pod = _pod({"name": "d", "persistentVolumeClaim": {"claimName": "data"}})
    why, terms = v.placement(pod)
    assert why == "" and len(terms) == 1
    affinity = parse_node_affinity(with_volume_terms(None, terms), "pod")

    def admits(labels: dict[str, str]) -> bool:
        return affinity.admits("n", labels)

    assert admits({"topology.kubernetes.io/zone": "us-east-1b"})
    assert admits({"failure-domain.beta.kubernetes.io/zone": "us-east-1a"})  # the beta twin
    assert not admits({"topology.kubernetes.io/zone": "us-west-2a"})
    assert not admits({"topology.kubernetes.io/region": "us-east-1"})  # topology-labelled, no zone
    assert admits({"kubernetes.io/hostname": "n"})  # no topology label at all
