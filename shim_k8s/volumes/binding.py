"""Binding a pod's volumes on the node the core chose, before the pod: kube-scheduler's VolumeBinding
PreBind, for the claims it leaves to the scheduler (unbound, of a WaitForFirstConsumer class).

For each such claim, on the chosen node:
- a volume whose claimRef names the claim already (written before, perhaps by this shim before a
  restart) is its volume: nothing to write;
- a claim annotated `volume.kubernetes.io/selected-node` with this node is being provisioned here:
  nothing to write (another node: the pod cannot go here);
- else the smallest available volume that fits it and whose node affinity admits the node (no other
  claim of the pod, and no other binding under way, has it): its claimRef is written (a static match);
- else, when its class provisions volumes and allows this node's topology, the claim is annotated
  `volume.kubernetes.io/selected-node` with the node (dynamic provisioning);
- else the pod cannot go there.
Then it waits until every claim is bound (the PV controller and the provisioner do the rest), for
`service.volumeBindTimeout` at most. A write the API refuses as a conflict is read again: one that
landed already (its answer was lost) counts; another volume is tried in place of one taken meanwhile.
While a binding is under way the volumes it chose are reserved (shim_k8s.volumes.cache.Volumes.reserved): no
other pod gets them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from shim_k8s.api.kube import BindError, Conflict, KubeActions
from shim_k8s.api.objects import Obj
from shim_k8s.readers.node_selectors import matches_terms, matches_topology
from shim_k8s.volumes import matching as match
from shim_k8s.volumes.cache import NO_VOLUME_TO_BIND, DelayedClaim, Volumes

WRITE_TRIES = 3  # writes of one claim's binding that meet a conflict, before giving up on the node


class VolumeBindError(RuntimeError):
    """The pod's volumes cannot be bound on the chosen node, or were not bound in time: why."""


class NothingToBindHere(VolumeBindError):
    """Nothing was written: the node cannot have the pod's volumes as they are now."""


class PodGone(Exception):
    """The pod went while its volumes were being bound: nothing more to do."""


@dataclass
class _Binding:
    delayed: DelayedClaim
    volume: str  # the volume bound to the claim; "" when it is provisioned
    written: bool = False  # its write is made (or was, before: nothing to write)
    # The version of the object written (the volume, or the claim to provision) that holds the write:
    # a later version without it means the binding was undone. None: versions are not numbers here.
    written_at: int | None = None

    @property
    def claim(self) -> Obj:
        return self.delayed.claim

    @property
    def name(self) -> str:
        return str(self.claim["metadata"]["name"])


