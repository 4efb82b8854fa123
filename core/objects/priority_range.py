"""The range of priorities: si's int32, the bounds a queue's offset clamps to."""

from __future__ import annotations

MIN_PRIORITY = -(2**31)  # also what an object with nothing pending shows
MAX_PRIORITY = 2**31 - 1


def clamp(value: int) -> int:
    return max(MIN_PRIORITY, min(MAX_PRIORITY, value))


class PriorityInputs(dict[str, int]):
    """A queue's priority inputs (its pending applications', or its children's, by name) that also
    count how many have each value: the highest is found among the distinct values (a few, in
    practice), not among every input, so a queue with thousands of pending applications recomputes
    its priority in constant time when one of them changes. Changed only by item assignment, `del`
    and `pop`."""

    __slots__ = ("_counts",)

    def __init__(self) -> None:
        super().__init__()
        self._counts: dict[int, int] = {}  # a plain dict: a Counter's methods cost a call more each

    def __setitem__(self, key: str, value: int) -> None:
        old = self.get(key)
        if old is not None:
            self._uncount(old)
        super().__setitem__(key, value)
        counts = self._counts
        counts[value] = counts.get(value, 0) + 1

    def __delitem__(self, key: str) -> None:
        self._uncount(self[key])
        super().__delitem__(key)

    def pop(self, key: str, default: int | None = None) -> int | None:  # type: ignore[override]
        value = super().pop(key, None)
        if value is None:
            return default
        self._uncount(value)
        return value

    def highest(self) -> int | None:
        """The highest input; None when there are none."""
        return max(self._counts) if self._counts else None

    def _uncount(self, value: int) -> None:
        counts = self._counts
        left = counts[value] - 1
        if left:
            counts[value] = left
        else:
            del counts[value]
