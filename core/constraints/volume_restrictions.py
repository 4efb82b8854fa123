"""ReadWriteOncePod claims, as Kubernetes' VolumeRestrictions plugin checks them.

A PersistentVolumeClaim with access mode ReadWriteOncePod may be used by one pod at a time in the whole
cluster. A pod carries the ReadWriteOncePod claims it uses as the tag
`pykorn.io/read-write-once-pod-claims` (a JSON list of "<namespace>/<name>"); while another pod (ours or
a foreign one) uses one of them, no node takes it. Preemption may take that pod, as kube-scheduler's
preemption may, on the node where it runs.
"""

from __future__ import annotations


class ClaimError(ValueError):
    pass


def parse_rwop_claims(raw: object, where: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(c, str) and "/" in c for c in raw):
        raise ClaimError(f'{where} must be a JSON list of claims, each "<namespace>/<name>"')
    return tuple(sorted(set(raw)))
