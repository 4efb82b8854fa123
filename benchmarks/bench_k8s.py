"""The Kubernetes shim end to end: pods made in the API emulation, bound by `pykorn k8s` through a real
core, each in its own process (emulation, core, shim), timed by the emulation's clock.

- ceiling: how many bindings a second the emulation itself takes from a trivial client (64 requests
  in flight over keep-alive connections, no scheduling): the most any shim could show on it;
- burst: N pending pods made at once on 500 and on 5,000 nodes; pods/s from the first pod made to the
  last bound;
- latency: pods made at a steady rate (1,000 a second for 10 s on 500 nodes); p50 and p99 of each
  pod's time from being made to being bound;
- volumes: N pending pods made at once on 500 nodes in 3 zones, each with its own claim of a
  WaitForFirstConsumer StorageClass (as a StatefulSet's), with the emulation's PV controller and
  provisioner stand-in running: pods/s from the first made to the last bound, and the share of the
  pods' made-to-bound time spent between the claim's selected-node annotation and its binding (the
  provisioner and the PV controller at work; the shim waits meanwhile);
- gangs: gangs of 8 pods made at once on 500 nodes, each its own application, through Kubernetes'
  Workload API (a Workload each, placed whole by the core) and through YuniKorn's task-group
  annotations (placeholders made, bound and replaced): pods/s from the first made to the last bound.

    python -m benchmarks.bench_k8s                    # all of it
    python -m benchmarks.bench_k8s --pods 2000 --skip-latency
    python -m benchmarks.bench_k8s --only-volumes --pods 5000
    python -m benchmarks.bench_k8s --only-gangs --gangs 250   # only the gang rows
    python -m benchmarks.bench_k8s --pods 5000 --nodes 500 --apps 10 5000 --skip-ceiling \
        --skip-latency --skip-volumes             # one application per pod against ten
    python -m benchmarks.bench_k8s --pods 5000 --nodes 500 --apps 10 5000 --rounds 5 --skip-ceiling \
        --skip-latency --skip-volumes             # the same, alternating 5 times, with medians
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO
from urllib.parse import quote

import aiohttp

from rmclient.core_process import CoreProcess

RM_ID = "bench"
# The `pykorn` command whose core and shim run: this interpreter's, or another build's (benchmarks.compare
# gives each revision's own; the emulation and the pods' driver are always this tree's).
PYKORN: tuple[str, ...] = (sys.executable, "-m", "pykorn_cli")
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: emulation, cluster: {server: "http://127.0.0.1:%(port)d"}}]
users: [{name: bench, user: {}}]
contexts: [{name: bench, context: {cluster: emulation, user: bench}}]
current-context: bench
"""


def rss_mib(pid: int) -> float:
    """A process's resident memory now, MiB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# The resident memory (MiB) of the core and the shim at the end of the last run of `_scheduled`, and
# what it grew by from before its pods were made: read by the burst rows.
LAST_MEMORY: dict[str, tuple[float, float]] = {}


def cpu_seconds(pid: int) -> float:
    """User and system CPU a process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Emulation:
    url: str
    pid: int


VOLUME_DRIVER = "ebs.csi.aws.com"
BENCH_CLASS = "bench-wffc"  # the StorageClass the emulation makes for its volume driver


@contextlib.asynccontextmanager
async def emulation(volume_driver: str = "") -> AsyncIterator[Emulation]:
    """The API emulation in a process of its own (with its volume controllers for `volume_driver`)."""
    with tempfile.TemporaryDirectory(prefix="pykorn-emulation-") as tmp:
        port_file = Path(tmp, "port")
        extra = ["--volume-driver", volume_driver] if volume_driver else []
        extra += ["--loop", os.environ.get("PYKORN_EMULATION_LOOP", "uvloop")]
        process = subprocess.Popen(  # noqa: ASYNC220 - started once, not waited on here
            [sys.executable, "-m", "tests.integration.kube_api", "--port-file", str(port_file), *extra]
        )
        try:
            while not port_file.exists() or not port_file.read_text():
                if process.poll() is not None:
                    raise RuntimeError("the emulation exited on startup")
                await asyncio.sleep(0.05)
            yield Emulation(f"http://127.0.0.1:{int(port_file.read_text())}", process.pid)
        finally:
            process.terminate()
            process.wait(10)


