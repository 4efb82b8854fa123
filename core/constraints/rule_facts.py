"""What else in the core must know about each kind of rule an ask carries, declared in one place.

A rule's check (core.scheduler.fit) decides whether a node passes; four other places act on the rule
without running its check, and each reads its answer here, as kube-scheduler's plugins declare the
events that may change their verdict (EventsToRegister, QueueingHint):

- the node search's fast path: a rule decided by the node's own traits, ports or volumes alone
  (`node_level`) keeps an ask off it (AskConstraints.is_empty);
- the node's indexes: what placed allocations hold of the rule, counted on their node (`node_index`,
  the Node attribute), so its check reads a count instead of walking the node's pods;
- parking (core.objects.parking, core.scheduler.cycle.parking): an ask whose answer other pods decide
  (`waits_on_peers`) is woken by any allocation placed or gone; an allocation whose rule held asks off
  other nodes too (`frees_everywhere`: anti-affinity holds both ways) wakes every ask when it goes;
- the cycle's shared search (core.scheduler.cycle.state): asks alike share a failed node search within
  a cycle only when no rule of theirs depends on more than their size and the nodes (`shares_search`).

Every field of AskConstraints has its entry (tests/unit/test_rule_facts.py fails on one left out), and
every check names the fields it checks (`rules`). An AskConstraints works its answers out once, when it
is made (`of`), and the places read them off it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RuleFacts:
    node_level: bool  # decided by the node's own traits, ports or volumes alone
    node_index: str = ""  # the Node attribute counting what placed allocations hold of it; "" none
    waits_on_peers: bool = False  # other pods decide where it may go
    frees_everywhere: bool = False  # its allocation going may let asks fit on any node
    shares_search: bool = True  # asks alike may share a failed node search in a cycle


# By AskConstraints field.
RULE_FACTS: dict[str, RuleFacts] = {
    "required_node": RuleFacts(node_level=True, shares_search=False),  # it reserves its one node
    "node_selector": RuleFacts(node_level=True),
    "tolerations": RuleFacts(node_level=True),
    "node_affinity": RuleFacts(node_level=True),
    "host_ports": RuleFacts(node_level=True, node_index="ports"),
    "pod_affinity": RuleFacts(node_level=False, waits_on_peers=True, shares_search=False),
    "pod_anti_affinity": RuleFacts(
        node_level=False, waits_on_peers=True, frees_everywhere=True, shares_search=False
    ),
    "spread": RuleFacts(node_level=False, waits_on_peers=True, shares_search=False),
    "csi_volumes": RuleFacts(node_level=True, node_index="volumes"),
    "rwop_claims": RuleFacts(node_level=False, frees_everywhere=True, shares_search=False),
    "disks": RuleFacts(node_level=True, node_index="disks"),
}

_NODE_LEVEL = tuple(f for f, facts in RULE_FACTS.items() if facts.node_level)
_NODE_INDEXES = tuple((f, facts.node_index) for f, facts in RULE_FACTS.items() if facts.node_index)
_WAITS_ON_PEERS = tuple(f for f, facts in RULE_FACTS.items() if facts.waits_on_peers)
_FREES_EVERYWHERE = tuple(f for f, facts in RULE_FACTS.items() if facts.frees_everywhere)
_UNSHARED = tuple(f for f, facts in RULE_FACTS.items() if not facts.shares_search)


@dataclass(frozen=True)
class AskFacts:
    """What the declared facts of an ask's rules say of the ask as a whole."""

    node_level: bool  # some rule of it is decided by the node alone
    waits_on_peers: bool
    frees_everywhere: bool
    shares_search: bool
    node_held: tuple[tuple[str, Any], ...]  # (Node index attribute, what the ask holds of it)


def of(constraints: Any) -> AskFacts:
    """The answers for one ask's constraints (an AskConstraints, read by field name: this module knows
    only the names). AskConstraints keeps them, worked out once when it is made."""

    def present(rules: tuple[str, ...]) -> bool:
        return any(getattr(constraints, rule) for rule in rules)

    return AskFacts(
        node_level=present(_NODE_LEVEL),
        waits_on_peers=present(_WAITS_ON_PEERS),
        frees_everywhere=present(_FREES_EVERYWHERE),
        shares_search=not present(_UNSHARED),
        node_held=tuple(
            (index, held) for rule, index in _NODE_INDEXES if (held := getattr(constraints, rule))
        ),
    )