class VolumeBinder:
    def __init__(self, volumes: Volumes, kube: KubeActions) -> None:
        self.volumes = volumes
        self.kube = kube

    async def bind(self, pod: Obj, node: Obj, timeout: float, still_wanted: Callable[[], bool]) -> None:
        """Bind the pod's WaitForFirstConsumer claims on `node` and wait until each is bound. Raises
        NothingToBindHere (nothing written), VolumeBindError (a write failed, or the claims were not
        bound within `timeout` seconds) or PodGone (`still_wanted` turned false: the pod or the core
        went; what was written stays, and keeps the pod to this node when it is asked again)."""
        delayed = self.volumes.delayed_claims(pod)
        if not delayed:
            return
        bindings = self._choose(delayed, node)
        keys = [match.claim_key(b.claim) for b in bindings] + [f"pod/{pod['metadata'].get('uid', '')}"]
        try:
            for binding in bindings:
                await self._write(binding, node)
            await self._until_bound(bindings, node, keys, timeout, still_wanted)
        except BindError as exc:  # the API would not take a write, or did not answer
            raise VolumeBindError(str(exc)) from None
        finally:
            self._unreserve(bindings)

    def _unreserve(self, bindings: list[_Binding]) -> None:
        for binding in bindings:
            if self.volumes.reserved.get(binding.volume) == match.claim_key(binding.claim):
                del self.volumes.reserved[binding.volume]

    # Choosing ---------------------------------------------------------------------------------
    def _choose(self, delayed: list[DelayedClaim], node: Obj) -> list[_Binding]:
        chosen: list[_Binding] = []
        try:
            for claim in delayed:
                binding = self._choose_one(claim, node, {b.volume for b in chosen})
                if binding.volume and not binding.written:
                    self.volumes.reserved[binding.volume] = match.claim_key(claim.claim)
                chosen.append(binding)
        except NothingToBindHere:
            self._unreserve(chosen)
            raise
        return chosen

    def _choose_one(self, delayed: DelayedClaim, node: Obj, taken: set[str]) -> _Binding:
        claim, node_name = delayed.claim, node["metadata"]["name"]
        name = claim["metadata"]["name"]
        selected = match.annotations_of(claim).get(match.SELECTED_NODE)
        if selected and selected != node_name:
            raise NothingToBindHere(f"persistentvolumeclaim {name} is being provisioned for node {selected}")
        if selected:
            return _Binding(delayed, "", written=True, written_at=match.version(claim))
        mine = self.volumes.volume_of(claim)
        if mine is not None:
            if not matches_terms(match.node_terms(mine), node):
                raise NothingToBindHere(
                    f"persistentvolume {mine['metadata']['name']} of claim {name}: node(s) had volume node "
                    "affinity conflict"
                )
            return _Binding(delayed, mine["metadata"]["name"], written=True, written_at=match.version(mine))
        for volume in self.volumes.candidates(claim, delayed.storage_class):
            if volume["metadata"]["name"] not in taken and matches_terms(match.node_terms(volume), node):
                return _Binding(delayed, volume["metadata"]["name"])
        storage_class = delayed.storage_class
        if match.can_provision(storage_class) and matches_topology(
            storage_class.get("allowedTopologies") or [], node
        ):
            return _Binding(delayed, "")
        raise NothingToBindHere(f"persistentvolumeclaim {name}: {NO_VOLUME_TO_BIND} on node {node_name}")

    # Writing ----------------------------------------------------------------------------------
    async def _write(self, binding: _Binding, node: Obj) -> None:
        if binding.written:
            return  # already written (before a restart, or by an earlier attempt)
        for _ in range(WRITE_TRIES):
            if binding.volume:
                if await self._write_claim_ref(binding):
                    return
                try:
                    self._next_volume(binding, node)  # the volume went to someone else meanwhile
                except NothingToBindHere as exc:
                    raise VolumeBindError(str(exc)) from None  # other claims' writes may have been made
            elif await self._write_selected_node(binding, node["metadata"]["name"]):
                return
        raise VolumeBindError(f"persistentvolumeclaim {binding.name}: the API kept refusing its binding")

    def _wrote(self, binding: _Binding, kind: str, stored: Obj) -> None:
        """The write holds in `stored` (the API's answer, or what it shows after a conflict): kept at
        once, and its version is the one the binding is judged by from now on."""
        binding.written, binding.written_at = True, match.version(stored)
        self.volumes.assume(kind, stored)

    async def _write_claim_ref(self, binding: _Binding) -> bool:
        """Write the claimRef on the chosen volume; False when it is not free any more (the informers
        show it taken, or the API does after a conflict)."""
        volume = self.volumes.volumes.get(binding.volume)
        if volume is None or not (match.is_available(volume) or match.pre_bound_to(volume, binding.claim)):
            return False
        try:
            stored = await self.kube.replace_object(
                "persistentvolumes", match.with_claim_ref(volume, binding.claim)
            )
        except Conflict:
            fresh = await self.kube.read_object("persistentvolumes", "", binding.volume)
            if fresh is None or not match.pre_bound_to(fresh, binding.claim):
                if fresh is not None:
                    self.volumes.assume("persistentvolumes", fresh)  # taken: no one chooses it again
                return False
            stored = fresh  # ours landed, its answer lost
        self._wrote(binding, "persistentvolumes", stored)
        return True

    def _next_volume(self, binding: _Binding, node: Obj) -> None:
        """Another volume in place of one taken meanwhile, or provisioning; NothingToBindHere else."""
        key = match.claim_key(binding.claim)
        if self.volumes.reserved.get(binding.volume) == key:
            del self.volumes.reserved[binding.volume]
        replacement = self._choose_one(binding.delayed, node, {binding.volume})
        binding.volume, binding.written, binding.written_at = (
            replacement.volume,
            replacement.written,
            replacement.written_at,
        )
        if binding.volume and not binding.written:
            self.volumes.reserved[binding.volume] = key

    async def _write_selected_node(self, binding: _Binding, node_name: str) -> bool:
        """Annotate the claim for provisioning on the node; False when it changed since it was read (it
        is read again for the next try)."""
        try:
            annotated = match.with_selected_node(binding.claim, node_name)
            stored = await self.kube.replace_object("persistentvolumeclaims", annotated)
        except Conflict:
            meta = binding.claim["metadata"]
            namespace = meta.get("namespace", "")
            fresh = await self.kube.read_object("persistentvolumeclaims", namespace, meta["name"])
            if fresh is None:
                raise VolumeBindError(f"persistentvolumeclaim {binding.name} was deleted") from None
            selected = match.annotations_of(fresh).get(match.SELECTED_NODE)
            if selected == node_name or (fresh.get("spec") or {}).get("volumeName"):
                stored = fresh  # ours landed (its answer was lost), or it is bound already
            elif selected:
                raise VolumeBindError(
                    f"persistentvolumeclaim {binding.name} is being provisioned for node {selected}"
                ) from None
            else:
                binding.delayed = DelayedClaim(fresh, binding.delayed.storage_class)
                return False
        self._wrote(binding, "persistentvolumeclaims", stored)
        return True

    # Waiting ----------------------------------------------------------------------------------
    async def _until_bound(
        self,
        bindings: list[_Binding],
        node: Obj,
        keys: list[str],
        timeout: float,
        still_wanted: Callable[[], bool],
    ) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        changed = self.volumes.watch(keys)
        try:
            while True:
                changed.clear()
                if not still_wanted():
                    raise PodGone()
                waiting = [b.name for b in bindings if not self._bound(b, node["metadata"]["name"])]
                if not waiting:
                    return
                left = deadline - loop.time()
                if left <= 0:
                    raise VolumeBindError(
                        f"timed out after {timeout:g}s (service.volumeBindTimeout) waiting for "
                        f"persistentvolumeclaim {', '.join(waiting)} to be bound"
                    )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), left)
        finally:
            self.volumes.unwatch(keys, changed)

    def _bound(self, binding: _Binding, node_name: str) -> bool:
        """Whether the claim is bound; VolumeBindError when its binding was undone (the claim deleted,
        the volume's claimRef reset, the provisioner gave the node up): the informers show a version
        at or after the write without it."""
        meta = binding.claim["metadata"]
        claim = self.volumes.claims.get((meta.get("namespace", "default"), meta["name"]))
        if claim is None or claim["metadata"].get("uid") != meta.get("uid"):
            raise VolumeBindError(f"persistentvolumeclaim {binding.name} was deleted")
        if match.is_fully_bound(claim):
            return True
        if binding.volume:
            volume = self.volumes.volumes.get(binding.volume)
            if volume is None:
                raise VolumeBindError(f"persistentvolume {binding.volume} was deleted")
            if self._since_write(binding, volume) and not match.pre_bound_to(volume, claim):
                raise VolumeBindError(f"the claimRef of persistentvolume {binding.volume} was reset")
        elif (
            self._since_write(binding, claim)
            and match.annotations_of(claim).get(match.SELECTED_NODE) != node_name
        ):
            raise VolumeBindError(
                f"the selected-node annotation of persistentvolumeclaim {binding.name} was removed: its "
                f"provisioner gave up provisioning it for {node_name}"
            )
        return False

    @staticmethod
    def _since_write(binding: _Binding, obj: Obj) -> bool:
        """Whether `obj` is the written version or a later one (so it must hold the write)."""
        seen = match.version(obj)
        return binding.written_at is not None and seen is not None and seen >= binding.written_at
