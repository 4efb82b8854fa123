"""Quantities written for people: bytes in Kubernetes' units (`4.0Gi`, `5.0G`), vcore in cores (`2.5`),
counts as they are. What the core holds is bytes and milli-cores, as YuniKorn counts them
(core/resources.py, which this module does not import: it is on the ground floor beside it).

Exact or raw: a byte count is shown in a unit only when one decimal says it exactly (`1.5Gi`), else as
its number of bytes, so that two different values never read the same (a diff of 1Gi against 1Gi plus
one byte shows the byte). Of the units that say it exactly, the shortest wins, binary on a tie: `8.0Gi`
for what was written 8Gi, `5.0G` for 5G.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

VCORE = "vcore"  # in milli-cores
# The types YuniKorn and Kubernetes count in bytes.
BYTE_TYPES = frozenset({"memory", "ephemeral-storage"})
_UNITS = (
    ("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10),
    ("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3),
)  # fmt: skip


def quantity_text(resource_type: str, value: int | float) -> str:
    """`value` of `resource_type` as a person reads it: "4.0Gi", "512.0Mi", "2.5" (vcore), "3"."""
    if isinstance(value, float) and not value.is_integer():
        return f"{value:g}"  # a mean or a share: no unit arithmetic to be exact about
    number = int(value)
    if resource_type == VCORE:
        return _cores(number)
    if resource_type in BYTE_TYPES:
        return _bytes(number)
    return str(number)


def vcore_text(milli: int) -> str:
    """vcore with its unit, where the type is not named beside it: "2.5 vcore"."""
    return f"{_cores(milli)} vcore"


def resource_text(resource: Mapping[str, int] | None) -> str:
    """A resource as "{memory: 4.0Gi, vcore: 2.5}"; "-" for none."""
    if not resource:
        return "-"
    return "{" + ", ".join(f"{k}: {quantity_text(k, v)}" for k, v in sorted(resource.items())) + "}"


def _cores(milli: int) -> str:
    cores = Decimal(milli).scaleb(-3).normalize()
    return f"{cores:f}"


def _bytes(count: int) -> str:
    size = abs(count)
    exact = [
        f"{count / unit:.1f}{suffix}" for suffix, unit in _UNITS if size >= unit and (size * 10) % unit == 0
    ]
    return min(exact, key=len) if exact else str(count)  # min keeps the first (binary) of equal lengths
