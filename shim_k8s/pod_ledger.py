"""What the Kubernetes shim holds of each pod, as one record per pod, owned by one ledger.

A pod's record says what the shim last saw of it and where it stands with the core: asked for (and for
which application), placed by the core (or sent as running), being bound by us, another scheduler's,
given up (its application failed), a placeholder being deleted, its size as the core was told it, the
PodScheduled condition last said, or refused as unreadable. The parts of the shim (pods in, decisions
out, reconciliation) change a record only through the ledger's transitions, each named for what
happened; they read it through its questions and never touch its collections.

A record can outlive its pod: what the core holds for a pod that is gone (`placed`) stays until the
core's release or the reconciliation's repair says otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from shim_k8s.api.objects import Obj, key_of


@dataclass(slots=True)
class PodRecord:
    pod: Obj | None = None  # as last seen; None once gone (while the core may still hold something of it)
    asked_as: str | None = None  # the application its ask was sent for, while asked and not bound
    placed: tuple[str, str] | None = None  # what the core holds for it: (application, node)
    bound_by_us: bool = False  # our binding of it was sent (its echo is ours, not a stranger's)
    foreign: bool = False  # another scheduler's pod on a node, counted there
    given_up: bool = False  # failed because the core will not schedule it: never asked again
    deleting: bool = False  # a placeholder the core released, being deleted by us
    size: dict[str, int] | None = None  # what the core was told it holds, in the core's units
    condition: str = ""  # the PodScheduled=False condition last patched, "<reason>:<message>"
    refused: tuple[object, object] | None = None  # unreadable: what was read of it (readings)


_NOTHING = PodRecord()  # what the questions read for a pod the ledger holds nothing of


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What the core is to be told of a pod that is gone: nothing (`release` False), or a release of
    its allocation or ask under `app_id` ("" for another scheduler's pod, or when it is not known)."""

    release: bool
    app_id: str = ""
    foreign: bool = False


