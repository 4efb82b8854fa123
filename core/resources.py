"""Resource arithmetic and quantity parsing.

A Resource is a sparse, immutable map from a resource type name to an int64 quantity. Memory is in
bytes and vcore in milli-cores, as YuniKorn and its Kubernetes shim count them; other types are
plain counts. A type missing from a Resource is zero, except where a Resource is used as a limit
(a queue's max), where a missing type means "unlimited": the two readings have separate methods.
"""

from __future__ import annotations

import re
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView

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
        """Whether both name a type, whatever its quantity (YuniKorn's MatchAny)."""
        return any(k in other for k in self._values)


ZERO = Resource()


def int64_values(res: Mapping[str, int]) -> dict[str, int]:
    """The quantities as an int64 reader takes them: a sum past either end of the range (two nodes of
    the largest memory) saturates there, as YuniKorn's arithmetic does, rather than reach the wire or
    the REST API as a number no int64 client can read. For the boundaries only: the scheduling path
    keeps exact integers."""
    return {k: INT64_MAX if v > INT64_MAX else INT64_MIN if v < INT64_MIN else v for k, v in res.items()}


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

# YuniKorn's grammar (pkg/common/resources/quantity.go): digits only (no sign, no fraction, no
# exponent), optional ASCII whitespace, then a suffix; "m" (milli) for vcore alone. Go's `\s` is ASCII.
_QUANTITY = re.compile(r"([0-9]+)[ \t\n\f\r]*([mkKMGTPE]i?)?")
_MULTIPLIERS = {
    "": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}  # fmt: skip
_LOOSE = re.compile(r"([0-9.]+)\s*([A-Za-z]*)")  # a number and a word: to say what is wrong with it
_EXAMPLES = "examples: 4, 10Gi, 500M; vcore also 500m"
# What Go's strings.TrimSpace takes off both ends (unicode.IsSpace), which str.strip() does not match.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"
_GO_SPACE += "".join(map(chr, range(0x2000, 0x200B)))


def parse_quantity(resource_type: str, value: object) -> int:
    """Parse a configured quantity exactly as YuniKorn does.

    vcore is returned in milli-cores ("2" -> 2000, "500m" -> 500); every other type as its plain
    value ("10Gi" -> 10737418240, "1k" -> 1000). A whole number of units only: "1.5", "-1", "1e3"
    and "+4" are refused, as YuniKorn refuses them (write "1500m" for one and a half cores), and so
    is a value beyond int64.
    """
    if isinstance(value, bool):
        raise ResourceError(f"{resource_type}: expected a quantity, got a boolean")
    text = str(value)
    trimmed = text.strip(_GO_SPACE)
    match = _QUANTITY.fullmatch(trimmed)
    if match is None:
        raise ResourceError(f"{resource_type}: {text!r} {_why_not(trimmed)}")
    number_text, suffix = match.group(1), match.group(2) or ""
    milli = resource_type == VCORE
    if suffix == "m" and not milli:
        raise ResourceError(f"{resource_type}: unit 'm' (milli) is for vcore only, in {text!r}")
    multiplier = _MULTIPLIERS.get(suffix)
    if multiplier is None and suffix != "m":
        raise ResourceError(f"{resource_type}: unknown unit {suffix!r} in {text!r} ({_EXAMPLES})")
    number = int(number_text)
    result = number if suffix == "m" else number * (multiplier or 1) * (1000 if milli else 1)
    if number > INT64_MAX or result > INT64_MAX:
        raise ResourceError(f"{resource_type}: {text!r} exceeds the int64 range")
    return result


def _why_not(trimmed: str) -> str:
    """Why a text outside the grammar is not a quantity, for the message."""
    if trimmed.startswith("-"):
        return "is negative"
    loose = _LOOSE.fullmatch(trimmed)
    if loose is not None and "." in loose.group(1):
        return "is not a whole number of units (write 1500m for one and a half cores)"
    if loose is not None and loose.group(1).isdigit():
        return f"has an unknown unit {loose.group(2)!r} ({_EXAMPLES})"
    return f"is not a quantity: a whole number with an optional unit ({_EXAMPLES})"


def parse_resource_map(values: Mapping[str, object]) -> Resource:
    return Resource({name: parse_quantity(name, raw) for name, raw in values.items()})
