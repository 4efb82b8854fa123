"""Hypothesis state machine over user and group limits: random applications of several users and
groups, asks, releases, recovered allocations, nodes going away, reloads that move limits up and down.

After every step:
- where a limit applies, each user's and group's counter equals the sum of the allocations of its
  applications whose path holds that queue, and its running applications are exactly those of them
  with an allocation; the REST usage views hold the same on every level;
- after a scheduling cycle no limit was broken by it: per limited type, usage is within the limit or
  no higher than it was before the cycle (a reload may lower a limit below usage, and recovered
  allocations are never refused); the same for running applications and maxapplications.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from core.config import load_config
from core.objects.application import Application, AppState
from core.resources import Resource
from core.scheduler.commands import AppRemove, NodeAction, UpdateApplications
from core.ugm.limits import Limit
from core.ugm.tracker import Key, SubjectKind
from core.views import usage_views
from tests.unit.domain_helpers import Cluster

USERS = ("ann", "bob", "cy")
GROUPS = ("dev", "ops", "qa")
LEAVES = ("root.p.a", "root.p.b", "root.q")


def _config(scale: int) -> str:
    """Limits at every level, named and wildcard, for users and groups; `scale` moves them all."""
    return f"""
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        limits:
          - users: [ann]
            maxresources: {{memory: {40 * scale}}}
          - users: ['*']
            maxapplications: {1 + scale}
        queues:
          - name: p
            limits:
              - groups: [dev]
                maxresources: {{memory: {30 * scale}}}
              - groups: ['*']
                maxresources: {{memory: {25 * scale}}}
            queues:
              - name: a
                limits:
                  - users: [bob]
                    maxresources: {{memory: {10 * scale}}}
                    maxapplications: {scale}
              - name: b
          - name: q
            limits:
              - groups: [ops]
                maxapplications: {scale}
