"""Volume kinds as kube-scheduler places pods by them, beside claims: which place no constraint of their
own, which in-tree disks conflict when two pods of a node mount them (VolumeRestrictions), and which CSI
driver CSI migration hands an in-tree volume to (NodeVolumeLimits counts it as that driver's)."""

from __future__ import annotations

from typing import Any

from shim_k8s.api.objects import Obj

# Volume kinds that place no constraint of their own on the node as kube-scheduler places pods: the
# local and projected kinds, inline CSI, the network filesystems, and the in-tree disks, whose conflicts
# (`disks`) and attach limits (`csi_volumes`, as CSI migration translates them) are checked as upstream.
NEUTRAL_KINDS = frozenset({
    "name", "emptyDir", "configMap", "secret", "downwardAPI", "projected", "hostPath", "nfs", "image", "csi",
    "gitRepo", "cephfs", "glusterfs", "fc", "flexVolume", "flocker", "azureFile", "quobyte", "storageos",
    "scaleIO", "photonPersistentDisk", "gcePersistentDisk", "awsElasticBlockStore", "azureDisk", "rbd",
    "iscsi", "cinder", "vsphereVolume", "portworxVolume",
})  # fmt: skip
# In-tree volume sources and the CSI driver that CSI migration hands each to, with the field naming the
# volume: attach limits count them as that driver's volumes.
MIGRATED = {
    "awsElasticBlockStore": ("ebs.csi.aws.com", "volumeID"),
    "gcePersistentDisk": ("pd.csi.storage.gke.io", "pdName"),
    "azureDisk": ("disk.csi.azure.com", "diskURI"),
    "cinder": ("cinder.csi.openstack.org", "volumeID"),
    "vsphereVolume": ("csi.vsphere.vmware.com", "volumePath"),
    "portworxVolume": ("pxd.portworx.com", "volumeID"),
}


def migrated(source: Obj) -> tuple[str, str]:
    """An in-tree volume source (a pod's volume, or a PersistentVolume's spec) as CSI migration names
    it: (its CSI driver, the volume's handle); ("", "") for none of the migrated kinds."""
    for kind, (driver, field_name) in MIGRATED.items():
        if kind in source:
            handle = str((source[kind] or {}).get(field_name) or "")
            return (driver, handle) if handle else ("", "")
    return "", ""


def disks(pod: Obj) -> list[dict[str, Any]]:
    """The in-tree disks the pod mounts directly, as VolumeRestrictions tells two of them apart: two
    mounts conflict when they share an id and not both are read-only. An RBD image is one id per
    monitor (monitors overlapping is the same image); an EBS volume conflicts whatever the mode."""
    found: list[dict[str, Any]] = []
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        source: Obj
        if "gcePersistentDisk" in volume:
            source = volume["gcePersistentDisk"] or {}
            ids = [f"gce-pd/{source.get('pdName', '')}"]
        elif "awsElasticBlockStore" in volume:
            source = {}  # read-only or not, two pods of a node may not share one
            ids = [f"aws-ebs/{(volume['awsElasticBlockStore'] or {}).get('volumeID', '')}"]
        elif "rbd" in volume:
            source = volume["rbd"] or {}
            image = f"{source.get('pool') or 'rbd'}/{source.get('image', '')}"
            ids = [f"rbd/{monitor}/{image}" for monitor in source.get("monitors") or []]
        elif "iscsi" in volume:
            source = volume["iscsi"] or {}
            ids = [f"iscsi/{source.get('iqn', '')}"]
        else:
            continue
        found += [{"id": disk, "readOnly": bool(source.get("readOnly"))} for disk in ids]
    return found
