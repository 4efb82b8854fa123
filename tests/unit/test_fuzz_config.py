"""The configuration loader fuzzed: whatever text comes in, load_config either returns a configuration
that builds a working partition and queue tree, or raises ConfigError whose problems can be sent back
over gRPC (valid UTF-8, bounded in number). Nothing else may come out.

Three kinds of input: configuration-shaped documents with wrong types, unicode, huge and negative
numbers, duplicate names, random properties and ACLs (dumped by PyYAML); a good configuration's text
with lines duplicated, dropped, re-indented and replaced by YAML oddities (duplicate keys, aliases,
escapes, tags, deep nesting); and plain random text. Every crash found here is pinned as an @example
or a plain test below, with what it used to do.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, currently_in_test_context, event, example, given, settings
from hypothesis import strategies as st

from core.config import ConfigError, LoadedConfig, load_config
from core.config.loader import MAX_PROBLEMS, MAX_QUEUE_DEPTH, MAX_YAML_NODES
from core.scheduler.cluster import ClusterContext
from core.scheduler.commands import RegisterRM, UpdateConfig
from tests.unit.domain_helpers import ONE_LEAF, Cluster, FakeClock

FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

GOOD = """
partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
        parent: {name: fixed, value: root.tenants}
      - name: provided
    limits:
      - limit: everyone
        users: ["*"]
        maxapplications: 10
    preemption: {enabled: true, quotapreemptionenabled: true}
    nodesortpolicy: {type: binpacking, resourceweights: {memory: 1.5, vcore: 1}}
    queues:
      - name: root
        submitacl: "*"
        properties: {application.sort.policy: fair}
        queues:
          - name: tenants
            parent: true
            childtemplate:
              maxapplications: 5
              resources: {max: {memory: 1Gi}}
            resources: {guaranteed: {memory: 2Gi, vcore: "2"}, max: {memory: 8Gi, vcore: 8}}
            properties: {priority.policy: fence, priority.offset: "10", quota.preemption.delay: 30s}
            queues:
              - name: a
                adminacl: "alice,bob admins"
                maxapplications: 3
          - name: default
            resources: {max: {memory: 500M, vcore: 500m}}
