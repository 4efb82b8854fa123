"""Which partition a thing belongs to: the RM that owns it and the name that RM gives it.

Several RMs share one core and may each have a partition `default`: the RM is part of the key, so
each sees and addresses only its own. On the wire only the name travels; the core adds the RM on the
way in (from the message's rmID) and drops it on the way out.
"""

from __future__ import annotations

from typing import NamedTuple


class PartitionKey(NamedTuple):
    rm_id: str
    name: str

    def __str__(self) -> str:
        """`[rmID]name`: how logs and the REST API's partition paths may name it in full."""
        return f"[{self.rm_id}]{self.name}"
