"""Kubernetes placement constraints at scale, in the shapes of kube-scheduler's scheduler_perf workloads,
driven over gRPC against a real core process (this process is the resource manager).

Each shape: 5,000 nodes (4 cores, 32 GiB, 110 pods, labelled with their hostname and a zone), a set
of init pods placed first, then the measured pods, timed from the moment the last measured pod was
sent until its allocation has arrived. Pods ask for 100m cpu and 100 MiB, as scheduler_perf's
templates do, and carry the constraints as the Kubernetes shim sends them (tags with the pod spec's
JSON, namespace and labels).

    python -m benchmarks.bench_constraints                  # every shape, 5,000 nodes
    python -m benchmarks.bench_constraints --shape TopologySpreading --nodes 1000

- SchedulingBasePod: no constraints (the baseline).
- SchedulingPodAntiAffinity: required anti-affinity to its own label by hostname (1,000 + 2,000).
- SchedulingPodAffinity: required affinity to its own label by zone, every node in one zone
  (5,000 + 5,000).
- SchedulingNodeAffinity: required node affinity on a label every node has (5,000 + 10,000).
- TopologySpreading: maxSkew 1 over 3 zones, DoNotSchedule (5,000 + 2,000).
- SchedulingPreferredPodAntiAffinity: preferred anti-affinity by hostname (scored over the nodes).
- MixedSchedulingBasePod: the base, anti-affinity, affinity and preferred pods in turn (1,000 + 5,000).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.counting_client import CountingClient
from rmclient import messages
from rmclient.core_process import CoreProcess
from rmclient.logging_setup import configure_logging
from si.v1 import si_pb2

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
"""
NODE = {"vcore": 4000, "memory": 32 * 2**30, "pods": 110}
POD = {"vcore": 100, "memory": 100 * 2**20, "pods": 1}
HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
LABEL = "kubernetes.io/label/"
CREATED = 1_700_000_000  # the pods' creationTime, Unix seconds

Tags = dict[str, str]


def _pod(labels: dict[str, str], **spec: object) -> Tags:
    tags = {"kubernetes.io/meta/namespace": "sched-1", **{LABEL + k: v for k, v in labels.items()}}
    names = {"podAffinity": "pykorn.io/pod-affinity", "podAntiAffinity": "pykorn.io/pod-anti-affinity",
             "nodeAffinity": "pykorn.io/node-affinity", "spread": "pykorn.io/topology-spread"}  # fmt: skip
    for field, value in spec.items():
        tags[names[field]] = json.dumps(value)
    return tags


def _term(labels: dict[str, str], key: str) -> dict[str, object]:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key}


BASE = _pod({"app": "base"})
ANTI = _pod({"color": "green"}, podAntiAffinity={
    "requiredDuringSchedulingIgnoredDuringExecution": [_term({"color": "green"}, HOST)]})  # fmt: skip
AFFINITY = _pod({"color": "blue"}, podAffinity={
    "requiredDuringSchedulingIgnoredDuringExecution": [_term({"color": "blue"}, ZONE)]})  # fmt: skip
IN_ZONES = {"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]}
NODE_AFFINITY = _pod({"app": "na"}, nodeAffinity={"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [IN_ZONES]}]}})  # fmt: skip
SPREAD = _pod({"foo": ""}, spread=[{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                                     "labelSelector": {"matchLabels": {"foo": ""}}}])  # fmt: skip
PREFERRED = _pod({"color": "red"}, podAntiAffinity={"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 1, "podAffinityTerm": _term({"color": "red"}, HOST)}]})  # fmt: skip


@dataclass(frozen=True)
class Shape:
    init: int
    measured: int
    pod: Callable[[int], Tags]
    zones: int = 3


SHAPES = {
    "SchedulingBasePod": Shape(1_000, 10_000, lambda i: BASE),
    "SchedulingPodAntiAffinity": Shape(1_000, 2_000, lambda i: ANTI),
    "SchedulingPodAffinity": Shape(5_000, 5_000, lambda i: AFFINITY, zones=1),
    "SchedulingNodeAffinity": Shape(5_000, 10_000, lambda i: NODE_AFFINITY, zones=2),
    "TopologySpreading": Shape(5_000, 2_000, lambda i: SPREAD),
    "SchedulingPreferredPodAntiAffinity": Shape(1_000, 5_000, lambda i: PREFERRED),
    "MixedSchedulingBasePod": Shape(1_000, 5_000, lambda i: (BASE, ANTI, AFFINITY, PREFERRED)[i % 4]),
}


async def run(name: str, nodes: int) -> float:
    """Measured pods per second for one shape."""
    shape = SHAPES[name]
    core = CoreProcess()
    address = await core.start()
    try:
        async with CountingClient(address, f"perf-{name}") as client:
            await client.register(config=CONFIG)
            await client.add_nodes(*(
                messages.node(f"node-{i}", NODE, attributes={
                    LABEL + HOST: f"node-{i}", LABEL + ZONE: f"zone{i % shape.zones + 1}"})
                for i in range(nodes)
            ))  # fmt: skip
            await client.wait_nodes_answered(nodes, timeout=120)
            app = messages.application("perf", "root.default", user="perf")
            await client.send_application_request(si_pb2.ApplicationRequest(rmID=client.rm_id, new=[app]))
            await client.wait_apps_answered(1)

            def batch(start: int, count: int) -> si_pb2.AllocationRequest:
                asks = [
                    messages.ask(
                        "perf", f"pod-{i}", POD, tags={**shape.pod(i), "creationTime": str(CREATED + i)}
                    )
                    for i in range(start, start + count)
                ]
                return si_pb2.AllocationRequest(rmID=client.rm_id, allocations=asks)

            await client.send_allocation_request(batch(0, shape.init))
            await client.wait_allocations(shape.init, timeout=600)
            request = batch(shape.init, shape.measured)
            await client.send_allocation_request(request)
            start = time.perf_counter()
            await client.wait_allocations(shape.init + shape.measured, timeout=600)
            return shape.measured / (time.perf_counter() - start)
    finally:
        await core.stop()


async def main_async(shapes: list[str], nodes: int, repeat: int) -> None:
    out = sys.stdout
    header = f"{'shape':<36} {'nodes':>6} {'init':>6} {'measured':>9} {'median pods/s':>14}"
    out.write(f"{header} {'min':>8} {'max':>8}\n")
    for name in shapes:
        rates = sorted([await run(name, nodes) for _ in range(repeat)])
        shape = SHAPES[name]
        out.write(
            f"{name:<36} {nodes:>6} {shape.init:>6} {shape.measured:>9} {statistics.median(rates):>14,.0f} "
            f"{rates[0]:>8,.0f} {rates[-1]:>8,.0f}\n"
        )
        out.flush()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shape", nargs="+", choices=sorted(SHAPES), default=list(SHAPES))
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    configure_logging("warning")
    asyncio.run(main_async(args.shape, args.nodes, args.repeat))


if __name__ == "__main__":
    main()
