"""A pod's volumes, as the Kubernetes shim reads them: where bound volumes let it run, and why it waits."""

from __future__ import annotations

from typing import Any

from core.constraints.node_affinity import parse_node_affinity
from shim_k8s.readers.volume_terms import compact, with_volume_terms
from shim_k8s.volumes.cache import Volumes
from shim_k8s.volumes.kinds import disks

ZONE_B: list[dict[str, Any]] = [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]


def _pod(*volumes: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "db-0", "namespace": "shop"}, "spec": {"volumes": list(volumes)}}


def _claim(name: str, volume: str = "", storage_class: str = "") -> dict[str, Any]:
    """A claim; bound to `volume` as the PV controller completes a binding."""
    spec = {"volumeName": volume} if volume else {}
    if storage_class:
        spec["storageClassName"] = storage_class
    meta: dict[str, Any] = {"name": name, "namespace": "shop"}
    if volume:
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    return {"metadata": meta, "spec": spec}


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
    assert v.placement(pvc)[0] == 'persistentvolumeclaim "data" not found'
    v.update("persistentvolumeclaims", "ADDED", _claim("data", storage_class="fast"))
    assert v.placement(pvc)[0] == 'pod has unbound immediate PersistentVolumeClaims: "data" is not bound yet'
    # WaitForFirstConsumer, no volume free (pv-b has no phase Available) and no provisioner: it waits.
    v.update("persistentvolumeclaims", "MODIFIED", _claim("data", storage_class="local"))
    assert "node(s) didn't find available persistent volumes to bind" in v.placement(pvc)[0]
    v.update("persistentvolumeclaims", "MODIFIED", _claim("data", volume="pv-gone"))
    assert v.placement(pvc)[0] == "persistentvolume pv-gone of claim data not found"
    being_deleted = _claim("data", volume="pv-b")
    being_deleted["metadata"]["deletionTimestamp"] = "2026-11-27T10:00:00Z"
    v.update("persistentvolumeclaims", "MODIFIED", being_deleted)
    assert v.placement(pvc)[0] == 'persistentvolumeclaim "data" is being deleted'


def test_a_generic_ephemeral_volume_is_the_claim_its_pod_owns() -> None:
    """The claim <pod>-<volume> Kubernetes creates for it, waited for, and used only when the pod owns it."""
    v = _volumes()
    pod = _pod({"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}})
    pod["metadata"]["uid"] = "uid-db-0"
    assert v.placement(pod)[0] == 'persistentvolumeclaim "db-0-scratch" not found'
    claim = _claim("db-0-scratch", volume="pv-b")
    v.update("persistentvolumeclaims", "ADDED", claim)
    assert v.placement(pod)[0] == (
        "persistentvolumeclaim db-0-scratch was not created for pod db-0 (pod is not owner)"
    )
    claim["metadata"]["ownerReferences"] = [
        {"kind": "Pod", "name": "db-0", "uid": "uid-db-0", "controller": True}
    ]
    v.update("persistentvolumeclaims", "MODIFIED", claim)
    assert v.placement(pod) == ("", [ZONE_B])


def test_a_volume_kind_the_shim_does_not_know_makes_the_pod_wait_naming_it() -> None:
    why, _ = _volumes().placement(_pod({"name": "disk", "futureDisk": {"id": "vol-1"}}))
    assert why == "volume disk is of a kind pykorn does not place by (futureDisk)"


def test_in_tree_disks_are_placed_with_their_conflicts_and_counted_as_csi_migration_names_them() -> None:
    """kube-scheduler places no node constraint of theirs but VolumeRestrictions' disk conflicts and
    NodeVolumeLimits' attach counts (through CSI migration)."""
    v = _volumes()
    pod = _pod(
        {"name": "pd", "gcePersistentDisk": {"pdName": "data", "readOnly": True}},
        {"name": "ebs", "awsElasticBlockStore": {"volumeID": "vol-1", "readOnly": True}},
        {"name": "rbd", "rbd": {"monitors": ["m1", "m2"], "image": "img"}},
        {"name": "iscsi", "iscsi": {"iqn": "iqn.2026-11.io.example:t1", "readOnly": True}},
        {"name": "disk", "azureDisk": {"diskName": "d", "diskURI": "/subscriptions/s/disks/d"}},
        {"name": "fs", "cephfs": {"monitors": ["m1"]}},
    )
    assert v.placement(pod) == ("", [])
    assert disks(pod) == [
        {"id": "gce-pd/data", "readOnly": True},
        {"id": "aws-ebs/vol-1", "readOnly": False},  # EBS: never shared, whatever the mode
        {"id": "rbd/m1/rbd/img", "readOnly": False},  # one per monitor: overlapping monitors conflict
        {"id": "rbd/m2/rbd/img", "readOnly": False},
        {"id": "iscsi/iqn.2026-11.io.example:t1", "readOnly": True},
    ]
    assert v.csi_volumes(pod) == {
        "pd.csi.storage.gke.io": ["data"], "ebs.csi.aws.com": ["vol-1"],
        "disk.csi.azure.com": ["/subscriptions/s/disks/d"],
    }  # fmt: skip
    # A bound volume of an in-tree kind counts as its CSI driver's too.
    v.update("persistentvolumes", "ADDED", {"metadata": {"name": "pv-ebs"},
             "spec": {"awsElasticBlockStore": {"volumeID": "vol-9"}}})  # fmt: skip
    v.update("persistentvolumeclaims", "ADDED", _claim("data", volume="pv-ebs"))
    claimed = _pod({"name": "d", "persistentVolumeClaim": {"claimName": "data"}})
    assert v.csi_volumes(claimed) == {"ebs.csi.aws.com": ["vol-9"]}


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


def _hostname(node: str) -> list[dict[str, Any]]:
    return [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]


def _free(name: str, size: str, node: str, modes: tuple[str, ...] = ("ReadWriteOnce",), **labels: str) -> Any:
    """An available local volume of class `local` on one node."""
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"capacity": {"storage": size}, "accessModes": list(modes), "storageClassName": "local",
                 "nodeAffinity": {"required": {"nodeSelectorTerms": _hostname(node)}}},
        "status": {"phase": "Available"},
    }  # fmt: skip


