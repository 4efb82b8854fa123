"""What one more application costs the core, against what the work YuniKorn's model requires for it costs
when each step is timed alone (issue 48, goal 3: one application per pod at most 1.2x the core's cost
per pod of ten applications).

Two measures, in one process:

- The engine in-process (no gRPC, no RM): 5,000 asks on 500 nodes, in ten applications and in one
  application each, the applications added in the timed window. The difference per ask is what an
  application adds; a fifth of the ten-application cost per ask is what goal 3 allows it.
- Each step a new application needs, timed alone with the core's own code on a registered partition:
  its AddApplicationRequest read (in requests of 100), the Application object, the placement rules,
  its four events (added, joined its queue, Accepted, Running), its two state changes, and its answer
  to the RM (accepted, and its two states, encoded in answers of 100).

    python -m benchmarks.bench_app_floor
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import timeit
from collections.abc import Callable

from benchmarks.bench_scheduling import ASK, CONFIG, RM, USER, node_capacity
from core.config import load_config
from core.config.input_limits import Limits
from core.events import ChangeType
from core.objects import change_events
from core.objects.allocation import Allocation
from core.objects.application import AppEvent, Application, AppState
from core.objects.partition_key import PartitionKey
from core.placement.rules import PlacementRequest
from core.resources import Resource
from core.rm.si_inbound import application_from_si
from core.scheduler.cluster import ClusterContext
from core.scheduler.commands import (
    AppAdd,
    NodeAction,
    NodeChange,
    RegisterRM,
    UpdateAllocations,
    UpdateApplications,
    UpdateNodes,
)
from core.scheduler.engine import Engine
from core.scheduler.results import ResultBatch
from pykorn_cli.gc_tuning import tune_garbage_collector
from rmclient.logging_setup import configure_logging
from si.v1 import si_pb2

NODES, ASKS = 500, 5000
BATCH = 100  # applications per request and per answer, as a shim's batch carries them
TAGS = {"namespace": "bench", "application.create.force": "false"}  # what the Kubernetes shim sends


async def engine_cpu_per_ask(apps: int) -> float:
    """CPU µs per ask: the engine adds `apps` applications and allocates ASKS asks spread over them."""
    context = ClusterContext(time.time)
    received = nodes_in = 0
    done, ready = asyncio.Event(), asyncio.Event()

    def sink(batches: list[ResultBatch]) -> None:
        nonlocal received, nodes_in
        received += sum(len(b.new_allocations) for b in batches)
        nodes_in += sum(len(b.accepted_nodes) for b in batches)
        if nodes_in >= NODES:
            ready.set()
        if received >= ASKS:
            done.set()

    engine = Engine(context, sink)
    task = asyncio.create_task(engine.run())
    part = PartitionKey(RM, "default")
    engine.submit(RegisterRM(RM, load_config(CONFIG).config))
    capacity = Resource(node_capacity(ASKS, NODES))
    nodes = tuple(NodeChange(f"node-{i}", NodeAction.CREATE, part, {}, capacity) for i in range(NODES))
    engine.submit(UpdateNodes(RM, nodes))
    adds = tuple(AppAdd(f"app-{i}", part, "root.a" if i % 2 else "root.b", user=USER) for i in range(apps))
    asks = tuple(Allocation(f"ask-{i}", f"app-{i % apps}", part, Resource(ASK), create_time=1.0)
                 for i in range(ASKS))  # fmt: skip
    await ready.wait()  # registered, nodes in: the timed window holds the applications and asks only
    cpu = time.process_time()
    engine.submit(UpdateApplications(RM, adds=adds))
    engine.submit(UpdateAllocations(RM, allocations=asks))
    await done.wait()
    cpu = time.process_time() - cpu
    engine.stop()
    await task
    return cpu / ASKS * 1e6


def steps() -> list[tuple[str, Callable[[], object], int]]:
    """(step, one run of it, applications per run): each on a partition registered as the benchmark's."""
    context = ClusterContext(time.time)
    context.apply(RegisterRM(RM, load_config(CONFIG).config))
    part = next(iter(context.partitions.values()))
    leaf = part.find_queue("root.a")
    assert leaf is not None
    limits = Limits()
    ugi = si_pb2.UserGroupInformation(user=USER, groups=["system:serviceaccounts"])
    request = si_pb2.ApplicationRequest(rmID=RM, new=[
        si_pb2.AddApplicationRequest(applicationID=f"app-{i:06d}", queueName="root.a", ugi=ugi, tags=TAGS)
        for i in range(BATCH)
    ]).SerializeToString()  # fmt: skip
    ids = [f"app-{i:06d}" for i in range(BATCH)]
    placement = PlacementRequest("app-000001", "root.a", USER, (), {"namespace": "bench"})
    events: list[object] = []
    changing = Application("app-x", part.key, leaf, user=USER, now=1.0)

    def read() -> None:
        for add in si_pb2.ApplicationRequest.FromString(request).new:
            application_from_si(RM, add, limits)

    def four_events() -> None:
        events.append(change_events.app_added(RM, "app-1", "root.a", 1.0))
        events.append(change_events.queue_app(RM, "root.a", "app-1", ChangeType.ADD, 1.0))
        for before, after in ((AppState.NEW, AppState.ACCEPTED), (AppState.ACCEPTED, AppState.RUNNING)):
            events.append(change_events.app_state_changed(RM, "app-1", before, after, "", 1.0))
        if len(events) > 10_000:
            events.clear()

    def two_states() -> None:
        changing.state = AppState.NEW
        changing.handle(AppEvent.RUN, 1.0)
        changing.handle(AppEvent.RUN, 1.0)
        changing.state_log.clear()

    def answer() -> None:
        si_pb2.ApplicationResponse(
            accepted=[si_pb2.AcceptedApplication(applicationID=i) for i in ids],
            updated=[
                si_pb2.UpdatedApplication(applicationID=i, state=s, stateTransitionTimestamp=1 << 60)
                for i in ids
                for s in ("Accepted", "Running")
            ],
        ).SerializeToString()

    return [
        ("its request read", read, BATCH),
        ("the Application object", lambda: Application("app-1", part.key, leaf, user=USER, tags=TAGS), 1),
        ("the placement rules", lambda: part.placement.place(placement, part.tree), 1),
        ("its four events", four_events, 1),
        ("its two state changes", two_states, 1),
        ("its answer encoded", answer, BATCH),
    ]


