"""CSI volume attach limits, as Kubernetes' NodeVolumeLimits plugin (CSILimits) checks them.

A node can attach only so many volumes of each CSI driver: its CSINode's `spec.drivers[].allocatable.count`,
which the node carries as the attribute `pykorn.io/csi-volume-limits` (a JSON object driver -> count; a
driver not named has no limit). A pod carries the volumes it attaches as the tag `pykorn.io/csi-volumes`
(a JSON object driver -> list of volume handles). A volume already attached to the node (another pod
there uses the same handle) costs nothing more; the pod fits when, per driver, the node's attached
volumes and the pod's new ones stay within the limit. The node keeps the handles its pods use (ours and
foreign ones), so the check is a lookup per volume the pod attaches.
"""

from __future__ import annotations

from collections import Counter

CsiVolumes = tuple[tuple[str, tuple[str, ...]], ...]  # (driver, its volume handles), by driver
CsiLimits = tuple[tuple[str, int], ...]  # (driver, how many volumes the node can attach)


class VolumeLimitError(ValueError):
    pass


def parse_csi_volumes(raw: object, where: str) -> CsiVolumes:
    if not isinstance(raw, dict):
        raise VolumeLimitError(f"{where} must be a JSON object of CSI driver to a list of volume handles")
    out = []
    for driver, handles in sorted(raw.items()):
        if not driver or not isinstance(handles, list) or not all(isinstance(h, str) and h for h in handles):
            raise VolumeLimitError(f"{where}.{driver}: must be a list of volume handles (non-empty strings)")
        out.append((str(driver), tuple(sorted(set(handles)))))
    return tuple(out)


def parse_csi_limits(raw: object, where: str) -> CsiLimits:
    if not isinstance(raw, dict):
        raise VolumeLimitError(f"{where} must be a JSON object of CSI driver to an attachable count")
    out = []
    for driver, count in sorted(raw.items()):
        if not driver or not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise VolumeLimitError(f"{where}.{driver}: must be a whole number of volumes, got {count!r}")
        out.append((str(driver), count))
    return tuple(out)


class VolumesInUse:
    """The CSI volumes the pods on one node use: driver -> volume handle -> how many pods use it."""

    __slots__ = ("_used",)

    def __init__(self) -> None:
        self._used: dict[str, Counter[str]] = {}

    def add(self, volumes: CsiVolumes) -> None:
        for driver, handles in volumes:
            self._used.setdefault(driver, Counter()).update(handles)

    def remove(self, volumes: CsiVolumes) -> None:
        for driver, handles in volumes:
            used = self._used.get(driver)
            if used is None:
                continue
            used.subtract(handles)
            for handle in handles:
                if used[handle] <= 0:
                    del used[handle]
            if not used:
                del self._used[driver]

    def over_limit(self, volumes: CsiVolumes, limits: CsiLimits) -> str:
        """The first driver whose limit the pod's new volumes would pass on this node ("" when none)."""
        for driver, handles in volumes:
            limit = next((count for name, count in limits if name == driver), None)
            if limit is None:
                continue
            used = self._used.get(driver) or Counter()
            new = sum(1 for handle in handles if handle not in used)
            if new and len(used) + new > limit:
                return driver
        return ""
