"""The shim's periodic reconciliation: what the core holds for the shim against the pods the API lists.

Four kinds of mismatch, each repaired:
- `allocated-gone`: the core holds an allocation for a pod the API no longer has: released in the core;
- `allocated-not-bound`: the core placed the pod, the API shows it pending: released, asked again;
- `bound-unknown`: a pod of ours is bound but the core does not hold it: sent as an existing allocation;
- `not-asked`: a pending pod of ours was never asked for (a binding that failed, say): asked for;
- `asked-unknown-application`: a pod was asked for an application the core no longer holds (it
  completed or failed while the ask was on its way): asked again, with its application.

A mismatch is repaired only when two rounds in a row see the same one, so work under way (a binding
whose echo has not arrived) is not mistaken for one. Each repair is counted (`repairs`, the metric
pykorn_k8s_reconcile_repairs_total), logged and reported on the pod as a Reconciled event.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Coroutine, Iterable, Mapping
from typing import Any, Protocol

import structlog

from shim_k8s.api.objects import Obj, key_of
from shim_k8s.outbox import Outbox
from shim_k8s.shim_state import ShimBase, finished, node_of, terminating

log = structlog.get_logger("pykorn.k8s")

GONE, NOT_BOUND, UNKNOWN, NOT_ASKED = "allocated-gone", "allocated-not-bound", "bound-unknown", "not-asked"
ASKED_UNKNOWN_APP = "asked-unknown-application"


class ShimForReconciling(ShimBase, Protocol):
    """What of the shim the reconciliation reads and calls."""

    @property
    def scheduler_name(self) -> str: ...
    @property
    def busy(self) -> Collection[str]: ...  # pods with a decision being carried out
    @property
    def outbox(self) -> Outbox: ...
    async def add_pod(self, pod: Obj, with_placeholders: set[str] | None = None) -> None: ...
    async def guarded(self, kind: str, obj: Obj, work: Coroutine[Any, Any, None]) -> None: ...


class Reconciler:
    def __init__(self, shim: ShimForReconciling) -> None:
        self.shim = shim
        self.repairs: Counter[str] = Counter()  # by kind: the metric
        self._suspects: dict[str, str] = {}  # mismatches seen once: repaired when seen again

    async def round(self, api_pods: Iterable[Obj]) -> int:
        """One comparison; returns how many repairs it made."""
        listed = {key_of(p): p for p in api_pods}
        suspects = self.mismatches(listed)
        confirmed = {uid: kind for uid, kind in suspects.items() if self._suspects.get(uid) == kind}
        self._suspects = {uid: kind for uid, kind in suspects.items() if uid not in confirmed}
        for uid, kind in confirmed.items():
            await self._repair(uid, kind, listed.get(uid))
        return len(confirmed)

    def mismatches(self, listed: Mapping[str, Obj]) -> dict[str, str]:
        shim = self.shim
        ledger, busy, out = shim.state.ledger, shim.busy, {}
        for uid in ledger.placed_uids():
            pod = listed.get(uid)
            if uid in busy or (pod is not None and terminating(pod)):
                continue
            if pod is None:
                out[uid] = GONE
            elif not node_of(pod):
                out[uid] = NOT_BOUND
        for uid, pod in listed.items():
            if (
                ledger.placed(uid) is not None
                or uid in busy
                or ledger.is_foreign(uid)
                or ledger.given_up(uid)
            ):
                continue
            if ledger.deleting(uid) or ledger.is_refused(uid):  # on its way out; or unreadable, and said so
                continue
            try:
                kind = self._unheld(uid, pod)
            except Exception:
                continue
            if kind:
                out[uid] = kind
        return out

    def _unheld(self, uid: str, pod: Obj) -> str:
        """The mismatch of a pod of ours the core holds nothing for, if any."""
        state = self.shim.state
        if (pod.get("spec") or {}).get("schedulerName") != self.shim.scheduler_name or finished(pod):
            return ""
        if terminating(pod) or state.ledger.is_waiting(uid):
            return ""
        if node_of(pod):
            return UNKNOWN
        asked_as = state.ledger.asked_as(uid)
        if asked_as is not None:
            return "" if asked_as in state.apps else ASKED_UNKNOWN_APP
        return NOT_ASKED

    async def _repair(self, uid: str, kind: str, pod: Obj | None) -> None:
        shim = self.shim
        state = shim.state
        self.repairs[kind] += 1
        partition = state.ledger.partition(uid)
        app_id, node = state.ledger.repaired(uid)
        log.warning("reconciliation repaired a mismatch", kind=kind, allocationKey=uid, applicationID=app_id)
        if kind in (GONE, NOT_BOUND, ASKED_UNKNOWN_APP):
            state.ledger.withdrawn(uid)
            await shim.outbox.flush()
            why = "gone from the API" if pod is None else f"not bound to {node} in the API"
            if kind != ASKED_UNKNOWN_APP:  # the core holds nothing of it to release
                await shim.outbox.release(app_id, uid, message=f"reconciled: {why}", partition=partition)
        state.ledger.relisted(uid, pod)
        if pod is None:
            return
        # Bound: sent as an existing allocation (as on a re-sync); else asked. Unreadable: refused.
        await shim.guarded("pods", pod, shim.add_pod(pod))
        await shim.outbox.flush()
        messages = {
            NOT_BOUND: f"the core had placed it on {node} but it is not bound: asked again",
            UNKNOWN: f"bound to {node_of(pod)} but unknown to the core: told the core",
            NOT_ASKED: "pending and never asked for: asked now",
            ASKED_UNKNOWN_APP: "asked for an application the core no longer holds: asked again",
        }
        shim.in_background(shim.kube.record_event(pod, "Reconciled", messages[kind], warning=True))
