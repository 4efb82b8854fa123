"""What the Kubernetes shim holds of each pod, as one record per pod, owned by one ledger.

A pod's record says what the shim last saw of it and where it stands with the core: asked for (and for
which application), placed by the core (or sent as running), being bound by us, another scheduler's,
given up (its application failed), a placeholder being deleted, its size as the core was told it, the
PodScheduled condition last said, refused as unreadable, or waiting to be asked for (a PriorityClass,
its gates, its volumes), orphaned on a node the core does not know, or to be asked again once its
application is accepted. The parts of the shim (pods in, decisions
out, reconciliation) change a record only through the ledger's transitions, each named for what
happened; they read it through its questions and never touch its collections.

A record can outlive its pod: what the core holds for a pod that is gone (`placed`) stays until the
core's release or the reconciliation's repair says otherwise. The records are kept by field, a column
per fact (what the shim looks up per event is one fact of one pod), and only here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from shim_k8s.api.objects import Obj, key_of


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What the core is to be told of a pod that is gone: nothing (`release` False), or a release of
    its allocation or ask under `app_id` ("" for another scheduler's pod, or when it is not known)."""

    release: bool
    app_id: str = ""
    foreign: bool = False
    partition: str = ""  # where it was sent ("" for default)


class PodLedger:
    """Each pod's record, kept by field (a column per fact, keyed by pod UID): the shim reads and
    changes a few facts of a pod per event, and a dict lookup per fact is what that costs."""

    def __init__(self) -> None:
        self._pods: dict[str, Obj] = {}  # as last seen; a pod gone has none
        self._asked: dict[str, str] = {}  # the application its ask was sent for, while asked
        self._placed: dict[str, tuple[str, str]] = {}  # what the core holds for it: (application, node)
        self._bound_by_us: set[str] = set()  # our binding was sent (its echo is ours, not a stranger's)
        self._foreign: set[str] = set()  # another scheduler's pod on a node, counted there
        self._given_up: set[str] = set()  # failed because the core will not schedule it
        self._deleting: set[str] = set()  # a placeholder the core released, being deleted by us
        # The partition it was sent to, when not `default` (shim_k8s.partition_map): its release goes there;
        # and the one it left when its node moved: that partition's releases of it are not about it now.
        self._partition: dict[str, str] = {}
        self._left: dict[str, str] = {}
        self._sizes: dict[str, dict[str, int]] = {}  # what the core was told it holds, in its units
        self._conditions: dict[str, str] = {}  # PodScheduled=False last patched, "<reason>:<message>"
        self._refused: dict[str, tuple[object, object]] = {}  # unreadable: what was read of it
        # Pods not asked for yet, and what would let them go: a PriorityClass not known yet; their
        # scheduling gates or volumes, by what they wait on (Volumes.wait_keys: a claim, a volume or a
        # class -> pod UIDs), so only they are looked at again when it changes.
        self._waiting_class: dict[str, Obj] = {}
        self._waiting_volumes: dict[str, Obj] = {}
        self._waiting_on: dict[str, set[str]] = {}
        # The node terms its volumes gave when it was asked for (JSON): a binding that fails with the
        # same terms still in force waits for a change instead of asking again.
        self._volume_terms: dict[str, str] = {}
        # Running pods the core refused because it did not know their node: node -> pod UIDs.
        self._orphans: dict[str, set[str]] = {}
        # Asks the core refused because it did not hold their application yet: application -> UIDs.
        self._reask: dict[str, set[str]] = {}

    # Questions -----------------------------------------------------------------------------------
    def pod(self, uid: str) -> Obj | None:
        return self._pods.get(uid)

    def pods(self) -> Iterator[tuple[str, Obj]]:
        """Every pod the shim knows, by UID (a snapshot: the ledger may change while it is walked)."""
        return iter(list(self._pods.items()))

    def asked_as(self, uid: str) -> str | None:
        """The application its ask was sent for; None when it is not asked for (now)."""
        return self._asked.get(uid)

    def is_asked(self, uid: str) -> bool:
        return uid in self._asked

    def placed(self, uid: str) -> tuple[str, str] | None:
        return self._placed.get(uid)

    def placed_uids(self) -> list[str]:
        """The pods the core holds something for, as it told us or we told it."""
        return list(self._placed)

    def bound_by_us(self, uid: str) -> bool:
        return uid in self._bound_by_us

    def is_foreign(self, uid: str) -> bool:
        return uid in self._foreign

    def any_foreign(self) -> bool:
        return bool(self._foreign)

    def given_up(self, uid: str) -> bool:
        return uid in self._given_up

    def deleting(self, uid: str) -> bool:
        return uid in self._deleting

    def size(self, uid: str) -> dict[str, int] | None:
        return self._sizes.get(uid)

    def condition(self, uid: str) -> str:
        return self._conditions.get(uid, "")

    def refused_reading(self, uid: str) -> tuple[object, object] | None:
        return self._refused.get(uid)

    def is_refused(self, uid: str) -> bool:
        return uid in self._refused

    def is_waiting(self, uid: str) -> bool:
        """Not asked for yet: its PriorityClass, its gates or its volumes hold it."""
        return uid in self._waiting_class or uid in self._waiting_volumes

    def waits_for_volumes(self, uid: str) -> bool:
        return uid in self._waiting_volumes

    def volume_terms(self, uid: str) -> str | None:
        return self._volume_terms.get(uid)

    def awaiting_reasks(self) -> bool:
        """Some asks wait for their application's answer to be sent again."""
        return bool(self._reask)

    # Transitions: what the informers say ---------------------------------------------------------
    def seen(self, pod: Obj) -> Obj | None:
        """The pod as its latest event has it; what was seen of it before (None: new to the shim)."""
        pods, uid = self._pods, key_of(pod)
        before = pods.get(uid)
        pods[uid] = pod
        return before

    def refused(self, uid: str, reading: tuple[object, object]) -> None:
        """It cannot be read: kept out of what is asked and repaired until what is read changes."""
        self._refused[uid] = reading

    def corrected(self, uid: str) -> None:
        """A refused pod changed: looked at afresh."""
        self._refused.pop(uid, None)

    def waits_for_class(self, uid: str, pod: Obj) -> None:
        """Its PriorityClass is not known yet: looked at again when one is added."""
        self._waiting_class[uid] = pod

    def class_arrived(self) -> list[Obj]:
        """A PriorityClass was added: the pods that waited for one, no longer waiting."""
        woken, self._waiting_class = list(self._waiting_class.values()), {}
        return woken

    def waits(self, uid: str, pod: Obj, keys: Iterable[str]) -> None:
        """It waits (gated, or for its volumes), to be looked at again when one of `keys` changes
        (Volumes.wait_keys), or when it changes itself."""
        self._waiting_volumes[uid] = pod
        for key in keys:
            self._waiting_on.setdefault(key, set()).add(uid)

    def changed_while_waiting(self, uid: str) -> bool:
        """The pod itself changed: no longer waiting (looked at again); whether it was."""
        return self._waiting_volumes.pop(uid, None) is not None

    def woken_by(self, keys: Iterable[str]) -> list[Obj]:
        """The waiting pods that any of `keys` concerns, no longer waiting (to be looked at again)."""
        woken: set[str] = set()
        for key in keys:
            woken |= self._waiting_on.pop(key, set())
        pods = self._waiting_volumes
        return [pod for uid in sorted(woken) if (pod := pods.pop(uid, None)) is not None]

    def asked_with_terms(self, uid: str, terms: str) -> None:
        """The node terms its volumes gave when it was asked for (a failed binding compares them)."""
        self._volume_terms[uid] = terms

    def orphaned(self, uid: str, node: str) -> None:
        """Running on a node the core does not know (yet): sent again once the node is added."""
        self._orphans.setdefault(node, set()).add(uid)

    def adopted(self, node: str) -> set[str]:
        """The node is added: its orphans, to be sent again."""
        return self._orphans.pop(node, set())

    def ask_again_when_accepted(self, app_id: str, uid: str) -> None:
        """Its ask was refused before the core held its application: asked again once it accepts it."""
        self._reask.setdefault(app_id, set()).add(uid)

    def answered(self, app_id: str) -> set[str] | None:
        """The core answered the application: the asks to send again for it, if any."""
        return self._reask.pop(app_id, None)

    def taken_by_another(self, uid: str) -> str | None:
        """Bound by another scheduler while we asked for it: the application whose ask is withdrawn
        (None when it was not asked for)."""
        app_id = self._asked.pop(uid, None)
        if app_id is not None:
            self._placed.pop(uid, None)
        return app_id

    def gone(self, uid: str, wait_keys: Iterable[str] = ()) -> None:
        """The pod is gone (deleted, or finished): what was seen and said of it goes, and its waiting
        (on `wait_keys`, what its volumes waited on); what it stands for with the core stays until
        `forgotten` says what the core is to be told."""
        self._pods.pop(uid, None)
        self._conditions.pop(uid, None)
        self._sizes.pop(uid, None)
        self._refused.pop(uid, None)
        self._waiting_class.pop(uid, None)
        self._volume_terms.pop(uid, None)
        if self._waiting_volumes.pop(uid, None) is not None:
            for key in wait_keys:
                self._waiting_on.get(key, set()).discard(uid)

    def forgotten(self, uid: str) -> Forgotten:
        """After `gone`: what the core is to be told of the pod, and the record let go of it."""
        if uid in self._deleting:  # a placeholder the core released: it knows
            self._deleting.discard(uid)
            self._bound_by_us.discard(uid)
            told = Forgotten(False)
        elif uid in self._foreign:
            self._foreign.discard(uid)
            told = Forgotten(True, "", foreign=True)
        elif uid in self._asked or uid in self._bound_by_us:
            asked_as = self._asked.pop(uid, "")
            self._bound_by_us.discard(uid)
            app_id, _ = self._placed.pop(uid, (asked_as, ""))
            told = Forgotten(True, app_id or asked_as)
        else:
            told = Forgotten(False)
        self._given_up.discard(uid)
        self._left.pop(uid, None)
        partition = self._partition.pop(uid, "")
        if partition and told.release:
            told = Forgotten(told.release, told.app_id, told.foreign, partition)
        return told

    # Transitions: what the shim sends the core ---------------------------------------------------
    def asked(self, uid: str, app_id: str, size: dict[str, int]) -> None:
        self._asked[uid] = app_id
        self._sizes[uid] = size

    def sent_running(self, uid: str, app_id: str, node: str, size: dict[str, int]) -> None:
        """A pod of ours already on its node, sent as an existing allocation (a restart, a re-sync)."""
        self._bound_by_us.add(uid)
        self._placed[uid] = (app_id, node)
        self._sizes[uid] = size

    def counted_foreign(self, uid: str) -> None:
        """Another scheduler's pod, sent to be counted on its node."""
        self._foreign.add(uid)

    def sent_to(self, uid: str, partition: str) -> None:
        """What is sent of it goes to this partition ("" or `default`: the default one)."""
        if partition and partition != "default":
            self._partition[uid] = partition
        else:
            self._partition.pop(uid, None)

    def left(self, uid: str, partition: str) -> None:
        """Its node moved out of `partition` (`default` or a name)."""
        self._left[uid] = partition

    def partition(self, uid: str) -> str:
        """The partition what was sent of it is in ("": the default one)."""
        return self._partition.get(uid, "")

    def moved_away(self, uid: str) -> None:
        """A pod of ours whose node moved to a partition its application is not in: it no longer counts
        in its queue (it is then counted on its node as another scheduler's pod would)."""
        self._asked.pop(uid, None)
        self._placed.pop(uid, None)
        self._bound_by_us.discard(uid)

    def no_longer_foreign(self, uid: str) -> None:
        """Counted on its node no more (its node moved: it is counted again in the new partition)."""
        self._foreign.discard(uid)

    def on_node(self, node: str) -> list[Obj]:
        """The pods seen on the node (a walk of every pod: for a node that moves, not per event)."""
        return [pod for pod in self._pods.values() if (pod.get("spec") or {}).get("nodeName") == node]

    def sized(self, uid: str, size: dict[str, int]) -> None:
        """What the core was told the pod holds (a foreign pod, or a resize)."""
        self._sizes[uid] = size

    def unasked(self, uid: str) -> None:
        """Its ask is no longer outstanding (the core refused it, to be asked again)."""
        self._asked.pop(uid, None)

    # Transitions: what the core decided and the shim carried out ---------------------------------
    def core_placed(self, uid: str, app_id: str, node: str) -> None:
        self._placed[uid] = (app_id, node)

    def core_released(self, uid: str, partition: str = "") -> None:
        """The core let go of what it held for the pod, in `partition` ("" the default): a release
        from the partition its node moved out of is not about it now."""
        if self._left and (partition or "default") == self._left.get(uid):
            return
        self._placed.pop(uid, None)

    def binding(self, uid: str) -> None:
        """Our binding is sent (before the API answers: its echo must not look like a stranger's)."""
        self._bound_by_us.add(uid)

    def bound(self, uid: str) -> None:
        """The API took our binding: no longer asked for."""
        self._asked.pop(uid, None)

    def not_bound(self, uid: str) -> None:
        """It did not get to its node: the core must not count it there (it is released)."""
        self._bound_by_us.discard(uid)
        self._asked.pop(uid, None)
        self._placed.pop(uid, None)

    def placeholder_deleting(self, uid: str) -> bool:
        """A placeholder the core released, deleted by us now; whether it held room (it was bound). It
        stays ours: the echo of its binding may come yet, and its deletion tells the core nothing."""
        held_room = uid in self._bound_by_us
        self._asked.pop(uid, None)
        self._deleting.add(uid)
        return held_room

    def deletion_failed(self, uid: str) -> None:
        """Still there: the reconciliation may see to it."""
        self._deleting.discard(uid)

    def gave_up(self, uid: str, condition: str) -> bool:
        """Failed because the core will not schedule it (once: False when it was already)."""
        if uid in self._given_up:
            return False
        self._given_up.add(uid)
        self._asked.pop(uid, None)
        self._waiting_class.pop(uid, None)
        self._waiting_volumes.pop(uid, None)
        self._conditions[uid] = condition
        return True

    def said_condition(self, uid: str, condition: str) -> bool:
        """The PodScheduled=False condition is to say this; False when it says so already."""
        if self._conditions.get(uid) == condition:
            return False
        self._conditions[uid] = condition
        return True

    # Transitions: the reconciliation -------------------------------------------------------------
    def repaired(self, uid: str) -> tuple[str, str]:
        """A mismatch with the API is being repaired: what the core held for it (to be released)."""
        return self._placed.pop(uid, ("", ""))

    def withdrawn(self, uid: str) -> None:
        """A repair releases what the core held: not asked, not bound by us."""
        self._asked.pop(uid, None)
        self._bound_by_us.discard(uid)

    def relisted(self, uid: str, pod: Obj | None) -> None:
        """The API's pod, as the reconciliation listed it (None: gone)."""
        if pod is None:
            self._pods.pop(uid, None)
        else:
            self._pods[uid] = pod

    def __len__(self) -> int:
        return len(self._pods)