@contextlib.asynccontextmanager
async def shim(api: str, core: CoreProcess, pykorn: tuple[str, ...] = PYKORN) -> AsyncIterator[int]:
    """`pykorn k8s` against the emulation and the core; its process ID."""
    with tempfile.TemporaryDirectory(prefix="pykorn-shim-") as tmp:
        kubeconfig = Path(tmp, "kubeconfig")
        kubeconfig.write_text(KUBECONFIG % {"port": int(api.rsplit(":", 1)[1])})
        log = open(Path(tmp, "shim.log"), "wb")  # noqa: SIM115 - closed below
        command = [*pykorn, "k8s", "--core", core.address, "--kubeconfig",
                   str(kubeconfig), "--rm-id", RM_ID, "--log-level", "warning"]  # fmt: skip
        process = subprocess.Popen(  # noqa: ASYNC220 - started once, not waited on here
            command,
            stdout=log, stderr=log,
        )  # fmt: skip
        try:
            yield process.pid
        finally:
            process.terminate()
            process.wait(10)
            log.close()


async def _post(session: aiohttp.ClientSession, url: str, body: Mapping[str, object]) -> dict[str, object]:
    async with session.post(url, json=body, timeout=aiohttp.ClientTimeout(total=600)) as response:
        response.raise_for_status()
        result: dict[str, object] = await response.json()
        return result


async def _until_bound(session: aiohttp.ClientSession, api: str, prefix: str, count: int) -> None:
    """Until every pod of `prefix` is bound (the emulation's count looked at every 100 ms)."""
    deadline = time.monotonic() + 900
    url = f"{api}/emulator/times"
    while True:
        async with session.get(url, params={"prefix": prefix}) as response:
            bound = (await response.json())["bound"]
        if bound >= count:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{bound} of {count} pods bound")
        await asyncio.sleep(0.1)


async def _times(
    session: aiohttp.ClientSession, api: str, prefix: str
) -> tuple[list[list[float]], list[list[float]]]:
    """The pods' of `prefix` (made, bound) times, and their claims' (annotated for a node, bound)."""
    url = f"{api}/emulator/times"
    async with session.get(url, params={"prefix": prefix, "full": "1"}) as response:
        body = await response.json()
    claims = [[selected, bound] for selected, bound in body["claims"].values()]
    return [[made, done] for made, done in body["times"].values()], claims


async def _until_nodes(session: aiohttp.ClientSession, core: CoreProcess, nodes: int) -> None:
    url = f"{core.rest_url}/ws/v1/partition/{quote(f'[{RM_ID}]default', safe='')}/nodes"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        with contextlib.suppress(aiohttp.ClientError):
            async with session.get(url) as response:
                if response.status == 200 and len(await response.json()) >= nodes:
                    return
        await asyncio.sleep(0.2)
    raise TimeoutError(f"the core did not get {nodes} nodes")


async def ceiling(pods: int) -> tuple[float, dict[str, float]]:
    """Bindings a second a trivial client gets from the emulation (no scheduling, no watch), and the
    CPU µs each side spent per binding."""
    async with (
        emulation() as running,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as session,
    ):
        api = running.url
        await _post(session, f"{api}/emulator/nodes", {"count": 500})
        await _post(
            session, f"{api}/emulator/pods", {"count": pods, "prefix": "trivial", "scheduler": "none"}
        )
        slots = asyncio.Semaphore(64)

        async def bind(i: int) -> None:
            body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": f"trivial-{i}"},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": f"node-{i % 500}"}}  # fmt: skip
            async with slots:
                await _post(session, f"{api}/api/v1/namespaces/bench/pods/trivial-{i}/binding", body)

        before = cpu_seconds(running.pid), time.process_time()
        start = time.perf_counter()
        await asyncio.gather(*(bind(i) for i in range(pods)))
        rate = pods / (time.perf_counter() - start)
        spent = {"emulation": cpu_seconds(running.pid) - before[0], "client": time.process_time() - before[1]}
        return rate, {name: seconds * 1e6 / pods for name, seconds in spent.items()}


async def _scheduled(
    nodes: int, pods: Mapping[str, object], volume_driver: str = "", zones: int = 0,
    pykorn: tuple[str, ...] = PYKORN,
) -> tuple[list[list[float]], dict[str, float], list[list[float]]]:  # fmt: skip
    """A fresh emulation with `nodes` (in `zones`), a core and the shim; the pods made as `pods` says
    (count, prefix, rate, storageClass); their (made, bound) times once all are bound, the CPU µs per
    pod each process spent from the pods' making to the last binding, and the claims' (annotated,
    bound) times."""
    async with emulation(volume_driver) as running, aiohttp.ClientSession() as session:
        api = running.url
        await _post(session, f"{api}/emulator/nodes", {"count": nodes, "zones": zones})
        core = CoreProcess(pykorn=pykorn)
        await core.start()
        try:
            async with shim(api, core, pykorn) as shim_pid:
                await _until_nodes(session, core, nodes)
                assert core.process is not None
                pids = {"shim": shim_pid, "emulation": running.pid, "core": core.process.pid}
                before = {name: cpu_seconds(pid) for name, pid in pids.items()}
                held = {name: rss_mib(pids[name]) for name in ("core", "shim")}
                await _post(session, f"{api}/emulator/pods", pods)
                count = int(str(pods["count"]))
                await _until_bound(session, api, str(pods["prefix"]), count)
                spent = {name: (cpu_seconds(pid) - before[name]) * 1e6 / count for name, pid in pids.items()}
                times, claims = await _times(session, api, str(pods["prefix"]))  # after: not the pods' CPU
                for name, at_start in held.items():
                    now = rss_mib(pids[name])
                    LAST_MEMORY[name] = (now, now - at_start)
                return times, spent, claims
        finally:
            await core.stop()


