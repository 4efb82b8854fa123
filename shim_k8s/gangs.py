"""Gang scheduling on the Kubernetes side, as YuniKorn's shim does it: the task groups an application's
first pod declares (`yunikorn.apache.org/task-groups`), the placeholder pods made for them, each
member's task group, and YuniKorn's progress events on the pods. The core does the scheduling; this
is what the shim reads from the pods and writes back to the API."""

from __future__ import annotations

import asyncio
from typing import Protocol

import structlog

from shim_k8s.api.objects import Obj
from shim_k8s.readers import pod_identity, service_config, task_groups, translate
from shim_k8s.shim_state import AppGang, ShimBase

log = structlog.get_logger("pykorn.k8s")


class ShimForGangs(ShimBase, Protocol):
    """What of the shim the gang side reads and calls."""

    @property
    def service(self) -> service_config.ServiceConfig: ...
    @property
    def scheduler_name(self) -> str: ...
    @property
    def placeholder_image(self) -> str: ...


class Gangs:
    def __init__(self, shim: ShimForGangs) -> None:
        self.shim = shim

    def progress(self, app_id: str, gang: AppGang, state: str) -> None:
        """YuniKorn's gang scheduling events, on the pod that declared the gang."""
        said: list[tuple[str, bool]] = []
        if state == "Running" and gang.placeholders_exist and not gang.complete:
            gang.complete = True
            complete = f"Application {app_id} all placeholders are allocated. Transitioning to running state."
            said.append((complete, False))
        elif state in ("Resuming", "Failing"):
            said.append((f"Application {app_id} placeholder has been timed out", True))
            if state == "Resuming":
                said.append((f"Application {app_id} resuming as non-gang application (SOFT)", True))
        if gang.originator is not None:
            for message, warning in said:
                self.shim.in_background(
                    self.shim.kube.record_event(gang.originator, "GangScheduling", message, warning)
                )

    async def of_new_app(self, pod: Obj, app_id: str, placeholders_exist: bool) -> AppGang | None:
        """The task groups the application's first pod declares; a declaration that cannot be used
        is reported on the pod, and the application is then scheduled without a gang (as YuniKorn)."""
        if self.shim.service.disable_gang_scheduling:
            return None  # service.disableGangScheduling: task groups are not looked at, as YuniKorn
        try:
            groups = task_groups.task_groups(pod)
        except task_groups.TaskGroupError as exc:
            await self.shim.kube.record_event(
                pod, "TaskGroupsError", f"gang scheduling off for {app_id}: {exc}", True
            )
            return None
        if not groups:
            return None
        policy = task_groups.gang_policy(pod)
        for warning in policy.warnings:
            await self.shim.kube.record_event(pod, "SchedulingPolicyParameters", warning, warning=True)
        return AppGang(
            {g.name: g for g in groups}, policy, placeholders_exist or translate.is_placeholder(pod), pod
        )

    async def create_placeholders(self, originator: Obj, app_id: str, gang: AppGang) -> None:
        """One placeholder pod per member of each task group; they come back through the informer and
        are asked for like any pod of ours."""
        gang.placeholders_exist = True
        await self.shim.kube.record_event(
            originator, "GangScheduling", f"Application {app_id} creating placeholders"
        )
        queue = pod_identity.queue_name(originator)
        placeholders = [
            task_groups.placeholder_pod(
                originator,
                app_id,
                queue,
                group,
                self.shim.placeholder_image,
                self.shim.scheduler_name,
                self._placeholder_identity(),
            )
            for group in gang.groups.values()
            for _ in range(group.min_member)
        ]
        results = await asyncio.gather(
            *(self.shim.kube.create_pod(p) for p in placeholders), return_exceptions=True
        )
        failed = [r for r in results if isinstance(r, Exception)]
        for other in results:
            if isinstance(other, BaseException) and not isinstance(other, Exception):
                raise other  # cancelled: the shim is stopping
        log.info("placeholders created", applicationID=app_id, placeholders=len(results) - len(failed))
        if failed:  # the API refused them (a quota, a policy): the gang cannot be reserved in full
            why = (f"{len(failed)} of {len(results)} placeholder pods of {app_id} could not be created "
                   f"({failed[0]}); the gang waits for its placeholder timeout")  # fmt: skip
            log.warning(
                "placeholders not created", applicationID=app_id, failed=len(failed), error=repr(failed[0])
            )
            await self.shim.kube.record_event(originator, "PlaceholderCreationFailed", why, warning=True)

    def _placeholder_identity(self) -> dict[str, int]:
        service = self.shim.service
        chosen = {
            "runAsUser": service.placeholder_run_as_user,
            "runAsGroup": service.placeholder_run_as_group,
            "fsGroup": service.placeholder_fs_group,
        }
        return {key: value for key, value in chosen.items() if value is not None}

    async def task_group_of(self, pod: Obj, app_id: str) -> str:
        """The task group a pod names, when its application declares it; otherwise none, with an event."""
        name = task_groups.task_group_name(pod)
        if not name or self.shim.service.disable_gang_scheduling:
            return ""
        gang = self.shim.state.gangs.get(app_id)
        if gang is not None and name in gang.groups:
            if not translate.is_placeholder(pod):  # as YuniKorn's, on each member
                message = f"Pod belongs to the taskGroup {name}, it will be scheduled as a gang member"
                self.shim.in_background(self.shim.kube.record_event(pod, "GangScheduling", message))
            return name
        declared = sorted(gang.groups) if gang is not None else []
        await self.shim.kube.record_event(
            pod, "TaskGroupNotDeclared",
            f"task group {name!r} is not among the task groups of {app_id} ({declared or 'none'}): "
            "scheduled as an ordinary pod", True,
        )  # fmt: skip
        return ""
