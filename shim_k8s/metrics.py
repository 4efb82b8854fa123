"""The shim's own HTTP endpoints (`pykorn k8s --metrics-listen HOST:PORT`), for Prometheus and the kubelet.

- `/metrics`, Prometheus' text format: reconciliation repairs by kind, requests to the API, its error
  answers by code and those it forbade (RBAC) by resource and verb, bindings by result, whether this
  shim leads, events dropped, informer re-lists, decisions under way, objects refused or given a
  fallback (shim_k8s.readers.bad_objects) by kind and reason, and the process's own (process_*, python_*).
  The core's scheduling metrics are the core's (its /ws/v1/metrics).
- `/healthz` (liveness): answered while the process's event loop runs, in every state.
- `/readyz` (readiness): 200 once the shim is synced with the core and following the API, or is a
  standby waiting for the Lease (`--leader-elect`); 503 with the state while it starts.

Served from the start, before leader election, so that a standby answers its probes too."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from aiohttp import web
from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)

from shim_k8s.api.informer import Informer
from shim_k8s.api.kube import Kube
from shim_k8s.api.kube_http import KubeHTTP
from shim_k8s.shim import K8sShim

# The process's own metrics (process_*, python_info, python_gc_*), as every Prometheus client exports
# them, from prometheus_client's collectors; read at scrape time only.
_PROCESS = CollectorRegistry(auto_describe=False)
for _collector in (ProcessCollector, PlatformCollector, GCCollector):
    _collector(registry=_PROCESS)
REQUESTS_HELP = "Requests sent to the API server."
ERRORS_HELP = (
    "Requests to the API server that failed: by the error answer's status code, or network (no answer)."
)
LEADER_HELP = "1 while this shim schedules (it leads, or runs without leader election), 0 in standby."
FORBIDDEN_HELP = "Requests the API server answered 403 (the role does not grant them), by resource and verb."
REPAIR_KINDS = (
    "allocated-gone",
    "allocated-not-bound",
    "bound-unknown",
    "not-asked",
    "asked-unknown-application",
)


@dataclass
class Sources:
    shim: K8sShim
    kube: Kube
    http: KubeHTTP
    informers: Callable[[], Iterable[Informer]]


@dataclass
class Health:
    """What the endpoints answer: the shim's state, and its metrics once it leads."""

    http: KubeHTTP
    state: str = "starting"  # starting | standby | synced | stopping
    sources: Sources | None = None
    ready_states: frozenset[str] = field(default=frozenset({"standby", "synced"}))

    @property
    def ready(self) -> bool:
        return self.state in self.ready_states


def render(sources: Sources) -> str:
    lines: list[str] = []

    def metric(name: str, kind: str, help_text: str, samples: list[tuple[str, float]]) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        lines.extend(f"{name}{labels} {value:.0f}" for labels, value in samples)

    repairs = sources.shim.reconciler.repairs
    metric("pykorn_k8s_reconcile_repairs_total", "counter",
           "Mismatches between the core and the API the reconciliation repaired, by kind.",
           [(f'{{kind="{kind}"}}', repairs[kind]) for kind in REPAIR_KINDS])  # fmt: skip
    metric("pykorn_k8s_api_requests_total", "counter", REQUESTS_HELP,
           [("", sources.http.requests)])  # fmt: skip
    metric("pykorn_k8s_events_dropped_total", "counter",
           "Kubernetes events not sent because too many waited (service.eventChannelCapacity).",
           [("", sources.kube.events_dropped)])  # fmt: skip
    metric("pykorn_k8s_informer_relists_total", "counter", "Lists after the first, by kind.",
           [(f'{{kind="{i.kind}"}}', i.relists) for i in sources.informers()])  # fmt: skip
    metric("pykorn_k8s_decisions_in_progress", "gauge", "Core decisions being carried out.",
           [("", sources.shim.carrying_out)])  # fmt: skip
    metric("pykorn_k8s_bindings_total", "counter",
           "Bindings of pods to the nodes the core chose, by result: bound (the API took it), failed.",
           [(f'{{result="{result}"}}', n)
            for result, n in sources.shim.decisions.bindings.items()])  # fmt: skip
    metric("pykorn_k8s_api_errors_total", "counter", ERRORS_HELP,
           [(f'{{code="{code}"}}', n) for code, n in sorted(sources.http.errors.items())])  # fmt: skip
    metric("pykorn_k8s_leader", "gauge", LEADER_HELP, [("", 1)])
    metric("pykorn_k8s_api_forbidden_total", "counter", FORBIDDEN_HELP,
           [(f'{{resource="{r}",verb="{v}"}}', n)
            for (r, v), n in sorted(sources.http.forbidden.items())])  # fmt: skip
    bad = sources.shim.bad
    metric("pykorn_k8s_objects_refused_total", "counter",
           "Objects (or changes of them) not used because a field could not be read, by kind and reason.",
           [(_labels(kind, reason), n) for (kind, reason), n in sorted(bad.refused.items())])  # fmt: skip
    metric("pykorn_k8s_objects_fallback_total", "counter",
           "Objects used with YuniKorn's fallback for a field that could not be used, by kind and reason.",
           [(_labels(kind, reason), n) for (kind, reason), n in sorted(bad.fallbacks.items())])  # fmt: skip
    return "\n".join(lines) + "\n"


def _labels(kind: str, reason: str) -> str:
    return f'{{kind="{kind}",reason="{reason}"}}'


def render_standby(health: Health) -> str:
    """Before the shim leads: what the client has seen so far (a standby's Lease requests)."""
    forbidden = [f'pykorn_k8s_api_forbidden_total{{resource="{r}",verb="{v}"}} {n}'
                 for (r, v), n in sorted(health.http.forbidden.items())]  # fmt: skip
    errors = [
        f'pykorn_k8s_api_errors_total{{code="{code}"}} {n}' for code, n in sorted(health.http.errors.items())
    ]
    lines = [f"# HELP pykorn_k8s_api_requests_total {REQUESTS_HELP}",
             "# TYPE pykorn_k8s_api_requests_total counter",
             f"pykorn_k8s_api_requests_total {health.http.requests}",
             f"# HELP pykorn_k8s_api_forbidden_total {FORBIDDEN_HELP}",
             "# TYPE pykorn_k8s_api_forbidden_total counter", *forbidden,
             f"# HELP pykorn_k8s_api_errors_total {ERRORS_HELP}",
             "# TYPE pykorn_k8s_api_errors_total counter",
             *errors,
             f"# HELP pykorn_k8s_leader {LEADER_HELP}", "# TYPE pykorn_k8s_leader gauge",
             "pykorn_k8s_leader 0"]  # fmt: skip
    return "\n".join(lines) + "\n"


async def serve(listen: str, health: Health) -> web.AppRunner:
    async def metrics(request: web.Request) -> web.Response:
        text = render(health.sources) if health.sources is not None else render_standby(health)
        text += generate_latest(_PROCESS).decode()
        return web.Response(text=text, content_type="text/plain", charset="utf-8")

    async def live(request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def ready(request: web.Request) -> web.Response:
        return web.Response(text=f"{health.state}\n", status=200 if health.ready else 503)

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", live)
    app.router.add_get("/readyz", ready)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    host, _, port = listen.rpartition(":")
    try:
        await web.TCPSite(runner, host.strip("[]") or "0.0.0.0", int(port)).start()
    except OSError:
        await runner.cleanup()
        raise
    return runner
