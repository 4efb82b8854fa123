"""ReadWriteOncePod claims and in-tree disk conflicts, as Kubernetes' VolumeRestrictions plugin checks
them.

A PersistentVolumeClaim with access mode ReadWriteOncePod may be used by one pod at a time in the whole
cluster. A pod carries the ReadWriteOncePod claims it uses as the tag
`pykorn.io/read-write-once-pod-claims` (a JSON list of "<namespace>/<name>"); while another pod (ours or
a foreign one) uses one of them, no node takes it. Preemption may take that pod, as kube-scheduler's
preemption may, on the node where it runs.

A disk a pod mounts directly (the in-tree GCE persistent disk, AWS EBS, RBD and iSCSI volumes) may be
shared by the pods of one node only when all of them mount it read-only. A pod carries its disks as the
tag `pykorn.io/disks` (a JSON list of {"id", "readOnly"}; the Kubernetes shim names each disk so that two
volumes conflict exactly when upstream says they do); the node keeps the disks its pods use.
"""

from __future__ import annotations

from dataclasses import dataclass

Disks = tuple[tuple[str, bool], ...]  # (disk id, mounted read-only), by id


class ClaimError(ValueError):
    pass


def parse_rwop_claims(raw: object, where: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(c, str) and "/" in c for c in raw):
        raise ClaimError(f'{where} must be a JSON list of claims, each "<namespace>/<name>"')
    return tuple(sorted(set(raw)))


def parse_disks(raw: object, where: str) -> Disks:
    if not isinstance(raw, list) or not all(_is_disk(d) for d in raw):
        raise ClaimError(f'{where} must be a JSON list of disks, each {{"id": "<disk>", "readOnly": bool}}')
    read_only: dict[str, bool] = {}
    for disk in raw:  # a disk mounted twice by one pod: read-only only if both mounts are
        read_only[disk["id"]] = read_only.get(disk["id"], True) and bool(disk.get("readOnly", False))
    return tuple(sorted(read_only.items()))


def _is_disk(item: object) -> bool:
    if not isinstance(item, dict):
        return False
    disk, read_only = item.get("id"), item.get("readOnly", False)
    return isinstance(disk, str) and bool(disk) and isinstance(read_only, bool)


@dataclass
class _Users:
    readers: int = 0
    writers: int = 0


class DisksInUse:
    """The disks the pods on one node mount: disk id -> how many mount it read-only and read-write."""

    __slots__ = ("_used",)

    def __init__(self) -> None:
        self._used: dict[str, _Users] = {}

    def add(self, disks: Disks) -> None:
        for disk, read_only in disks:
            users = self._used.setdefault(disk, _Users())
            if read_only:
                users.readers += 1
            else:
                users.writers += 1

    def remove(self, disks: Disks) -> None:
        for disk, read_only in disks:
            users = self._used.get(disk)
            if users is None:
                continue
            if read_only:
                users.readers -= 1
            else:
                users.writers -= 1
            if users.readers <= 0 and users.writers <= 0:
                del self._used[disk]

    def conflict(self, disks: Disks) -> bool:
        """Whether a pod mounting these would share a disk here with a pod where not both read-only."""
        for disk, read_only in disks:
            users = self._used.get(disk)
            if users is not None and (users.writers or not read_only):
                return True
        return False
