"""What the placement suites (test_placement_rules.py, test_placement_filter.py) share: configurations
built from a queue list and a rule list, the implicit rules' REST form, and one place-and-read step.

Upstream calls a rule's placeApplication on a queue tree it builds in Go; here the tree and the rules
are a queues.yaml registered as a new RM, and the rule's answer is read where the application lands.
Two conventions make a rule's three answers tell apart through placement alone:
  * root's submitacl is "*" (upstream's rule calls skip ACLs; the placement manager checks them), and
  * a leaf `root.default` is added to the tree: an application no rule places lands there
    (placement.go PlaceApplication, the default queue after the last rule), while a rule error
    rejects it outright.
So "the rule returned Q" reads as "landed in Q", "returned nothing" as "landed in root.default", and
"failed" as "rejected".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from tests.conformance.core_probe import CoreProbe

Json = dict[str, Any]
Rule = Mapping[str, Any]

DEFAULT_QUEUE = "root.default"
RECOVERY_QUEUE = "root.@recovery@"
REJECTED = "<rejected>"  # the application is refused
REFUSED = "<refused>"  # the configuration is refused when an RM registers with it
UPDATE_REFUSED = "<update refused>"  # the configuration passes the checks but an update to it is refused

# The implicit rules YuniKorn's placement manager adds (placement.go buildRules).
PROVIDED_DAO: Json = {"name": "provided", "parameters": {"create": "false"}}
RECOVERY_DAO: Json = {"name": "recovery", "parameters": {"queue": RECOVERY_QUEUE}}


def config(
    queues: str = "",
    rules: Sequence[Rule] | None = None,
    *,
    root_acl: str | None = "*",
    default_queue: bool = True,
) -> str:
    """A one-partition queues.yaml: `queues` (a YAML list, as upstream writes it under the partition)
    below a root with `root_acl` as submitacl, plus a leaf `default` when `default_queue`."""
    children: list[Json] = list(yaml.safe_load(queues) or [])
    if default_queue:
        children.append({"name": "default"})
    root: Json = {"name": "root"}
    if root_acl is not None:
        root["submitacl"] = root_acl
    if children:
        root["queues"] = children
    partition: Json = {"name": "default", "queues": [root]}
    if rules is not None:
        partition["placementrules"] = [dict(rule) for rule in rules]
    return yaml.safe_dump({"partitions": [partition]}, sort_keys=False)


@dataclass(frozen=True)
class App:
    """An application as the RM submits it."""

    queue: str = ""
    user: str = "testuser"
    groups: tuple[str, ...] = ()
    tags: Mapping[str, str] = field(default_factory=dict)


async def land(probe: CoreProbe, app_id: str, app: App) -> str:
    """The queue the application landed in, or REJECTED."""
    placed = await probe.place(app_id, app.queue, app.user, app.groups, app.tags)
    return REJECTED if placed.rejected else placed.queue


async def seed_queues(probe: CoreProbe, queues: str, leaves: Sequence[str]) -> None:
    """Register with `queues` and a provided rule that creates, and make each of `leaves` a dynamic
    leaf queue holding one application (so it stays), as an earlier workload would have."""
    assert await probe.register(config(queues, [{"name": "provided", "create": True}]))
    for i, leaf in enumerate(leaves):
        assert await land(probe, f"seed-{i}", App(queue=leaf, user="seeder")) == leaf


def sorted_filter(rule: Json | None) -> Json | None:
    """A rule DAO with its filter's lists sorted (YuniKorn serves them from a Go map, in any order)."""
    if rule is None:
        return None
    out = dict(rule)
    filt = out.get("filter")
    if isinstance(filt, dict):
        out["filter"] = {k: sorted(v) if isinstance(v, list) else v for k, v in filt.items()}
    if isinstance(out.get("parentRule"), dict):
        out["parentRule"] = sorted_filter(out["parentRule"])
    return out
