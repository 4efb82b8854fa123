"""yunikorn-defaults and yunikorn-configs as the shim last saw them, and what they set: the settings
taken at start, the queue configuration the core has, the live log levels. No I/O: the shim sends
the queue configuration and reports the warnings this returns."""

from __future__ import annotations

from rmclient.logging_setup import set_live_levels
from shim_k8s.api.objects import Obj
from shim_k8s.readers import service_config

CONFIGMAP_NAME = "yunikorn-configs"
DEFAULTS_NAME = service_config.CONFIGMAP_NAMES[0]


class ConfigMaps:
    def __init__(self) -> None:
        self.seen: dict[str, Obj | None] = {}
        self.service = service_config.ServiceConfig()  # the settings taken at start
        self.queues = ""  # the queue configuration the ConfigMaps hold, sent to the core
        self.accepted = ""  # the last one the core took ("": none yet, so the core's own default)
        self.refused: str | None = None  # one the core refused at a registration
        self.log_level = "info"  # --log-level: the default when the ConfigMaps set none
        self.core: dict[
            str, str
        ] = {}  # the keys the core reads (event.*, health.*, log.*), sent in extraConfig
        self._warned: list[str] = []

    def load(self, configmap: Obj | None, defaults: Obj | None) -> list[str]:
        """At a (re-)registration: take everything; the warnings not reported yet. Each must be
        readable (service_config.flatten: Refused otherwise); one that is not is left out."""
        self.seen = {DEFAULTS_NAME: defaults, CONFIGMAP_NAME: configmap}
        warnings: list[str] = []
        data = service_config.merged(self.seen, warnings)
        parsed = service_config.parse(data)
        self.core = service_config.core_settings(data)
        self.service = parsed.config
        self.queues = parsed.queues
        self._apply_log_levels(parsed.config)
        return self._new(warnings + parsed.warnings)

    def change(self, name: str, configmap: Obj | None) -> tuple[str | None, list[str]]:
        """One of them changed (None: deleted). Log levels apply at once; other settings wait for a
        restart, as in YuniKorn, and a warning says so. Returns the queue configuration to send to the
        core with the core's keys (`core`; None: nothing to send) and the warnings not reported yet.
        Refused (and nothing changes) when the ConfigMap cannot be read."""
        service_config.flatten(configmap)  # readable, before it replaces the last good one
        self.seen[name] = configmap
        warnings: list[str] = []
        data = service_config.merged(self.seen, warnings)
        parsed = service_config.parse(data)
        core, self.core = self.core, service_config.core_settings(data)
        self._apply_log_levels(parsed.config)
        warnings += parsed.warnings
        changed = parsed.config.restart_needed(self.service)
        if changed:
            warnings.append(f"changed, applied at the next start: {', '.join(changed)}")
        text, send = parsed.queues, None
        if text != self.queues and not self.service.enable_config_hot_refresh:
            warnings.append("the queue configuration changed; service.enableConfigHotRefresh is false: "
                            "applied at the next start")  # fmt: skip
        elif text != self.queues and not text.strip():
            warnings.append(f"the ConfigMaps hold no {parsed.config.policy_group}.yaml; the current queue "
                            "configuration stays")  # fmt: skip
        elif text != self.queues:
            send = text
        if self.core != core and not self.service.enable_config_hot_refresh:
            warnings.append("the core's settings (event.*, health.*, log.*) changed; "
                            "service.enableConfigHotRefresh is false: applied at the next start")  # fmt: skip
        elif send is None and self.core != core:
            send = self.accepted  # the core's settings changed: they go with the queues it has
        return send, self._new(warnings)

    @property
    def to_register(self) -> str:
        """The queue configuration a registration sends: the ConfigMaps', unless the core refused it,
        then the last it took."""
        return self.accepted if self.queues == self.refused else self.queues

    def shown(self) -> Obj | None:
        """The object warnings are reported on: yunikorn-configs, else yunikorn-defaults."""
        return self.seen.get(CONFIGMAP_NAME) or self.seen.get(DEFAULTS_NAME)

    def _apply_log_levels(self, config: service_config.ServiceConfig) -> None:
        set_live_levels(service_config.default_level(config, self.log_level), config.log_levels)

    def _new(self, warnings: list[str]) -> list[str]:
        new = [w for w in warnings if w not in self._warned]
        self._warned = list(warnings)
        return new
