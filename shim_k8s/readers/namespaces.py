"""What a namespace's annotations ask of the scheduler, as YuniKorn's shim reads them.

- `yunikorn.apache.org/namespace.quota` (JSON of Kubernetes quantities, e.g. `{"cpu": "2", "memory":
  "4Gi"}`), or the deprecated `namespace.max.cpu` / `namespace.max.memory`: the max of the namespace's
  dynamic queue;
- `yunikorn.apache.org/namespace.guaranteed` (the same JSON): its guaranteed resources;
- `yunikorn.apache.org/namespace.maxApps` (a whole number >= 0): its maxapplications;
- `yunikorn.apache.org/parentqueue`: a tag the placement rules can use for the parent (a `tag` rule
  with value `namespace.parentqueue`).

They travel as application tags on AddApplicationRequest under the scheduler interface's names
(`namespace.resourcequota`, `namespace.resourceguaranteed`, `namespace.resourcemaxapps`,
`namespace.parentqueue`); the core applies them to a dynamic queue, never to one from the
configuration. A value that cannot be read is left out with a warning naming it, as YuniKorn does.

`namespace.enableYuniKorn` and `namespace.generateAppId` steer the admission controller
(pykorn_cli admission); they are read here too, as tri-state flags.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shim_k8s.readers.bad_objects import Refused
from shim_k8s.readers.translate import TranslationError, quantities
from si.v1.tags import TAG_GUARANTEED, TAG_MAX_APPS, TAG_PARENT_QUEUE, TAG_QUOTA

DOMAIN = "yunikorn.apache.org/"
QUOTA = DOMAIN + "namespace.quota"
MAX_CPU = DOMAIN + "namespace.max.cpu"  # deprecated upstream, still read
MAX_MEMORY = DOMAIN + "namespace.max.memory"  # deprecated upstream, still read
GUARANTEED = DOMAIN + "namespace.guaranteed"
MAX_APPS = DOMAIN + "namespace.maxApps"
PARENT_QUEUE = DOMAIN + "parentqueue"
ENABLE_YUNIKORN = DOMAIN + "namespace.enableYuniKorn"
GENERATE_APP_ID = DOMAIN + "namespace.generateAppId"

# Application tags, as the scheduler interface names them.


@dataclass
class NamespaceTags:
    tags: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # annotations that could not be used, and why


def annotations_of(namespace: Mapping[str, Any] | None) -> Mapping[str, str]:
    return ((namespace or {}).get("metadata") or {}).get("annotations") or {}


def application_tags(namespace: Mapping[str, Any] | None) -> NamespaceTags:
    """The tags a namespace's annotations put on each of its applications."""
    notes = annotations_of(namespace)
    out = NamespaceTags()
    quota = _quota(notes, out.warnings)
    if quota:
        out.tags[TAG_QUOTA] = _si_json(quota)
    guaranteed = _resources(notes, GUARANTEED, out.warnings)
    if guaranteed:
        out.tags[TAG_GUARANTEED] = _si_json(guaranteed)
    raw_apps = notes.get(MAX_APPS, "")
    if raw_apps:
        if raw_apps.strip().isdigit():
            out.tags[TAG_MAX_APPS] = str(int(raw_apps))
        else:
            out.warnings.append(f"{MAX_APPS}: {raw_apps!r} is not a whole number >= 0; ignored")
    if notes.get(PARENT_QUEUE):
        out.tags[TAG_PARENT_QUEUE] = notes[PARENT_QUEUE]
    return out


def flag(namespace: Mapping[str, Any] | None, key: str) -> bool | None:
    """A true/false annotation: None when absent or neither (then the configuration decides)."""
    value = annotations_of(namespace).get(key, "").strip().lower()
    return True if value == "true" else False if value == "false" else None


def _quota(notes: Mapping[str, str], warnings: list[str]) -> dict[str, int]:
    if notes.get(QUOTA):
        if notes.get(MAX_CPU) or notes.get(MAX_MEMORY):
            warnings.append(f"{QUOTA} is used; the deprecated namespace.max.cpu/namespace.max.memory are not")
        return _resources(notes, QUOTA, warnings)
    legacy = {name: notes[key] for name, key in (("cpu", MAX_CPU), ("memory", MAX_MEMORY)) if notes.get(key)}
    if not legacy:
        return {}
    warnings.append(f"namespace.max.cpu and namespace.max.memory are deprecated; use {QUOTA}")
    try:
        return quantities(legacy)
    except Refused as exc:
        warnings.append(f"namespace.max.*: {exc}; ignored")
        return {}


def _resources(notes: Mapping[str, str], key: str, warnings: list[str]) -> dict[str, int]:
    raw = notes.get(key, "")
    if not raw:
        return {}
    try:
        values = json.loads(raw)
        if not isinstance(values, dict):
            raise TranslationError("expected a JSON object of quantities")
        parsed = quantities(values)
    except (json.JSONDecodeError, Refused) as exc:
        warnings.append(f"{key}: {exc}; ignored")
        return {}
    if not parsed or any(v <= 0 for v in parsed.values()):
        # The core keeps such a value out as well: a zero max would stop the queue altogether.
        warnings.append(f"{key}: every quantity must be greater than zero; ignored")
        return {}
    return parsed


def _si_json(values: Mapping[str, int]) -> str:
    """An si.Resource as Go's encoding/json writes it, which is what the core reads."""
    return json.dumps({"resources": {k: {"value": v} for k, v in sorted(values.items())}})
