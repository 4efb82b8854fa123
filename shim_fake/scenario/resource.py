"""The resources of a simulated node or task: quantities by type, in the units the si wire counts
(memory in bytes, vcore in milli-cores, other types plainly). A type not named is zero of it.

The fake shim's own small type: it adds sizes up (a gang's placeholders) and checks that a task fits a
node, and nothing else; the core's arithmetic stays the core's.
"""

from __future__ import annotations

from collections.abc import Mapping


class Resource:
    __slots__ = ("_quantities",)

    def __init__(self, quantities: Mapping[str, int] | None = None) -> None:
        # Zero entries are kept as written: they go on the wire as they are.
        self._quantities = dict(quantities or {})

    def get(self, resource: str) -> int:
        return self._quantities.get(resource, 0)

    def as_dict(self) -> dict[str, int]:
        return dict(self._quantities)

    def total(self) -> int:
        """Every quantity summed: a rough size, to name the largest node in a message."""
        return sum(self._quantities.values())

    def __add__(self, other: Resource) -> Resource:
        names = {**self._quantities, **other._quantities}  # this one's types first, in order
        return Resource({name: self.get(name) + other.get(name) for name in names})

    def fits_in(self, capacity: Resource) -> bool:
        """Whether every quantity here is within `capacity`, a type it does not name counting as zero."""
        return all(value <= 0 or value <= capacity.get(name) for name, value in self._quantities.items())

    # Equal when the same non-zero quantities: a zero of a type is none of it.
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        return self._non_zero() == other._non_zero()

    def __hash__(self) -> int:
        return hash(frozenset(self._non_zero().items()))

    def __repr__(self) -> str:
        return f"Resource({self._quantities})"

    def _non_zero(self) -> dict[str, int]:
        return {name: value for name, value in self._quantities.items() if value}