def main() -> None:
    configure_logging("warning", json=True)
    tune_garbage_collector()
    ten = statistics.median(asyncio.run(engine_cpu_per_ask(10)) for _ in range(3))
    each = statistics.median(asyncio.run(engine_cpu_per_ask(ASKS)) for _ in range(3))
    out = sys.stdout
    out.write(
        f"engine, CPU µs per ask: ten applications {ten:.1f}, one per ask {each:.1f} ({each / ten:.2f}x)\n"
    )
    out.write(f"  an application adds {each - ten:.1f} µs; 1.2x allows {0.2 * ten:.1f}\n")
    total = inside = 0.0
    for name, run, per in steps():
        runs = 20_000 // per
        best = min(timeit.repeat(run, number=runs, repeat=5)) / runs / per * 1e6
        total += best
        inside += 0.0 if per > 1 else best  # the request and the answer are the SI's, not the engine's
        out.write(f"  {name:28} {best:5.2f} µs\n")
    allowed = 0.2 * ten
    out.write(f"  {'these steps alone':28} {total:5.2f} µs ({total / allowed:.1f}x what 1.2x allows)\n")
    out.write(f"  {'those inside the engine':28} {inside:5.2f} µs ({inside / allowed:.1f}x)\n")


if __name__ == "__main__":
    main()
