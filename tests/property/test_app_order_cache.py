"""A cycle sorts each leaf's applications once and moves only the one it allocated for. That must give
the same allocations, in the same order, as sorting afresh before every allocation: the same traffic
scheduled by one cycle with a large budget, and by cycles of one allocation each, must agree."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.objects.allocation import Allocation
from tests.unit.domain_helpers import Cluster

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: leaf
            properties: {application.sort.policy: %(policy)s, application.sort.priority: %(priority)s}
            resources: {guaranteed: {memory: 40, vcore: 10}}
          - name: other
"""

apps = st.lists(
    st.tuples(
        st.sampled_from(["root.leaf", "root.other"]),
        st.lists(st.tuples(st.integers(1, 6), st.integers(-3, 3)), min_size=1, max_size=6),  # (memory, prio)
    ),
    min_size=1,
    max_size=8,
)


def _run(
    policy: str, priority: str, spec: list[tuple[str, list[tuple[int, int]]]], one_by_one: bool
) -> list[str]:
    c = Cluster(CONFIG % {"policy": policy, "priority": priority})
    c.node("n1", {"memory": 30, "vcore": 100})
    for i, (queue, asks) in enumerate(spec):
        c.clock.advance(1)  # distinct submission times
        c.app(f"app{i}", queue)
        for j, (memory, prio) in enumerate(asks):
            c.ask(f"app{i}", f"a{i}-{j}", {"memory": memory, "vcore": 1}, priority=prio)
    order: list[Allocation] = []
    if one_by_one:
        while c.schedule(1):
            pass
    else:
        c.schedule(10_000)
    for batch in c.ctx.drain_results():
        order.extend(batch.new_allocations)
    return [a.key for a in order]


@settings(max_examples=150, deadline=None)
@given(spec=apps, policy=st.sampled_from(["fifo", "fair"]), priority=st.sampled_from(["true", "false"]))
def test_one_sort_per_cycle_allocates_as_a_fresh_sort_before_every_allocation(
    spec: list[tuple[str, list[tuple[int, int]]]], policy: str, priority: str
) -> None:
    assert _run(policy, priority, spec, one_by_one=False) == _run(policy, priority, spec, one_by_one=True)
