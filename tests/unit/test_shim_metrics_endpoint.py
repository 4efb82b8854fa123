"""The shim's /metrics as a scraper reads it: in standby (`--leader-elect`, not leading) every family
has its HELP and TYPE (promtool check metrics asks for both), and the process's own metrics are there."""

from __future__ import annotations

import socket

import aiohttp

from shim_k8s.api.kube_http import KubeHTTP
from shim_k8s.api.kubeconfig import ClusterAccess
from shim_k8s.metrics import Health, serve


def _free_port() -> int:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        return int(held.getsockname()[1])


async def test_a_standby_serves_described_families_and_its_process_metrics() -> None:
    http = KubeHTTP(ClusterAccess("http://127.0.0.1:1"))
    http.requests = 3
    http.forbidden[("leases", "get")] = 1
    port = _free_port()
    runner = await serve(f"127.0.0.1:{port}", Health(http, state="standby"))
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{port}/metrics") as answer,
        ):
            assert answer.status == 200
            text = await answer.text()
    finally:
        await runner.cleanup()
        await http.close()
    lines = text.splitlines()
    described = {line.split()[2] for line in lines if line.startswith("# HELP ")}
    typed = {line.split()[2] for line in lines if line.startswith("# TYPE ")}
    assert described == typed
    assert {"pykorn_k8s_api_requests_total", "pykorn_k8s_api_forbidden_total"} <= described
    assert "pykorn_k8s_api_requests_total 3" in lines
    assert "pykorn_k8s_leader 0" in lines
    assert 'pykorn_k8s_api_forbidden_total{resource="leases",verb="get"} 1' in lines
    samples = {line.split("{")[0].split()[0] for line in lines if line and not line.startswith("#")}
    assert {"process_resident_memory_bytes", "process_cpu_seconds_total", "python_info"} <= samples
