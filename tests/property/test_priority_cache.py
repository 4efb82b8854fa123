"""Hypothesis state machine: the cached priorities always equal what the asks themselves give.

Random queue trees (up to three levels below root; random fences, offsets up to the int32 bounds,
application.sort.priority switched off here and there), random applications, asks with random int32
priorities (extremes included), scheduling, releases, application removals and reloads with new
properties. After every step:

- every application's ask_max_priority is the highest priority of its pending asks (MIN when none);
- every leaf's app_priorities maps exactly its applications with pending asks to that value;
- every parent's child_priorities maps exactly its children with something pending to their
  current_priority;
- every queue's current_priority equals core.objects.priority.from_scratch(queue), and an oracle
  computed from the generated configuration (not from the parsed queue properties);
- application.sort.priority: disabled flows down until a queue enables it again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import structlog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from core.config import load_config
from core.objects import priority
from core.objects.priority_range import MAX_PRIORITY, MIN_PRIORITY, PriorityInputs, clamp
from core.objects.queue import Queue
from core.scheduler.commands import AppRemove, UpdateApplications, UpdateConfig
from tests.unit.domain_helpers import Cluster

_saved_logging: dict[str, Any] = {}


def setup_module() -> None:
    # Thousands of cluster operations per run (and many more while shrinking): keep their info logs out
    # of pytest's captured output, which otherwise dominates the run time.
    _saved_logging.update(structlog.get_config())
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))


def teardown_module() -> None:
    structlog.configure(**_saved_logging)


EXTREMES = [MIN_PRIORITY, MIN_PRIORITY + 1, -1, 0, 1, MAX_PRIORITY - 1, MAX_PRIORITY]
priorities = st.one_of(
    st.sampled_from(EXTREMES), st.integers(-20, 20), st.integers(MIN_PRIORITY, MAX_PRIORITY)
)
offsets = st.one_of(
    st.none(),
    st.sampled_from([MIN_PRIORITY, MAX_PRIORITY]),
    st.sampled_from([*EXTREMES, 999_999_999, -999_999_999, 1_000_000_000, -1_000_000_000]),
    st.integers(-20, 20),
    st.integers(MIN_PRIORITY, MAX_PRIORITY),
)


@dataclass
class QueueSpec:
    name: str
    children: list[QueueSpec] = field(default_factory=list)
    policy: str | None = None  # priority.policy as written
    offset: int | None = None  # priority.offset
    sort_priority: str | None = None  # application.sort.priority as written
    sort_policy: str | None = None  # application.sort.policy

    @property
    def is_leaf(self) -> bool:
        return not self.children

    @property
    def fenced(self) -> bool:
        return self.policy is not None and self.policy.lower() == "fence"

    def walk(self, prefix: str = "") -> Iterator[tuple[str, QueueSpec]]:
        full = f"{prefix}.{self.name}" if prefix else self.name
        yield full, self
        for child in self.children:
            yield from child.walk(full)


@st.composite
def _properties(draw: st.DrawFn, spec: QueueSpec) -> QueueSpec:
    return replace(
        spec,
        policy=draw(st.sampled_from([None, None, "default", "fence", "Fence"])),
        offset=draw(offsets),
        sort_priority=draw(st.sampled_from([None, None, "enabled", "disabled", "Disabled"])),
        sort_policy=draw(st.sampled_from([None, "fifo", "fair"])),
    )


def _children(draw: st.DrawFn, depth: int, counter: list[int]) -> list[QueueSpec]:
    out = []
    for _ in range(draw(st.integers(1, 3))):
        counter[0] += 1
        spec = QueueSpec(f"q{counter[0]}")
        if depth < 3 and draw(st.booleans()):
            spec.children = _children(draw, depth + 1, counter)
        out.append(draw(_properties(spec)))
    return out


@st.composite
def trees(draw: st.DrawFn) -> QueueSpec:
    root = draw(_properties(QueueSpec("root")))
    root.children = _children(draw, 1, [0])
    return root


@st.composite
def new_properties(draw: st.DrawFn, spec: QueueSpec) -> QueueSpec:
    """The same tree shape with every queue's properties drawn again."""
    fresh = draw(_properties(spec))
    fresh.children = [draw(new_properties(child)) for child in spec.children]
    return fresh


