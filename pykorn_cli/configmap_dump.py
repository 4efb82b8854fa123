"""A ConfigMap dump given where a queues.yaml is expected: the first step of a migration saves YuniKorn's
ConfigMaps with `kubectl get configmap yunikorn-configs yunikorn-defaults -o yaml`, and the next is
to validate what they hold. `config validate` and `config diff` read the queues.yaml in such a dump as
the shim would (yunikorn-configs over yunikorn-defaults) and say that they did.
"""

from __future__ import annotations

from typing import Any

import yaml

QUEUES_KEY = "queues.yaml"
# The shim's order: a key in yunikorn-configs wins over the same key in yunikorn-defaults.
_PRECEDENCE = ("yunikorn-configs", "yunikorn-defaults")


class DumpError(ValueError):
    """A ConfigMap dump with no queues.yaml to read, said with what it has."""


def queues_text(text: str) -> tuple[str, str | None]:
    """(the queues.yaml text, a note naming the ConfigMap it came from) for a ConfigMap dump (one
    ConfigMap, or a kubectl List of them); (text, None) for anything else, read as queues.yaml."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        return text, None  # the queues.yaml reader says what is wrong, with the line
    config_maps = _config_maps(document)
    if not config_maps:
        return text, None
    by_name = {_name(cm): cm for cm in config_maps}
    for name in (*_PRECEDENCE, *by_name):
        data = by_name.get(name, {}).get("data") or {}
        if isinstance(data, dict) and isinstance(data.get(QUEUES_KEY), str):
            return data[QUEUES_KEY], f"read {QUEUES_KEY} from the ConfigMap {name}"
    names = ", ".join(sorted(by_name)) or "(unnamed)"
    raise DumpError(
        f"a ConfigMap dump ({names}) with no {QUEUES_KEY} in its data: without one the scheduler uses its "
        f"default configuration; put the queues under data.{QUEUES_KEY} of yunikorn-configs"
    )


def _config_maps(document: Any) -> list[dict[str, Any]]:
    if not isinstance(document, dict):
        return []
    if document.get("kind") == "ConfigMap":
        return [document]
    if document.get("kind") == "List" and isinstance(document.get("items"), list):
        return [
            item for item in document["items"] if isinstance(item, dict) and item.get("kind") == "ConfigMap"
        ]
    return []


def _name(config_map: dict[str, Any]) -> str:
    metadata = config_map.get("metadata")
    return str(metadata.get("name", "")) if isinstance(metadata, dict) else ""