"""


class UserLimitMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.c = Cluster(_config(2))
        self.node_ids: list[str] = []
        self.app_ids: list[str] = []
        self.counter = 0

    def _next(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    @property
    def apps(self) -> dict[str, Application]:
        return self.c.partition.applications

    @rule(memory=st.integers(20, 120))
    def add_node(self, memory: int) -> None:
        node_id = self._next("n")
        self.c.node(node_id, {"memory": memory, "vcore": 100})
        self.node_ids.append(node_id)

    @precondition(lambda self: len(self.node_ids) > 1)
    @rule(data=st.data())
    def remove_node(self, data: st.DataObject) -> None:
        node_id = data.draw(st.sampled_from(self.node_ids))
        self.c.node_action(node_id, NodeAction.DECOMMISSION)
        self.node_ids.remove(node_id)

    @rule(
        leaf=st.sampled_from(LEAVES),
        user=st.sampled_from(USERS),
        groups=st.lists(st.sampled_from(GROUPS), unique=True, max_size=3),
    )
    def add_app(self, leaf: str, user: str, groups: list[str]) -> None:
        app_id = self._next("app")
        self.c.app(app_id, leaf, user=user, groups=tuple(groups))
        self.app_ids.append(app_id)

    @precondition(lambda self: self.app_ids)
    @rule(data=st.data(), memory=st.integers(1, 15), count=st.integers(1, 4))
    def ask(self, data: st.DataObject, memory: int, count: int) -> None:
        app_id = data.draw(st.sampled_from(self.app_ids))
        if app_id in self.apps:
            for _ in range(count):
                self.c.ask(app_id, self._next("k"), {"memory": memory})

    @precondition(lambda self: self.app_ids and self.node_ids)
    @rule(data=st.data(), memory=st.integers(1, 15))
    def recover_allocation(self, data: st.DataObject, memory: int) -> None:
        """The RM reports an allocation it runs: counted, never refused for a limit."""
        app_id = data.draw(st.sampled_from(self.app_ids))
        node_id = data.draw(st.sampled_from(self.node_ids))
        node = self.c.partition.nodes[node_id]
        if app_id in self.apps and node.fits(Resource({"memory": memory})):
            self.c.ask(app_id, self._next("r"), {"memory": memory}, node_id=node_id)

    @precondition(lambda self: self.app_ids)
    @rule(data=st.data(), everything=st.booleans())
    def release(self, data: st.DataObject, everything: bool) -> None:
        app_id = data.draw(st.sampled_from(self.app_ids))
        app = self.apps.get(app_id)
        if app is None:
            return
        if everything or not app.allocations:
            self.c.release(app_id)
        else:
            self.c.release(app_id, data.draw(st.sampled_from(sorted(app.allocations))))

    @precondition(lambda self: self.app_ids)
    @rule(data=st.data())
    def remove_app(self, data: st.DataObject) -> None:
        app_id = data.draw(st.sampled_from(self.app_ids))
        if app_id in self.apps:
            self.c.ctx.apply(UpdateApplications(self.c.rm_id, removes=(AppRemove(app_id, self.c.pname()),)))

    @rule(scale=st.integers(1, 3))
    def reload(self, scale: int) -> None:
        self.c.partition.apply_config(load_config(_config(scale)).config.partitions[0])

    @rule()
    def schedule(self) -> None:
        before = self._limited_usage()
        # maxapplications holds back applications that have not started (Accepted), as YuniKorn's
        # queue walk does; one that ran, went Completing and took a new ask is Running, and starts
        # again whatever the count (as at queue level: test_app_lifecycle's "never held back").
        accepted = {app_id for app_id, app in self.apps.items() if app.state == AppState.ACCEPTED}
        self.c.schedule()
        for key, (limit, used, running) in self._limited_usage().items():
            was_used, was_running = before.get(key, (limit, Resource(), frozenset()))[1:]
            if limit.max_resources is not None:
                for name, most in limit.max_resources.items():
                    assert used.get(name) <= max(most, was_used.get(name)), (key, name, used, most)
            if limit.max_applications:
                held_back_able = was_running | (running & accepted)
                assert len(held_back_able) <= max(limit.max_applications, len(was_running)), (key, running)

    def _limited_usage(self) -> dict[Key, tuple[Limit, Resource, frozenset[str]]]:
        """(kind, name, queue) -> (limit, usage, running applications), for every limit in force."""
        return {
            key: (self._limit(key), usage.resource.copy(), frozenset(usage.running))
            for key, usage in self.c.partition.user_groups.counters.items()
        }

    def _limit(self, key: Key) -> Limit:
        kind, name, path = key
        limits = self.c.partition.user_groups.table[path]
        limit = limits.for_user(name) if kind is SubjectKind.USER else limits.for_group(name)
        assert limit is not None, key
        return limit

    @invariant()
    def usage_is_the_sum_of_allocations(self) -> None:
        """Where a limit applies, the counter is what the user's (group's) running applications hold
        on that queue and below; the REST views hold the same on every level."""
        tracker = self.c.partition.user_groups
        want: dict[Key, Resource] = defaultdict(Resource)
        running: dict[Key, set[str]] = defaultdict(set)
        for app in self.apps.values():
            if not app.allocations:
                continue
            group = tracker.group_of(app)
            held = Resource()
            for alloc in app.allocations.values():
                held.add_in_place(alloc.resource)
            for queue in app.queue.path_to_root():
                subjects = [(SubjectKind.USER, app.user)] + ([(SubjectKind.GROUP, group)] if group else [])
                for kind, name in subjects:
                    key = (kind, name, queue.full_name)
                    want[key].add_in_place(held)
                    running[key].add(app.app_id)
        for key, usage in tracker.counters.items():
            assert usage.resource == want[key], (key, usage.resource, want[key])
            assert usage.running == running[key], key
        limited = {k for k in want if self._applies(k)}
        assert limited <= set(tracker.counters), limited - set(tracker.counters)
        for view in usage_views.users(self.c.partition):
            self._check_view(view["queues"], SubjectKind.USER, view["userName"], want, running)
        for view in usage_views.groups(self.c.partition):
            self._check_view(view["queues"], SubjectKind.GROUP, view["groupName"], want, running)

    def _applies(self, key: Key) -> bool:
        kind, name, path = key
        limits = self.c.partition.user_groups.table.get(path)
        if limits is None:
            return False
        return (limits.for_user(name) if kind is SubjectKind.USER else limits.for_group(name)) is not None

    def _check_view(
        self, level: dict[str, Any], kind: SubjectKind, name: str,
        want: dict[Key, Resource], running: dict[Key, set[str]],
    ) -> None:  # fmt: skip
        key = (kind, name, level["queuePath"])
        assert Resource(level.get("resourceUsage", {})) == want[key], key
        assert set(level.get("runningApplications", [])) == running[key], key
        for child in level.get("children", []):
            self._check_view(child, kind, name, want, running)


UserLimitMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestUserLimits = UserLimitMachine.TestCase