async def burst(
    nodes: int, pods: int, apps: int = 10, pykorn: tuple[str, ...] = PYKORN
) -> tuple[float, dict[str, float]]:
    """Pods/s from the first pod made to the last bound, `pods` made at once over `apps` applications;
    CPU µs per pod."""
    bound, spent, _ = await _scheduled(nodes, {"count": pods, "prefix": "burst", "apps": apps}, pykorn=pykorn)
    return pods / (max(done for _, done in bound) - min(made for made, _ in bound)), spent


async def gang_burst(nodes: int, gangs: int, size: int, kind: str) -> tuple[float, dict[str, float]]:
    """Pods/s of `gangs` gangs of `size` pods made at once, each its own application: Kubernetes
    Workload API gangs (`kind` "workload": a Workload each, placed whole by the core) or YuniKorn's
    task-group annotations ("taskgroups": placeholders made, bound, then replaced); CPU µs per pod."""
    pods = {"count": gangs * size, "prefix": f"gang-{kind}", "gang": {"size": size, "kind": kind}}
    bound, spent, _ = await _scheduled(nodes, pods)
    return gangs * size / (max(done for _, done in bound) - min(made for made, _ in bound)), spent


@dataclass
class VolumeRun:
    rate: float  # pods/s, first made to last bound
    share: float  # of the pods' made-to-bound time, between their claims' annotation and binding
    provisioning_p50: float  # ms, annotated to bound
    bound_p50: float  # ms, made to bound
    spent: dict[str, float]


async def volume_burst(nodes: int, pods: int) -> VolumeRun:
    """`pods` made at once, each with a WaitForFirstConsumer claim, on `nodes` in 3 zones."""
    bound, spent, claims = await _scheduled(
        nodes, {"count": pods, "prefix": "vol", "storageClass": BENCH_CLASS}, VOLUME_DRIVER, zones=3
    )
    assert len(claims) == pods, f"{len(claims)} of {pods} claims annotated for a node"
    waits = [done - made for made, done in bound]
    provisioning = [done - selected for selected, done in claims]
    return VolumeRun(
        rate=pods / (max(done for _, done in bound) - min(made for made, _ in bound)),
        share=sum(provisioning) / sum(waits),
        provisioning_p50=statistics.median(provisioning) * 1000,
        bound_p50=statistics.median(waits) * 1000,
        spent=spent,
    )


async def latency(nodes: int, rate: float, seconds: float) -> tuple[float, float, float]:
    """p50 and p99 of made-to-bound, in ms, at `rate` pods a second; and the rate bound."""
    pods = int(rate * seconds)
    bound, _, _ = await _scheduled(nodes, {"count": pods, "prefix": "steady", "rate": rate})
    waits = sorted((done - made) * 1000 for made, done in bound)
    p50 = statistics.median(waits)
    p99 = waits[min(len(waits) - 1, int(len(waits) * 0.99))]
    span = max(done for _, done in bound) - min(made for made, _ in bound)
    return p50, p99, pods / span


# Each shape's bursts (nodes, applications): pods/s and each process's CPU µs per pod, in order.
Runs = dict[tuple[int, int], list[tuple[float, dict[str, float]]]]


async def main_async(args: argparse.Namespace) -> None:
    out, pods = sys.stdout, args.pods
    if args.only_volumes:
        await _volumes(out, pods)
        return
    if args.only_gangs:
        await _gangs(out, args.gangs)
        return
    top = 0.0
    if not args.skip_ceiling:
        top, spent = await ceiling(pods)
        out.write(f"{'emulation ceiling (trivial client, 64 in flight)':52} {top:10,.0f} bindings/s"
                  f"   CPU µs per binding: {_cpu(spent)}\n")  # fmt: skip
        out.flush()
    runs: Runs = {}
    for _ in range(args.rounds):
        await _bursts(out, args, top, runs)
    if args.rounds > 1 or len(args.apps) > 1:
        _compare(out, args, runs)
    if not args.skip_latency:
        p50, p99, achieved = await latency(500, 1000.0, 10.0)
        out.write(f"{'1,000 pods/s for 10 s on 500 nodes, made to bound':52} p50 {p50:6.0f} ms"
                  f"   p99 {p99:6.0f} ms   ({achieved:,.0f} pods/s)\n")  # fmt: skip
    if not args.skip_volumes:
        await _volumes(out, pods)
    if not args.skip_gangs:
        await _gangs(out, args.gangs)


