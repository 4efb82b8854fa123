"""Applications refused at submission (placement, ACL, a draining partition), kept so the REST API can
say why: they were never admitted, so no queue holds them."""

from __future__ import annotations

from dataclasses import dataclass

REJECTED_KEPT = 1_000  # the newest this many are kept


@dataclass(frozen=True)
class RejectedApplication:
    app_id: str
    queue_name: str  # as the RM asked for it
    user: str
    groups: tuple[str, ...]
    tags: dict[str, str]
    message: str
    time: float


class RejectedApplications(dict[str, RejectedApplication]):
    """By ID, oldest first; a refusal of an ID seen before replaces it as the newest."""

    def __init__(self, keep: int = REJECTED_KEPT) -> None:
        super().__init__()
        self.keep = keep

    def add(self, rejected: RejectedApplication) -> None:
        self.pop(rejected.app_id, None)
        self[rejected.app_id] = rejected
        while len(self) > self.keep:
            del self[next(iter(self))]

    def expire(self, older_than: float) -> list[RejectedApplication]:
        """Forget those refused before `older_than` (YuniKorn's Rejected -> Expired after its terminated
        timeout); the ones forgotten, oldest first."""
        gone = []
        while self:
            oldest = next(iter(self.values()))
            if oldest.time >= older_than:
                break
            gone.append(self.pop(oldest.app_id))
        return gone