def _wffc_claim(size: str = "5Gi", storage_class: str = "local", **spec: Any) -> dict[str, Any]:
    body = {"storageClassName": storage_class, "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}}, **spec}  # fmt: skip
    return {"metadata": {"name": "data", "namespace": "shop", "uid": "uid-data"}, "spec": body}


POD = _pod({"name": "d", "persistentVolumeClaim": {"claimName": "data"}})


def test_an_unbound_wait_for_first_consumer_claim_goes_where_a_fitting_volume_is() -> None:
    """Its nodes are those of the available volumes that fit it (class, access modes, capacity,
    selector), ORed: one term of every node's hostname here."""
    v = _volumes()
    v.update("persistentvolumes", "ADDED", _free("small", "1Gi", "n1"))
    v.update("persistentvolumes", "ADDED", _free("fit", "10Gi", "n2", tier="gold"))
    v.update("persistentvolumes", "ADDED", _free("rwx", "10Gi", "n3", modes=("ReadWriteMany",)))
    v.update("persistentvolumes", "ADDED", _free("big", "100Gi", "n4", tier="gold"))
    v.update("persistentvolumeclaims", "ADDED", _wffc_claim())
    assert v.placement(POD) == ("", [[{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2", "n4"]}]}]])  # fmt: skip
    assert [pv["metadata"]["name"] for pv in v.candidates(_wffc_claim(), v.classes["local"])] == [
        "fit",
        "big",
    ]
    # A selector narrows it; a volume chosen by a binding under way is no one else's.
    v.update("persistentvolumeclaims", "MODIFIED", _wffc_claim(selector={"matchLabels": {"tier": "gold"}}))
    v.reserved["fit"] = "shop/other"
    assert v.placement(POD)[1] == [_hostname("n4")]
    v.reserved["big"] = "shop/other"
    assert "didn't find available persistent volumes to bind" in v.placement(POD)[0]


def test_a_provisioning_class_allows_its_allowed_topologies_or_any_node() -> None:
    v = _volumes()
    zones = [{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["a", "b"]}]}]
    gp3 = {"metadata": {"name": "gp3"}, "provisioner": "ebs.csi.aws.com",
           "volumeBindingMode": "WaitForFirstConsumer", "allowedTopologies": zones}  # fmt: skip
    v.update("storageclasses", "ADDED", gp3)
    v.update("persistentvolumeclaims", "ADDED", _wffc_claim(storage_class="gp3"))
    assert v.placement(POD) == ("", [[{"matchExpressions": [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a", "b"]}]}]])  # fmt: skip
    v.update("storageclasses", "MODIFIED", {"metadata": {"name": "gp3"}, "provisioner": "ebs.csi.aws.com",
                                            "volumeBindingMode": "WaitForFirstConsumer"})  # fmt: skip
    assert v.placement(POD) == ("", [])  # anywhere
    # Its CSI volume counts against the node's attach limit before it exists: one per claim.
    assert v.csi_volumes(POD) == {"ebs.csi.aws.com": ["shop/data"]}


def test_a_claim_being_bound_keeps_to_its_volume_or_its_selected_node() -> None:
    """After a restart, say: a volume whose claimRef names the claim is its only choice; a claim
    annotated for provisioning on a node goes there only."""
    v = _volumes()
    v.update("persistentvolumes", "ADDED", _free("fit", "10Gi", "n2"))
    mine = _free("mine", "10Gi", "n7")
    mine["spec"]["claimRef"] = {"namespace": "shop", "name": "data", "uid": "uid-data"}
    v.update("persistentvolumes", "ADDED", mine)
    v.update("persistentvolumeclaims", "ADDED", _wffc_claim())
    assert v.placement(POD) == ("", [_hostname("n7")])
    v.update("persistentvolumes", "DELETED", mine)
    selected = _wffc_claim()
    selected["metadata"]["annotations"] = {"volume.kubernetes.io/selected-node": "n9"}
    v.update("persistentvolumeclaims", "MODIFIED", selected)
    assert v.placement(POD) == (
        "",
        [[{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n9"]}]}]],
    )


def test_compacting_ored_terms_merges_one_key_ins_and_drops_repeats() -> None:
    zone = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]},
                                 {"key": "rack", "operator": "In", "values": ["r1"]}]}  # fmt: skip
    terms = [*_hostname("n2"), *_hostname("n1"), *_hostname("n2"), zone, zone]
    assert compact(terms) == [*_hostname_all("n1", "n2"), zone]


def _hostname_all(*nodes: str) -> list[dict[str, Any]]:
    return [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": list(nodes)}]}
    ]


def test_a_claim_naming_no_class_or_not_yet_bound_by_the_pv_controller_waits_as_kube_scheduler_does() -> None:
    """No storageClassName: Immediate (the PV controller gives it the default class); a volume named but
    the binding not completed (no pv.kubernetes.io/bind-completed): it waits for the PV controller."""
    v = _volumes()
    default = {"storageclass.kubernetes.io/is-default-class": "true"}
    local = {
        "metadata": {"name": "local", "annotations": default},
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    v.update("storageclasses", "MODIFIED", local)
    v.update(
        "persistentvolumeclaims", "ADDED", {"metadata": {"name": "data", "namespace": "shop"}, "spec": {}}
    )
    assert "pod has unbound immediate PersistentVolumeClaims" in v.placement(POD)[0]
    v.update("persistentvolumeclaims", "MODIFIED", {"metadata": {"name": "data", "namespace": "shop"},
                                                    "spec": {"volumeName": "pv-b"}})  # fmt: skip
    assert v.placement(POD)[0] == "persistentvolumeclaim data is being bound to persistentvolume pv-b"


def test_a_claim_provisioned_by_a_driver_that_tracks_capacity_is_named_as_not_honoured() -> None:
    v = _volumes()
    gp3 = {
        "metadata": {"name": "gp3"},
        "provisioner": "topolvm.io",
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    v.update("storageclasses", "ADDED", gp3)
    v.update("persistentvolumeclaims", "ADDED", _wffc_claim(storage_class="gp3"))
    assert v.not_honoured(POD) == []  # the driver says nothing of capacity
    v.update("csidrivers", "ADDED", {"metadata": {"name": "topolvm.io"}, "spec": {"storageCapacity": True}})
    (said,) = v.not_honoured(POD)
    assert "storage capacity of CSI driver topolvm.io (CSIStorageCapacity) for claim data" in said
