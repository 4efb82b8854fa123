"""Leader election on a coordination.k8s.io/v1 Lease, as kube-scheduler's (client-go's) works.

Several replicas of the shim may run; one holds the Lease and schedules, the others wait. A candidate
reads the Lease every retry period and takes it when it is free or its holder has not renewed it for
a lease duration, measured on the candidate's own clock from when it last saw the record change (so
clocks that disagree between nodes do not matter). The leader renews every retry period; if it cannot
renew within the renew deadline it has lost, and stops. Writes carry the resourceVersion read, so of
two candidates racing for a free Lease only one wins (the other gets 409 Conflict). A leader stopping
cleanly gives the Lease up, so a standby takes over at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import structlog

from shim_k8s.api.kube_http import TRANSPORT_ERRORS, ApiError, KubeHTTP

log = structlog.get_logger("pykorn.k8s.leader")

Clock = Callable[[], float]
_LEASE_ERRORS: tuple[type[BaseException], ...] = (ApiError, *TRANSPORT_ERRORS)


def default_identity() -> str:
    """As kube-scheduler's: the host name and a unique suffix (two replicas on one host differ)."""
    return f"{os.environ.get('HOSTNAME') or socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True)
class LeaderElection:
    """kube-scheduler's --leader-elect-* settings, in seconds."""

    name: str = "pykorn"
    namespace: str = "yunikorn"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    identity: str = field(default_factory=default_identity)

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError(
                "leader election needs 0 < retry period < renew deadline < lease duration, got "
                f"{self.retry_period:g}s, {self.renew_deadline:g}s, {self.lease_duration:g}s"
            )


class LeadershipLost(RuntimeError):
    pass


class LeaderElector:
    def __init__(self, http: KubeHTTP, election: LeaderElection, clock: Clock = time.monotonic) -> None:
        self.http = http
        self.election = election
        self.clock = clock
        self.is_leader = False
        self._observed: dict[str, Any] | None = None  # the Lease's spec as last read
        self._observed_at = 0.0  # when it last changed, by our clock
        base = f"/apis/coordination.k8s.io/v1/namespaces/{quote(election.namespace)}/leases"
        self._collection, self._path = base, f"{base}/{quote(election.name)}"
        self._timeout = election.renew_deadline  # one attempt may not outlast the deadline to renew
        self._warned = ""  # the Lease field last warned about

    async def acquire(self, stop: asyncio.Event) -> bool:
        """Until this replica leads (True) or `stop` is set (False)."""
        logged = False
        while not stop.is_set():
            if await self.try_acquire_or_renew():
                log.info("became the leader", lease=self.election.name, identity=self.election.identity)
                return True
            if not logged:
                holder = (self._observed or {}).get("holderIdentity", "")
                log.info("waiting to lead", lease=self.election.name, leader=holder)
                logged = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.election.retry_period)
        return False

    async def keep(self) -> None:
        """Renew until that fails for a renew deadline; then leadership is lost and this returns."""
        last_renewed = self.clock()
        while True:
            await asyncio.sleep(self.election.retry_period)
            if await self.try_acquire_or_renew():
                last_renewed = self.clock()
            elif self.clock() - last_renewed >= self.election.renew_deadline:
                self.is_leader = False
                log.error("leadership lost: the lease was not renewed in time", lease=self.election.name,
                          renew_deadline=self.election.renew_deadline)  # fmt: skip
                return

    async def release(self) -> None:
        """Give the Lease up (a clean stop), so that a standby need not wait out the lease duration."""
        if not self.is_leader:
            return
        self.is_leader = False
        with contextlib.suppress(ApiError, *TRANSPORT_ERRORS):
            lease = await self.http.request("GET", self._path, timeout=self._timeout)
            if self._readable(lease).get("holderIdentity") != self.election.identity:
                return
            spec = {**lease["spec"], "holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": _now()}
            await self.http.request("PUT", self._path, {**lease, "spec": spec}, timeout=self._timeout)
            log.info("lease given up", lease=self.election.name)

    async def try_acquire_or_renew(self) -> bool:
        """One attempt to take or renew the Lease."""
        try:
            return await self._try_once()
        except _LEASE_ERRORS as exc:
            log.warning("leader election: the lease could not be read or written", error=repr(exc))
            self.is_leader = False
            return False

    async def _try_once(self) -> bool:
        election, now = self.election, self.clock()
        try:
            lease = await self.http.request("GET", self._path, timeout=self._timeout)
        except ApiError as exc:
            if exc.status != 404:
                raise
            return await self._create()
        spec = self._readable(lease)
        if spec != self._observed:
            self._observed, self._observed_at = spec, now
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or election.lease_duration)
        if holder and holder != election.identity and self._observed_at + duration > now:
            self.is_leader = False
            return False  # held, and renewed recently enough
        stamp = _now()
        renewed = {**spec, "holderIdentity": election.identity, "renewTime": stamp,
                   "leaseDurationSeconds": int(election.lease_duration)}  # fmt: skip
        if holder != election.identity:
            renewed["acquireTime"] = stamp
            renewed["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if holder else 0)
        try:
            await self.http.request("PUT", self._path, {**lease, "spec": renewed}, timeout=self._timeout)
        except ApiError as exc:
            if exc.status == 409:  # another candidate wrote first
                self.is_leader = False
                return False
            raise
        self._observed, self._observed_at, self.is_leader = renewed, self.clock(), True
        return True

    def _readable(self, lease: object) -> dict[str, Any]:
        """The Lease's spec with every field the election reads of its type: one that is not is taken as
        absent (a duration, our own; transitions, none; a holder, named as written, so it is waited
        out), with a warning naming it. A Lease no one can read must not stop the election."""
        spec = lease.get("spec") if isinstance(lease, dict) else None
        if not isinstance(spec, dict):
            self._warn("spec", spec)
            return {}
        readable = dict(spec)
        holder = spec.get("holderIdentity")
        if holder is not None and not isinstance(holder, str):
            self._warn("spec.holderIdentity", holder)
            readable["holderIdentity"] = str(holder)
        for name in ("leaseDurationSeconds", "leaseTransitions"):
            value = spec.get(name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                self._warn(f"spec.{name}", value)
                readable.pop(name)
        return readable

    def _warn(self, where: str, value: object) -> None:
        if self._warned != where:  # once, not at every retry period
            self._warned = where
            log.warning("lease field not readable: taken as absent", lease=self.election.name, field=where,
                        value=repr(value)[:80])  # fmt: skip

    async def _create(self) -> bool:
        election, stamp = self.election, _now()
        spec = {"holderIdentity": election.identity, "leaseDurationSeconds": int(election.lease_duration),
                "acquireTime": stamp, "renewTime": stamp, "leaseTransitions": 0}  # fmt: skip
        meta = {"name": election.name, "namespace": election.namespace}
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta, "spec": spec}
        try:
            await self.http.request("POST", self._collection, body, timeout=self._timeout)
        except ApiError as exc:
            if exc.status == 409:  # created by another candidate meanwhile
                return False
            raise
        self._observed, self._observed_at, self.is_leader = spec, self.clock(), True
        return True


def _now() -> str:
    """A MicroTime, as the API writes them."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
