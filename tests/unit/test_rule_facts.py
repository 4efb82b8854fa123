"""Every kind of rule an ask carries declares, in one place (core.constraints.rule_facts), what the
node search's fast path, the node's indexes, parking and the cycle's shared search must know of it;
every check names the rules it checks. A rule added without its facts, or a check naming a rule with
none, fails here, as does a declared fact the places do not act on."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from core.constraints.ask import AskConstraints
from core.constraints.rule_facts import RULE_FACTS
from core.objects.node import Node
from core.resources import Resource
from core.scheduler.fit import ask_pod_rules, checks

FIELDS = [f.name for f in dataclasses.fields(AskConstraints) if f.init]


def _check_classes() -> list[type]:
    found = []
    for module in (checks, ask_pod_rules):
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or getattr(cls, "_is_protocol", False):
                continue
            if callable(getattr(cls, "refusal", None)) or callable(getattr(cls, "score", None)):
                found.append(cls)
    return found


def test_every_field_of_an_asks_constraints_has_its_facts() -> None:
    assert sorted(RULE_FACTS) == sorted(FIELDS)


def test_every_check_names_the_rules_it_checks_and_every_rule_has_a_check() -> None:
    named: set[str] = set()
    for cls in _check_classes():
        rules = getattr(cls, "rules", None)
        assert rules, f"{cls.__name__} names no rule (its `rules`)"
        assert set(rules) <= set(RULE_FACTS), f"{cls.__name__} names a rule with no facts: {rules}"
        named |= set(rules)
    assert named == set(RULE_FACTS)


def test_each_node_index_is_a_count_the_node_keeps() -> None:
    node = Node("n1", Resource({"memory": 10}))
    for rule, facts in RULE_FACTS.items():
        if facts.node_index:
            index = getattr(node, facts.node_index)
            assert callable(getattr(index, "add", None)) and callable(getattr(index, "remove", None)), rule


@pytest.mark.parametrize("rule", FIELDS)
def test_the_answers_for_an_ask_are_its_rules_declared_facts(rule: str) -> None:
    facts = RULE_FACTS[rule]
    present: dict[str, Any] = {rule: ("something",)}  # only whether the rule is there counts
    constraints = AskConstraints(**present)
    assert constraints.is_empty is not facts.node_level
    assert constraints.waits_on_peers is facts.waits_on_peers
    assert constraints.frees_everywhere is facts.frees_everywhere
    assert constraints.shares_search is facts.shares_search
    assert constraints.node_held == (((facts.node_index, ("something",)),) if facts.node_index else ())
    nothing = AskConstraints()
    assert nothing.is_empty and not nothing.waits_on_peers and not nothing.frees_everywhere
    assert nothing.shares_search and nothing.node_held == ()
