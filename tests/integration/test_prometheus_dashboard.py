"""deploy/grafana's dashboard against a real Prometheus: Debian's `prometheus` (installed by `make test`
when missing, started here on 127.0.0.1 with a configuration of its own) scrapes a core and a
`pykorn k8s` on the API emulation every second while pods come, bind (some bindings refused), wait,
preempt others and go; then every query of the dashboard (and of YuniKorn's own), asked through
Prometheus' HTTP API, must return a number, and `promtool check metrics` must find nothing wrong with
the names that are ours. About 11 s."""

from __future__ import annotations

import asyncio
import json
import math
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from rmclient.core_process import CoreProcess
from tests.integration.kube_api import FakeKubeAPI
from tests.integration.manifests import SCHEDULER_SA, find, render
from tests.integration.test_k8s_api import _until
from tests.integration.test_k8s_shim import node, pod

DASHBOARD = Path(__file__).parents[2] / "deploy" / "grafana" / "pykorn-dashboard.json"
OURS = ("pykorn_", "process_", "python_")  # the names promtool must pass (YuniKorn's keep its spelling)
# YuniKorn's own dashboard (apache/yunikorn-k8shim deployments/grafana-dashboard/yunikorn-metrics.json at
# 23b6b47f): the queries of its "Yunikorn scheduler" and "Resource Usage" rows, as written there. (Its
# "Queue" row reads per-queue metric names YuniKorn dropped in 1.8: blank on YuniKorn too, left out.)
YUNIKORN_DASHBOARD = [
    "yunikorn_scheduler_application_total",
    "yunikorn_scheduler_application_submission_total",
    "yunikorn_scheduler_container_allocation_attempt_total",
    "histogram_quantile(0.95, sum(irate(yunikorn_scheduler_scheduling_latency_milliseconds_bucket[60s])) by "
    "(le))",
    "histogram_quantile(0.95, sum(irate(yunikorn_scheduler_trynode_latency_milliseconds_bucket[60s])) by "
    "(le))",
    "histogram_quantile(0.95, sum by(le) (yunikorn_scheduler_trypreemption_latency_milliseconds_bucket))",
    "yunikorn_scheduler_vcore_node_usage_total",
    "yunikorn_scheduler_memory_node_usage_total",
    "yunikorn_scheduler_pods_node_usage_total",
    "yunikorn_scheduler_ephemeral_storage_node_usage_total",
]


def _free_port() -> int:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        return int(held.getsockname()[1])


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: `make test` installs Debian's prometheus package")
    return found


def dashboard_queries() -> Iterator[tuple[str, str]]:
    """(panel title, PromQL) of every target of the dashboard, with every queue selected."""
    board = json.loads(DASHBOARD.read_text())
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"].replace("$queue", ".*").replace("$core", ".*")
            yield panel["title"], expr.replace("$__rate_interval", "1m")
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":  # Grafana's label_values(metric, label), as PromQL asks it
            metric, label = variable["query"]["query"].removeprefix("label_values(").rstrip(")").split(", ")
            yield f"variable {variable['name']}", f"count by ({label}) ({metric})"


class Prometheus:
    def __init__(self, targets: dict[str, tuple[str, str]]) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="pykorn-prometheus-")
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        jobs = [{"job_name": job, "metrics_path": path, "static_configs": [{"targets": [address]}]}
                for job, (address, path) in targets.items()]  # fmt: skip
        config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"}, "scrape_configs": jobs}
        config_file = Path(self._dir.name, "prometheus.yml")
        config_file.write_text(json.dumps(config))  # JSON is YAML
        self._log = open(Path(self._dir.name, "prometheus.log"), "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [_tool("prometheus"), f"--config.file={config_file}",
             f"--storage.tsdb.path={self._dir.name}/data", f"--web.listen-address=127.0.0.1:{self.port}",
             "--log.level=warn"],
            stdout=self._log, stderr=self._log,
        )  # fmt: skip

    async def ready(self, session: aiohttp.ClientSession) -> None:
        async with asyncio.timeout(60):
            while True:
                if self.process.poll() is not None:
                    raise AssertionError(f"prometheus exited: {self.log()}")
                try:
                    async with session.get(f"{self.url}/-/ready") as answer:
                        if answer.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.2)

    async def query(self, session: aiohttp.ClientSession, expr: str) -> list[dict[str, Any]]:
        async with session.get(f"{self.url}/api/v1/query", params={"query": expr}) as answer:
            body = await answer.json()
        assert body["status"] == "success", (expr, body)
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def log(self) -> str:
        return Path(self._dir.name, "prometheus.log").read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(20)
        self._log.close()
        self._dir.cleanup()