async def _gangs(out: TextIO, gangs: int, size: int = 8, nodes: int = 500) -> None:
    """Gangs of 8 through Kubernetes' Workload API next to YuniKorn-annotation gangs of 8."""
    for kind, label in (("workload", "Workload API"), ("taskgroups", "YuniKorn task groups")):
        rate, spent = await gang_burst(nodes, gangs, size, kind)
        row = f"{gangs:,} gangs of {size} ({label}), {nodes} nodes"
        out.write(f"{row:52} {rate:10,.0f} pods/s   CPU µs per pod: {_cpu(spent)}\n")
        out.flush()


async def _bursts(out: TextIO, args: argparse.Namespace, top: float, runs: Runs) -> None:
    """One round: a burst of each shape (nodes x applications), in order; each kept in `runs`."""
    pods = args.pods
    for nodes in args.nodes:
        for apps in args.apps:
            rate, spent = await burst(nodes, pods, apps)
            runs.setdefault((nodes, apps), []).append((rate, spent))
            share = f"{rate / top:4.0%} of the ceiling" if top else ""
            label = f"burst of {pods:,} pods on {nodes:,} nodes" + (f", {apps:,} apps" if apps != 10 else "")
            memory = ", ".join(
                f"{name} {rss:,.0f} MiB (+{grew * 1000 / pods:,.1f} per 1,000 pods)"
                for name, (rss, grew) in LAST_MEMORY.items()
            )
            out.write(f"{label:52} {rate:10,.0f} pods/s   {share}   CPU µs per pod: {_cpu(spent)}"
                      f"   resident: {memory}\n")  # fmt: skip
            out.flush()


def _compare(out: TextIO, args: argparse.Namespace, runs: Runs) -> None:
    """Each shape's median rate and CPU per pod (each process's median; the emulation's says how fast
    the host ran) over the rounds, and each application count's rate against the first
    one's (`--apps 10 5000`: 5,000 against 10), by round (the two ran one after the other, so a change of
    the host's speed touches both) and by median."""
    for nodes in args.nodes:
        first = [rate for rate, _ in runs[nodes, args.apps[0]]]
        for apps in args.apps:
            mine = [rate for rate, _ in runs[nodes, apps]]
            cpu = {name: statistics.median(spent[name] for _, spent in runs[nodes, apps])
                   for name in runs[nodes, apps][0][1]}  # fmt: skip
            line = (f"{nodes:,} nodes, {apps:,} apps: median {statistics.median(mine):,.0f} pods/s,"
                    f" CPU µs per pod {_cpu(cpu)}")  # fmt: skip
            if apps != args.apps[0]:
                by_round = " / ".join(f"{m / f:.2f}" for m, f in zip(mine, first, strict=True))
                median = statistics.median(mine) / statistics.median(first)
                line += f"; against {args.apps[0]:,} apps: {by_round} by round, {median:.2f} by median"
            out.write(line + "\n")
    out.flush()


async def _volumes(out: TextIO, pods: int) -> None:
    run = await volume_burst(500, pods)
    waiting = f"p50 {run.provisioning_p50:,.0f} ms of {run.bound_p50:,.0f} ms"
    out.write(f"{f'{pods:,} pods with WaitForFirstConsumer claims, 500 nodes':52} {run.rate:10,.0f} pods/s"
              f"   {run.share:4.0%} of made-to-bound waiting for provisioning ({waiting})"
              f"   CPU µs per pod: {_cpu(run.spent)}\n")  # fmt: skip
    out.flush()


def _cpu(spent: Mapping[str, float]) -> str:
    return (
        ", ".join(f"{name} {micros:,.0f}" for name, micros in spent.items())
        + f" (total {sum(spent.values()):,.0f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, nargs="+", default=[500, 5_000])
    parser.add_argument(
        "--apps", type=int, nargs="+", default=[10], help="applications the burst's pods spread over"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="bursts of every shape, one after the other, this many times"
    )
    parser.add_argument("--skip-ceiling", action="store_true")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--skip-volumes", action="store_true")
    parser.add_argument("--only-volumes", action="store_true", help="only the WaitForFirstConsumer row")
    parser.add_argument("--skip-gangs", action="store_true")
    parser.add_argument("--only-gangs", action="store_true", help="only the gang rows")
    parser.add_argument("--gangs", type=int, default=250, help="gangs of 8 in the gang rows")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