class PodLedger:
    def __init__(self) -> None:
        self._records: dict[str, PodRecord] = {}

    def _record(self, uid: str) -> PodRecord:
        record = self._records.get(uid)
        if record is None:
            record = self._records[uid] = PodRecord()
        return record

    def _tidy(self, uid: str, record: PodRecord) -> None:
        """A record that holds nothing any more goes."""
        if (
            record.pod is None
            and record.placed is None
            and record.asked_as is None
            and not (record.bound_by_us or record.deleting)
        ):
            self._records.pop(uid, None)

    # Questions -----------------------------------------------------------------------------------
    def pod(self, uid: str) -> Obj | None:
        return self._records.get(uid, _NOTHING).pod

    def pods(self) -> Iterator[tuple[str, Obj]]:
        """Every pod the shim knows, by UID (a snapshot: the ledger may change while it is walked)."""
        return iter([(uid, r.pod) for uid, r in self._records.items() if r.pod is not None])

    def asked_as(self, uid: str) -> str | None:
        """The application its ask was sent for; None when it is not asked for (now)."""
        return self._records.get(uid, _NOTHING).asked_as

    def is_asked(self, uid: str) -> bool:
        return self._records.get(uid, _NOTHING).asked_as is not None

    def placed(self, uid: str) -> tuple[str, str] | None:
        return self._records.get(uid, _NOTHING).placed

    def placed_uids(self) -> list[str]:
        """The pods the core holds something for, as it told us or we told it."""
        return [uid for uid, r in self._records.items() if r.placed is not None]

    def bound_by_us(self, uid: str) -> bool:
        return self._records.get(uid, _NOTHING).bound_by_us

    def is_foreign(self, uid: str) -> bool:
        return self._records.get(uid, _NOTHING).foreign

    def any_foreign(self) -> bool:
        return any(r.foreign for r in self._records.values())

    def given_up(self, uid: str) -> bool:
        return self._records.get(uid, _NOTHING).given_up

    def deleting(self, uid: str) -> bool:
        return self._records.get(uid, _NOTHING).deleting

    def size(self, uid: str) -> dict[str, int] | None:
        return self._records.get(uid, _NOTHING).size

    def condition(self, uid: str) -> str:
        return self._records.get(uid, _NOTHING).condition

    def refused_reading(self, uid: str) -> tuple[object, object] | None:
        return self._records.get(uid, _NOTHING).refused

    def is_refused(self, uid: str) -> bool:
        return self._records.get(uid, _NOTHING).refused is not None

    # Transitions: what the informers say ---------------------------------------------------------
    def seen(self, pod: Obj) -> Obj | None:
        """The pod as its latest event has it; what was seen of it before (None: new to the shim)."""
        record = self._record(key_of(pod))
        before, record.pod = record.pod, pod
        return before

    def refused(self, uid: str, reading: tuple[object, object]) -> None:
        """It cannot be read: kept out of what is asked and repaired until what is read changes."""
        self._record(uid).refused = reading

    def corrected(self, uid: str) -> None:
        """A refused pod changed: looked at afresh."""
        record = self._records.get(uid)
        if record is not None:
            record.refused = None

    def taken_by_another(self, uid: str) -> str | None:
        """Bound by another scheduler while we asked for it: the application whose ask is withdrawn
        (None when it was not asked for)."""
        record = self._records.get(uid)
        if record is None or record.asked_as is None:
            return None
        app_id, record.asked_as, record.placed = record.asked_as, None, None
        return app_id

    def gone(self, uid: str) -> None:
        """The pod is gone (deleted, or finished): what was seen and said of it goes; what it stands
        for with the core stays until `forgotten` says what the core is to be told."""
        record = self._records.get(uid)
        if record is not None:
            record.pod, record.size, record.condition, record.refused = None, None, "", None

    def forgotten(self, uid: str) -> Forgotten:
        """After `gone`: what the core is to be told of the pod, and the record let go of it."""
        record = self._records.get(uid)
        if record is None:
            return Forgotten(False)
        if record.deleting:  # a placeholder the core released: it knows
            record.deleting = record.bound_by_us = False
            told = Forgotten(False)
        elif record.foreign:
            record.foreign = False
            told = Forgotten(True, "", foreign=True)
        elif record.asked_as is not None or record.bound_by_us:
            asked_as = record.asked_as or ""
            app_id = record.placed[0] if record.placed is not None else asked_as
            record.asked_as, record.bound_by_us, record.placed = None, False, None
            told = Forgotten(True, app_id or asked_as)
        else:
            told = Forgotten(False)
        record.given_up = False
        self._tidy(uid, record)
        return told

    # Transitions: what the shim sends the core ---------------------------------------------------
    def asked(self, uid: str, app_id: str, size: dict[str, int]) -> None:
        record = self._record(uid)
        record.asked_as, record.size = app_id, size

    def sent_running(self, uid: str, app_id: str, node: str, size: dict[str, int]) -> None:
        """A pod of ours already on its node, sent as an existing allocation (a restart, a re-sync)."""
        record = self._record(uid)
        record.bound_by_us, record.placed, record.size = True, (app_id, node), size

    def counted_foreign(self, uid: str) -> None:
        """Another scheduler's pod, sent to be counted on its node."""
        self._record(uid).foreign = True

    def sized(self, uid: str, size: dict[str, int]) -> None:
        """What the core was told the pod holds (a foreign pod, or a resize)."""
        self._record(uid).size = size

    def unasked(self, uid: str) -> None:
        """Its ask is no longer outstanding (the core refused it, to be asked again)."""
        record = self._records.get(uid)
        if record is not None:
            record.asked_as = None
            self._tidy(uid, record)

    # Transitions: what the core decided and the shim carried out ---------------------------------
    def core_placed(self, uid: str, app_id: str, node: str) -> None:
        self._record(uid).placed = (app_id, node)

    def core_released(self, uid: str) -> None:
        record = self._records.get(uid)
        if record is not None:
            record.placed = None
            self._tidy(uid, record)

    def binding(self, uid: str) -> None:
        """Our binding is sent (before the API answers: its echo must not look like a stranger's)."""
        self._record(uid).bound_by_us = True

    def bound(self, uid: str) -> None:
        """The API took our binding: no longer asked for."""
        record = self._records.get(uid)
        if record is not None:
            record.asked_as = None

    def not_bound(self, uid: str) -> None:
        """It did not get to its node: the core must not count it there (it is released)."""
        record = self._records.get(uid)
        if record is not None:
            record.bound_by_us, record.asked_as, record.placed = False, None, None
            self._tidy(uid, record)

    def placeholder_deleting(self, uid: str) -> bool:
        """A placeholder the core released, deleted by us now; whether it held room (it was bound). It
        stays ours: the echo of its binding may come yet, and its deletion tells the core nothing."""
        record = self._record(uid)
        held_room = record.bound_by_us
        record.asked_as, record.deleting = None, True
        return held_room

    def deletion_failed(self, uid: str) -> None:
        """Still there: the reconciliation may see to it."""
        record = self._records.get(uid)
        if record is not None:
            record.deleting = False

    def gave_up(self, uid: str, condition: str) -> bool:
        """Failed because the core will not schedule it (once: False when it was already)."""
        record = self._record(uid)
        if record.given_up:
            return False
        record.given_up, record.asked_as, record.condition = True, None, condition
        return True

    def said_condition(self, uid: str, condition: str) -> bool:
        """The PodScheduled=False condition is to say this; False when it says so already."""
        record = self._record(uid)
        if record.condition == condition:
            return False
        record.condition = condition
        return True

    # Transitions: the reconciliation -------------------------------------------------------------
    def repaired(self, uid: str) -> tuple[str, str]:
        """A mismatch with the API is being repaired: what the core held for it (to be released)."""
        record = self._record(uid)
        app_id, node = record.placed or ("", "")
        record.placed = None
        return app_id, node

    def withdrawn(self, uid: str) -> None:
        """A repair releases what the core held: not asked, not bound by us."""
        record = self._record(uid)
        record.asked_as, record.bound_by_us = None, False

    def relisted(self, uid: str, pod: Obj | None) -> None:
        """The API's pod, as the reconciliation listed it (None: gone)."""
        record = self._record(uid)
        record.pod = pod
        self._tidy(uid, record)

    def __len__(self) -> int:
        return sum(1 for r in self._records.values() if r.pod is not None)
