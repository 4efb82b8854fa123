"""Registering with the core, with the queue configuration the ConfigMaps make, and keeping it current.

`load` takes the settings of `yunikorn-configs` over `yunikorn-defaults` (see
shim_k8s.readers.configmaps) at a start or a re-sync; a registration goes with their queue
configuration, and one the core refuses gives way to the last one it took, so a bad ConfigMap never
keeps the shim from scheduling. A change of a ConfigMap while running is sent to the core as it
happens (unless service.enableConfigHotRefresh is false). What cannot be used as written is said on
the ConfigMap, once."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, Protocol

import grpc
import structlog

from rmclient.client import SEND_ERRORS, SchedulerClient
from rmclient.reconnect import is_refusal
from shim_k8s.api.kube import KubeActions
from shim_k8s.api.objects import Obj, WatchEvent, name_of
from shim_k8s.readers import service_config
from shim_k8s.readers.bad_objects import Refused
from shim_k8s.readers.configmaps import ConfigMaps

log = structlog.get_logger("pykorn.k8s")


class ShimForRegistration(Protocol):
    """What of the shim the registration reads, calls and sets."""

    placeholder_image: str  # service.placeholderImage, over --placeholder-image
    unique_app_ids: bool  # admissionController.filtering.generateUniqueAppId

    @property
    def settings(self) -> ConfigMaps: ...
    @property
    def client(self) -> SchedulerClient: ...
    @property
    def kube(self) -> KubeActions: ...
    def in_background(self, work: Coroutine[Any, Any, None]) -> None: ...
    async def refuse(self, kind: str, obj: Obj, exc: Exception) -> None: ...
    async def configuration_taken(self) -> None: ...  # the core took a new queue configuration


class Registration:
    def __init__(self, shim: ShimForRegistration) -> None:
        self.shim = shim
        self._core_said: list[str] = []  # the core's warnings at the last configuration update

    async def register(self) -> None:
        """Register with the ConfigMaps' queue configuration; one the core refuses gives way to the last
        one it took (`refused`). Any other failure is raised (registering cannot succeed)."""
        client, settings = self.shim.client, self.shim.settings
        try:
            await client.register(config=settings.to_register, extra_config=settings.core)
        except SEND_ERRORS as exc:
            if not self.refused(exc):
                raise
            await client.register(config=settings.to_register, extra_config=settings.core)
        settings.accepted = settings.to_register

    def refused(self, exc: BaseException) -> bool:
        """A registration failed. When the core refused the ConfigMaps' queue configuration: said on the
        ConfigMap (ConfigRejected, with the core's reasons), the last one the core took (at a first
        start, none: the core's own default) is registered with until the ConfigMaps change, and True:
        register again. A bad ConfigMap never keeps the shim from scheduling. False for any other
        failure, or a refusal of the last good one too (not the ConfigMap's fault): the caller raises."""
        settings = self.shim.settings
        text = settings.to_register
        if not isinstance(exc, grpc.aio.AioRpcError) or not is_refusal(exc) or text == settings.accepted:
            return False
        reason = exc.details() or repr(exc)
        settings.refused = text
        log.warning("queue configuration refused at registration", reason=reason)
        shown = settings.shown()
        if shown is not None:
            message = f"queue configuration refused, the last one the core took is used: {reason}"
            self.shim.in_background(self.shim.kube.record_event(
                {**shown, "kind": "ConfigMap"}, "ConfigRejected", message, warning=True
            ))  # fmt: skip
        return True

    def load(self, configmap: Obj | None = None, defaults: Obj | None = None) -> None:
        """Take the settings and the queue configuration a (re-)registration goes with from the
        ConfigMaps (`yunikorn-configs`, over `yunikorn-defaults`)."""
        shim = self.shim
        warnings = shim.settings.load(self._readable(configmap), self._readable(defaults))
        service = shim.settings.service
        if service.placeholder_image:
            shim.placeholder_image = service.placeholder_image
        shim.unique_app_ids = service.generate_unique_app_ids
        self._report(warnings)

    async def on_configmap(self, event: str, configmap: Obj) -> None:
        """A change to yunikorn-configs or yunikorn-defaults (see shim_k8s.readers.configmaps): the queue
        configuration goes to the core unless service.enableConfigHotRefresh is false."""
        settings = self.shim.settings
        name = (configmap.get("metadata") or {}).get("name", "")
        if name not in service_config.CONFIGMAP_NAMES:
            return
        text, warnings = settings.change(name, None if event == WatchEvent.DELETED else configmap)
        self._report(warnings)
        if text is None:
            return
        response = await self.shim.client.update_configuration(text, settings.core)
        said = [f"core: {warning}" for warning in response.warnings]  # about its keys (and the queues)
        self._report([w for w in said if w not in self._core_said])  # each once, while it stands
        self._core_said = said
        if response.accepted:
            settings.queues = settings.accepted = text
            log.info("queue configuration updated from the configmap")
            await self.shim.configuration_taken()
        else:
            message = "queue configuration refused, the previous one stays: " + "; ".join(response.errors)
            shown = {**configmap, "kind": "ConfigMap"}
            await self.shim.kube.record_event(shown, "ConfigRejected", message, warning=True)

    def _readable(self, configmap: Obj | None) -> Obj | None:
        """The ConfigMap if it can be read; otherwise it is refused, and the last good one of its name
        stays (at the first start, none)."""
        try:
            service_config.flatten(configmap)
        except Refused as exc:
            self.shim.in_background(self.shim.refuse("configmaps", configmap or {}, exc))
            return self.shim.settings.seen.get(name_of(configmap))
        return configmap

    def _report(self, warnings: list[str]) -> None:
        """Warnings about the ConfigMaps' keys: logged, and as events on the ConfigMap, once each."""
        shown = self.shim.settings.shown()
        for warning in warnings:
            log.warning("configuration key not used as written", detail=warning)
            if shown is not None:
                self.shim.in_background(self.shim.kube.record_event(
                    {**shown, "kind": "ConfigMap"}, "ConfigKeyIgnored", warning, warning=True
                ))  # fmt: skip