def _yaml(spec: QueueSpec, indent: int) -> list[str]:
    pad = " " * indent
    lines = [f"{pad}- name: {spec.name}"]
    if spec.name == "root":
        lines.append(f'{pad}  submitacl: "*"')
    props = {
        "priority.policy": spec.policy,
        "priority.offset": None if spec.offset is None else f'"{spec.offset}"',
        "application.sort.priority": spec.sort_priority,
        "application.sort.policy": spec.sort_policy if spec.is_leaf else None,
    }
    written = {k: v for k, v in props.items() if v is not None}
    if written:
        lines.append(f"{pad}  properties:")
        lines.extend(f"{pad}    {k}: {v}" for k, v in written.items())
    if spec.children:
        lines.append(f"{pad}  queues:")
        for child in spec.children:
            lines.extend(_yaml(child, indent + 4))
    return lines


def config_text(root: QueueSpec) -> str:
    return "\n".join(["partitions:", "  - name: default", "    queues:", *_yaml(root, 6)]) + "\n"


class PriorityCacheMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.c: Cluster
        self.spec: QueueSpec
        self.apps: list[str] = []
        self.pending: dict[tuple[str, str], int] = {}  # (app, key) -> priority
        self.allocated: set[tuple[str, str]] = set()
        self.counter = 0
        self.reloads = 0

    def _next(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def _sync(self) -> None:
        for batch in self.c.ctx.drain_results():
            assert not batch.rejected_allocations, batch.rejected_allocations
            assert not batch.rejected_apps, batch.rejected_apps
            for alloc in batch.new_allocations:
                ref = (alloc.application_id, alloc.key)
                del self.pending[ref]
                self.allocated.add(ref)
            for rel in batch.released:
                self.allocated.discard((rel.app_id, rel.key))

    @property
    def leaves(self) -> list[str]:
        return [name for name, spec in self.spec.walk() if spec.is_leaf]

    # Rules --------------------------------------------------------------------------------------
    @initialize(spec=trees(), memory=st.integers(0, 20))
    def build(self, spec: QueueSpec, memory: int) -> None:
        self.spec = spec
        self.c = Cluster(config_text(spec))
        if memory:
            self.c.node(self._next("n"), {"memory": memory, "vcore": 100})

    def _ask(self, app_id: str, prio: int, memory: int) -> None:
        key = self._next("k")
        self.c.ask(app_id, key, {"memory": memory}, priority=prio)
        self.pending[(app_id, key)] = prio

    @rule(data=st.data(), asks=st.lists(st.tuples(priorities, st.integers(1, 5)), max_size=3))
    def add_app(self, data: st.DataObject, asks: list[tuple[int, int]]) -> None:
        app_id = self._next("app")
        self.c.app(app_id, data.draw(st.sampled_from(self.leaves)))
        self.apps.append(app_id)
        for prio, memory in asks:
            self._ask(app_id, prio, memory)
        self._sync()

    @precondition(lambda self: self.apps)
    @rule(data=st.data(), prio=priorities, memory=st.integers(1, 5))
    def add_ask(self, data: st.DataObject, prio: int, memory: int) -> None:
        self._ask(data.draw(st.sampled_from(self.apps)), prio, memory)
        self._sync()

    @rule(memory=st.integers(1, 10))
    def add_node(self, memory: int) -> None:
        self.c.node(self._next("n"), {"memory": memory, "vcore": 100})
        self._sync()

    @rule()
    def schedule(self) -> None:
        self.c.schedule()
        self._sync()

    @precondition(lambda self: self.pending)
    @rule(data=st.data())
    def release_ask(self, data: st.DataObject) -> None:
        app_id, key = data.draw(st.sampled_from(sorted(self.pending)))
        self.c.release(app_id, key)
        del self.pending[(app_id, key)]
        self._sync()

    @precondition(lambda self: self.allocated)
    @rule(data=st.data())
    def release_allocation(self, data: st.DataObject) -> None:
        app_id, key = data.draw(st.sampled_from(sorted(self.allocated)))
        self.c.release(app_id, key)
        self._sync()
        assert (app_id, key) not in self.allocated

    @precondition(lambda self: self.apps)
    @rule(data=st.data())
    def remove_app(self, data: st.DataObject) -> None:
        app_id = data.draw(st.sampled_from(self.apps))
        self.apps.remove(app_id)
        self.c.ctx.apply(UpdateApplications(self.c.rm_id, removes=(AppRemove(app_id, self.c.pname()),)))
        self.pending = {ref: p for ref, p in self.pending.items() if ref[0] != app_id}
        self._sync()
        assert not any(ref[0] == app_id for ref in self.allocated)

    @precondition(lambda self: self.reloads < 2)  # parsing YAML is the slowest step: keep it rare
    @rule(data=st.data())
    def reload(self, data: st.DataObject) -> None:
        self.reloads += 1
        self.spec = data.draw(new_properties(self.spec))
        replies: list[Exception | None] = []
        self.c.ctx.apply(
            UpdateConfig(self.c.rm_id, load_config(config_text(self.spec)).config, replies.append)
        )
        assert replies == [None]
        self._sync()

    # Invariants ---------------------------------------------------------------------------------
    @invariant()
    def model_matches_the_partition(self) -> None:
        part = self.c.partition
        assert sorted(part.applications) == sorted(self.apps)
        for app_id, app in part.applications.items():
            assert {(app_id, k) for k in app.asks} == {r for r in self.pending if r[0] == app_id}

    @invariant()
    def application_max_is_the_highest_pending_ask(self) -> None:
        for app in self.c.partition.applications.values():
            expected = max((a.priority for a in app.asks.values()), default=MIN_PRIORITY)
            assert app.ask_max_priority == expected, app.app_id

    @invariant()
    def queue_inputs_are_exactly_what_is_pending(self) -> None:
        for queue in self.c.partition.queues.values():
            if queue.is_leaf:
                expected = {
                    app_id: max(a.priority for a in app.asks.values())
                    for app_id, app in queue.applications.items()
                    if app.asks
                }
                assert queue.app_priorities == expected, queue.full_name
                inputs = queue.app_priorities
            else:
                expected = {
                    child.name: child.current_priority
                    for child in queue.children.values()
                    if _has_pending_asks(child)
                }
                assert queue.child_priorities == expected, queue.full_name
                inputs = queue.child_priorities
            assert queue.inner_priority == max(inputs.values(), default=MIN_PRIORITY), queue.full_name

    @invariant()
    def current_priority_is_computed_from_scratch(self) -> None:
        specs = dict(self.spec.walk())
        for name, queue in self.c.partition.queues.items():
            assert queue.current_priority == priority.from_scratch(queue), name
            shown = _oracle(specs[name], queue, is_root=queue.is_root)
            assert queue.current_priority == (MIN_PRIORITY if shown is None else shown), name

    @invariant()
    def sort_priority_flows_down_when_disabled(self) -> None:
        def visit(spec: QueueSpec, full: str, inherited: bool) -> None:
            enabled = inherited if spec.sort_priority is None else spec.sort_priority.lower() == "enabled"
            queue = self.c.partition.queues[full]
            assert queue.props.sort_priority_enabled is enabled, full
            for child in spec.children:
                visit(child, f"{full}.{child.name}", enabled)

        visit(self.spec, "root", True)


def _has_pending_asks(queue: Queue) -> bool:
    if queue.is_leaf:
        return any(app.asks for app in queue.applications.values())
    return any(_has_pending_asks(child) for child in queue.children.values())


def _oracle(spec: QueueSpec, queue: Queue, is_root: bool) -> int | None:
    """The design document's rule from the generated configuration; None when nothing is pending."""
    if spec.is_leaf:
        values = [a.priority for app in queue.applications.values() for a in app.asks.values()]
    else:
        shown = (_oracle(child, queue.children[child.name], False) for child in spec.children)
        values = [v for v in shown if v is not None]
    if not values:
        return None
    if is_root:  # priority.policy and priority.offset have no effect on root
        return max(values)
    offset = spec.offset or 0
    return offset if spec.fenced else clamp(max(values) + offset)


PriorityCacheMachine.TestCase.settings = settings(
    max_examples=80,
    stateful_step_count=25,
    deadline=None,
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TestPriorityCache = PriorityCacheMachine.TestCase


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["set", "pop", "del"]), st.sampled_from("abcdef"), st.integers(-3, 3)),
        max_size=60,
    )
)
def test_priority_inputs_count_their_values_as_a_plain_dict_holds_them(
    changes: list[tuple[str, str, int]],
) -> None:
    """A queue's priority inputs answer the highest value from counts of the values: the same as the
    maximum of a plain dict changed the same way, through sets, overwrites, pops and deletions."""
    counted, plain = PriorityInputs(), dict[str, int]()
    for change, key, value in changes:
        if change == "set":
            counted[key], plain[key] = value, value
        elif change == "pop":
            assert counted.pop(key) == plain.pop(key, None)
        elif key in plain:
            del counted[key], plain[key]
        assert counted == plain
        assert counted.highest() == (max(plain.values()) if plain else None)
