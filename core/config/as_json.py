"""queues.yaml as YuniKorn's /ws/v1/config answers it in JSON: the keys of its Go configuration structs
(Go field names: Partitions, Name, Queues, PlacementRules, ...), from the YAML as written."""

from __future__ import annotations

import hashlib
from typing import Any

import yaml

# YAML key (lower case) -> the Go field name encoding/json writes. A key not listed is capitalised.
_FIELDS = {
    "partitions": "Partitions", "name": "Name", "queues": "Queues", "placementrules": "PlacementRules",
    "limits": "Limits", "preemption": "Preemption", "nodesortpolicy": "NodeSortPolicy",
    "usergroupresolver": "UserGroupResolver", "parent": "Parent", "resources": "Resources",
    "maxapplications": "MaxApplications", "properties": "Properties", "adminacl": "AdminACL",
    "submitacl": "SubmitACL", "childtemplate": "ChildTemplate", "guaranteed": "Guaranteed", "max": "Max",
    "create": "Create", "filter": "Filter", "value": "Value", "type": "Type", "users": "Users",
    "groups": "Groups", "limit": "Limit", "maxresources": "MaxResources", "enabled": "Enabled",
    "resourceweights": "ResourceWeights", "checksum": "Checksum",
}  # fmt: skip
_MAPS = {"properties", "guaranteed", "max", "maxresources", "resourceweights"}  # their keys are data


def config_json(text: str) -> dict[str, Any]:
    loaded = yaml.safe_load(text) or {}
    converted = _convert(loaded, "")
    out = converted if isinstance(converted, dict) else {}
    out["Checksum"] = config_checksum(text)  # the core's, whatever the text says
    return out


def config_checksum(text: str) -> str:
    """YuniKorn's checksum of a configuration (configs.SetChecksum): SHA-256 in upper-case hex of the
    text without its `checksum: <value>` entry, cut as GetConfigurationString cuts it (the first entry's
    text up to the next entry or the end, trailing newlines off, at most 64 bytes of value), every copy
    of that removed."""
    data = text.encode("utf-8")
    marker = b"checksum: "
    if marker in data:
        entry = (marker + data.split(marker)[1]).rstrip(b"\n")[: len(marker) + 64]
        data = data.replace(entry, b"")
    return hashlib.sha256(data).hexdigest().upper()


def _convert(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        if key in _MAPS:
            return {str(k): v for k, v in value.items()}
        return {_FIELDS.get(str(k).lower(), str(k)[:1].upper() + str(k)[1:]): _convert(v, str(k).lower())
                for k, v in value.items()}  # fmt: skip
    if isinstance(value, list):
        return [_convert(item, key) for item in value]
    return value
