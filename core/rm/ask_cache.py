"""The si message of every pending ask an RM sent, kept (serialized) until the core answers it.

The allocation sent back is the RM's own ask message with its nodeID set, which costs far less than
building a new one (core.rm.wire_frames). An ask is held from the moment it arrives until the core
allocates or rejects it or the RM withdraws it, so an application's entry is its pending asks, and
that count is what the limit max_pending_asks_per_application bounds. A second ask with a key still
held is refused here: the core's answer to either would take the held message with it, and the count
would go wrong.
"""

from __future__ import annotations

from core.rm.bad_item import BadItem
from si.v1 import si_pb2


class AskCache:
    def __init__(self) -> None:
        self._by_app: dict[str, dict[str, bytes]] = {}

    def hold(self, ask: si_pb2.Allocation, most_per_app: int) -> None:
        """Keep a new ask's bytes; BadItem when its key is held already or the application is at
        its limit of pending asks."""
        app_id, key = ask.applicationID, ask.allocationKey
        self.refuse_held(app_id, key)
        held = self._by_app.get(app_id)
        pending = len(held) if held is not None else 0
        if pending >= most_per_app:
            raise BadItem(
                f"application {app_id} already has {pending:,} pending asks, the limit "
                "(max_pending_asks_per_application): send this ask again once some are allocated or released"
            )
        if held is None:
            held = self._by_app[app_id] = {}
        # Its bytes: what goes back, and under upb a sub-message kept from a message would keep the
        # whole message's memory alive.
        held[key] = ask.SerializeToString()

    def refuse_held(self, app_id: str, key: str) -> None:
        """BadItem when an ask with this key is held: another ask, or an allocation the RM reports as
        running, may not take its key while the core has not answered it."""
        held = self._by_app.get(app_id)
        if held is not None and key in held:
            raise BadItem(
                f"allocation key {key} already exists in application {app_id}"
                " as a pending ask (or one the core has not answered yet)"
            )

    def take(self, app_id: str, key: str) -> bytes | None:
        """The held message (serialized) of an ask the core answered (allocated or rejected), no
        longer held."""
        held = self._by_app.get(app_id)
        if held is None:
            return None
        ask = held.pop(key, None)
        if not held:
            del self._by_app[app_id]
        return ask

    def forget(self, app_id: str, key: str = "") -> None:
        """The RM withdrew an ask (or, with no key, the whole application)."""
        if key:
            self.take(app_id, key)
        else:
            self._by_app.pop(app_id, None)

    def clear(self) -> None:
        self._by_app.clear()

    def __len__(self) -> int:
        return sum(len(held) for held in self._by_app.values())
