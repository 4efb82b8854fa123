"""Resource arithmetic and quantity parsing.

A Resource is a sparse, immutable map from a resource type name to an int64 quantity. Memory is in
bytes and vcore in milli-cores, as YuniKorn and its Kubernetes shim count them; other types are
plain counts. A type missing from a Resource is zero, except where a Resource is used as a limit
(a queue's max), where a missing type means "unlimited": the two readings have separate methods.
"""

from __future__ import annotations

import re
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from decimal import Decimal

MEMORY = "memory"
VCORE = "vcore"

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


class ResourceError(ValueError):
    """A quantity that cannot be parsed or does not fit the int64 range."""


class Resource(Mapping[str, int]):
    """Immutable sparse resource vector."""

    __slots__ = ("_values",)

    _values: dict[str, int]

    def __init__(self, values: Mapping[str, int] | None = None) -> None:
        # Zero entries are kept: a max of {"memory": 0} means "no memory at all", unlike no entry.
        self._values = dict(values) if values else {}

    @classmethod
    def _wrap(cls, values: dict[str, int]) -> Resource:
        # Skips the defensive copy for dicts built inside this module.
        res = cls.__new__(cls)
        res._values = values
        return res

    # Mapping protocol ---------------------------------------------------------------------------
    def __getitem__(self, key: str) -> int:
        return self._values[key]

    # Not Mapping.get's contract (None for a missing key): a type a Resource does not name is zero of
    # it, and every caller relies on getting a number.
    def get(self, key: str, default: int = 0) -> int:  # type: ignore[override]
        return self._values.get(key, default)  # missing types are zero

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    # The Mapping mixins go through __getitem__ per key; these hit the dict directly (hot path).
    def items(self) -> ItemsView[str, int]:
        return self._values.items()

    def keys(self) -> KeysView[str]:
        return self._values.keys()

    def values(self) -> ValuesView[int]:
        return self._values.values()

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Resource):
            return self._strip() == other._strip()
        if isinstance(other, Mapping):
            return self._strip() == {k: v for k, v in other.items() if v}
        return NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset(self._strip().items()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in sorted(self._values.items()))
        return f"Resource({inner})"

    def _strip(self) -> dict[str, int]:
        return {k: v for k, v in self._values.items() if v}

    def as_dict(self) -> dict[str, int]:
        return dict(self._values)

    # Arithmetic ---------------------------------------------------------------------------------
    def __add__(self, other: Mapping[str, int]) -> Resource:
        out = self._values.copy()
        get = out.get
        for k, v in (other._values if type(other) is Resource else other).items():
            out[k] = get(k, 0) + v
        return Resource._wrap(out)

    def __sub__(self, other: Mapping[str, int]) -> Resource:
        out = self._values.copy()
        get = out.get
        for k, v in (other._values if type(other) is Resource else other).items():
            out[k] = get(k, 0) - v
        return Resource._wrap(out)

    # In-place updates, for usage counters only. A Resource is otherwise never changed after it is
    # made; a queue, application or node owns its usage object, created for it alone (never ZERO),
    # and changes it here so that usage accounting does not build a new object per allocation.
    def add_in_place(self, other: Resource) -> None:
        values = self._values
        get = values.get
        for k, v in other._values.items():
            values[k] = get(k, 0) + v

    def sub_in_place(self, other: Resource) -> None:
        values = self._values
        get = values.get
        for k, v in other._values.items():
            values[k] = get(k, 0) - v

    def copy(self) -> Resource:
        return Resource._wrap(self._values.copy())

    def is_zero(self) -> bool:
        return not any(self._values.values())

    def has_negative(self) -> bool:
        return any(v < 0 for v in self._values.values())

    def fits_in(self, capacity: Mapping[str, int]) -> bool:
        """Whether every quantity here is within `capacity`, a missing type there counting as zero.

        Used against a node's free room: a node that does not report a type has none of it.
        """
        for k, v in self._values.items():
            if v > 0 and v > capacity.get(k, 0):
                return False
        return True

    def fits_in_limit(self, limit: Mapping[str, int] | None) -> bool:
        """Whether every quantity here is within `limit`, a missing type there meaning unlimited.

        Used against a queue's max and headroom.
        """
        if limit is None:
            return True
        for k, v in self._values.items():
            if v > 0 and k in limit and v > limit[k]:
                return False
        return True

    def exceeds_with(self, extra: Resource, limit: Resource) -> bool:
        """Whether this usage plus `extra` goes over `limit` in a type `extra` needs (a type the limit
        does not name is unlimited). The user and group limit check, once per applicable limit."""
        used, cap = self._values, limit._values
        for k, v in extra._values.items():
            if v > 0:
                most = cap.get(k)
                if most is not None and used.get(k, 0) + v > most:
                    return True
        return False

    def shares_type_with(self, other: Mapping[str, int]) -> bool:
        return any(v and other.get(k, 0) for k, v in self._values.items())


ZERO = Resource()


def min_limit(a: Resource | None, b: Resource | None) -> Resource | None:
    """Component-wise minimum of two limits where a missing type (or None) is unlimited."""
    if a is None:
        return b
    if b is None:
        return a
    out = dict(a.items())
    for k, v in b.items():
        out[k] = min(out[k], v) if k in out else v
    return Resource(out)


def sum_resources(items: Iterable[Mapping[str, int]]) -> Resource:
    out: dict[str, int] = {}
    for res in items:
        for k, v in res.items():
            out[k] = out.get(k, 0) + v
    return Resource(out)


# Quantity parsing ------------------------------------------------------------------------------

_QUANTITY = re.compile(r"^\s*([+-]?[0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


def parse_quantity(resource_type: str, value: object) -> int:
    """Parse a configured quantity the way YuniKorn does.

    vcore is returned in milli-cores ("2" -> 2000, "500m" -> 500); every other type as its plain
    value ("10Gi" -> 10737418240, "1k" -> 1000). Negative values and values beyond int64 are errors.
    """
    if isinstance(value, bool):
        raise ResourceError(f"{resource_type}: expected a quantity, got a boolean")
    text = str(value)
    match = _QUANTITY.match(text)
    if not match:
        raise ResourceError(f"{resource_type}: {text!r} is not a quantity (examples: 4, 10Gi, 500m)")
    number_text, suffix = match.groups()
    number = Decimal(number_text)
    if suffix == "m":
        scaled = number / 1000
    elif suffix in _BINARY:
        scaled = number * _BINARY[suffix]
    elif suffix in _DECIMAL:
        scaled = number * _DECIMAL[suffix]
    else:
        raise ResourceError(f"{resource_type}: unknown unit {suffix!r} in {text!r}")
    if resource_type == VCORE:
        scaled *= 1000
    if scaled != scaled.to_integral_value():
        raise ResourceError(f"{resource_type}: {text!r} is not a whole number of units")
    result = int(scaled)
    if result < 0:
        raise ResourceError(f"{resource_type}: {text!r} is negative")
    if result > INT64_MAX:
        raise ResourceError(f"{resource_type}: {text!r} exceeds the int64 range")
    return result


def parse_resource_map(values: Mapping[str, object]) -> Resource:
    return Resource({name: parse_quantity(name, raw) for name, raw in values.items()})