"""


def check(text: str) -> LoadedConfig | None:
    """The property: ConfigError or a configuration that builds, applies and reloads."""
    try:
        loaded = load_config(text)
    except ConfigError as exc:
        assert exc.problems, "a ConfigError must say what is wrong"
        assert len(exc.problems) <= MAX_PROBLEMS + 1
        for problem in exc.problems:
            str(problem).encode("utf-8")  # goes back over gRPC: must be valid UTF-8
        str(exc).encode("utf-8")
        if currently_in_test_context():
            event("refused")  # --hypothesis-show-statistics: how many got how far
        return None
    if currently_in_test_context():
        event("accepted")
    for warning in loaded.warnings:
        str(warning).encode("utf-8")
    for string in _strings(loaded.config.partitions):  # names go out in gRPC messages
        string.encode("utf-8")
    assert len(loaded.warnings) <= MAX_PROBLEMS + 1
    # It builds: the partitions and queue trees of a registration, and a reload from a good config.
    Cluster(config=text)
    ctx = ClusterContext(FakeClock())
    ctx.apply(RegisterRM("rm-fuzz", load_config(ONE_LEAF).config))
    ctx.apply(UpdateConfig("rm-fuzz", loaded.config))
    ctx.schedule(100)
    return loaded


def _strings(value: object) -> Iterator[str]:
    """Every string inside a loaded configuration."""
    if isinstance(value, str):
        yield value
    elif dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            yield from _strings(getattr(value, f.name))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _strings(item)


# Configuration-shaped documents ----------------------------------------------------------------

WEIRD_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**63 - 1, 2**63, -(2**63), -1, 0, 10**40, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True),
    WEIRD_TEXT,
    st.sampled_from(["10Gi", "500m", "-1", "1.5", "1e3", "0x10", "9" * 30, "", " ", "*", "~", "yes", "1:30"]),
)
ANY = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(WEIRD_TEXT, inner, max_size=4),
    max_leaves=12,
)


# Values that YAML reads as something a loader must be careful with.
RAW_VALUES = [
    "9" * 5000,  # more digits than Python's int() takes
    "9" * 400,  # too large for a float
    "-" + "9" * 30,
    '"\\ud800"',  # a lone surrogate: YAML makes it, UTF-8 cannot carry it
    '"\\x00\\u202e"',
    "[" * 400 + "]" * 400,
    "&x [{name: x, queues: *x}]",  # an alias inside itself
    "&y {name: y, queues: [*y]}",
    "*undefined",
    "!!binary aGVsbG8=",
    "!!set {a, b}",
    "{a: 1, a: 2}",
    ".nan",
    "-.inf",
    "1e400",
    "0x7fffffffffffffff",
    "0o777",
    "1:30:00",
    "2001-12-14t21:59:43.10-05:00",
    "~",
    "''",
]
VALUE_ODDITIES = st.sampled_from(RAW_VALUES)


def mostly(
    good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any], one_in: int = 5
) -> st.SearchStrategy[Any]:
    """`good` but one time in `one_in` `bad`: most documents get far enough to be checked deeply."""
    return st.integers(min_value=1, max_value=one_in).flatmap(lambda i: bad if i == one_in else good)


def maybe(draw: st.DrawFn, value: st.SearchStrategy[Any]) -> Any:
    """Mostly a plausible value, sometimes anything at all (a wrong type), sometimes raw YAML."""
    choice = draw(st.integers(min_value=0, max_value=19))
    if choice == 19:
        return draw(ANY)
    if choice == 18:
        return f"RAW_{draw(st.integers(min_value=0, max_value=len(RAW_VALUES) - 1))}_"  # see dump()
    return draw(value)


def optional(draw: st.DrawFn, out: dict[str, Any], key: str, value: st.SearchStrategy[Any]) -> None:
    if draw(st.integers(min_value=0, max_value=2)) == 0:
        out[key] = maybe(draw, value)


QUANTITIES = mostly(
    st.one_of(
        st.integers(min_value=0, max_value=10**6), st.sampled_from(["1", "10Gi", "2", "0", "8Ei", "5M"])
    ),
    st.one_of(
        st.sampled_from(
            [
                "500m",
                "-5",
                "1.5",
                "1.0005",
                "9223372036854775807",
                "9223372036854775808",
                "1.5Gi",
                "1 Gi",
                "+4",
                "1K",
                "1mi",
                "10m",
                "1e3",
                " 7 ",
                "8Ei",
                "7Ei",
                "\u00a05",
            ]
        ),
        st.integers(min_value=-(2**64), max_value=2**64),
        SCALARS,
    ),
)
RESOURCE_NAMES = mostly(st.sampled_from(["memory", "vcore", "nvidia.com/gpu", "pods"]), WEIRD_TEXT)
RESOURCES = st.dictionaries(RESOURCE_NAMES, QUANTITIES, max_size=3)
PROPERTY_KEYS = mostly(
    st.sampled_from(
        [
            "application.sort.policy",
            "application.sort.priority",
            "priority.policy",
            "priority.offset",
            "preemption.policy",
            "preemption.delay",
            "quota.preemption.delay",
        ]
    ),
    WEIRD_TEXT,
    one_in=8,
)
PROPERTY_VALUES = st.one_of(
    st.sampled_from(
        [
            "fifo",
            "fair",
            "stateaware",
            "fence",
            "default",
            "disabled",
            "enabled",
            "30s",
            "1m30s",
            "-1s",
            "0",
            "2147483648",
            "-2147483649",
            "999999999999",
            "1" * 5000,
            "nan",
            "inf",
            "1e9s",
            "5µs",
        ]
    ),
    WEIRD_TEXT,
    st.integers(),
)
ACLS = mostly(
    st.sampled_from(["*", " ", "", "alice", "alice,bob", "alice group", "alice,bob g1,g2", " admins"]),
    st.one_of(st.sampled_from(["a b c", "* *", ",,", "*,x", "1user"]), WEIRD_TEXT),
)
NAMES = mostly(
    st.from_regex(r"[a-z][a-z0-9_-]{0,6}", fullmatch=True),
    st.one_of(st.sampled_from(["A", "root", "default", "x" * 65, "a.b", "ROOT", ""]), WEIRD_TEXT),
)


# Placement filter and limit entries: names YuniKorn's patterns take or refuse, and regular expressions
# Go compiles and ones it refuses (a single filter entry with a regexp character is an expression).
SUBJECTS = mostly(
    st.sampled_from(
        ["alice", "bob", "*", "system:serviceaccount:ns:sa", "user@example.com", "a.b", "svc$", "_x", "dev-1"]
    ),
    st.one_of(
        st.sampled_from(
            [
                "^dev.*",
                "a[b",
                "(?=x)",
                "x**",
                "a++",
                "[[:alpha:]]+",
                "\\pL+",
                "user$",
                "a{1001}",
                "(a|b",
                "test[1-9]",
                "^$",
                "\\1",
                "(?P<n>a)",
                "1abc",
                "bad name",
                "a\nb",
                "é",
                "$$",
                "*x",
                "",
            ]
        ),
        st.from_regex(r"[\^$*+?()\[\]{}|a-z.\\]{1,8}", fullmatch=True),
        WEIRD_TEXT,
    ),
    one_in=2,
)


@st.composite
def queues(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {"name": maybe(draw, NAMES)}
    optional(draw, out, "parent", st.booleans())
    optional(
        draw,
        out,
        "resources",
        st.fixed_dictionaries({}, optional={"guaranteed": RESOURCES, "max": RESOURCES}),
    )
    optional(draw, out, "maxapplications", mostly(st.integers(0, 100), st.integers(-5, 2**64)))
    optional(draw, out, "properties", st.dictionaries(PROPERTY_KEYS, PROPERTY_VALUES, max_size=4))
    optional(draw, out, "submitacl", ACLS)
    optional(draw, out, "adminacl", ACLS)
    template = st.fixed_dictionaries(
        {},
        optional={
            "maxapplications": st.integers(min_value=-1, max_value=100),
            "resources": st.fixed_dictionaries({}, optional={"max": RESOURCES}),
            "properties": st.dictionaries(PROPERTY_KEYS, PROPERTY_VALUES, max_size=2),
        },
    )
    optional(draw, out, "childtemplate", template)
    if depth < 3 and draw(st.booleans()):
        out["queues"] = [draw(queues(depth + 1)) for _ in range(draw(st.integers(min_value=0, max_value=3)))]
    if draw(st.integers(min_value=0, max_value=39)) == 0:
        out[draw(WEIRD_TEXT)] = draw(ANY)  # an unknown key (or a known one, again)
    return out


@st.composite
def rules(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": maybe(draw, mostly(st.sampled_from(["provided", "user", "tag", "fixed"]), st.just("nope")))
    }
    optional(draw, out, "value", NAMES)
    optional(draw, out, "create", st.booleans())
    optional(
        draw,
        out,
        "filter",
        st.fixed_dictionaries(
            {},
            optional={
                "type": mostly(st.sampled_from(["allow", "deny", "DENY", ""]), ACLS),
                "users": st.lists(SUBJECTS, max_size=3),
                "groups": st.lists(SUBJECTS, max_size=3),
            },
        ),
    )
    if depth < 2 and draw(st.booleans()):
        out["parent"] = draw(rules(depth + 1))
    return out


LIMITS = st.fixed_dictionaries(
    {"limit": NAMES},
    optional={
        "users": st.lists(SUBJECTS, max_size=3),
        "groups": st.lists(SUBJECTS, max_size=3),
        "maxresources": RESOURCES,
        "maxapplications": st.integers(min_value=-1, max_value=2**64),
    },
)
NODE_SORT = st.fixed_dictionaries(
    {"type": st.sampled_from(["fair", "binpacking", "Fair", "spread"])},
    optional={"resourceweights": st.dictionaries(RESOURCE_NAMES, SCALARS, max_size=3)},
)


@st.composite
def partitions(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": maybe(draw, mostly(st.sampled_from(["default", "gpu"]), st.sampled_from(["DEFAULT", ""])))
    }
    children = st.lists(queues(), max_size=3)
    root = st.fixed_dictionaries({"name": st.just("root"), "submitacl": ACLS, "queues": children})
    out["queues"] = maybe(draw, mostly(st.tuples(root).map(list), children, one_in=3))
    optional(draw, out, "placementrules", st.lists(rules(), max_size=3))
    optional(draw, out, "limits", st.lists(LIMITS, max_size=2))
    optional(
        draw,
        out,
        "preemption",
        st.fixed_dictionaries({}, optional={"enabled": ANY, "quotapreemptionenabled": ANY}),
    )
    optional(draw, out, "nodesortpolicy", NODE_SORT)
    return out


@st.composite
def documents(draw: st.DrawFn) -> Any:
    shape = draw(st.integers(min_value=0, max_value=5))
    if shape == 0:
        return draw(ANY)
    return {"partitions": [draw(partitions()) for _ in range(draw(st.integers(min_value=1, max_value=2)))]}


def dump(document: Any) -> str:
    """YAML text of the document, with each RAW_<n>_ marker replaced by raw YAML that no dumper
    writes (a 5,000-digit integer, an alias, an escape that is not Unicode)."""
    text = yaml.safe_dump(document, allow_unicode=True, sort_keys=False, width=10**9)
    return re.sub(r"RAW_(\d+)_", lambda m: RAW_VALUES[int(m.group(1))], text)


@settings(FUZZ, max_examples=200)
@given(documents())
def test_configuration_shaped_documents(document: Any) -> None:
    check(dump(document))


# A good configuration with one field at a time drawn from the edges -----------------------------
# Most generated documents are refused for something unrelated before the part under test is reached;
# here everything else is valid, so a filter's regexp, a limit's names or a quantity meet every check
# and the placement manager and queue tree built from them (a filter regexp Go refuses crashed
# registration before the checks learned Go's grammar).

FIXED_VALUES = mostly(
    st.sampled_from(["root.a", "a", "root.p", "p.x", "root", "rootless", "ROOT.a", "root.p.x", "a.b.c"]),
    st.one_of(NAMES, st.sampled_from(["root.", ".a", "a..b", "root.@recovery@", "x" * 70])),
    one_in=2,
)


EDGES = ("filter users", "filter groups", "limit users", "limit groups", "max", "guaranteed", "leaf name",
         "rule value", "parent value", "maxapplications")  # fmt: skip


@st.composite
def edged(draw: st.DrawFn) -> str:
    """The one field `edge` names drawn from SUBJECTS, QUANTITIES, NAMES or FIXED_VALUES; every other
    field valid."""
    edge = draw(st.sampled_from(EDGES))

    def pick(field: str, edgy: st.SearchStrategy[Any], usual: Any) -> Any:
        return draw(edgy) if field == edge else usual

    name = draw(st.sampled_from(["provided", "user", "tag", "fixed"]))
    rule: dict[str, Any] = {
        "name": name,
        "create": draw(st.booleans()),
        "filter": {
            "type": draw(st.sampled_from(["allow", "deny", "DENY", ""])),
            "users": pick("filter users", st.lists(SUBJECTS, min_size=1, max_size=3), ["alice"]),
            "groups": pick("filter groups", st.lists(SUBJECTS, min_size=1, max_size=3), ["devs", "ops"]),
        },
    }
    if name in ("tag", "fixed"):
        rule["value"] = pick(
            "rule value", FIXED_VALUES if name == "fixed" else NAMES, "a" if name == "fixed" else "ns"
        )
    if name != "fixed" and draw(st.booleans()):
        rule["parent"] = {"name": "fixed", "value": pick("parent value", FIXED_VALUES, "root.p")}
    limit: dict[str, Any] = {
        "limit": "edge",
        "users": pick("limit users", st.lists(SUBJECTS, min_size=1, max_size=3), ["alice", "*"]),
        "groups": pick("limit groups", st.lists(SUBJECTS, max_size=3), ["devs", "*"]),
        "maxapplications": 5,
    }
    leaf = {
        "name": pick("leaf name", NAMES, "x"),
        "maxapplications": pick("maxapplications", st.integers(min_value=-1, max_value=4), 1),
        "resources": {
            "max": pick("max", RESOURCES, {"memory": "10Gi"}),
            "guaranteed": pick("guaranteed", RESOURCES, {"memory": "1Gi"}),
        },
    }
    parent = {"name": "p", "parent": True, "maxapplications": 3, "queues": [leaf]}
    root = {"name": "root", "submitacl": "*", "limits": [limit], "queues": [parent, {"name": "a"}]}
    document = {"partitions": [{"name": "default", "placementrules": [rule], "queues": [root]}]}
    return dump(document)


@settings(FUZZ, max_examples=300)
@given(edged())
def test_a_good_configuration_with_one_edge_at_a_time(text: str) -> None:
    check(text)


# Mutated text of a good configuration ----------------------------------------------------------

ODDITIES = st.one_of(
    st.sampled_from(
        [
            "name: root",  # a duplicate key where it lands inside a mapping
            "        queues: &q [{name: x, queues: *q}]",  # an alias to itself
            '      - name: "\\ud800"',  # an escape that is not valid Unicode
            '      - name: "\\x00"',
            "      - name: !!binary aGVsbG8=",
            "      - name: !!python/object:os.system [ls]",
            "        maxapplications: " + "9" * 5000,
            "        maxapplications: " + "9" * 400,
            '        properties: {priority.offset: "' + "1" * 5000 + '"}',
            "    nodesortpolicy: {type: fair, resourceweights: {memory: " + "9" * 400 + "}}",
            "        resources: {max: {memory: " + "9" * 5000 + "}}",
            "\t- tab",
            "- [" * 300 + "]" * 300,
            "<<: *nothing",
            "? [a, b]\n: c",
            "%YAML 1.1\n---",
            "--- \n...",
            "&a x: *a",
        ]
    ),
    WEIRD_TEXT,
)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    lines = GOOD.strip("\n").split("\n")
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        i = draw(st.integers(min_value=0, max_value=len(lines) - 1))
        action = draw(
            st.sampled_from(["value", "duplicate", "drop", "indent", "dedent", "replace", "insert", "value"])
        )
        if action == "duplicate":
            lines.insert(i, lines[i])
        elif action == "drop" and len(lines) > 1:
            del lines[i]
        elif action == "indent":
            lines[i] = "  " + lines[i]
        elif action == "dedent":
            lines[i] = lines[i][2:]
        elif action == "replace":
            lines[i] = draw(ODDITIES)
        elif action == "insert":
            lines.insert(i, draw(ODDITIES))
        elif ":" in lines[i]:
            key = lines[i].split(":", 1)[0]
            value = draw(
                st.one_of(VALUE_ODDITIES, SCALARS.map(lambda v: dump(v).strip().removesuffix("...").strip()))
            )
            lines[i] = f"{key}: {value}"
    return "\n".join(lines) + "\n"


@settings(FUZZ, max_examples=200)
@given(mutated())
@example(GOOD)
def test_mutated_good_configuration(text: str) -> None:
    check(text)


@FUZZ
@given(st.text(max_size=300))
@example("")
@example("partitions")
@example("partitions: [")
@example("\ufeffpartitions: []")
def test_random_text(text: str) -> None:
    check(text)


def test_the_good_configuration_loads() -> None:
    loaded = check(GOOD)
    assert loaded is not None
    assert [p.name for p in loaded.config.partitions] == ["default"]


# Crashes the fuzzers found, pinned -----------------------------------------------------------------


def _deep_queues(depth: int) -> str:
    lines = [
        "partitions:",
        "  - name: default",
        "    queues:",
        "      - name: root",
        "        submitacl: '*'",
    ]
    indent = "        "
    for i in range(depth):
        lines += [f"{indent}queues:", f"{indent}  - name: q{i}"]
        indent += "    "
    return "\n".join(lines) + "\n"


def _problems(text: str) -> str:
    with pytest.raises(ConfigError) as err:
        load_config(text)
    return str(err.value)


def test_deeply_nested_yaml_is_a_config_error() -> None:
    # Was: RecursionError out of PyYAML's composer.
    assert "nested too deeply" in _problems("partitions: " + "[" * 5000 + "]" * 5000)


def test_queue_tree_depth_is_bounded() -> None:
    # Was: RecursionError from 400 levels on; now the limit is named, and the deepest allowed tree builds.
    check(_deep_queues(MAX_QUEUE_DEPTH))
    assert f"more than {MAX_QUEUE_DEPTH} levels" in _problems(_deep_queues(MAX_QUEUE_DEPTH + 1))


def test_an_alias_that_contains_itself_is_a_config_error() -> None:
    # Was: RecursionError, reading a queue list that holds itself.
    text = "partitions:\n  - name: default\n    queues: &q\n      - name: root\n        queues: *q\n"
    assert "refers to itself" in _problems(text)


def test_alias_bombs_are_refused_before_they_expand() -> None:
    # Nine aliases to nine lists of nine expand to 9**9 queues: refused by size, at once.
    lines = ["x0: &x0 [{name: a}]"]
    for level in range(1, 10):
        lines.append(f"x{level}: &x{level} [" + ", ".join([f"*x{level - 1}"] * 9) + "]")
    lines.append("partitions: [{name: default, queues: [{name: root, queues: *x9}]}]")
    assert f"more than {MAX_YAML_NODES:,} YAML nodes" in _problems("\n".join(lines) + "\n")


@pytest.mark.parametrize("digits", [400, 5000])
def test_huge_integers_are_config_errors(digits: int) -> None:
    # Was: ValueError (over 4300 digits, Python's int() refuses) and OverflowError (int -> float).
    number = "9" * digits
    base = "partitions:\n  - name: default\n"
    assert "maxapplications" in _problems(
        base + f"    queues:\n      - name: root\n        maxapplications: {number}\n"
    )
    weights = f"    nodesortpolicy: {{resourceweights: {{memory: {number}}}}}\n    queues: [{{name: root}}]\n"
    assert "resourceweights.memory" in _problems(base + weights)


def test_maxapplications_beyond_int64_is_a_config_error() -> None:
    text = "partitions:\n  - name: default\n    queues:\n      - name: root\n        maxapplications: "
    text += "9223372036854775808\n"
    assert "at most 9223372036854775807" in _problems(text)


def test_a_huge_priority_offset_falls_back_with_a_warning() -> None:
    # Was: ValueError from int() on a 5000-digit offset, out of the property parser.
    text = GOOD.replace('priority.offset: "10"', 'priority.offset: "' + "1" * 5000 + '"')
    loaded = check(text)
    assert loaded is not None
    assert any("outside the 32-bit integer range" in str(w) for w in loaded.warnings)


def test_lone_surrogates_are_config_errors() -> None:
    # Was: accepted, and then any message carrying the name could not be encoded for gRPC.
    text = 'partitions:\n  - name: "\\ud800"\n    queues: [{name: root}]\n'
    problems = _problems(text)
    assert "not valid Unicode" in problems
    problems.encode("utf-8")


def test_the_number_of_problems_is_bounded() -> None:
    text = "partitions:\n" + "".join(f"  - bogus{i}: 1\n" for i in range(5000))
    with pytest.raises(ConfigError) as err:
        load_config(text)
    assert len(err.value.problems) == MAX_PROBLEMS + 1
    assert "more problems" in str(err.value.problems[-1])


def test_weights_stay_finite() -> None:
    loaded = check(GOOD)
    assert loaded is not None
    assert all(math.isfinite(w) for _, w in loaded.config.partitions[0].node_sort_policy.resource_weights)


def test_base_60_integers_are_refused_before_they_are_built() -> None:
    # YAML 1.1 reads 1:0:0 as base 60, and PyYAML builds a long one in quadratic time.
    text = "partitions:\n  - name: default\n    queues:\n      - name: root\n        maxapplications: 1"
    with pytest.raises(ConfigError, match="plain integer"):
        load_config(text + ":0" * 50_000 + "\n")


def test_aliases_cannot_multiply_queues_past_the_limit() -> None:
    children = "\n".join(f"              - name: c{i}" for i in range(200))
    parents = "\n".join(f"          - name: p{i}\n            queues: *kids" for i in range(1, 60))
    text = (
        "partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n"
        f"          - name: p0\n            queues: &kids\n{children}\n{parents}\n"
    )
    with pytest.raises(ConfigError, match="over the limit of 10,000"):
        load_config(text)