@pytest.fixture
async def core(own_core: CoreProcess) -> CoreProcess:
    return own_core


# Two queues: `low` fills the cluster, `high` (below its guarantee) preempts it.
QUEUES_YAML = """
partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: low
          - name: high
            resources: {guaranteed: {memory: 4Gi}}
            properties: {preemption.delay: 1s}
"""


async def test_every_dashboard_query_returns_data_from_a_real_prometheus(
    api: FakeKubeAPI, core: CoreProcess
) -> None:
    for name in ("n1", "n2"):
        big = node(name, memory="8Gi")
        big["status"]["allocatable"]["ephemeral-storage"] = "100Gi"
        await api.put("nodes", big)
    await api.put("configmaps", {"metadata": {"name": "yunikorn-configs", "namespace": "yunikorn"},
                                 "data": {"queues.yaml": QUEUES_YAML}})  # fmt: skip
    shim_port = _free_port()
    shim = subprocess.Popen(  # noqa: ASYNC220 - a real daemon, stopped below
        [sys.executable, "-m", "pykorn_cli", "k8s", "--core", core.address, "--kubeconfig",
         api.kubeconfig(SCHEDULER_SA), "--rm-id", "dashboard", "--metrics-listen", f"127.0.0.1:{shim_port}",
         "--log-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    shim_address, rest = f"127.0.0.1:{shim_port}", core.rest_url.removeprefix("http://")
    prometheus = Prometheus(
        {"pykorn-core": (rest, "/ws/v1/metrics"), "pykorn-shim": (shim_address, "/metrics")}
    )
    trickle: asyncio.Task[None] | None = None
    try:
        async with aiohttp.ClientSession() as session:
            await prometheus.ready(session)
            # Work starts once both targets were scraped twice: every rate then sees it change.
            await _until_query(prometheus, session, 'count_over_time(up{job=~"pykorn-.*"}[1m]) >= 2', 2)
            await _workload(api)
            trickle = asyncio.create_task(_trickle(api))  # allocations go on while the queries are asked
            missing = await _answered(prometheus, session)
            assert not missing, f"dashboard queries without data: {missing}\n{prometheus.log()}"
            both = await prometheus.query(session, "count by (job) (process_resident_memory_bytes)")
            assert {series["metric"]["job"] for series in both} == {"pykorn-core", "pykorn-shim"}
            trickle.cancel()
            # Idle now: the P95 scheduling latency still has values (YuniKorn times idle cycles).
            buckets = "yunikorn_scheduler_scheduling_latency_milliseconds_bucket"
            await _until_query(
                prometheus, session, f"histogram_quantile(0.95, sum by (le) (rate({buckets}[1m])))", 1
            )
            scraped = {}
            for address, path in ((rest, "/ws/v1/metrics"), (shim_address, "/metrics")):
                async with session.get(f"http://{address}{path}") as answer:
                    text = await answer.read()
                complaints = _promtool(text)
                assert not [line for line in complaints if line.startswith(OURS)], complaints
                scraped.update(_samples(text.decode()))
            # What the workload did, as the scrape says it.
            assert scraped['pykorn_k8s_bindings_total{result="failed"}'] >= 1  # web-2: three refusals
            assert scraped['pykorn_k8s_bindings_total{result="bound"}'] >= 17  # with urgent and trickle
            assert scraped['pykorn_k8s_api_errors_total{code="500"}'] >= 4
            assert scraped["pykorn_k8s_leader"] == 1
            assert scraped['pykorn_preemption_victims_total{kind="inter_queue"}'] >= 1
            assert scraped["yunikorn_scheduler_trypreemption_latency_milliseconds_count"] >= 1
    finally:
        if trickle is not None:
            trickle.cancel()
        prometheus.stop()
        shim.terminate()
        shim.wait(20)


async def _workload(api: FakeKubeAPI) -> None:
    """Pods bound (one answered 500 once, one refused three times: a failed binding, bound later), one
    that no node holds, `low` filled to the last byte, then a pod of `high` that preempts two of
    `low`'s, and pods deleted (their allocations end: resource-seconds)."""
    api.fail_bindings["web-0"] = 1
    api.fail_bindings["web-2"] = 3
    for i in range(6):
        await api.put("pods", pod(f"web-{i}", memory="1Gi", namespace="low"))
    await api.put("pods", pod("huge", memory="64Gi", namespace="low"))
    for i in range(10):
        await api.put("pods", pod(f"fill-{i}", memory="1Gi", namespace="low"))
    # All but web-2, whose binding failed (asked again by the reconciliation, later): 15 of 16 GiB.
    wanted = {f"web-{i}" for i in (0, 1, 3, 4, 5)} | {f"fill-{i}" for i in range(10)}
    await _until(lambda: wanted <= {name for name, _ in api.bindings}, "low filling the nodes", 60)
    await api.put("pods", pod("fill-10", memory="1Gi", namespace="low"))  # the last GiB
    await _until(lambda: "fill-10" in {name for name, _ in api.bindings}, "the last GiB taken", 60)
    await api.put("pods", pod("urgent", memory="2Gi", namespace="high"))
    await _until(lambda: "urgent" in {name for name, _ in api.bindings}, "urgent bound after preemption", 60)
    assert api.evictions, "no pod of low was preempted for urgent"
    for gone in ("web-1", "fill-0", "fill-1", "fill-2"):
        if api.get("pods", gone) is not None:
            await api.delete("pods", api.get("pods", gone) or {})


async def _trickle(api: FakeKubeAPI) -> None:
    """A small pod every 0.3 s, the one before deleted: allocations (and their timings) go on."""
    for i in range(1_000):
        await api.put("pods", pod(f"trickle-{i}", memory="100Mi", namespace="low"))
        before = api.get("pods", f"trickle-{i - 1}")
        if before is not None:
            await api.delete("pods", before)
        await asyncio.sleep(0.3)  # the workload's pace, not a wait for something


async def _until_query(
    prometheus: Prometheus, session: aiohttp.ClientSession, expr: str, series: int
) -> None:
    """Until `expr` answers at least `series` series, none NaN."""
    async with asyncio.timeout(60):
        while len(_values(await prometheus.query(session, expr))) < series:  # noqa: ASYNC110
            await asyncio.sleep(0.2)  # another process's state, read over HTTP


def _values(result: list[dict[str, Any]]) -> list[float]:
    """The answer's values that are numbers (a quantile of nothing is NaN: no data to show)."""
    return [v for v in (float(series["value"][1]) for series in result) if not math.isnan(v)]


def _samples(text: str) -> dict[str, float]:
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


async def _answered(prometheus: Prometheus, session: aiohttp.ClientSession) -> list[str]:
    """Every query of ours and of YuniKorn's dashboard asked until it returns a number (rates need two
    scrapes; NaN is no data); those that never did within 60 s."""
    pending = dict.fromkeys(
        [*dashboard_queries(), *(("YuniKorn's dashboard", q) for q in YUNIKORN_DASHBOARD)]
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while pending and loop.time() < deadline:
        for title, expr in list(pending):
            if _values(await prometheus.query(session, expr)):
                del pending[(title, expr)]
        await asyncio.sleep(0.2)  # the next scrapes (every second)
    return [f"{title}: {expr}" for title, expr in pending]


def _promtool(scrape: bytes) -> list[str]:
    done = subprocess.run(
        [_tool("promtool"), "check", "metrics"], input=scrape, capture_output=True, timeout=60, check=False
    )
    return [line for line in done.stderr.decode().splitlines() + done.stdout.decode().splitlines() if line]


def test_the_dashboard_renders_as_a_configmap_for_grafanas_sidecar() -> None:
    """`kubectl apply -k deploy/grafana`: the dashboard, as is, in a ConfigMap the sidecar loads."""
    [configmap] = render(DASHBOARD.parent)
    assert configmap == find([configmap], "ConfigMap", "pykorn-grafana-dashboard")
    assert configmap["metadata"]["namespace"] == "yunikorn"
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    board = json.loads(configmap["data"]["pykorn-dashboard.json"])
    assert board == json.loads(DASHBOARD.read_text())
    titles = [p["title"] for p in board["panels"] if p["type"] == "row"]
    assert titles == ["Scheduler (YuniKorn's panels)", "Resource usage of nodes", "Queues ($queue)", "pykorn",
                      "Kubernetes shim", "Processes"]  # fmt: skip
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
